package vpp

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/arp"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/l3xc"
	"go.fd.io/govpp/binapi/teib"
	"go.fd.io/govpp/binapi/vrrp"
	"google.golang.org/protobuf/proto"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	vppstn "github.com/kvdescriptor/kvdescriptor/generated/vpp/stn/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// l2l3Key is the key of a value of the models of this group, and of the
// others through keyOf.
func l2l3Key(v proto.Message) string {
	switch v := v.(type) {
	case *vppl2.XConnectPair:
		return vppl2.XConnectPairKeyFor(v)
	case *vppl3.ProxyARP:
		return vppl3.ProxyARPKeyFor(v)
	case *vppl3.L3XConnect:
		return vppl3.L3XConnectKeyFor(v)
	case *vppl3.VRRPEntry:
		return vppl3.VRRPEntryKeyFor(v)
	case *vppl3.TeibEntry:
		return vppl3.TeibEntryKeyFor(v)
	case *vppl3.IPScanNeighbor:
		return vppl3.IPScanNeighborKeyFor(v)
	case *vppstn.Rule:
		return vppstn.RuleKeyFor(v)
	case *vppinterfaces.Span:
		return vppinterfaces.SpanKeyFor(v)
	}
	return keyOf(v)
}

// put commits the values, keyed by l2l3Key.
func (e *env) put(opts []scheduler.TxnOption, values ...proto.Message) *scheduler.Result {
	e.t.Helper()
	txn := e.s.Txn(opts...)
	for _, v := range values {
		txn.Set(l2l3Key(v), v)
	}
	res, err := txn.Commit(e.ctx)
	if err != nil {
		e.t.Logf("commit: %v", err)
	}
	return res
}

// l2l3 is the fake's state of this group, under its lock.
func (e *env) l2l3(fn func(x *fakeL2L3)) {
	e.f.Do(func(f *fakeVPP) { fn(fakeExtOf[*fakeL2L3](f)) })
}

// writes returns the requests since the last check that change VPP
// (neither dumps nor gets), by name.
func writes(f *fakeVPP) []string {
	var out []string
	for _, n := range f.RequestNames() {
		if !strings.HasSuffix(n, "_dump") && !strings.Contains(n, "_get") && !readRequests[n] {
			out = append(out, n)
		}
	}
	return out
}

// noWrites checks that a resync changed nothing in VPP.
func (e *env) noWrites(what string) {
	e.t.Helper()
	e.resync()
	if w := writes(e.f); len(w) != 0 {
		e.t.Errorf("%s: the resync sent %v", what, w)
	}
}

