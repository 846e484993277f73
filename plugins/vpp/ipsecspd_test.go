package vpp

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/ipsec"
	"go.fd.io/govpp/binapi/ipsec_types"
	"google.golang.org/protobuf/proto"

	vppipsec "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipsec/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func spd(index uint32, ifs ...string) *vppipsec.SecurityPolicyDatabase {
	v := &vppipsec.SecurityPolicyDatabase{Index: index}
	for _, n := range ifs {
		v.Interfaces = append(v.Interfaces, &vppipsec.SecurityPolicyDatabase_Interface{Name: n})
	}
	return v
}

// spdState is the fake's SPDs: each SPD's id with the tags of the
// interfaces bound to it, sorted ("1:if1,if2").
func spdState(e *env) []string {
	var out []string
	e.f.Do(func(f *fakeVPP) {
		x := fakeExtOf[*fakeSPD](f)
		for _, id := range sortedKeys(x.spds) {
			var ifs []string
			for i, s := range x.bound {
				if s == id {
					ifs = append(ifs, f.ifaces[i].Tag)
				}
			}
			slices.Sort(ifs)
			out = append(out, strings.Join(append([]string{string(rune('0' + id))}, ifs...), ":"))
		}
	})
	return out
}

// TestIPsecSPD: an SPD is added at once, each of its interfaces bound
// when the interface exists (PENDING before) and unbound before the
// interface goes; a new interface is bound without touching the SPD; a
// resync reads all back unchanged; an SPD made by hand is obtained with
// its interfaces; deleting the SPD unbinds first. VPP refuses a second
// SPD on an interface.
func TestIPsecSPD(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.set(nil, spd(1, "if1"))
	e.expect(scheduler.CONFIGURED, "vpp/ipsec/spd/1")
	e.expect(scheduler.PENDING, "vpp/ipsec/spd/1/interface/if1")
	e.set(nil, loop("if1"))
	e.expect(scheduler.CONFIGURED, "vpp/ipsec/spd/1/interface/if1")
	want := []api.Message{&ipsec.IpsecSpdAddDel{IsAdd: true, SpdID: 1}, &ipsec.IpsecInterfaceAddDelSpd{IsAdd: true, SwIfIndex: 1, SpdID: 1}}
	if diff := cmp.Diff(want, requestsOf(e.f, "ipsec_spd_add_del", "ipsec_interface_add_del_spd")); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	e.resync()
	onlyReads(t, e.f, "a resync of an unchanged SPD")
	e.expect(scheduler.CONFIGURED, "vpp/ipsec/spd/1", "vpp/ipsec/spd/1/interface/if1")

	e.set(nil, loop("if2"), spd(1, "if1", "if2"))
	if got := writes(e.f); !slices.Contains(got, "ipsec_interface_add_del_spd") || slices.Contains(got, "ipsec_spd_add_del") {
		t.Errorf("a new interface sent %v, want its binding alone", got)
	}
	if got := spdState(e); !slices.Equal(got, []string{"1:if1:if2"}) {
		t.Errorf("VPP's SPDs: %v", got)
	}
	// The interface goes: unbound first, the binding waits for it again.
	e.del("vpp/interface/if1")
	if got := writes(e.f); len(got) == 0 || got[0] != "ipsec_interface_add_del_spd" {
		t.Errorf("deleting a bound interface sent %v, want the unbinding first", got)
	}
	e.expect(scheduler.PENDING, "vpp/ipsec/spd/1/interface/if1")
	e.expect(scheduler.CONFIGURED, "vpp/ipsec/spd/1/interface/if2")

	// An SPD made by hand, with an interface: obtained.
	e.f.Do(func(f *fakeVPP) {
		x := fakeExtOf[*fakeSPD](f)
		x.spds[7] = true
	})
	e.resync()
	onlyReads(t, e.f, "a resync with an SPD made by hand")
	e.expect(scheduler.OBTAINED, "vpp/ipsec/spd/7")

	// VPP refuses a second SPD on if2 ("spd already assigned"), for good:
	// FAILED, not retried.
	e.set(nil, spd(2, "if2"))
	if st := e.s.Status("vpp/ipsec/spd/2/interface/if2"); st.State != scheduler.FAILED || !errors.Is(st.LastErr, api.SYSCALL_ERROR_2) || kv.IsRetriable(st.LastErr) {
		t.Errorf("a second SPD on an interface: %s %v (retriable %v), want VPP's refusal, not retriable", st.State, st.LastErr, kv.IsRetriable(st.LastErr))
	}
	e.f.RequestNames()
	// Its failed binding is not undone (which would unbind if2 from SPD 1).
	e.del("vpp/ipsec/spd/2")
	if got, state := writes(e.f), spdState(e); !slices.Equal(got, []string{"ipsec_spd_add_del"}) || !slices.Equal(state, []string{"1:if2", "7"}) {
		t.Errorf("deleting SPD 2 sent %v, leaving %v; want SPD 2 deleted alone", got, state)
	}
	e.del("vpp/ipsec/spd/1")
	if got := writes(e.f); !slices.Equal(got, []string{"ipsec_interface_add_del_spd", "ipsec_spd_add_del"}) {
		t.Errorf("deleting the SPD sent %v, want the binding, then the SPD", got)
	}
	if got := spdState(e); !slices.Equal(got, []string{"7"}) {
		t.Errorf("VPP's SPDs: %v, want the one made by hand", got)
	}
}

