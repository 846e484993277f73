package vpp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"google.golang.org/protobuf/proto"

	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	vppnat "github.com/kvdescriptor/kvdescriptor/generated/vpp/nat/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// setNAT commits values as set does, NAT44 ones keyed by their generated
// keys too (natKeyOf).
func (e *env) setNAT(values ...proto.Message) {
	e.t.Helper()
	txn := e.s.Txn()
	for _, v := range values {
		txn.Set(natKeyOf(v), v)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		e.t.Logf("commit: %v", err)
	}
}

// natKeyOf is keyOf for the NAT44 models too.
func natKeyOf(v proto.Message) string {
	switch v := v.(type) {
	case *vppnat.Nat44Global:
		return vppnat.Nat44GlobalKeyFor(v)
	case *vppnat.Nat44Interface:
		return vppnat.Nat44InterfaceKeyFor(v)
	case *vppnat.Nat44AddressPool:
		return vppnat.Nat44AddressPoolKeyFor(v)
	case *vppnat.DNat44:
		return vppnat.DNat44KeyFor(v)
	}
	return keyOf(v)
}

// natWrites returns the requests since the last check that change VPP
// (neither a dump nor a read).
func natWrites(f *fakeVPP) []api.Message {
	var out []api.Message
	for _, m := range f.Requests() {
		if n := m.GetMessageName(); !strings.HasSuffix(n, "_dump") && !strings.Contains(n, "_get") && !readRequests[n] {
			out = append(out, m)
		}
	}
	return out
}

// expectWrites checks the requests that changed VPP since the last check.
func expectWrites(t *testing.T, f *fakeVPP, what string, want ...api.Message) {
	t.Helper()
	if diff := cmp.Diff(want, natWrites(f)); diff != "" {
		t.Errorf("%s: requests (-want +got):\n%s", what, diff)
	}
}

func natState(f *fakeVPP) (n fakeNAT) {
	f.Do(func(f *fakeVPP) {
		x := fakeExtOf[*fakeNAT](f)
		n = *x
		n.interfaces = map[uint32]nat_types.NatConfigFlags{}
		for k, v := range x.interfaces {
			n.interfaces[k] = v
		}
		n.addresses, n.static, n.identity = slices.Clone(x.addresses), slices.Clone(x.static), slices.Clone(x.identity)
	})
	return n
}

const natGlobalKey = "vpp/nat44/global"

func vrfTable(id uint32) *vppl3.VrfTable { return &vppl3.VrfTable{Id: id} }

