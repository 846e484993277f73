package vpp

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"

	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// routeOps returns n operations on routes in table 0 via if1, 10.0.i.0/24
// each.
func routeOps(n int) []vppl3.RouteBatchOp[struct{}] {
	ops := make([]vppl3.RouteBatchOp[struct{}], n)
	for i := range ops {
		v := &vppl3.Route{DstNetwork: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24).String(), NextHopAddr: "192.168.0.1", OutgoingInterface: "if1"}
		k, _ := vppl3.ParseRouteKey(vppl3.RouteKeyFor(v))
		ops[i] = vppl3.RouteBatchOp[struct{}]{Key: k, Value: v}
	}
	return ops
}

// TestRouteBatch sends more routes than the pipeline's window in one
// batch, one of them on an unknown interface (never sent) and one that VPP
// refuses, then deletes them all in one batch: each operation has its own
// outcome, and a failure names the value and the call.
func TestRouteBatch(t *testing.T) {
	t.Parallel()
	p, f := newPlugin(t)
	loopbacks(t, p, f, "if1")
	h := &routes{p: p}
	const n, unknown, refused = 3*window + 7, 100, 500
	ops := routeOps(n)
	ops[unknown].Value.OutgoingInterface = "nope"
	retvals := make([]int32, refused-1) // unknown's request is not sent: refused's is the refused-th
	f.Fail("ip_route_add_del", append(retvals, int32(api.NO_SUCH_FIB))...)
	h.Batch(context.Background(), kv.BatchCreate, ops)
	for i, op := range ops {
		switch i {
		case unknown:
			if !errors.Is(op.Err, kv.ErrNotFound) || !strings.HasPrefix(op.Err.Error(), op.Key.String()+": interface nope") {
				t.Errorf("op %d: %v, want the key and the unknown interface named, kv.ErrNotFound", i, op.Err)
			}
		case refused:
			if !errors.Is(op.Err, api.NO_SUCH_FIB) || !strings.HasPrefix(op.Err.Error(), op.Key.String()+": ip_route_add_del: ") {
				t.Errorf("op %d: %v, want the key, the call and VPP's error named", i, op.Err)
			}
		default:
			if op.Err != nil {
				t.Errorf("op %d: %v", i, op.Err)
			}
		}
	}
	reqs := f.Requests()
	if len(reqs) != n-1 {
		t.Fatalf("%d requests, want %d (all but the one on an unknown interface)", len(reqs), n-1)
	}
	for j, r := range reqs {
		i := j
		if j >= unknown {
			i++
		}
		want, _ := h.request(ops[i].Key, ops[i].Value, true)
		if !r.(*ip.IPRouteAddDel).IsAdd || r.(*ip.IPRouteAddDel).Route.Prefix != want.(*ip.IPRouteAddDel).Route.Prefix {
			t.Fatalf("request %d: %+v, want the route of op %d", j, r, i)
		}
	}
	var routes int
	f.Do(func(f *fakeVPP) {
		for _, r := range f.tableRoutes(0) {
			if r.Src == srcAPI {
				routes++
			}
		}
	})
	if routes != n-2 {
		t.Errorf("VPP has %d routes, want %d", routes, n-2)
	}

	// Delete them all: the refused one is not there (kv.ErrNotFound, which
	// the descriptor counts as deleted).
	for i := range ops {
		ops[i].Err = nil
	}
	ops[unknown].Value.OutgoingInterface = "if1"
	h.Batch(context.Background(), kv.BatchDelete, ops)
	for i, op := range ops {
		if i == unknown || i == refused {
			if !errors.Is(op.Err, kv.ErrNotFound) {
				t.Errorf("delete op %d: %v, want kv.ErrNotFound", i, op.Err)
			}
		} else if op.Err != nil {
			t.Errorf("delete op %d: %v", i, op.Err)
		}
	}
	f.Do(func(f *fakeVPP) {
		for _, r := range f.tableRoutes(0) {
			if r.Src == srcAPI {
				t.Errorf("route %s left", prefixOf(r.Prefix))
			}
		}
	})
	if d, ok := p.route.(interface{ CanBatch() bool }); !ok || !d.CanBatch() {
		t.Error("the route descriptor does not batch")
	}
}

// TestRouteBatchUpdate checks that a batch of updates (which the
// scheduler never sends: routes have no Update) fails every operation,
// for good, and sends nothing.
func TestRouteBatchUpdate(t *testing.T) {
	t.Parallel()
	p, f := newPlugin(t)
	loopbacks(t, p, f, "if1")
	ops := routeOps(3)
	(&routes{p: p}).Batch(context.Background(), kv.BatchUpdate, ops)
	for i, op := range ops {
		if op.Err == nil || kv.IsRetriable(op.Err) {
			t.Errorf("op %d: %v, want a non-retriable error", i, op.Err)
		}
	}
	expectRequests(t, f)
}

// TestRouteBatchLost checks a batch to a VPP that takes requests and
// answers none: every operation fails, with the stream's error, when the
// deadline passes.
func TestRouteBatchLost(t *testing.T) {
	t.Parallel()
	p, f := newPlugin(t)
	loopbacks(t, p, f, "if1")
	f.Do(func(f *fakeVPP) { f.mute = true })
	ops := routeOps(window + 1)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	(&routes{p: p}).Batch(ctx, kv.BatchCreate, ops)
	for i, op := range ops {
		if !errors.Is(op.Err, context.DeadlineExceeded) || !strings.HasPrefix(op.Err.Error(), op.Key.String()+": ip_route_add_del: ") {
			t.Fatalf("op %d: %v, want the key, the call and the deadline", i, op.Err)
		}
	}
	// The window was full: the last request was never sent.
	if got := len(f.Requests()); got != window {
		t.Errorf("%d requests sent, want %d (the window)", got, window)
	}
}

// TestARPEntryBatch adds and removes neighbours in batches.
func TestARPEntryBatch(t *testing.T) {
	t.Parallel()
	p, f := newPlugin(t)
	loopbacks(t, p, f, "if1")
	h := &arpEntries{p: p}
	var ops []vppl3.ARPEntryBatchOp[struct{}]
	for _, a := range []string{"10.0.0.2", "10.0.0.3", "2001:db8::4"} {
		v := &vppl3.ARPEntry{Interface: "if1", IpAddress: a, PhysAddress: "02:00:00:00:00:01", Static: true}
		ops = append(ops, vppl3.ARPEntryBatchOp[struct{}]{Key: vppl3.ARPEntryKey{Interface: "if1", IpAddress: netip.MustParseAddr(a)}, Value: v})
	}
	var want []api.Message
	for _, add := range []bool{true, false} {
		kind := kv.BatchCreate
		if !add {
			kind = kv.BatchDelete
		}
		h.Batch(context.Background(), kind, ops)
		for i, op := range ops {
			if op.Err != nil {
				t.Errorf("%v op %d: %v", kind, i, op.Err)
			}
			want = append(want, &ip_neighbor.IPNeighborAddDel{IsAdd: add, Neighbor: ip_neighbor.IPNeighbor{
				SwIfIndex: 1, Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: mac1, IPAddress: address(op.Key.IpAddress),
			}})
		}
		var got []string
		f.Do(func(f *fakeVPP) {
			for _, n := range f.neigh {
				got = append(got, n.IPAddress.String())
			}
		})
		if add && !slices.Equal(got, []string{"10.0.0.2", "10.0.0.3", "2001:db8::4"}) || !add && len(got) != 0 {
			t.Errorf("after the %v batch, VPP's neighbours: %v", kind, got)
		}
	}
	expectRequests(t, f, want...)
}
