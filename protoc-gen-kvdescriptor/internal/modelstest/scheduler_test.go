package modelstest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// The tests below drive generated descriptors with the real scheduler.
// Their handlers only record the calls they get, with the typed key
// they were given, so the tests see what a southbound would.

// calls records handler calls in order.
type calls struct {
	mu  sync.Mutex
	log []string
}

func (c *calls) add(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, fmt.Sprintf(format, args...))
}

// take returns the calls recorded since the last take.
func (c *calls) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.log
	c.log = nil
	return out
}

// recorder is a keyed handler with Update that records its calls.
type recorder[K fmt.Stringer, V proto.Message] struct{ c *calls }

func (r recorder[K, V]) Create(_ context.Context, k K, _ V) (struct{}, error) {
	r.c.add("create %s", k)
	return struct{}{}, nil
}

func (r recorder[K, V]) Update(_ context.Context, k K, _, _ V, _ struct{}) (struct{}, error) {
	r.c.add("update %s", k)
	return struct{}{}, nil
}

func (r recorder[K, V]) Delete(_ context.Context, k K, _ V, _ struct{}) error {
	r.c.add("delete %s", k)
	return nil
}

// noUpdate is a recorder without Update: every change re-creates.
type noUpdate[K fmt.Stringer, V proto.Message] struct{ c *calls }

func (r noUpdate[K, V]) Create(ctx context.Context, k K, v V) (struct{}, error) {
	return recorder[K, V](r).Create(ctx, k, v)
}

func (r noUpdate[K, V]) Delete(ctx context.Context, k K, v V, m struct{}) error {
	return recorder[K, V](r).Delete(ctx, k, v, m)
}

// linuxLinks is the handler of linux interfaces: its metadata is the
// interface index it allocates.
type linuxLinks struct {
	c    *calls
	next int
}

func (h *linuxLinks) Create(_ context.Context, k linuxinterfaces.InterfaceKey, v *linuxinterfaces.Interface) (int, error) {
	h.next++
	h.c.add("create link %s (%s, index %d)", k.Name, v.GetType(), h.next)
	return h.next, nil
}

func (h *linuxLinks) Update(_ context.Context, k linuxinterfaces.InterfaceKey, _, v *linuxinterfaces.Interface, index int) (int, error) {
	h.c.add("update link %s (index %d, mtu %d)", k.Name, index, v.GetMtu())
	return index, nil
}

func (h *linuxLinks) Delete(_ context.Context, k linuxinterfaces.InterfaceKey, _ *linuxinterfaces.Interface, index int) error {
	h.c.add("delete link %s (index %d)", k.Name, index)
	return nil
}

// linuxAddrs is the handler of interface addresses: the key arrives
// typed, the interface name and a netip.Prefix.
type linuxAddrs struct {
	c    *calls
	mu   sync.Mutex
	keys []linuxinterfaces.InterfaceIpAddressesKey
}

func (h *linuxAddrs) Create(_ context.Context, k linuxinterfaces.InterfaceIpAddressesKey, _ *wrapperspb.StringValue) (struct{}, error) {
	h.mu.Lock()
	h.keys = append(h.keys, k)
	h.mu.Unlock()
	h.c.add("create address %s on %s", k.IpAddresses, k.Name)
	return struct{}{}, nil
}