// TestNat44Global: NAT44 interfaces wait for the plugin to be enabled;
// forwarding changes in place; another session count re-enables it (and
// what VPP dropped with it comes back); a resync of what is right makes
// no call; disabling takes the interfaces off first.
func TestNat44Global(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := &vppnat.Nat44Interface{Name: "lo1", Side: vppnat.Nat44Interface_INSIDE}
	e.setNAT(loop("lo1"), in)
	e.expect(scheduler.PENDING, "vpp/nat44/interface/lo1")
	e.f.Requests()

	g := &vppnat.Nat44Global{InsideVrf: 0, Forwarding: true}
	e.setNAT(g)
	e.expect(scheduler.CONFIGURED, natGlobalKey, "vpp/nat44/interface/lo1")
	expectWrites(t, e.f, "enable",
		&nat44_ed.Nat44EdPluginEnableDisable{Enable: true, Sessions: 64512},
		&nat44_ed.Nat44ForwardingEnableDisable{Enable: true},
		&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_INSIDE, SwIfIndex: 1},
	)
	e.resync()
	expectWrites(t, e.f, "a resync of an unchanged NAT44")
	e.expect(scheduler.CONFIGURED, natGlobalKey, "vpp/nat44/interface/lo1")

	// Sessions 0 is VPP's default: the same value.
	e.setNAT(&vppnat.Nat44Global{Sessions: 64512, Forwarding: true})
	expectWrites(t, e.f, "sessions 0 -> 64512")

	// Forwarding: in place.
	e.setNAT(&vppnat.Nat44Global{})
	expectWrites(t, e.f, "forwarding off", &nat44_ed.Nat44ForwardingEnableDisable{})

	// Sessions: the plugin is re-enabled, the interface set again.
	e.setNAT(&vppnat.Nat44Global{Sessions: 1000, OutsideVrf: 2})
	expectWrites(t, e.f, "sessions 1000",
		&nat44_ed.Nat44InterfaceAddDelFeature{Flags: nat_types.NAT_IS_INSIDE, SwIfIndex: 1},
		&nat44_ed.Nat44EdPluginEnableDisable{},
		&nat44_ed.Nat44EdPluginEnableDisable{Enable: true, OutsideVrf: 2, Sessions: 1000},
		&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_INSIDE, SwIfIndex: 1},
	)
	if n := natState(e.f); n.config.Sessions != 1000 || n.config.OutsideVrf != 2 || n.interfaces[1] != nat_types.NAT_IS_INSIDE {
		t.Errorf("VPP's NAT44: %+v, interfaces %v", n.config, n.interfaces)
	}
	e.expect(scheduler.CONFIGURED, natGlobalKey, "vpp/nat44/interface/lo1")

	// Changed behind our back: a resync sets forwarding back.
	e.f.Do(func(f *fakeVPP) { fakeExtOf[*fakeNAT](f).config.ForwardingEnabled = true })
	e.resync()
	expectWrites(t, e.f, "a resync after forwarding was turned on by hand", &nat44_ed.Nat44ForwardingEnableDisable{})

	// Disabled: the interface goes first, and waits.
	e.del(natGlobalKey)
	expectWrites(t, e.f, "disable",
		&nat44_ed.Nat44InterfaceAddDelFeature{Flags: nat_types.NAT_IS_INSIDE, SwIfIndex: 1},
		&nat44_ed.Nat44EdPluginEnableDisable{},
	)
	e.expect(scheduler.PENDING, "vpp/nat44/interface/lo1")
	if n := natState(e.f); n.enabled {
		t.Errorf("VPP's NAT44 still enabled")
	}

	// Enabled by hand: obtained, left alone, and enough for what waits.
	e.f.Do(func(f *fakeVPP) {
		var rv int32
		fakeExtOf[*fakeNAT](f).apply(f, &nat44_ed.Nat44EdPluginEnableDisable{Enable: true}, &rv)
	})
	e.resync()
	e.expect(scheduler.OBTAINED, natGlobalKey)
	e.expect(scheduler.CONFIGURED, "vpp/nat44/interface/lo1")
	expectWrites(t, e.f, "a resync with NAT44 enabled by hand", &nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_INSIDE, SwIfIndex: 1})
}

