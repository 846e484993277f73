//go:build linux

package linux_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// routeDescriptor returns the plugin's route descriptor.
func (e *env) routeDescriptor() kv.Descriptor {
	e.t.Helper()
	for _, d := range e.p.Descriptors() {
		if d.Name() == string((&linuxl3.Route{}).ProtoReflect().Descriptor().FullName()) {
			return d
		}
	}
	e.t.Fatal("no route descriptor")
	return nil
}

// TestNetnsRouteBatch drives the route descriptor's Batch as the
// scheduler would: creates (one with a gateway on no network of its
// interface, which alone fails, with its `ip route add` command), updates
// to another gateway, and deletes, one of a route already gone (that
// counts as done).
func TestNetnsRouteBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := vethPair("veth0", "veth1", "10.0.0.1/24", "2001:db8::1/64")
	e.set(a, b)
	e.expect(scheduler.CONFIGURED, keyOf(a), keyOf(b))
	d := e.routeDescriptor()
	if !d.CanBatch() {
		t.Fatal("the route descriptor cannot batch")
	}

	var values []*linuxl3.Route
	for i := range 300 {
		values = append(values, &linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: fmt.Sprintf("172.16.%d.%d/32", i>>8, i&255), GwAddr: "10.0.0.254"})
	}
	values = append(values,
		&linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: "2001:db8:7::/48", GwAddr: "2001:db8::fe", Metric: 9, Table: 1000},
		&linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: "192.168.5.0/24", Scope: linuxl3.Route_SCOPE_LINK},
	)
	const bad = 150
	values[bad].GwAddr = "192.168.99.1"
	ops := func(old []*linuxl3.Route, vs []*linuxl3.Route) []kv.BatchOp[string, proto.Message, any] {
		out := make([]kv.BatchOp[string, proto.Message, any], len(vs))
		for i, v := range vs {
			out[i] = kv.BatchOp[string, proto.Message, any]{Key: keyOf(v), Value: v}
			if old != nil {
				out[i].OldValue = old[i]
			}
		}
		return out
	}

	creates := ops(nil, values)
	d.Batch(e.ctx, kv.BatchCreate, creates)
	for i, op := range creates {
		switch {
		case i == bad:
			want := "ip route add 172.16.0.150/32 via 192.168.99.1 dev veth0"
			if !errors.Is(op.Err, unix.ENETUNREACH) || !strings.Contains(op.Err.Error(), want) {
				t.Errorf("create %d: %v, want ENETUNREACH naming %q", i, op.Err, want)
			}
		case op.Err != nil:
			t.Errorf("create %d: %v", i, op.Err)
		}
	}
	got := ourRoutes(t, e.h, e.p.RouteProtocol())
	if len(got) != len(values)-1 {
		t.Errorf("%d routes, want %d", len(got), len(values)-1)
	}
	for _, want := range []string{
		"172.16.0.1/32 via 10.0.0.254 dev veth0 metric 0 table 254",
		"2001:db8:7::/48 via 2001:db8::fe dev veth0 metric 9 table 1000",
		"192.168.5.0/24 dev veth0 metric 0 table 254",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no route %q among %d", want, len(got))
		}
	}

	good := slices.Delete(slices.Clone(values), bad, bad+1)
	var updated []*linuxl3.Route
	for _, v := range good[:100] {
		u := proto.Clone(v).(*linuxl3.Route)
		u.GwAddr = "10.0.0.253"
		updated = append(updated, u)
	}
	updates := ops(good[:100], updated)
	d.Batch(e.ctx, kv.BatchUpdate, updates)
	for i, op := range updates {
		if op.Err != nil {
			t.Errorf("update %d: %v", i, op.Err)
		}
	}
	got = ourRoutes(t, e.h, e.p.RouteProtocol())
	if want := "172.16.0.1/32 via 10.0.0.253 dev veth0 metric 0 table 254"; !slices.Contains(got, want) {
		t.Errorf("no route %q after the update", want)
	}

	// ip route del 172.16.0.201/32, behind the plugin's back
	list, err := e.h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: netlink.RouteProtocol(e.p.RouteProtocol())}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		t.Fatal(err)
	}
	gone := slices.IndexFunc(list, func(r netlink.Route) bool { return r.Dst.String() == good[200].DstNetwork })
	if gone < 0 {
		t.Fatalf("no route %s", good[200].DstNetwork)
	}
	if err := e.h.RouteDel(&list[gone]); err != nil {
		t.Fatalf("ip route del %s: %v", good[200].DstNetwork, err)
	}
	deletes := ops(nil, append(updated, good[100:]...))
	d.Batch(e.ctx, kv.BatchDelete, deletes)
	for i, op := range deletes {
		if op.Err != nil {
			t.Errorf("delete %d: %v", i, op.Err)
		}
	}
	if got := ourRoutes(t, e.h, e.p.RouteProtocol()); len(got) != 0 {
		t.Errorf("routes left: %q", got)
	}
}
