//go:build linux

package linux

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// neighbourValues are n entries over dev: IPv4 from 10.16.0.0 on, every
// third one IPv6 from 2001:db8::1:0:0 on, each with a MAC address of its
// own.
func neighbourValues(dev string, n int) []*linuxl3.Neighbour {
	vs := make([]*linuxl3.Neighbour, n)
	for i := range vs {
		ip := netip.AddrFrom4([4]byte{10, 16 + byte(i>>16), byte(i >> 8), byte(i)}).String()
		if i%3 == 2 {
			ip = fmt.Sprintf("2001:db8::1:%x:%x", i>>16, i&0xffff)
		}
		vs[i] = &linuxl3.Neighbour{Interface: dev, IpAddress: ip, HwAddress: fmt.Sprintf("02:00:00:%02x:%02x:%02x", byte(i>>16), byte(i>>8), byte(i))}
	}
	return vs
}

// neighbourOps are the batch operations of vs (and of old, the values
// updated from, unless nil).
func neighbourOps(t testing.TB, old, vs []*linuxl3.Neighbour) []linuxl3.NeighbourBatchOp[struct{}] {
	t.Helper()
	ops := make([]linuxl3.NeighbourBatchOp[struct{}], len(vs))
	for i, v := range vs {
		k, ok := linuxl3.ParseNeighbourKey(linuxl3.NeighbourKeyFor(v))
		if !ok {
			t.Fatalf("key %q does not parse", linuxl3.NeighbourKeyFor(v))
		}
		ops[i] = linuxl3.NeighbourBatchOp[struct{}]{Key: k, Value: v}
		if old != nil {
			ops[i].OldValue = old[i]
		}
	}
	return ops
}

// permanentNeighbours lists the namespace's permanent unicast entries as
// "IP dev NAME" to their MAC address.
func permanentNeighbours(t testing.TB, h *netlink.Handle) map[string]string {
	t.Helper()
	list, err := h.NeighList(0, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatalf("ip neigh show: %v", err)
	}
	out := map[string]string{}
	for _, e := range list {
		if e.State&netlink.NUD_PERMANENT == 0 || e.IP.IsMulticast() {
			continue
		}
		name := fmt.Sprint(e.LinkIndex)
		if l, err := h.LinkByIndex(e.LinkIndex); err == nil {
			name = l.Attrs().Name
		}
		out[e.IP.String()+" dev "+name] = e.HardwareAddr.String()
	}
	return out
}

// wantNeighbours is what permanentNeighbours returns for vs.
func wantNeighbours(vs []*linuxl3.Neighbour) map[string]string {
	out := map[string]string{}
	for _, v := range vs {
		out[netip.MustParseAddr(v.IpAddress).String()+" dev "+v.Interface] = v.HwAddress
	}
	return out
}

// disableIPv6 sets net.ipv6.conf.DEV.disable_ipv6 in the namespace: the
// kernel then refuses NDP entries on dev.
func disableIPv6(t testing.TB, n *namespace, dev string) {
	t.Helper()
	err := inNamespace(n.ns, func() error {
		return os.WriteFile("/proc/sys/net/ipv6/conf/"+dev+"/disable_ipv6", []byte("1"), 0)
	})
	if err != nil {
		t.Fatalf("sysctl net.ipv6.conf.%s.disable_ipv6=1: %v", dev, err)
	}
}