// TestNat44Interface: a NAT44 interface waits for its interface, is
// re-created on another side, is read back by a resync without a call,
// and goes before its interface; VPP's refusals come back as errors.
func TestNat44Interface(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const key = "vpp/nat44/interface/lo2"
	e.setNAT(&vppnat.Nat44Global{}, &vppnat.Nat44Interface{Name: "lo2", Side: vppnat.Nat44Interface_OUTSIDE})
	e.expect(scheduler.PENDING, key)
	e.setNAT(loop("lo1"), loop("lo2"))
	e.expect(scheduler.CONFIGURED, key)
	e.f.Requests()

	// Another side: re-created.
	e.setNAT(&vppnat.Nat44Interface{Name: "lo2", Side: vppnat.Nat44Interface_INSIDE_AND_OUTSIDE})
	expectWrites(t, e.f, "outside -> both",
		&nat44_ed.Nat44InterfaceAddDelFeature{Flags: nat_types.NAT_IS_OUTSIDE, SwIfIndex: 2},
		&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_INSIDE, SwIfIndex: 2},
		&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_OUTSIDE, SwIfIndex: 2},
	)
	if n := natState(e.f); n.interfaces[2] != nat_types.NAT_IS_INSIDE|nat_types.NAT_IS_OUTSIDE {
		t.Errorf("VPP's NAT44 interfaces %v", n.interfaces)
	}
	// Set by hand on lo1: obtained; ours read back equal.
	e.f.Do(func(f *fakeVPP) { fakeExtOf[*fakeNAT](f).interfaces[1] = nat_types.NAT_IS_INSIDE })
	e.resync()
	expectWrites(t, e.f, "a resync of unchanged NAT44 interfaces")
	e.expect(scheduler.CONFIGURED, key)
	e.expect(scheduler.OBTAINED, "vpp/nat44/interface/lo1")

	// Without a side: refused before VPP is asked.
	e.setNAT(&vppnat.Nat44Interface{Name: "lo3"})
	e.expect(scheduler.INVALID, "vpp/nat44/interface/lo3")

	// The interface goes: NAT44 first, and it waits.
	e.del("vpp/interface/lo2")
	names := e.f.RequestNames()
	if i, j := slices.Index(names, "nat44_interface_add_del_feature"), slices.Index(names, "delete_loopback"); i < 0 || j < 0 || i > j {
		t.Errorf("requests %v: want nat44_interface_add_del_feature before delete_loopback", names)
	}
	e.expect(scheduler.PENDING, key)

	// What VPP refuses: a side set twice, one not set, an unknown
	// interface; anything while NAT44 is off.
	h := &nat44Interfaces{p: e.p}
	lo1 := vppnat.Nat44InterfaceKey{Name: "lo1"}
	if _, err := h.Create(context.Background(), lo1, &vppnat.Nat44Interface{Name: "lo1", Side: vppnat.Nat44Interface_INSIDE}); !errors.Is(err, api.VALUE_EXIST) {
		t.Errorf("inside twice: %v, want VALUE_EXIST", err)
	}
	if err := h.Delete(context.Background(), lo1, &vppnat.Nat44Interface{Name: "lo1", Side: vppnat.Nat44Interface_OUTSIDE}, struct{}{}); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("deleting an outside never set: %v, want kv.ErrNotFound", err)
	}
	e.p.setRetrieved(false, map[string]uint32{"gone": 9})
	if _, err := h.Create(context.Background(), vppnat.Nat44InterfaceKey{Name: "gone"}, &vppnat.Nat44Interface{Name: "gone", Side: vppnat.Nat44Interface_INSIDE}); !errors.Is(err, api.INVALID_SW_IF_INDEX) {
		t.Errorf("unknown sw_if_index: %v, want INVALID_SW_IF_INDEX", err)
	}
	e.del(natGlobalKey) // VPP drops lo1's, set by hand, with the rest
	e.f.Requests()
	if _, err := h.Create(context.Background(), lo1, &vppnat.Nat44Interface{Name: "lo1", Side: vppnat.Nat44Interface_INSIDE}); !errors.Is(err, api.UNSUPPORTED) {
		t.Errorf("NAT44 off: %v, want UNSUPPORTED", err)
	}

	// An interface that goes away takes its NAT44 setting with it.
	e.setNAT(&vppnat.Nat44Global{}, loop("lo2"))
	e.expect(scheduler.CONFIGURED, key)
	var idx uint32
	e.f.Do(func(f *fakeVPP) { idx, _ = f.ifIndex("lo2") })
	if n := natState(e.f); len(n.interfaces) != 1 || n.interfaces[idx] == 0 {
		t.Fatalf("NAT44 interfaces %v, want lo2's (%d) alone", n.interfaces, idx)
	}
	e.f.Do(func(f *fakeVPP) { f.forget(idx) })
	if n := natState(e.f); len(n.interfaces) != 0 {
		t.Errorf("NAT44 interfaces %v after lo2 went", n.interfaces)
	}
}