// only returns the requests of type T since the last check.
func only[T api.Message](f *fakeVPP) []T {
	var out []T
	for _, m := range f.Requests() {
		if x, ok := m.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

// expectOnly checks the requests of type T since the last check.
func expectOnly[T api.Message](t *testing.T, f *fakeVPP, want ...T) {
	t.Helper()
	if diff := cmp.Diff(want, only[T](f)); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// firstOf checks that the first write since the last check is a, and
// that b comes after it.
func firstOf(t *testing.T, f *fakeVPP, a, b string) {
	t.Helper()
	w := writes(f)
	if len(w) == 0 || w[0] != a || !slices.Contains(w, b) {
		t.Errorf("requests %v: want %s first, then %s", w, a, b)
	}
}

// TestXConnect: a cross-connect waits for both interfaces, is re-created
// for another transmit interface, read back unchanged by a resync (one
// made by hand obtained), and removed before its interface goes.
func TestXConnect(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	xc := &vppl2.XConnectPair{ReceiveInterface: "lo1", TransmitInterface: "lo2"}
	e.put(nil, xc, loop("lo1"))
	e.expect(scheduler.PENDING, "vpp/xconnect/lo1")
	e.put(nil, loop("lo2"), loop("lo3"), loop("lo4"))
	e.expect(scheduler.CONFIGURED, "vpp/xconnect/lo1")
	expectOnly(t, e.f, &l2.SwInterfaceSetL2Xconnect{RxSwIfIndex: 1, TxSwIfIndex: 2, Enable: true})

	// Another transmit interface: re-created.
	e.put(nil, &vppl2.XConnectPair{ReceiveInterface: "lo1", TransmitInterface: "lo3"})
	e.expect(scheduler.CONFIGURED, "vpp/xconnect/lo1")
	expectOnly(t, e.f, &l2.SwInterfaceSetL2Xconnect{RxSwIfIndex: 1, TxSwIfIndex: 2}, &l2.SwInterfaceSetL2Xconnect{RxSwIfIndex: 1, TxSwIfIndex: 3, Enable: true})
	e.l2l3(func(x *fakeL2L3) { x.xc[4] = 1 }) // vppctl set interface l2 xconnect loop3 loop0
	e.noWrites("cross-connects in order")
	e.expect(scheduler.OBTAINED, "vpp/xconnect/lo4")
	e.expect(scheduler.CONFIGURED, "vpp/xconnect/lo1")

	// lo3 goes: the cross-connect first, and it waits.
	e.del("vpp/interface/lo3")
	firstOf(t, e.f, "sw_interface_set_l2_xconnect", "delete_loopback")
	e.expect(scheduler.PENDING, "vpp/xconnect/lo1")
	e.l2l3(func(x *fakeL2L3) {
		if want := map[uint32]uint32{4: 1}; !cmp.Equal(x.xc, want) {
			t.Errorf("VPP's cross-connects %v, want %v", x.xc, want)
		}
	})
	e.del("vpp/xconnect/lo1")
	if w := writes(e.f); len(w) != 0 {
		t.Errorf("deleting a pending cross-connect sent %v", w)
	}
}

// TestProxyARP: the global value is there at once; each interface and
// range is a derived value that waits for its interface or VRF table, a
// change of the ranges touches only those that changed, a resync changes
// nothing, and an interface's proxy ARP is disabled before it goes.
func TestProxyARP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r0 := &vppl3.ProxyARP_Range{FirstIpAddr: "10.0.0.1", LastIpAddr: "10.0.0.9"}
	r3 := &vppl3.ProxyARP_Range{FirstIpAddr: "10.3.0.1", LastIpAddr: "10.3.0.9", VrfId: 3}
	pa := &vppl3.ProxyARP{Interfaces: []*vppl3.ProxyARP_Interface{{Name: "lo1"}}, Ranges: []*vppl3.ProxyARP_Range{r0, r3}}
	const (
		ifKey = "vpp/proxyarp/interface/lo1"
		r0Key = "vpp/proxyarp/range/vrf/0/10.0.0.1/10.0.0.9"
		r3Key = "vpp/proxyarp/range/vrf/3/10.3.0.1/10.3.0.9"
	)
	e.put(nil, pa)
	e.expect(scheduler.CONFIGURED, "vpp/proxyarp-global", r0Key)
	e.expect(scheduler.PENDING, ifKey, r3Key)
	rng := func(add bool, vrf uint32, lo, hi string) *arp.ProxyArpAddDel {
		return &arp.ProxyArpAddDel{IsAdd: add, Proxy: arp.ProxyArp{TableID: vrf, Low: netip.MustParseAddr(lo).As4(), Hi: netip.MustParseAddr(hi).As4()}}
	}
	expectOnly(t, e.f, rng(true, 0, "10.0.0.1", "10.0.0.9"))
	e.put(nil, loop("lo1"), &vppl3.VrfTable{Id: 3})
	e.expect(scheduler.CONFIGURED, ifKey, r3Key)
	names := e.f.RequestNames()
	e.f.Do(func(f *fakeVPP) {
		x := fakeExtOf[*fakeL2L3](f)
		if !x.proxyIf[1] || len(x.ranges) != 2 {
			t.Errorf("VPP's proxy ARP: interfaces %v, ranges %v (requests %v)", x.proxyIf, x.ranges, names)
		}
	})

	// One range replaced, the other and the interface untouched.
	r4 := &vppl3.ProxyARP_Range{FirstIpAddr: "10.4.0.1", LastIpAddr: "10.4.0.1"}
	e.put(nil, &vppl3.ProxyARP{Interfaces: pa.Interfaces, Ranges: []*vppl3.ProxyARP_Range{r4, r3}})
	if diff := cmp.Diff([]string{"proxy_arp_add_del", "proxy_arp_add_del"}, writes(e.f)); diff != "" {
		t.Errorf("replacing a range (-want +got):\n%s", diff)
	}
	e.l2l3(func(x *fakeL2L3) {
		want := []arp.ProxyArp{rng(true, 3, "10.3.0.1", "10.3.0.9").Proxy, rng(true, 0, "10.4.0.1", "10.4.0.1").Proxy}
		if diff := cmp.Diff(want, x.ranges); diff != "" {
			t.Errorf("VPP's ranges (-want +got):\n%s", diff)
		}
	})
	e.noWrites("proxy ARP in order")

	// lo1 goes: its proxy ARP first.
	e.del("vpp/interface/lo1")
	firstOf(t, e.f, "proxy_arp_intfc_enable_disable", "delete_loopback")
	e.expect(scheduler.PENDING, ifKey)

	// Deleting the global value removes the ranges.
	e.del("vpp/proxyarp-global")
	e.l2l3(func(x *fakeL2L3) {
		if len(x.ranges) != 0 || len(x.proxyIf) != 0 {
			t.Errorf("VPP's proxy ARP after the delete: interfaces %v, ranges %v", x.proxyIf, x.ranges)
		}
	})
	e.expect(scheduler.NONEXISTENT, ifKey, r3Key, "vpp/proxyarp-global")

	// An IPv6 range: invalid (proxy ARP is IPv4's), named, nothing sent.
	e.f.Requests()
	v6 := &vppl3.ProxyARP{Ranges: []*vppl3.ProxyARP_Range{{FirstIpAddr: "10.0.0.1", LastIpAddr: "2001:db8::9"}}}
	e.put(nil, v6)
	e.expect(scheduler.INVALID, "vpp/proxyarp-global")
	if st := e.s.Status("vpp/proxyarp-global"); st.LastErr == nil || !strings.Contains(st.LastErr.Error(), `ranges[0].last_ip_addr: "2001:db8::9" is not an IPv4 address`) {
		t.Errorf("an IPv6 range: %v, want an error naming ranges[0].last_ip_addr", st.LastErr)
	}
	if w := writes(e.f); len(w) != 0 {
		t.Errorf("an invalid range sent %v", w)
	}
	e.del("vpp/proxyarp-global")

	// VPP's refusals: a range in a table that does not exist; one twice;
	// deleting one it does not have.
	h := &proxyARPRanges{p: e.p}
	k := vppl3.ProxyARPRangesKey{RangesVrfId: 9, RangesFirstIpAddr: netip.MustParseAddr("10.9.0.1"), RangesLastIpAddr: netip.MustParseAddr("10.9.0.2")}
	if _, err := h.Create(e.ctx, k, nil); !errors.Is(err, api.NO_SUCH_FIB) {
		t.Errorf("a range in table 9: %v, want VPP's no such FIB", err)
	}
	k.RangesVrfId = 0
	if _, err := h.Create(e.ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Create(e.ctx, k, nil); !errors.Is(err, api.VALUE_EXIST) {
		t.Errorf("a range twice: %v, want VPP's value exists", err)
	}
	k.RangesLastIpAddr = netip.MustParseAddr("10.9.0.3")
	if err := h.Delete(e.ctx, k, nil, struct{}{}); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("deleting a missing range: %v, want not found", err)
	}
}

// TestL3XConnect: a cross-connect waits for its interface and its paths'
// interfaces, its paths are replaced in place, another protocol re-creates
// it, a resync changes nothing, and it is removed before an interface it
// needs goes.
func TestL3XConnect(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	xc := &vppl3.L3XConnect{Interface: "lo1", Paths: []*vppl3.L3XConnect_Path{{OutgoingInterface: "lo2", NextHopAddr: "10.0.0.2", Weight: 1}}}
	e.put(nil, xc, loop("lo2"))
	e.expect(scheduler.PENDING, "vpp/l3xconnect/lo1")
	e.put(nil, loop("lo1"))
	e.expect(scheduler.CONFIGURED, "vpp/l3xconnect/lo1")
	path := func(sw uint32, nh string, w uint8) fib_types.FibPath {
		p := fib_types.FibPath{SwIfIndex: sw, Weight: w}
		if a := netip.MustParseAddr(nh); a.Is6() {
			p.Proto, p.Nh.Address = fib_types.FIB_API_PATH_NH_PROTO_IP6, ip_types.AddressUnionIP6(a.As16())
		} else {
			p.Nh.Address = ip_types.AddressUnionIP4(a.As4())
		}
		return p
	}
	upd := func(sw uint32, ip6 bool, paths ...fib_types.FibPath) *l3xc.L3xcUpdate {
		return &l3xc.L3xcUpdate{L3xc: l3xc.L3xc{SwIfIndex: interface_types.InterfaceIndex(sw), IsIP6: ip6, NPaths: uint8(len(paths)), Paths: paths}}
	}
	expectOnly(t, e.f, upd(2, false, path(1, "10.0.0.2", 1)))

	// A second path: replaced in place.
	two := &vppl3.L3XConnect{Interface: "lo1", Paths: []*vppl3.L3XConnect_Path{xc.Paths[0], {OutgoingInterface: "lo1", NextHopAddr: "10.0.1.2", Weight: 2, Preference: 1}}}
	e.put(nil, two)
	p2 := path(2, "10.0.1.2", 2)
	p2.Preference = 1
	expectOnly(t, e.f, upd(2, false, path(1, "10.0.0.2", 1), p2))
	e.noWrites("an L3 cross-connect in order")

	// Another protocol: re-created.
	six := &vppl3.L3XConnect{Interface: "lo1", Protocol: vppl3.L3XConnect_IPV6, Paths: []*vppl3.L3XConnect_Path{{OutgoingInterface: "lo2", NextHopAddr: "2001:db8::2", Weight: 1}}}
	e.put(nil, six)
	e.expect(scheduler.CONFIGURED, "vpp/l3xconnect/lo1")
	if diff := cmp.Diff([]string{"l3xc_del", "l3xc_update"}, writes(e.f)); diff != "" {
		t.Errorf("another protocol (-want +got):\n%s", diff)
	}
	e.l2l3(func(x *fakeL2L3) {
		if _, ok := x.l3xc[l3xcID{2, true}]; !ok || len(x.l3xc) != 1 {
			t.Errorf("VPP's L3 cross-connects %v, want lo1's IPv6 one alone", x.l3xc)
		}
	})
	e.noWrites("an IPv6 L3 cross-connect in order")

	// A path through lo3, which is not there: it waits for it, and goes
	// before it.
	via3 := &vppl3.L3XConnect{Interface: "lo1", Protocol: vppl3.L3XConnect_IPV6, Paths: []*vppl3.L3XConnect_Path{{OutgoingInterface: "lo3", NextHopAddr: "2001:db8::3", Weight: 1}}}
	e.put(nil, via3)
	e.expect(scheduler.PENDING, "vpp/l3xconnect/lo1")
	if diff := cmp.Diff([]string{"l3xc_del"}, writes(e.f)); diff != "" {
		t.Errorf("a path through a missing interface (-want +got):\n%s", diff)
	}
	e.put(nil, loop("lo3"))
	e.expect(scheduler.CONFIGURED, "vpp/l3xconnect/lo1")
	e.f.Requests()
	e.del("vpp/interface/lo3")
	firstOf(t, e.f, "l3xc_del", "delete_loopback")
	e.expect(scheduler.PENDING, "vpp/l3xconnect/lo1")
	e.put(nil, six)
	e.expect(scheduler.CONFIGURED, "vpp/l3xconnect/lo1")
	e.f.Requests()

	e.del("vpp/interface/lo1")
	firstOf(t, e.f, "l3xc_del", "delete_loopback")
	e.expect(scheduler.PENDING, "vpp/l3xconnect/lo1")

	// VPP's refusals: deleting what is not there; a path through an
	// interface that is not there.
	h := &l3xcs{p: e.p}
	loopbacks(t, e.p, e.f, "lo5")
	if err := h.Delete(e.ctx, vppl3.L3XConnectKey{Interface: "lo5"}, xc, struct{}{}); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("deleting a missing L3 cross-connect: %v, want not found", err)
	}
	e.p.setRetrieved(false, map[string]uint32{"lo5": 3, "gone": 99})
	bad := &vppl3.L3XConnect{Interface: "lo5", Paths: []*vppl3.L3XConnect_Path{{OutgoingInterface: "gone"}}}
	if _, err := h.Create(e.ctx, vppl3.L3XConnectKey{Interface: "lo5"}, bad); !errors.Is(err, api.INVALID_SW_IF_INDEX) {
		t.Errorf("a path through sw_if_index 99: %v, want VPP's invalid sw_if_index", err)
	}
}

// TestVRRP: a virtual router waits for its interface, is created and
// started; stopping it is done in place, another priority re-creates it;
// the schema refuses what VPP would; a resync changes nothing; it goes
// before its interface.
func TestVRRP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	vr := &vppl3.VRRPEntry{Interface: "lo1", VrId: 7, Priority: 100, Interval: 1000, Preempt: true, IpAddresses: []string{"10.0.0.10", "10.0.0.11"}, Enabled: true}
	e.put(nil, vr)
	e.expect(scheduler.PENDING, "vpp/vrrp/lo1/vrid/7")
	e.put(nil, loop("lo1"))
	e.expect(scheduler.CONFIGURED, "vpp/vrrp/lo1/vrid/7")
	addrs := []ip_types.Address{address(netip.MustParseAddr("10.0.0.10")), address(netip.MustParseAddr("10.0.0.11"))}
	add := &vrrp.VrrpVrAddDel{IsAdd: 1, SwIfIndex: 1, VrID: 7, Priority: 100, Interval: 100, Flags: vrrp.VRRP_API_VR_PREEMPT, NAddrs: 2, Addrs: addrs}
	expectOnly(t, e.f, add)
	e.l2l3(func(x *fakeL2L3) {
		if d := x.vr(1, 7, false); d == nil || d.Runtime.State == vrrp.VRRP_API_VR_STATE_INIT {
			t.Errorf("the virtual router in VPP: %+v, want it started", d)
		}
	})
	e.noWrites("a virtual router in order")

	// Stopped in place.
	stopped := proto.Clone(vr).(*vppl3.VRRPEntry)
	stopped.Enabled = false
	e.put(nil, stopped)
	if diff := cmp.Diff([]string{"vrrp_vr_start_stop"}, writes(e.f)); diff != "" {
		t.Errorf("stopping (-want +got):\n%s", diff)
	}
	// Another priority: re-created (stopped: no stop first).
	prio := proto.Clone(stopped).(*vppl3.VRRPEntry)
	prio.Priority = 200
	e.put(nil, prio)
	if diff := cmp.Diff([]string{"vrrp_vr_add_del", "vrrp_vr_add_del"}, writes(e.f)); diff != "" {
		t.Errorf("another priority (-want +got):\n%s", diff)
	}
	e.l2l3(func(x *fakeL2L3) {
		if d := x.vr(1, 7, false); d == nil || d.Config.Priority != 200 || len(x.vrs) != 1 {
			t.Errorf("VPP's virtual routers %v, want one of priority 200", x.vrs)
		}
	})
	e.noWrites("a stopped virtual router in order")
	// 1005 ms is the 100 cs VPP keeps: no change, and a resync finds it
	// in order.
	odd := proto.Clone(prio).(*vppl3.VRRPEntry)
	odd.Interval = 1005
	e.put(nil, odd)
	if w := writes(e.f); len(w) != 0 {
		t.Errorf("an interval within VPP's centisecond sent %v", w)
	}
	e.noWrites("an interval within VPP's centisecond")

	// What the schema refuses.
	for _, v := range []*vppl3.VRRPEntry{
		{Interface: "lo1", VrId: 0, Priority: 1, Interval: 100, IpAddresses: []string{"10.0.0.1"}},
		{Interface: "lo1", VrId: 8, Priority: 0, Interval: 100, IpAddresses: []string{"10.0.0.1"}},
		{Interface: "lo1", VrId: 9, Priority: 1, Interval: 5, IpAddresses: []string{"10.0.0.1"}},
		{Interface: "lo1", VrId: 10, Priority: 1, Interval: 100},
		{Interface: "lo1", VrId: 11, Priority: 1, Interval: 100, IpAddresses: []string{"10.0.0.1", "10.0.0.1"}},
		{Interface: "lo1", VrId: 12, Priority: 1, Interval: 100, IpAddresses: []string{"nope"}},
	} {
		e.put(nil, v)
		e.expect(scheduler.INVALID, l2l3Key(v))
	}
	if w := writes(e.f); len(w) != 0 {
		t.Errorf("invalid virtual routers sent %v", w)
	}
	// What VPP refuses: addresses of two families; one router twice;
	// deleting one that is not there.
	h := &vrrps{p: e.p}
	mixed := &vppl3.VRRPEntry{Interface: "lo1", VrId: 20, Priority: 1, Interval: 100, IpAddresses: []string{"10.0.0.1", "2001:db8::1"}}
	if _, err := h.Create(e.ctx, vppl3.VRRPEntryKey{Interface: "lo1", VrId: 20}, mixed); !errors.Is(err, api.INVALID_ARGUMENT) {
		t.Errorf("two families: %v, want VPP's invalid argument", err)
	}
	if _, err := h.Create(e.ctx, vppl3.VRRPEntryKey{Interface: "lo1", VrId: 7}, prio); !errors.Is(err, api.ENTRY_ALREADY_EXISTS) {
		t.Errorf("a router twice: %v, want VPP's entry exists", err)
	}
	if err := h.Delete(e.ctx, vppl3.VRRPEntryKey{Interface: "lo1", VrId: 21}, mixed, struct{}{}); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("deleting a missing router: %v, want not found", err)
	}

	e.put(nil, vr) // started again, then its interface goes: stopped and deleted first
	e.f.Requests()
	e.del("vpp/interface/lo1")
	firstOf(t, e.f, "vrrp_vr_start_stop", "delete_loopback")
	e.expect(scheduler.PENDING, "vpp/vrrp/lo1/vrid/7")
	e.l2l3(func(x *fakeL2L3) {
		if len(x.vrs) != 0 {
			t.Errorf("VPP's virtual routers %v, want none", x.vrs)
		}
	})
}