// TestNetnsNeighbourBatch drives the neighbour handler's Batch as the
// scheduler would: creates, one of them an NDP entry on an interface with
// IPv6 disabled, which alone fails with the kernel's message and its
// `ip neigh replace` command; updates to other MAC addresses; and deletes,
// one of an entry already gone, which is not found (done).
func TestNetnsNeighbourBatch(t *testing.T) {
	n, _ := batchNs(t)
	p, err := New(WithNamespace(n.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	disableIPv6(t, n, "veth1")
	h := &neighbours{p: p}
	ctx := context.Background()

	values := neighbourValues("veth0", 600)
	const bad = 301
	values[bad] = &linuxl3.Neighbour{Interface: "veth1", IpAddress: "2001:db8::bad", HwAddress: "02:00:00:00:0b:ad"}
	good := append(values[:bad:bad], values[bad+1:]...)

	creates := neighbourOps(t, nil, values)
	h.Batch(ctx, kv.BatchCreate, creates)
	for i, op := range creates {
		switch {
		case i == bad:
			want := "ip neigh replace 2001:db8::bad lladdr 02:00:00:00:0b:ad dev veth1 nud permanent: invalid argument: IPv6 is disabled on this device"
			if !errors.Is(op.Err, unix.EINVAL) || op.Err.Error() != want || kv.IsRetriable(op.Err) {
				t.Errorf("create %d: %v, want a non-retriable %q", i, op.Err, want)
			}
		case op.Err != nil:
			t.Errorf("create %d: %v", i, op.Err)
		}
	}
	if diff := cmp.Diff(wantNeighbours(good), permanentNeighbours(t, n.h)); diff != "" {
		t.Errorf("entries after the creates (-want +got):\n%s", diff)
	}

	updated := make([]*linuxl3.Neighbour, 100)
	for i, v := range good[:100] {
		updated[i] = &linuxl3.Neighbour{Interface: v.Interface, IpAddress: v.IpAddress, HwAddress: fmt.Sprintf("02:00:00:01:00:%02x", i)}
	}
	updates := neighbourOps(t, good[:100], updated)
	h.Batch(ctx, kv.BatchUpdate, updates)
	for i, op := range updates {
		if op.Err != nil {
			t.Errorf("update %d: %v", i, op.Err)
		}
	}
	now := append(updated, good[100:]...)
	if diff := cmp.Diff(wantNeighbours(now), permanentNeighbours(t, n.h)); diff != "" {
		t.Errorf("entries after the updates (-want +got):\n%s", diff)
	}

	// ip neigh del 10.16.0.200 dev veth0, behind the plugin's back
	const gone = 200
	veth0, err := n.h.LinkByName("veth0")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.h.NeighDel(&netlink.Neigh{LinkIndex: veth0.Attrs().Index, IP: net.ParseIP(now[gone].IpAddress)}); err != nil {
		t.Fatalf("ip neigh del %s dev veth0: %v", now[gone].IpAddress, err)
	}
	deletes := neighbourOps(t, nil, now)
	h.Batch(ctx, kv.BatchDelete, deletes)
	for i, op := range deletes {
		switch {
		case i == gone:
			want := "ip neigh del " + now[gone].IpAddress + " lladdr " + now[gone].HwAddress + " dev veth0: "
			if !errors.Is(op.Err, kv.ErrNotFound) || !strings.Contains(op.Err.Error(), want) {
				t.Errorf("delete %d: %v, want not found, naming %q", i, op.Err, want)
			}
		case op.Err != nil:
			t.Errorf("delete %d: %v", i, op.Err)
		}
	}
	if got := permanentNeighbours(t, n.h); len(got) != 0 {
		t.Errorf("entries left: %v", got)
	}
}

// TestBatchNeighboursNoSuchInterface sends entries through the batch
// socket, one in the middle on an interface index that does not exist:
// it alone fails, with ENODEV.
func TestBatchNeighboursNoSuchInterface(t *testing.T) {
	n, link := batchNs(t)
	s, err := n.batchSocket()
	if err != nil {
		t.Fatal(err)
	}
	var reqs []*nl.NetlinkRequest
	for i := range 50 {
		e := &netlink.Neigh{LinkIndex: link.Attrs().Index, Family: unix.AF_INET, State: netlink.NUD_PERMANENT,
			IP: net.IPv4(10, 0, 2, byte(i)).To4(), HardwareAddr: net.HardwareAddr{2, 0, 0, 0, 2, byte(i)}}
		if i == 25 {
			e.LinkIndex = 999_999
		}
		reqs = append(reqs, neighRequest(neighReplace, e))
	}
	for i, err := range s.do(context.Background(), reqs) {
		switch {
		case i == 25:
			if !errors.Is(err, unix.ENODEV) {
				t.Errorf("entry %d: %v, want ENODEV", i, err)
			}
		case err != nil:
			t.Errorf("entry %d: %v", i, err)
		}
	}
	if got := len(permanentNeighbours(t, n.h)); got != 49 {
		t.Errorf("%d entries, want 49", got)
	}
}

// TestNetnsNeighbourBatchScheduler sets 1,000 entries in one transaction
// through a scheduler, then deletes them in another: both reach the kernel
// in batches, and the entries are CONFIGURED, then gone.
func TestNetnsNeighbourBatchScheduler(t *testing.T) {
	n, _ := batchNs(t)
	p, err := New(WithNamespace(n.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, err := scheduler.New(scheduler.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer s.Close(ctx)
	if err := s.Register(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	a := &linuxinterfaces.Interface{Name: "nb0", Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: "nb1", Enabled: true}
	b := &linuxinterfaces.Interface{Name: "nb1", Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: "nb0", Enabled: true}
	values := neighbourValues("nb0", 1000)
	txn := s.Txn().Set(linuxinterfaces.InterfaceKeyFor(a), a).Set(linuxinterfaces.InterfaceKeyFor(b), b)
	for _, v := range values {
		txn.Set(linuxl3.NeighbourKeyFor(v), v)
	}
	commit := func(txn *scheduler.Txn, what string) {
		t.Helper()
		res, err := txn.Commit(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if res.Batches == 0 || res.BatchedOps < len(values) {
			t.Errorf("%s: %d batches of %d operations, want the %d entries in batches", what, res.Batches, res.BatchedOps, len(values))
		}
	}
	commit(txn, "setting the entries")
	for _, v := range values {
		if st := s.Status(linuxl3.NeighbourKeyFor(v)); st.State != scheduler.CONFIGURED {
			t.Fatalf("%s: %s (%v), want CONFIGURED", linuxl3.NeighbourKeyFor(v), st.State, st.LastErr)
		}
	}
	if diff := cmp.Diff(wantNeighbours(values), permanentNeighbours(t, n.h)); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	p.ns.mu.Lock()
	own := p.ns.byName[""]
	p.ns.mu.Unlock()
	if own == nil || own.batch == nil {
		t.Error("the entries did not go through the namespace's batch socket")
	}
	txn = s.Txn()
	for _, v := range values {
		txn.Delete(linuxl3.NeighbourKeyFor(v))
	}
	commit(txn, "deleting the entries")
	if got := permanentNeighbours(t, n.h); len(got) != 0 {
		t.Errorf("%d entries left", len(got))
	}
}

// TestNetnsNeighbourBatchOverrun sets and deletes entries through a batch
// socket whose receive buffer overruns (an ACK asked for on every request,
// the smallest buffer): the requests whose replies went lost are sent
// again, and every entry still comes out set, then deleted, with no error.
func TestNetnsNeighbourBatchOverrun(t *testing.T) {
	n, _ := batchNs(t)
	p, err := New(WithNamespace(n.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	own, err := p.ns.get("")
	if err != nil {
		t.Fatal(err)
	}
	s, err := openBatchSocket(own.ns, 0) // the smallest receive buffer the kernel allows
	if err != nil {
		t.Fatal(err)
	}
	own.batch = s
	values := neighbourValues("veth0", 3000)
	s.ackAll, s.perWrite = true, len(values)
	h := &neighbours{p: p}
	ctx := context.Background()

	sets := neighbourOps(t, nil, values)
	h.Batch(ctx, kv.BatchCreate, sets)
	for i, op := range sets {
		if op.Err != nil {
			t.Errorf("create %d: %v", i, op.Err)
		}
	}
	if diff := cmp.Diff(wantNeighbours(values), permanentNeighbours(t, n.h)); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	deletes := neighbourOps(t, nil, values)
	h.Batch(ctx, kv.BatchDelete, deletes)
	for i, op := range deletes {
		if op.Err != nil && !errors.Is(op.Err, kv.ErrNotFound) {
			t.Errorf("delete %d: %v", i, op.Err)
		}
	}
	if got := permanentNeighbours(t, n.h); len(got) != 0 {
		t.Errorf("%d entries left", len(got))
	}
	if s.overruns == 0 {
		t.Error("no receive buffer overrun: the test tests nothing")
	}
	t.Logf("%d overruns", s.overruns)
}