// TestNat44AddressPool: a pool waits for NAT44 and its VRF table, is
// re-created when changed, read back as itself by a resync (the
// addresses VPP lists one by one), deleted before NAT44 goes; IPv6 is
// refused by the generated Validate, a range backwards and an address
// taken by VPP.
func TestNat44AddressPool(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const key = "vpp/nat44/address-pool/out"
	pool := &vppnat.Nat44AddressPool{Name: "out", FirstIp: "192.0.2.10", LastIp: "192.0.2.12", VrfId: 3}
	e.setNAT(pool, &vppnat.Nat44Global{})
	e.expect(scheduler.PENDING, key)
	e.setNAT(vrfTable(3))
	e.expect(scheduler.CONFIGURED, key)
	a := func(s string) ip_types.IP4Address { return ip4Addr(s) }
	want := &nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: a("192.0.2.10"), LastIPAddress: a("192.0.2.12"), VrfID: 3, IsAdd: true}
	var got []api.Message
	for _, m := range natWrites(e.f) {
		if _, ok := m.(*nat44_ed.Nat44AddDelAddressRange); ok {
			got = append(got, m)
		}
	}
	if diff := cmp.Diff([]api.Message{want}, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if n := natState(e.f); len(n.addresses) != 3 {
		t.Errorf("VPP's NAT44 addresses %v, want 3", n.addresses)
	}
	// An address added by hand: a pool of its own, obtained.
	e.f.Do(func(f *fakeVPP) {
		n := fakeExtOf[*fakeNAT](f)
		n.addresses = append(n.addresses, nat44_ed.Nat44AddressDetails{IPAddress: a("198.51.100.1"), Flags: nat_types.NAT_IS_TWICE_NAT, VrfID: ^uint32(0)})
	})
	e.resync()
	expectWrites(t, e.f, "a resync of an unchanged pool")
	e.expect(scheduler.CONFIGURED, key)
	e.expect(scheduler.OBTAINED, "vpp/nat44/address-pool/twice-nat-198.51.100.1")

	// A single address for twice-NAT, in table 0: re-created.
	e.setNAT(&vppnat.Nat44AddressPool{Name: "out", FirstIp: "192.0.2.10", TwiceNat: true})
	expectWrites(t, e.f, "re-create",
		&nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: a("192.0.2.10"), LastIPAddress: a("192.0.2.12"), VrfID: 3},
		&nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: a("192.0.2.10"), LastIPAddress: a("192.0.2.10"), IsAdd: true, Flags: nat_types.NAT_IS_TWICE_NAT},
	)
	e.resync()
	expectWrites(t, e.f, "a resync of an unchanged twice-NAT pool")

	// Of any table (VPP's tenant VRF ~0): found so by a resync, and the
	// one added by hand too; a table with it is invalid.
	anyVRF := &vppnat.Nat44AddressPool{Name: "any", FirstIp: "203.0.113.1", VrfScope: vppnat.Nat44AddressPool_VRF_SCOPE_ANY}
	e.setNAT(anyVRF)
	expectWrites(t, e.f, "a pool of any table",
		&nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: a("203.0.113.1"), LastIPAddress: a("203.0.113.1"), VrfID: ^uint32(0), IsAdd: true})
	e.resync()
	expectWrites(t, e.f, "a resync of an unchanged pool of any table")
	e.expect(scheduler.CONFIGURED, "vpp/nat44/address-pool/any")
	items, err := (&nat44Pools{p: e.p}).Retrieve(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var hand *vppnat.Nat44AddressPool
	for _, it := range items {
		if it.Key.Name == "twice-nat-198.51.100.1" {
			hand = it.Value
		}
	}
	if want := (&vppnat.Nat44AddressPool{Name: "twice-nat-198.51.100.1", FirstIp: "198.51.100.1", TwiceNat: true, VrfScope: vppnat.Nat44AddressPool_VRF_SCOPE_ANY}); !proto.Equal(hand, want) {
		t.Errorf("the pool added by hand: %v, want %v", hand, want)
	}
	e.setNAT(&vppnat.Nat44AddressPool{Name: "both", FirstIp: "203.0.113.2", VrfId: 3, VrfScope: vppnat.Nat44AddressPool_VRF_SCOPE_ANY})
	e.expect(scheduler.INVALID, "vpp/nat44/address-pool/both")

	// Refused: IPv6 by Validate (no call); backwards and taken by VPP.
	e.setNAT(&vppnat.Nat44AddressPool{Name: "v6", FirstIp: "2001:db8::1"})
	e.expect(scheduler.INVALID, "vpp/nat44/address-pool/v6")
	if st := e.s.Status("vpp/nat44/address-pool/v6"); st.LastErr == nil || !strings.Contains(st.LastErr.Error(), "first_ip") {
		t.Errorf("IPv6 pool: %v, want an error naming first_ip", st.LastErr)
	}
	e.setNAT(&vppnat.Nat44AddressPool{Name: "back", FirstIp: "192.0.2.30", LastIp: "192.0.2.20"},
		&vppnat.Nat44AddressPool{Name: "taken", FirstIp: "192.0.2.10", TwiceNat: true})
	e.expect(scheduler.FAILED, "vpp/nat44/address-pool/back", "vpp/nat44/address-pool/taken")
	expectWrites(t, e.f, "refused pools",
		&nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: a("192.0.2.30"), LastIPAddress: a("192.0.2.20"), IsAdd: true},
		&nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: a("192.0.2.10"), LastIPAddress: a("192.0.2.10"), IsAdd: true, Flags: nat_types.NAT_IS_TWICE_NAT},
	)
	e.del("vpp/nat44/address-pool/back", "vpp/nat44/address-pool/taken")
	e.f.Requests()

	// NAT44 goes: the pool first.
	e.del(natGlobalKey)
	names := e.f.RequestNames()
	if i, j := slices.Index(names, "nat44_add_del_address_range"), slices.Index(names, "nat44_ed_plugin_enable_disable"); i < 0 || j < 0 || i > j {
		t.Errorf("requests %v: want the pool deleted before NAT44 is disabled", names)
	}
	e.expect(scheduler.PENDING, key)
}