// TestTeib: an entry waits for its interface and its next hop's VRF
// table, is re-created for another next hop, a resync changes nothing
// (one made by hand obtained), VPP's refusals come back, and it goes
// before its interface.
func TestTeib(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	te := &vppl3.TeibEntry{Interface: "lo1", PeerAddr: "10.10.0.2", NextHopAddr: "192.168.0.2", VrfId: 3}
	const key = "vpp/teib/lo1/peer/10.10.0.2"
	e.put(nil, te, loop("lo1"))
	e.expect(scheduler.PENDING, key)
	e.put(nil, &vppl3.VrfTable{Id: 3})
	e.expect(scheduler.CONFIGURED, key)
	entry := func(nh string, vrf uint32) teib.TeibEntry {
		return teib.TeibEntry{SwIfIndex: 1, Peer: address(netip.MustParseAddr("10.10.0.2")), Nh: address(netip.MustParseAddr(nh)), NhTableID: vrf}
	}
	expectOnly(t, e.f, &teib.TeibEntryAddDel{IsAdd: 1, Entry: entry("192.168.0.2", 3)})

	// Another next hop: re-created.
	e.put(nil, &vppl3.TeibEntry{Interface: "lo1", PeerAddr: "10.10.0.2", NextHopAddr: "192.168.0.9"})
	expectOnly(t, e.f, &teib.TeibEntryAddDel{Entry: entry("192.168.0.2", 3)}, &teib.TeibEntryAddDel{IsAdd: 1, Entry: entry("192.168.0.9", 0)})
	e.l2l3(func(x *fakeL2L3) {
		hand := entry("192.168.0.7", 0) // vppctl teib loop0 peer 10.10.0.7 nh 192.168.0.7
		hand.Peer = address(netip.MustParseAddr("10.10.0.7"))
		x.teib = append(x.teib, hand)
	})
	e.noWrites("TEIB entries in order")
	e.expect(scheduler.OBTAINED, "vpp/teib/lo1/peer/10.10.0.7")

	h := &teibEntries{p: e.p}
	k := vppl3.TeibEntryKey{Interface: "lo1", PeerAddr: netip.MustParseAddr("10.10.0.2")}
	if _, err := h.Create(e.ctx, k, te); !errors.Is(err, api.ENTRY_ALREADY_EXISTS) {
		t.Errorf("an entry twice: %v, want VPP's entry exists", err)
	}
	k.PeerAddr = netip.MustParseAddr("10.10.0.3")
	if err := h.Delete(e.ctx, k, te, struct{}{}); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("deleting a missing entry: %v, want not found", err)
	}
	if _, err := h.Create(e.ctx, k, &vppl3.TeibEntry{NextHopAddr: "192.168.0.3", VrfId: 9}); !errors.Is(err, api.NO_SUCH_FIB) {
		t.Errorf("a next hop in table 9: %v, want VPP's no such FIB", err)
	}
	e.f.Requests()

	e.del("vpp/interface/lo1")
	firstOf(t, e.f, "teib_entry_add_del", "delete_loopback")
	e.expect(scheduler.PENDING, key)
}