func (h *linuxAddrs) Delete(_ context.Context, k linuxinterfaces.InterfaceIpAddressesKey, _ *wrapperspb.StringValue, _ struct{}) error {
	h.c.add("delete address %s on %s", k.IpAddresses, k.Name)
	return nil
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newScheduler returns a scheduler, closed when the test ends, with the
// given descriptors registered.
func newScheduler(t *testing.T, ds ...kv.Descriptor) *scheduler.Scheduler {
	t.Helper()
	s, err := scheduler.New(scheduler.WithLogger(quiet), scheduler.WithTxnLog(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if err := s.Register(ds...); err != nil {
		t.Fatal(err)
	}
	return s
}

// vppScheduler registers every VPP model with recording handlers.
func vppScheduler(t *testing.T, c *calls) *scheduler.Scheduler {
	t.Helper()
	return newScheduler(t,
		noErr(vppinterfaces.NewInterfaceDescriptor[struct{}](recorder[vppinterfaces.InterfaceKey, *vppinterfaces.Interface]{c})),
		noErr(vppl3.NewVrfTableDescriptor[struct{}](recorder[vppl3.VrfTableKey, *vppl3.VrfTable]{c})),
		noErr(vppl3.NewARPEntryDescriptor[struct{}](noUpdate[vppl3.ARPEntryKey, *vppl3.ARPEntry]{c})),
		noErr(vppl3.NewRouteDescriptor[struct{}](recorder[vppl3.RouteKey, *vppl3.Route]{c})),
		noErr(vppl2.NewBridgeDomainDescriptor[struct{}](recorder[vppl2.BridgeDomainKey, *vppl2.BridgeDomain]{c})),
		noErr(vppl2.NewBridgeDomainInterfacesDescriptor[struct{}](recorder[vppl2.BridgeDomainInterfacesKey, *vppl2.BridgeDomain_Interface]{c})),
		noErr(vppl2.NewFIBEntryDescriptor[struct{}](recorder[vppl2.FIBEntryKey, *vppl2.FIBEntry]{c})),
	)
}

// linuxScheduler registers the linux models.
func linuxScheduler(t *testing.T, c *calls) (*scheduler.Scheduler, *linuxAddrs) {
	t.Helper()
	addrs := &linuxAddrs{c: c}
	return newScheduler(t,
		noErr(linuxinterfaces.NewInterfaceDescriptor[int](&linuxLinks{c: c})),
		noErr(linuxinterfaces.NewInterfaceIpAddressesDescriptor[struct{}](addrs)),
		noErr(linuxl3.NewRouteDescriptor[struct{}](recorder[linuxl3.RouteKey, *linuxl3.Route]{c})),
	), addrs
}

// commit commits a transaction that sets (or, for nil values, deletes)
// the given keys, and waits for it.
func commit(t *testing.T, s *scheduler.Scheduler, kvs ...any) *scheduler.Result {
	t.Helper()
	txn := s.Txn()
	for i := 0; i < len(kvs); i += 2 {
		if kvs[i+1] == nil {
			txn.Delete(kvs[i].(string))
			continue
		}
		txn.Set(kvs[i].(string), kvs[i+1].(proto.Message))
	}
	res, err := txn.Commit(context.Background())
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return res
}

// wantStates checks the state of each key.
func wantStates(t *testing.T, s *scheduler.Scheduler, want map[string]scheduler.State) {
	t.Helper()
	got := map[string]scheduler.State{}
	for k := range want {
		got[k] = s.Status(k).State
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

// wantUnmet checks the unmet dependencies of a PENDING key.
func wantUnmet(t *testing.T, s *scheduler.Scheduler, key string, want ...string) {
	t.Helper()
	var got []string
	for _, u := range s.Status(key).Unmet {
		got = append(got, u.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: unmet dependencies (-want +got):\n%s", key, diff)
	}
}

// wantCalls checks the calls made, in order.
func wantCalls(t *testing.T, c *calls, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, c.take()); diff != "" {
		t.Errorf("southbound calls (-want +got):\n%s", diff)
	}
}

// before checks that call a happened before call b.
func before(t *testing.T, log []string, a, b string) {
	t.Helper()
	i, j := slices.Index(log, a), slices.Index(log, b)
	if i < 0 || j < 0 || i > j {
		t.Errorf("want %q before %q in %q", a, b, log)
	}
}

// TestBridgeDomainEndToEnd: a bridge domain committed before its member
// interfaces is created at once and its bindings wait (cases 1 and 3);
// the interfaces bring the bindings, and the FIB entry that waits for its
// binding (case 4), in the same transaction.
func TestBridgeDomainEndToEnd(t *testing.T) {
	t.Parallel()
	c := &calls{}
	s := vppScheduler(t, c)

	bd := &vppl2.BridgeDomain{Name: "bd1", Flood: true, Interfaces: []*vppl2.BridgeDomain_Interface{
		{Name: "if1", Bvi: true},
		{Name: "memif/2"},
	}}
	bdKey := vppl2.BridgeDomainKeyFor(bd)
	fib := &vppl2.FIBEntry{BridgeDomain: "bd1", PhysAddress: "02:AA:00:00:00:01", OutgoingInterface: "if1"}
	fibKey := vppl2.FIBEntryKeyFor(fib)
	bind1 := vppl2.BridgeDomainInterfacesKey{Name: "bd1", InterfacesName: "if1"}.String()
	bind2 := vppl2.BridgeDomainInterfacesKey{Name: "bd1", InterfacesName: "memif/2"}.String()
	if1 := &vppinterfaces.Interface{Name: "if1", Type: vppinterfaces.Interface_TYPE_LOOPBACK}
	if2 := &vppinterfaces.Interface{Name: "memif/2", Type: vppinterfaces.Interface_TYPE_MEMIF}
	if1Key, if2Key := vppinterfaces.InterfaceKeyFor(if1), vppinterfaces.InterfaceKeyFor(if2)

	commit(t, s, bdKey, bd, fibKey, fib)
	wantCalls(t, c, "create vpp/bd/bd1")
	wantStates(t, s, map[string]scheduler.State{
		bdKey:  scheduler.CONFIGURED,
		bind1:  scheduler.PENDING,
		bind2:  scheduler.PENDING,
		fibKey: scheduler.PENDING,
	})
	wantUnmet(t, s, bind1, "interface -> vpp/interface/if1")
	wantUnmet(t, s, bind2, "interface -> vpp/interface/memif%2F2")
	wantUnmet(t, s, fibKey, "bridged interface -> vpp/bd/bd1/interface/if1")
	if st := s.Status(bind1); st.Base != bdKey {
		t.Errorf("binding %s: Base = %q, want %q", bind1, st.Base, bdKey)
	}
	if why, ok := s.WhyPending(fibKey); !ok {
		t.Errorf("WhyPending(%s): not pending", fibKey)
	} else if roots := why.Roots(); len(roots) != 1 || roots[0].Key != if1Key {
		t.Errorf("WhyPending(%s) roots = %+v, want the missing %s\n%s", fibKey, roots, if1Key, why)
	}

	res := commit(t, s, if1Key, if1, if2Key, if2)
	log := c.take()
	want := []string{
		"create vpp/interface/if1", "create vpp/interface/memif%2F2",
		"create vpp/bd/bd1/interface/if1", "create vpp/bd/bd1/interface/memif%2F2",
		"create vpp/l2fib/bd1/02:aa:00:00:00:01",
	}
	if diff := cmp.Diff(want, log, cmpSorted); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	before(t, log, "create vpp/interface/if1", "create vpp/bd/bd1/interface/if1")
	before(t, log, "create vpp/interface/memif%2F2", "create vpp/bd/bd1/interface/memif%2F2")
	before(t, log, "create vpp/bd/bd1/interface/if1", "create vpp/l2fib/bd1/02:aa:00:00:00:01")
	for _, k := range []string{if1Key, if2Key, bind1, bind2, fibKey} {
		if st := s.Status(k); st.State != scheduler.CONFIGURED || st.Seq != res.Seq {
			t.Errorf("%s: %s in transaction %d, want CONFIGURED in %d", k, st.State, st.Seq, res.Seq)
		}
	}

	// Changing the members touches bindings, never the bridge domain.
	bd2 := proto.Clone(bd).(*vppl2.BridgeDomain)
	bd2.Interfaces = []*vppl2.BridgeDomain_Interface{{Name: "if1", Bvi: true}, {Name: "if3"}}
	commit(t, s, bdKey, bd2)
	wantCalls(t, c, "delete vpp/bd/bd1/interface/memif%2F2")
	wantStates(t, s, map[string]scheduler.State{
		bdKey:  scheduler.CONFIGURED,
		bind1:  scheduler.CONFIGURED,
		bind2:  scheduler.NONEXISTENT,
		fibKey: scheduler.CONFIGURED,
		vppl2.BridgeDomainInterfacesKey{Name: "bd1", InterfacesName: "if3"}.String(): scheduler.PENDING,
	})

	// A changed member is an update of its binding only.
	bd3 := proto.Clone(bd2).(*vppl2.BridgeDomain)
	bd3.Interfaces[0].SplitHorizonGroup = 1
	commit(t, s, bdKey, bd3)
	wantCalls(t, c, "update vpp/bd/bd1/interface/if1")

	// A changed bridge domain attribute is an update of the bridge domain.
	bd4 := proto.Clone(bd3).(*vppl2.BridgeDomain)
	bd4.MacAge = 30
	commit(t, s, bdKey, bd4)
	wantCalls(t, c, "update vpp/bd/bd1")

	// Removing the interface removes its dependents first; they pend.
	commit(t, s, if1Key, nil)
	wantCalls(t, c,
		"delete vpp/l2fib/bd1/02:aa:00:00:00:01",
		"delete vpp/bd/bd1/interface/if1",
		"delete vpp/interface/if1",
	)
	wantStates(t, s, map[string]scheduler.State{
		bdKey:  scheduler.CONFIGURED,
		bind1:  scheduler.PENDING,
		fibKey: scheduler.PENDING,
	})
}

var cmpSorted = cmp.Transformer("sorted", func(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
})

// TestRouteAndARPEndToEnd: a VPP route waits for its VRF table only when
// vrf_id is not 0, and for its interface only when set (case 2); an ARP
// entry waits for its interface, and without Update a change re-creates
// it (case 1).
func TestRouteAndARPEndToEnd(t *testing.T) {
	t.Parallel()
	c := &calls{}
	s := vppScheduler(t, c)

	r0 := &vppl3.Route{DstNetwork: "10.1.1.7/24", NextHopAddr: "192.168.1.1"}
	r5 := &vppl3.Route{VrfId: 5, DstNetwork: "2001:DB8::/32", NextHopAddr: "2001:DB8::1", OutgoingInterface: "if1"}
	arp := &vppl3.ARPEntry{Interface: "if1", IpAddress: "10.0.0.2", PhysAddress: "02:00:00:00:00:02"}
	k0, k5, arpKey := vppl3.RouteKeyFor(r0), vppl3.RouteKeyFor(r5), vppl3.ARPEntryKeyFor(arp)
	if k0 != "vpp/route/vrf/0/dst/10.1.1.0/24/gw/192.168.1.1" {
		t.Errorf("route key %q", k0)
	}

	commit(t, s, k0, r0, k5, r5, arpKey, arp)
	wantCalls(t, c, "create vpp/route/vrf/0/dst/10.1.1.0/24/gw/192.168.1.1")
	wantUnmet(t, s, k5, "vrf -> vpp/vrf-table/5", "interface -> vpp/interface/if1")
	wantUnmet(t, s, arpKey, "interface -> vpp/interface/if1")

	commit(t, s, "vpp/interface/if1", &vppinterfaces.Interface{Name: "if1"})
	log := c.take()
	if diff := cmp.Diff([]string{"create vpp/interface/if1", "create vpp/arp/if1/10.0.0.2"}, log); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	wantUnmet(t, s, k5, "vrf -> vpp/vrf-table/5")

	commit(t, s, vppl3.VrfTableKey{Id: 5}.String(), &vppl3.VrfTable{Id: 5})
	wantCalls(t, c, "create vpp/vrf-table/5", "create vpp/route/vrf/5/dst/2001:db8::/32/gw/2001:db8::1")

	// Weight 0 equals 1: nothing to do.
	r5w := proto.Clone(r5).(*vppl3.Route)
	r5w.Weight = 1
	commit(t, s, k5, r5w)
	wantCalls(t, c)

	// The ARP handler has no Update: a change is Delete then Create.
	arp2 := proto.Clone(arp).(*vppl3.ARPEntry)
	arp2.PhysAddress = "02:00:00:00:00:03"
	commit(t, s, arpKey, arp2)
	wantCalls(t, c, "delete vpp/arp/if1/10.0.0.2", "create vpp/arp/if1/10.0.0.2")
}

// TestVethPairEndToEnd: two veth ends, each depending on the other, are
// created as a unit once both are intended (case 5); their addresses are
// derived values whose handler gets typed keys.
func TestVethPairEndToEnd(t *testing.T) {
	t.Parallel()
	c := &calls{}
	s, addrs := linuxScheduler(t, c)

	veth1 := &linuxinterfaces.Interface{
		Name: "veth1", Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: "veth/2",
		IpAddresses: []string{"10.0.0.1/24", "2001:DB8::1/64"},
	}
	veth2 := &linuxinterfaces.Interface{Name: "veth/2", Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: "veth1"}
	k1, k2 := linuxinterfaces.InterfaceKeyFor(veth1), linuxinterfaces.InterfaceKeyFor(veth2)
	a1 := linuxinterfaces.InterfaceIpAddressesKey{Name: "veth1", IpAddresses: netip.MustParsePrefix("10.0.0.1/24")}.String()
	a2 := linuxinterfaces.InterfaceIpAddressesKey{Name: "veth1", IpAddresses: netip.MustParsePrefix("2001:DB8::1/64")}.String()

	commit(t, s, k1, veth1)
	wantCalls(t, c)
	wantStates(t, s, map[string]scheduler.State{k1: scheduler.PENDING, a1: scheduler.NONEXISTENT})
	wantUnmet(t, s, k1, "veth peer -> linux/interface/veth%2F2")

	res := commit(t, s, k2, veth2)
	log := c.take()
	want := []string{
		"create link veth1 (TYPE_VETH, index 1)", "create link veth/2 (TYPE_VETH, index 2)",
		"create address 10.0.0.1/24 on veth1", "create address 2001:db8::1/64 on veth1",
	}
	if diff := cmp.Diff(want, log, cmpSorted, cmp.Comparer(func(a, b string) bool {
		// The order within the pair is the scheduler's; the indexes follow it.
		return strings.Split(a, ", index")[0] == strings.Split(b, ", index")[0]
	})); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	before(t, log, log[0], "create address 10.0.0.1/24 on veth1")
	for _, k := range []string{k1, k2, a1, a2} {
		if st := s.Status(k); st.State != scheduler.CONFIGURED || st.Seq != res.Seq {
			t.Errorf("%s: %s in transaction %d, want CONFIGURED in %d", k, st.State, st.Seq, res.Seq)
		}
	}
	var cycle bool
	for _, op := range res.Executed {
		cycle = cycle || op.Flags&scheduler.FlagCycle != 0
	}
	if !cycle {
		t.Errorf("no operation of %v is flagged CYCLE", res.Executed)
	}
	if m, ok := s.Status(k1).Metadata.(int); !ok || m == 0 {
		t.Errorf("metadata of %s = %#v, want the interface index", k1, s.Status(k1).Metadata)
	}

	addrs.mu.Lock()
	gotKeys := slices.Clone(addrs.keys)
	addrs.mu.Unlock()
	wantKeys := []linuxinterfaces.InterfaceIpAddressesKey{
		{Name: "veth1", IpAddresses: netip.MustParsePrefix("10.0.0.1/24")},
		{Name: "veth1", IpAddresses: netip.MustParsePrefix("2001:db8::1/64")},
	}
	if diff := cmp.Diff(wantKeys, gotKeys, keyCmp); diff != "" {
		t.Errorf("typed keys given to the address handler (-want +got):\n%s", diff)
	}

	// MTU: an update, with the metadata kept; 0 and 1500 are equal.
	veth2b := proto.Clone(veth2).(*linuxinterfaces.Interface)
	veth2b.Mtu = 1500
	commit(t, s, k2, veth2b)
	wantCalls(t, c)
	veth2c := proto.Clone(veth2b).(*linuxinterfaces.Interface) // committed values are never mutated
	veth2c.Mtu = 9000
	commit(t, s, k2, veth2c)
	wantCalls(t, c, fmt.Sprintf("update link veth/2 (index %d, mtu 9000)", s.Status(k2).Metadata))

	// Namespace: a re-create, which takes the peer's dependents along.
	veth1b := proto.Clone(veth1).(*linuxinterfaces.Interface)
	veth1b.Namespace = "ns1"
	commit(t, s, k1, veth1b)
	log = c.take()
	t.Logf("re-create: %q", log)
	for _, call := range []string{"delete address 10.0.0.1/24 on veth1", "delete link veth1 (index"} {
		if !slices.ContainsFunc(log, func(s string) bool { return strings.HasPrefix(s, call) }) {
			t.Errorf("calls %q lack %q", log, call)
		}
	}
	wantStates(t, s, map[string]scheduler.State{k1: scheduler.CONFIGURED, k2: scheduler.CONFIGURED, a1: scheduler.CONFIGURED, a2: scheduler.CONFIGURED})
}

// TestGatewayRouteEndToEnd: a linux route with a gateway stays PENDING
// until its interface has an address whose network contains the gateway
// (case 6), and pends again when that address goes.
func TestGatewayRouteEndToEnd(t *testing.T) {
	t.Parallel()
	c := &calls{}
	s, _ := linuxScheduler(t, c)

	tap := &linuxinterfaces.Interface{Name: "tap0", Type: linuxinterfaces.Interface_TYPE_TAP}
	route := &linuxl3.Route{OutgoingInterface: "tap0", DstNetwork: "10.20.0.0/16", GwAddr: "10.0.0.254"}
	tapKey, routeKey := linuxinterfaces.InterfaceKeyFor(tap), linuxl3.RouteKeyFor(route)

	commit(t, s, tapKey, tap, routeKey, route)
	wantCalls(t, c, "create link tap0 (TYPE_TAP, index 1)")
	wantUnmet(t, s, routeKey, "gateway reachable -> any of linux/interface/tap0/address/ (network contains 10.0.0.254)")

	other := proto.Clone(tap).(*linuxinterfaces.Interface)
	other.IpAddresses = []string{"192.168.0.1/24", "10.0.0.1/30"}
	commit(t, s, tapKey, other)
	wantCalls(t, c, "create address 192.168.0.1/24 on tap0", "create address 10.0.0.1/30 on tap0")
	wantStates(t, s, map[string]scheduler.State{routeKey: scheduler.PENDING})

	reach := proto.Clone(other).(*linuxinterfaces.Interface)
	reach.IpAddresses = append(reach.IpAddresses, "10.0.0.1/24")
	res := commit(t, s, tapKey, reach)
	wantCalls(t, c, "create address 10.0.0.1/24 on tap0", "create linux/route/tap0/10.20.0.0/16")
	if st := s.Status(routeKey); st.State != scheduler.CONFIGURED || st.Seq != res.Seq {
		t.Errorf("%s: %s in transaction %d, want CONFIGURED in %d", routeKey, st.State, st.Seq, res.Seq)
	}

	commit(t, s, tapKey, other)
	wantCalls(t, c, "delete linux/route/tap0/10.20.0.0/16", "delete address 10.0.0.1/24 on tap0")
	wantStates(t, s, map[string]scheduler.State{routeKey: scheduler.PENDING})

	// Without a gateway only the interface matters.
	direct := &linuxl3.Route{OutgoingInterface: "tap0", DstNetwork: "10.30.0.0/16"}
	commit(t, s, linuxl3.RouteKeyFor(direct), direct)
	wantCalls(t, c, "create linux/route/tap0/10.30.0.0/16")
}

// TestInvalidEndToEnd: invalid values become INVALID with the field
// named, and nothing of them reaches the southbound.
func TestInvalidEndToEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		key    string
		value  proto.Message
		fields []string
	}{
		{"bad address element", "linux/interface/eth0",
			&linuxinterfaces.Interface{Name: "eth0", Type: linuxinterfaces.Interface_TYPE_DUMMY, IpAddresses: []string{"10.0.0.1/24", "10.0.0.300/24"}}, []string{"ip_addresses[1]"}},
		{"bad MAC", "linux/interface/eth0",
			&linuxinterfaces.Interface{Name: "eth0", Type: linuxinterfaces.Interface_TYPE_DUMMY, PhysAddress: "nope"}, []string{"phys_address"}},
		{"key of the prefix, value of another key", "linux/interface/eth1",
			&linuxinterfaces.Interface{Name: "eth0", Type: linuxinterfaces.Interface_TYPE_DUMMY}, []string{"(key)"}},
		{"route with a bad gateway", "linux/route/eth0/10.0.0.0/8",
			&linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.0.0.0/8", GwAddr: "10.0.0.1.1"}, []string{"gw_addr"}},
		{"address of another address", "linux/interface/eth0/address/10.0.0.1/24",
			wrapperspb.String("10.0.0.2/24"), []string{"(key)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &calls{}
			s, _ := linuxScheduler(t, c)
			res, err := s.Txn().Set(tc.key, tc.value).CommitAndWait(context.Background())
			var txnErr *scheduler.TxnError
			if !errors.As(err, &txnErr) {
				t.Fatalf("CommitAndWait error = %v, want a *scheduler.TxnError", err)
			}
			if diff := cmp.Diff([]scheduler.Outcome{{Key: tc.key, State: scheduler.INVALID}}, res.Outcomes,
				cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Err" }, cmp.Ignore())); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			st := s.Status(tc.key)
			if diff := cmp.Diff(tc.fields, fieldNames(t, st.LastErr)); diff != "" {
				t.Errorf("invalid fields (-want +got):\n%s\nLastErr: %v", diff, st.LastErr)
			}
			wantCalls(t, c)
		})
	}
}

// TestInvalidBridgeDomainEndToEnd: a bridge domain with two BVIs is
// INVALID, and none of its bindings is derived.
func TestInvalidBridgeDomainEndToEnd(t *testing.T) {
	t.Parallel()
	c := &calls{}
	s := vppScheduler(t, c)
	bd := &vppl2.BridgeDomain{Name: "bd1", Interfaces: []*vppl2.BridgeDomain_Interface{{Name: "if1", Bvi: true}, {Name: "if2", Bvi: true}}}
	key := vppl2.BridgeDomainKeyFor(bd)
	if _, err := s.Txn().Set(key, bd).CommitAndWait(context.Background()); err == nil {
		t.Fatal("CommitAndWait: no error for an invalid bridge domain")
	}
	st := s.Status(key)
	if st.State != scheduler.INVALID {
		t.Errorf("%s: %s, want INVALID", key, st.State)
	}
	if diff := cmp.Diff([]string{"interfaces"}, fieldNames(t, st.LastErr)); diff != "" {
		t.Errorf("invalid fields (-want +got):\n%s", diff)
	}
	if got := s.Statuses("vpp/bd/bd1/"); len(got) != 0 {
		t.Errorf("bindings of an invalid bridge domain: %+v", got)
	}
	wantCalls(t, c)
}