// TestDNat44: a DNAT's mappings (a port mapping with twice-NAT, an
// address mapping, an identity mapping in a VRF) wait for NAT44 and their
// VRF table, are added tagged with the label, read back by a resync
// without a call, re-created one by one when changed, and go before
// NAT44; VPP refuses a mapping twice, the generated Validate a twice-NAT
// address without twice-NAT.
func TestDNat44(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	web := &vppnat.DNat44_StaticMapping{ExternalIp: "192.0.2.1", ExternalPort: 80, Protocol: 6, LocalIp: "10.0.0.2", LocalPort: 8080,
		TwiceNat: vppnat.DNat44_TWICE_NAT_ENABLED, TwiceNatPoolIp: "192.0.2.100"}
	host := &vppnat.DNat44_StaticMapping{ExternalIp: "192.0.2.2", Protocol: 17, LocalIp: "10.0.0.3"} // address only: VPP keeps no protocol
	ssh := &vppnat.DNat44_IdentityMapping{VrfId: 5, IpAddress: "10.0.0.1", Protocol: 6, Port: 22}
	self := &vppnat.DNat44_IdentityMapping{IpAddress: "192.0.2.1", Protocol: 17} // address only: VPP keeps no protocol
	d := &vppnat.DNat44{Label: "svc", StaticMappings: []*vppnat.DNat44_StaticMapping{web, host}, IdentityMappings: []*vppnat.DNat44_IdentityMapping{ssh, self}}
	const (
		webKey  = "vpp/nat44/dnat/svc/static/192.0.2.1/proto/6/port/80"
		hostKey = "vpp/nat44/dnat/svc/static/192.0.2.2/proto/17/port/0"
		sshKey  = "vpp/nat44/dnat/svc/identity/vrf/5/10.0.0.1/proto/6/port/22"
		selfKey = "vpp/nat44/dnat/svc/identity/vrf/0/192.0.2.1/proto/17/port/0"
	)
	e.setNAT(d)
	e.expect(scheduler.CONFIGURED, "vpp/nat44/dnat/svc")
	e.expect(scheduler.PENDING, webKey, hostKey, sshKey)
	e.setNAT(&vppnat.Nat44Global{})
	e.expect(scheduler.CONFIGURED, webKey, hostKey, selfKey)
	e.expect(scheduler.PENDING, sshKey)
	e.setNAT(vrfTable(5))
	e.expect(scheduler.CONFIGURED, sshKey)
	a := func(s string) ip_types.IP4Address { return ip4Addr(s) }
	noIf := ^interface_types.InterfaceIndex(0)
	addWeb := &nat44_ed.Nat44AddDelStaticMappingV2{IsAdd: true, Flags: nat_types.NAT_IS_OUT2IN_ONLY | nat_types.NAT_IS_TWICE_NAT, MatchPool: true, PoolIPAddress: a("192.0.2.100"),
		LocalIPAddress: a("10.0.0.2"), ExternalIPAddress: a("192.0.2.1"), Protocol: 6, LocalPort: 8080, ExternalPort: 80, ExternalSwIfIndex: noIf, Tag: "svc"}
	addHost := &nat44_ed.Nat44AddDelStaticMappingV2{IsAdd: true, Flags: nat_types.NAT_IS_OUT2IN_ONLY | nat_types.NAT_IS_ADDR_ONLY,
		LocalIPAddress: a("10.0.0.3"), ExternalIPAddress: a("192.0.2.2"), Protocol: 17, ExternalSwIfIndex: noIf, Tag: "svc"}
	addSSH := &nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, IPAddress: a("10.0.0.1"), Protocol: 6, Port: 22, SwIfIndex: noIf, VrfID: 5, Tag: "svc"}
	addSelf := &nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, Flags: nat_types.NAT_IS_ADDR_ONLY, IPAddress: a("192.0.2.1"), Protocol: 17, SwIfIndex: noIf, Tag: "svc"}
	var got []api.Message
	for _, m := range natWrites(e.f) {
		switch m.(type) {
		case *nat44_ed.Nat44AddDelStaticMappingV2, *nat44_ed.Nat44AddDelIdentityMapping:
			got = append(got, m)
		}
	}
	anyOrder := cmpopts.SortSlices(func(a, b api.Message) bool { return fmt.Sprint(a) < fmt.Sprint(b) }) // independent values
	if diff := cmp.Diff([]api.Message{addWeb, addHost, addSelf, addSSH}, got, anyOrder); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	n := natState(e.f)
	if len(n.static) != 2 || len(n.identity) != 2 || n.static[1].Protocol != 0 || n.identity[0].Protocol != 0 {
		t.Errorf("VPP's mappings: static %+v, identity %+v", n.static, n.identity)
	}

	// A mapping made by hand, untagged: obtained; ours read back equal.
	e.f.Do(func(f *fakeVPP) {
		x := fakeExtOf[*fakeNAT](f)
		x.static = append(x.static, nat44_ed.Nat44StaticMappingDetails{LocalIPAddress: a("10.0.0.9"), ExternalIPAddress: a("192.0.2.9"), Protocol: 6,
			LocalPort: 22, ExternalPort: 2222, ExternalSwIfIndex: noIf})
	})
	e.resync()
	expectWrites(t, e.f, "a resync of unchanged mappings")
	e.expect(scheduler.CONFIGURED, "vpp/nat44/dnat/svc", webKey, hostKey, sshKey, selfKey)
	e.expect(scheduler.OBTAINED, "vpp/nat44/dnat/untagged", "vpp/nat44/dnat/untagged/static/192.0.2.9/proto/6/port/2222")

	// Another local port: that mapping alone is re-created; one removed:
	// deleted alone.
	web2 := proto.Clone(web).(*vppnat.DNat44_StaticMapping)
	web2.LocalPort = 8081
	e.setNAT(&vppnat.DNat44{Label: "svc", StaticMappings: []*vppnat.DNat44_StaticMapping{web2}, IdentityMappings: []*vppnat.DNat44_IdentityMapping{ssh, self}})
	delWeb, delHost, addWeb2 := *addWeb, *addHost, *addWeb
	delWeb.IsAdd, delHost.IsAdd, addWeb2.LocalPort = false, false, 8081
	got = natWrites(e.f)
	slices.SortStableFunc(got, func(x, y api.Message) int { // the two changes are independent
		return boolInt(x.(*nat44_ed.Nat44AddDelStaticMappingV2).ExternalPort == 80) - boolInt(y.(*nat44_ed.Nat44AddDelStaticMappingV2).ExternalPort == 80)
	})
	if diff := cmp.Diff([]api.Message{&delHost, &delWeb, &addWeb2}, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	e.expect(scheduler.CONFIGURED, webKey)
	e.expect(scheduler.NONEXISTENT, hostKey)

	// The same mapping in another DNAT: VPP refuses it.
	e.setNAT(&vppnat.DNat44{Label: "dup", StaticMappings: []*vppnat.DNat44_StaticMapping{web2}})
	e.expect(scheduler.FAILED, "vpp/nat44/dnat/dup/static/192.0.2.1/proto/6/port/80")
	if st := e.s.Status("vpp/nat44/dnat/dup/static/192.0.2.1/proto/6/port/80"); !errors.Is(st.LastErr, api.VALUE_EXIST) {
		t.Errorf("a mapping twice: %v, want VALUE_EXIST", st.LastErr)
	}
	e.del("vpp/nat44/dnat/dup")
	// A twice-NAT address without twice-NAT: invalid, no call.
	e.f.Requests()
	e.setNAT(&vppnat.DNat44{Label: "bad", StaticMappings: []*vppnat.DNat44_StaticMapping{{ExternalIp: "192.0.2.5", LocalIp: "10.0.0.5", TwiceNatPoolIp: "192.0.2.100"}}})
	e.expect(scheduler.INVALID, "vpp/nat44/dnat/bad/static/192.0.2.5/proto/0/port/0")
	expectWrites(t, e.f, "an invalid mapping")
	e.del("vpp/nat44/dnat/bad")

	// NAT44 goes: the mappings first, and they wait.
	e.del(natGlobalKey)
	names := e.f.RequestNames()
	last := slices.Index(names, "nat44_ed_plugin_enable_disable")
	for i, n := range names {
		if strings.HasPrefix(n, "nat44_add_del_") && i > last {
			t.Errorf("requests %v: want the mappings deleted before NAT44 is disabled", names)
		}
	}
	e.expect(scheduler.PENDING, webKey, sshKey, selfKey)
	e.expect(scheduler.CONFIGURED, "vpp/nat44/dnat/svc")
}