// TestIPScanNeighbor: the settings apply to both tables (a family left
// out at VPP's defaults), a resync changes nothing, deleting them restores
// the defaults, and settings made by hand are obtained.
func TestIPScanNeighbor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const key = "vpp/ipscanneigh-global"
	e.noWrites("VPP's defaults")
	e.expect(scheduler.NONEXISTENT, key)
	v := &vppl3.IPScanNeighbor{Ip4: &vppl3.IPScanNeighbor_Limits{MaxNumber: 1000, MaxAge: 60, Recycle: true}}
	e.put(nil, v)
	e.expect(scheduler.CONFIGURED, key)
	cfg := func(af ip_types.AddressFamily, n, age uint32, recycle bool) *ip_neighbor.IPNeighborConfig {
		return &ip_neighbor.IPNeighborConfig{Af: af, MaxNumber: n, MaxAge: age, Recycle: recycle}
	}
	expectOnly(t, e.f, cfg(ip_types.ADDRESS_IP4, 1000, 60, true), cfg(ip_types.ADDRESS_IP6, 50000, 0, false))
	e.noWrites("settings in order")

	// Updated in place; max_number 0 is VPP's default.
	e.put(nil, &vppl3.IPScanNeighbor{Ip6: &vppl3.IPScanNeighbor_Limits{MaxAge: 30}})
	expectOnly(t, e.f, cfg(ip_types.ADDRESS_IP4, 50000, 0, false), cfg(ip_types.ADDRESS_IP6, 50000, 30, false))
	e.noWrites("settings in order")
	// A family written at the defaults is the family left out: no change,
	// and none at a resync (which reads both tables back in full).
	e.put(nil, &vppl3.IPScanNeighbor{Ip4: &vppl3.IPScanNeighbor_Limits{MaxNumber: 50000}, Ip6: &vppl3.IPScanNeighbor_Limits{MaxAge: 30}})
	if w := writes(e.f); len(w) != 0 {
		t.Errorf("a family written at the defaults sent %v", w)
	}
	e.noWrites("a family written at the defaults")

	e.del(key)
	expectOnly(t, e.f, cfg(ip_types.ADDRESS_IP4, 50000, 0, false), cfg(ip_types.ADDRESS_IP6, 50000, 0, false))
	e.l2l3(func(x *fakeL2L3) {
		for af, c := range x.neighCfg {
			if c.MaxNumber != 50000 || c.MaxAge != 0 || c.Recycle {
				t.Errorf("table %v after the delete: %+v, want VPP's defaults", af, c)
			}
		}
	})
	e.l2l3(func(x *fakeL2L3) {
		x.neighCfg[ip_types.ADDRESS_IP6] = ip_neighbor.IPNeighborConfigGetReply{MaxNumber: 10}
	}) // by hand
	e.noWrites("settings made by hand")
	e.expect(scheduler.OBTAINED, key)
}