func policy(spdIndex uint32, name string, out bool, sa uint32) *vppipsec.SecurityPolicy {
	v := &vppipsec.SecurityPolicy{SpdIndex: spdIndex, Name: name, Priority: 10, IsOutbound: out, LocalAddrStart: "10.0.0.0", LocalAddrStop: "10.0.0.255",
		RemoteAddrStart: "10.1.0.0", RemoteAddrStop: "10.1.0.255", Protocol: 6, LocalPortStart: 80}
	if sa != 0 {
		v.Action, v.SaIndex = vppipsec.SecurityPolicy_ACTION_PROTECT, sa
	}
	return v
}

func fakePolicies(e *env) (out []ipsec_types.IpsecSpdEntry) {
	e.f.Do(func(f *fakeVPP) { out = slices.Clone(fakeExtOf[*fakeSPD](f).policies) })
	return out
}

// TestIPsecPolicy: a policy waits for its SPD and, to protect, for its
// SA; it is added with its ranges (the defaults filled in: whole ranges,
// a stop port of 65535), read back unchanged by a resync (VPP's any
// protocol as 0), re-created for a change, removed before its SA goes; a
// policy VPP has and none names is obtained as vpp-N. What the schema,
// the handler or VPP refuses is refused, naming the field.
func TestIPsecPolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out := policy(1, "out", true, 5)
	bypass := &vppipsec.SecurityPolicy{SpdIndex: 1, Name: "any", Priority: -5}
	e.set(nil, out, bypass)
	e.expect(scheduler.PENDING, "vpp/ipsec/spd/1/policy/out", "vpp/ipsec/spd/1/policy/any")
	e.set(nil, spd(1))
	e.expect(scheduler.CONFIGURED, "vpp/ipsec/spd/1/policy/any")
	e.expect(scheduler.PENDING, "vpp/ipsec/spd/1/policy/out")
	e.set(nil, testSA(5, 0x55))
	e.expect(scheduler.CONFIGURED, "vpp/ipsec/spd/1/policy/out")
	a := func(s string) ip_types.Address { return address(netip.MustParseAddr(s)) }
	want := []api.Message{
		&ipsec.IpsecSpdEntryAddDelV2{IsAdd: true, Entry: ipsec_types.IpsecSpdEntryV2{SpdID: 1, Priority: -5,
			RemoteAddressStart: a("0.0.0.0"), RemoteAddressStop: a("255.255.255.255"), LocalAddressStart: a("0.0.0.0"), LocalAddressStop: a("255.255.255.255"),
			RemotePortStop: 65535, LocalPortStop: 65535}},
		&ipsec.IpsecSpdEntryAddDelV2{IsAdd: true, Entry: ipsec_types.IpsecSpdEntryV2{SpdID: 1, Priority: 10, IsOutbound: true, SaID: 5,
			Policy: ipsec_types.IPSEC_API_SPD_ACTION_PROTECT, Protocol: 6,
			RemoteAddressStart: a("10.1.0.0"), RemoteAddressStop: a("10.1.0.255"), LocalAddressStart: a("10.0.0.0"), LocalAddressStop: a("10.0.0.255"),
			RemotePortStop: 65535, LocalPortStart: 80, LocalPortStop: 65535}},
	}
	if diff := cmp.Diff(want, requestsOf(e.f, "ipsec_spd_entry_add_del_v2")); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if p := fakePolicies(e); len(p) != 2 || p[0].Priority != 10 || p[1].Protocol != 255 {
		t.Errorf("VPP's policies: %+v, want the priority 10 first, the other of any protocol", p)
	}
	e.resync()
	onlyReads(t, e.f, "a resync of unchanged policies")
	e.expect(scheduler.CONFIGURED, "vpp/ipsec/spd/1/policy/out", "vpp/ipsec/spd/1/policy/any")

	// Another priority re-creates it.
	moved := proto.Clone(out).(*vppipsec.SecurityPolicy)
	moved.Priority = 20
	e.set(nil, moved)
	got := only[*ipsec.IpsecSpdEntryAddDelV2](e.f)
	if len(got) != 2 || got[0].IsAdd || got[0].Entry.Priority != 10 || !got[1].IsAdd || got[1].Entry.Priority != 20 {
		t.Errorf("another priority sent %+v, want the policy deleted and added", got)
	}
	if p := fakePolicies(e); len(p) != 2 || p[0].Priority != 20 {
		t.Errorf("VPP's policies: %+v", p)
	}

	// A policy made by hand: obtained.
	e.f.Do(func(f *fakeVPP) {
		x := fakeExtOf[*fakeSPD](f)
		x.policies = append(x.policies, ipsec_types.IpsecSpdEntry{SpdID: 1, Priority: -10, Policy: ipsec_types.IPSEC_API_SPD_ACTION_DISCARD, Protocol: 17,
			RemoteAddressStart: a("::"), RemoteAddressStop: a("::1"), LocalAddressStart: a("::"), LocalAddressStop: a("::1"), RemotePortStop: 53, LocalPortStop: 53})
	})
	e.resync()
	onlyReads(t, e.f, "a resync with a policy made by hand")
	e.expect(scheduler.OBTAINED, "vpp/ipsec/spd/1/policy/vpp-2")
	e.expect(scheduler.CONFIGURED, "vpp/ipsec/spd/1/policy/out", "vpp/ipsec/spd/1/policy/any")

	// The SA goes: the policy first (VPP refuses to delete an SA in use).
	e.del("vpp/ipsec/sa/5")
	if got := writes(e.f); len(got) != 2 || got[0] != "ipsec_spd_entry_add_del_v2" || got[1] != "ipsec_sad_entry_add_del_v3" {
		t.Errorf("deleting the SA sent %v, want the policy deleted first", got)
	}
	e.expect(scheduler.PENDING, "vpp/ipsec/spd/1/policy/out")
	if p := fakePolicies(e); len(p) != 2 {
		t.Errorf("VPP's policies: %+v, want the bypass and the one made by hand", p)
	}

	mixed := policy(1, "mixed", false, 0)
	mixed.LocalAddrStart, mixed.LocalAddrStop = "2001:db8::", "2001:db8::ff"
	noSA := policy(1, "nosa", false, 0)
	noSA.Action = vppipsec.SecurityPolicy_ACTION_PROTECT
	resolve := policy(1, "resolve", false, 0)
	resolve.Action = 2
	anyProto := policy(1, "proto", false, 0)
	anyProto.Protocol = 255
	bypassSA := policy(1, "bypasssa", false, 0)
	bypassSA.SaIndex = 5
	for _, tc := range []struct {
		v     *vppipsec.SecurityPolicy
		field string
	}{{mixed, "local_addr_start"}, {noSA, "sa_index"}, {resolve, "action"}, {anyProto, "protocol"}, {bypassSA, "sa_index"}} {
		e.set(nil, tc.v)
		st := e.s.Status(keyOf(tc.v))
		if st.State != scheduler.INVALID || !strings.Contains(errText(st.LastErr), tc.field) {
			t.Errorf("policy %q: %s %v, want INVALID naming %s", tc.v.GetName(), st.State, st.LastErr, tc.field)
		}
	}
	// VPP refuses RESOLVE, a policy of an SPD it has not, and a protecting
	// one whose SA it has not.
	h := securityPolicies{e.p}
	for _, tc := range []struct {
		v    *vppipsec.SecurityPolicy
		want api.VPPApiError
	}{{resolve, api.UNIMPLEMENTED}, {policy(9, "x", false, 0), api.SYSCALL_ERROR_1}, {policy(1, "x", true, 99), api.SYSCALL_ERROR_1}} {
		if _, err := h.Create(e.ctx, vppipsec.SecurityPolicyKey{}, tc.v); !errors.Is(err, tc.want) {
			t.Errorf("policy %+v: %v, want %v", tc.v, err, tc.want)
		}
	}
}