// TestDNat44Refused: VPP refuses a mapping that is not there (delete),
// and any while NAT44 is off.
func TestDNat44Refused(t *testing.T) {
	t.Parallel()
	p, _ := newPlugin(t)
	s, id := &staticMappings{p: p}, &identityMappings{p: p}
	k := vppnat.DNat44StaticMappingsKey{Label: "x", StaticMappingsExternalIp: ip4("192.0.2.1"), StaticMappingsProtocol: 6, StaticMappingsExternalPort: 80}
	v := &vppnat.DNat44_StaticMapping{ExternalIp: "192.0.2.1", ExternalPort: 80, Protocol: 6, LocalIp: "10.0.0.1", LocalPort: 80}
	if _, err := s.Create(context.Background(), k, v); !errors.Is(err, api.UNSUPPORTED) {
		t.Errorf("NAT44 off: %v, want UNSUPPORTED", err)
	}
	if _, err := (&nat44Global{p: p}).Create(context.Background(), vppnat.Nat44GlobalKey{}, &vppnat.Nat44Global{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(context.Background(), k, v, struct{}{}); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("deleting a static mapping not there: %v, want kv.ErrNotFound", err)
	}
	ik := vppnat.DNat44IdentityMappingsKey{Label: "x", IdentityMappingsIpAddress: ip4("10.0.0.1")}
	if err := id.Delete(context.Background(), ik, &vppnat.DNat44_IdentityMapping{IpAddress: "10.0.0.1"}, struct{}{}); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("deleting an identity mapping not there: %v, want kv.ErrNotFound", err)
	}
	if _, err := (&nat44Global{p: p}).Create(context.Background(), vppnat.Nat44GlobalKey{}, &vppnat.Nat44Global{}); err == nil {
		t.Errorf("enabling NAT44 twice: no error")
	}
}