// TestL2L3AgentRestart restarts the agent over a VPP that holds the
// values of every model of the group: a new plugin and scheduler find
// them all, and the resync makes no call but reads.
func TestL2L3AgentRestart(t *testing.T) {
	t.Parallel()
	values := []proto.Message{
		loop("lo1"), loop("lo2"), &vppl3.VrfTable{Id: 3},
		&vppl2.XConnectPair{ReceiveInterface: "lo1", TransmitInterface: "lo2"},
		&vppl3.ProxyARP{Interfaces: []*vppl3.ProxyARP_Interface{{Name: "lo2"}}, Ranges: []*vppl3.ProxyARP_Range{{FirstIpAddr: "10.3.0.1", LastIpAddr: "10.3.0.9", VrfId: 3}}},
		&vppl3.L3XConnect{Interface: "lo2", Protocol: vppl3.L3XConnect_IPV6, Paths: []*vppl3.L3XConnect_Path{{OutgoingInterface: "lo1", NextHopAddr: "2001:db8::2", Weight: 1}}},
		&vppl3.VRRPEntry{Interface: "lo2", VrId: 1, Priority: 10, Interval: 250, Unicast: true, IpAddresses: []string{"2001:db8::10"}, Enabled: true},
		&vppl3.TeibEntry{Interface: "lo2", PeerAddr: "10.10.0.2", NextHopAddr: "192.168.0.2", VrfId: 3},
		&vppl3.IPScanNeighbor{Ip6: &vppl3.IPScanNeighbor_Limits{MaxNumber: 100}},
	}
	f := newFakeVPP(t)
	run := func() *env {
		e := &env{t: t, ctx: context.Background(), f: f}
		var err error
		if e.s, err = scheduler.New(scheduler.WithLogger(testLogger(t))); err != nil {
			t.Fatal(err)
		}
		if e.p, err = New(WithAdapter(f), WithLogger(testLogger(t))); err != nil {
			t.Fatal(err)
		}
		if err := e.s.Register(e.p.Descriptors()...); err != nil {
			t.Fatal(err)
		}
		return e
	}
	first := run()
	first.put(nil, values...)
	for _, st := range first.s.Statuses("vpp/") {
		if st.State != scheduler.CONFIGURED && st.Key != "vpp/interface/local0" {
			t.Errorf("%s: %s (%v)", st.Key, st.State, st.LastErr)
		}
	}
	_ = first.s.Close(first.ctx)
	_ = first.p.Close()
	f.Requests()

	e := run()
	t.Cleanup(func() { _ = e.s.Close(e.ctx); _ = e.p.Close() })
	res := e.put([]scheduler.TxnOption{scheduler.FullResync()}, values...)
	for _, op := range res.Executed {
		if op.Kind == scheduler.OpCreate || op.Kind == scheduler.OpUpdate || op.Kind == scheduler.OpDelete {
			t.Errorf("the resync of a VPP in order made %s %s", op.Kind, op.Key)
		}
	}
	var keys []string
	for _, st := range e.s.Statuses("vpp/") {
		keys = append(keys, st.Key)
		if st.State != scheduler.CONFIGURED && st.Key != "vpp/interface/local0" {
			t.Errorf("%s: %s (%v)", st.Key, st.State, st.LastErr)
		}
	}
	want := []string{"vpp/interface/lo1", "vpp/interface/lo2", "vpp/interface/local0", "vpp/ipscanneigh-global", "vpp/l3xconnect/lo2", "vpp/proxyarp-global",
		"vpp/proxyarp/interface/lo2", "vpp/proxyarp/range/vrf/3/10.3.0.1/10.3.0.9", "vpp/teib/lo2/peer/10.10.0.2", "vpp/vrf-table/3", "vpp/vrrp/lo2/vrid/1", "vpp/xconnect/lo1"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("values after the restart (-want +got):\n%s", diff)
	}
	if w := writes(f); len(w) != 0 {
		t.Errorf("the resync sent %v", w)
	}
}