func protection(iface string, out uint32, in ...uint32) *vppipsec.TunnelProtection {
	return &vppipsec.TunnelProtection{Interface: iface, SaOut: out, SaIn: in}
}

// TestIPsecTunnelProtection: a protection waits for its tunnel and its
// SAs; it is added, read back unchanged by a resync, its SAs changed in
// place by one update, removed before an SA or the tunnel goes; one made
// by hand is obtained. What the schema or VPP refuses is refused.
func TestIPsecTunnelProtection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.set(nil, protection("ip1", 1, 2))
	e.expect(scheduler.PENDING, "vpp/ipsec/tunnel-protection/ip1")
	e.set(nil, ipipIf("ip1", "10.0.0.1", "10.0.0.2"), testSA(1, 1))
	e.expect(scheduler.PENDING, "vpp/ipsec/tunnel-protection/ip1") // inbound SA 2 is not there
	e.set(nil, testSA(2, 2), testSA(3, 3))
	e.expect(scheduler.CONFIGURED, "vpp/ipsec/tunnel-protection/ip1")
	want := []api.Message{&ipsec.IpsecTunnelProtectUpdate{Tunnel: ipsec.IpsecTunnelProtect{SwIfIndex: 1, SaOut: 1, NSaIn: 1, SaIn: []uint32{2}}}}
	if diff := cmp.Diff(want, requestsOf(e.f, "ipsec_tunnel_protect_update", "ipsec_tunnel_protect_del")); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	e.resync()
	onlyReads(t, e.f, "a resync of an unchanged protection")
	e.expect(scheduler.CONFIGURED, "vpp/ipsec/tunnel-protection/ip1")

	e.set(nil, protection("ip1", 1, 3, 2))
	if got := writes(e.f); !slices.Equal(got, []string{"ipsec_tunnel_protect_update"}) {
		t.Errorf("new inbound SAs sent %v, want one update in place", got)
	}
	e.f.Do(func(f *fakeVPP) {
		if p := fakeExtOf[*fakeSPD](f).protect[1]; !slices.Equal(p.SaIn, []uint32{3, 2}) {
			t.Errorf("VPP's protection: %+v", p)
		}
	})
	e.resync()
	onlyReads(t, e.f, "a resync of an updated protection")

	// A protection made by hand on a tunnel we have: obtained.
	e.set(nil, ipipIf("ip2", "10.0.0.1", "10.0.0.3"))
	e.f.Do(func(f *fakeVPP) {
		fakeExtOf[*fakeSPD](f).protect[2] = ipsec.IpsecTunnelProtect{SwIfIndex: 2, SaOut: 3, NSaIn: 1, SaIn: []uint32{3}}
	})
	e.resync()
	e.expect(scheduler.OBTAINED, "vpp/ipsec/tunnel-protection/ip2")
	e.f.Do(func(f *fakeVPP) { delete(fakeExtOf[*fakeSPD](f).protect, 2) })
	e.resync()
	e.f.RequestNames()

	// An inbound SA goes: the protection first (VPP refuses to delete an
	// SA in use); it comes back with the SA.
	e.del("vpp/ipsec/sa/3")
	if got := writes(e.f); !slices.Equal(got, []string{"ipsec_tunnel_protect_del", "ipsec_sad_entry_add_del_v3"}) {
		t.Errorf("deleting an inbound SA sent %v, want the protection removed first", got)
	}
	e.expect(scheduler.PENDING, "vpp/ipsec/tunnel-protection/ip1")
	e.set(nil, testSA(3, 3))
	e.expect(scheduler.CONFIGURED, "vpp/ipsec/tunnel-protection/ip1")
	e.f.RequestNames()
	// The tunnel goes: the protection first.
	e.del("vpp/interface/ip1")
	if got := writes(e.f); len(got) < 2 || got[0] != "ipsec_tunnel_protect_del" || got[len(got)-1] != "ipip_del_tunnel" {
		t.Errorf("deleting the tunnel sent %v, want the protection removed first", got)
	}
	e.expect(scheduler.PENDING, "vpp/ipsec/tunnel-protection/ip1")

	for _, tc := range []struct {
		v     *vppipsec.TunnelProtection
		field string
	}{{protection("ip2", 0, 2), "sa_out"}, {protection("ip2", 1), "sa_in"}, {protection("ip2", 1, 2, 2), "sa_in"}, {protection("ip2", 1, 2, 3, 4, 5, 6), "sa_in"}} {
		e.set(nil, tc.v)
		st := e.s.Status(keyOf(tc.v))
		if st.State != scheduler.INVALID || !strings.Contains(errText(st.LastErr), tc.field) {
			t.Errorf("protection %+v: %s %v, want INVALID naming %s", tc.v, st.State, st.LastErr, tc.field)
		}
	}
	// VPP refuses to protect an interface that is not a tunnel, and SAs
	// it has not.
	e.set(nil, loop("lo"))
	h := tunnelProtections{e.p}
	for _, tc := range []struct {
		v    *vppipsec.TunnelProtection
		want api.VPPApiError
	}{{protection("lo", 1, 2), api.INVALID_SW_IF_INDEX}, {protection("ip2", 1, 99), api.INVALID_VALUE}} {
		if _, err := h.Create(e.ctx, vppipsec.TunnelProtectionKey{Interface: tc.v.Interface}, tc.v); !errors.Is(err, tc.want) {
			t.Errorf("protection %+v: %v, want %v", tc.v, err, tc.want)
		}
	}
}