// TestNat44VPPRestart: VPP restarts without NAT44; the resync after the
// reconnect enables it again and puts back every NAT44 setting as it was.
func TestNat44VPPRestart(t *testing.T) {
	t.Parallel()
	reconnected := make(chan struct{}, 1)
	e := newEnv(t, WithReconnect(func() { reconnected <- struct{}{} }))
	e.setNAT(&vppnat.Nat44Global{Sessions: 2048, Forwarding: true}, loop("in"), loop("out"),
		&vppnat.Nat44Interface{Name: "in", Side: vppnat.Nat44Interface_INSIDE},
		&vppnat.Nat44Interface{Name: "out", Side: vppnat.Nat44Interface_OUTSIDE},
		&vppnat.Nat44AddressPool{Name: "p", FirstIp: "192.0.2.10", LastIp: "192.0.2.11"},
		&vppnat.DNat44{Label: "d", StaticMappings: []*vppnat.DNat44_StaticMapping{{ExternalIp: "192.0.2.10", ExternalPort: 80, Protocol: 6, LocalIp: "10.0.0.2", LocalPort: 80}},
			IdentityMappings: []*vppnat.DNat44_IdentityMapping{{IpAddress: "192.0.2.11"}}})
	state := func() string {
		n := natState(e.f)
		s := fmt.Sprintf("%v %+v\n", n.enabled, n.config)
		e.f.Do(func(f *fakeVPP) {
			for _, i := range sortedKeys(n.interfaces) {
				s += fmt.Sprintf("%s %v\n", f.ifaces[i].Tag, n.interfaces[i])
			}
		})
		return s + fmt.Sprintf("%+v\n%+v\n%+v\n", n.addresses, n.static, n.identity)
	}
	before := state()
	if n := natState(e.f); !n.enabled || len(n.interfaces) != 2 || len(n.addresses) != 2 || len(n.static) != 1 || len(n.identity) != 1 {
		t.Fatalf("VPP's NAT44 before the restart:\n%s", before)
	}
	e.f.Restart()
	select {
	case <-reconnected:
	case <-time.After(30 * time.Second):
		t.Fatal("no reconnect callback 30s after VPP restarted")
	}
	if n := natState(e.f); n.enabled {
		t.Fatal("the restarted VPP kept NAT44 enabled")
	}
	e.resync()
	for _, st := range e.s.Statuses("vpp/nat44/") {
		if st.State != scheduler.CONFIGURED {
			t.Errorf("after the resync: %s: %s (%v)", st.Key, st.State, st.LastErr)
		}
	}
	if got := state(); got != before {
		t.Errorf("VPP's NAT44 after the resync:\n%s\nwant, as before the restart:\n%s", got, before)
	}
}
