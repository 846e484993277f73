package vpp

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/api"
	vppif "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func subif(name, parent string, s *vppinterfaces.Interface_SubInterface) *vppinterfaces.Interface {
	return &vppinterfaces.Interface{Name: name, Type: vppinterfaces.Interface_TYPE_SUB_INTERFACE, Enabled: true, Parent: parent, SubInterface: s}
}

// onlyDumps checks that the requests since the last check were dumps.
func onlyDumps(t *testing.T, f *fakeVPP, what string) {
	t.Helper()
	for _, n := range f.RequestNames() {
		if !slices.Contains([]string{"sw_interface_dump", "sw_interface_get_table", "ip_address_dump", "bridge_domain_dump", "l2_fib_table_dump",
			"ip_table_dump", "fib_source_dump", "ip_route_v2_dump", "ip_neighbor_dump", "vxlan_tunnel_v2_dump", "ip_unnumbered_dump", "sw_interface_rx_placement_dump", "gre_tunnel_dump", "ipip_tunnel_dump",
			"wireguard_peers_dump", "wireguard_interface_dump", "ipsec_sa_v3_dump"}, n) {
			t.Errorf("%s sent %s", what, n)
		}
	}
}

// resync runs a downstream resync.
func (e *env) resync() {
	e.t.Helper()
	if _, err := e.s.Txn(scheduler.DownstreamResync()).Commit(e.ctx); err != nil {
		e.t.Fatalf("downstream resync: %v", err)
	}
}

func (e *env) del(keys ...string) {
	e.t.Helper()
	txn := e.s.Txn()
	for _, k := range keys {
		txn.Delete(k)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		e.t.Logf("commit: %v", err)
	}
}

// TestSubInterface: a dot1q sub-interface waits for its parent, is
// created on it with its VLAN match, updated in place (admin state, MTU)
// or re-created (another VLAN), read back unchanged by a resync, and
// deleted before its parent.
func TestSubInterface(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sub := subif("lo1.100", "lo1", &vppinterfaces.Interface_SubInterface{SubId: 100, OuterVlanId: 100, ExactMatch: true})
	e.set(nil, sub)
	e.expect(scheduler.PENDING, "vpp/interface/lo1.100")
	if got := e.f.RequestNames(); slices.Contains(got, "create_subif") {
		t.Errorf("a sub-interface without its parent sent %v", got)
	}
	e.set(nil, loop("lo1"))
	e.expect(scheduler.CONFIGURED, "vpp/interface/lo1", "vpp/interface/lo1.100")
	var created []api.Message
	for _, m := range e.f.Requests() {
		if c, ok := m.(*vppif.CreateSubif); ok {
			created = append(created, c)
		}
	}
	want := []api.Message{&vppif.CreateSubif{SwIfIndex: 1, SubID: 100, OuterVlanID: 100,
		SubIfFlags: interface_types.SUB_IF_API_FLAG_ONE_TAG | interface_types.SUB_IF_API_FLAG_EXACT_MATCH}}
	if diff := cmp.Diff(want, created); diff != "" {
		t.Errorf("create_subif (-want +got):\n%s", diff)
	}
	e.f.Do(func(f *fakeVPP) {
		if d := f.ifaces[2]; d == nil || d.InterfaceName != "loop1.100" || d.Tag != "lo1.100" || d.SupSwIfIndex != 1 {
			t.Errorf("VPP's sub-interface: %+v", d)
		}
	})

	// In place: the admin state and the MTU.
	sub2 := subif("lo1.100", "lo1", &vppinterfaces.Interface_SubInterface{SubId: 100, OuterVlanId: 100, ExactMatch: true})
	sub2.Enabled, sub2.Mtu = false, 1500
	e.set(nil, sub2)
	expectRequests(t, e.f, &vppif.HwInterfaceSetMtu{SwIfIndex: 2, Mtu: 1500}, &vppif.SwInterfaceSetFlags{SwIfIndex: 2})

	// Unchanged: a resync reads it back equal (parent and match
	// correlated) and changes nothing.
	e.resync()
	onlyDumps(t, e.f, "a resync of an unchanged sub-interface")
	e.expect(scheduler.CONFIGURED, "vpp/interface/lo1.100")

	// Another VLAN (QinQ, 802.1ad): re-created.
	qinq := subif("lo1.100", "lo1", &vppinterfaces.Interface_SubInterface{SubId: 100, OuterVlanId: 200, InnerVlanId: 300, Dot1Ad: true})
	e.set(nil, qinq)
	e.expect(scheduler.CONFIGURED, "vpp/interface/lo1.100")
	got := e.f.Requests()
	if len(got) < 2 {
		t.Fatalf("requests %v", got)
	}
	if diff := cmp.Diff([]api.Message{&vppif.DeleteSubif{SwIfIndex: 2}, &vppif.CreateSubif{SwIfIndex: 1, SubID: 100, OuterVlanID: 200, InnerVlanID: 300,
		SubIfFlags: interface_types.SUB_IF_API_FLAG_TWO_TAGS | interface_types.SUB_IF_API_FLAG_DOT1AD}}, got[:2]); diff != "" {
		t.Errorf("re-create (-want +got):\n%s", diff)
	}
	e.resync()
	onlyDumps(t, e.f, "a resync of an unchanged QinQ sub-interface")

	// The parent goes: the sub-interface is deleted first, and waits.
	e.del("vpp/interface/lo1")
	names := e.f.RequestNames()
	if i, j := slices.Index(names, "delete_subif"), slices.Index(names, "delete_loopback"); i < 0 || j < 0 || i > j {
		t.Errorf("requests %v: want delete_subif before delete_loopback", names)
	}
	e.expect(scheduler.PENDING, "vpp/interface/lo1.100")
	e.f.Do(func(f *fakeVPP) {
		if len(f.ifaces) != 1 {
			t.Errorf("VPP has %d interfaces, want local0 alone", len(f.ifaces))
		}
	})
}

// TestSubInterfaceRefused: what VPP refuses comes back as an error not
// retried (tags the flags do not match), or is refused by the generated
// validation before VPP is asked (a VLAN id over 4095, no parent).
func TestSubInterfaceRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.set(nil, loop("lo1"))
	e.expect(scheduler.CONFIGURED, "vpp/interface/lo1")
	e.f.Requests()
	// An inner tag without an outer one: VPP says the tag count is wrong.
	_, err := (subInterfaces{e.p}).Create(context.Background(), subif("s", "lo1", &vppinterfaces.Interface_SubInterface{SubId: 1, InnerVlanId: 5}))
	if err == nil || kv.IsRetriable(err) {
		t.Errorf("inner tag alone: %v, want an error not retried", err)
	}
	// The same sub_id twice on one parent.
	e.set(nil, subif("s1", "lo1", &vppinterfaces.Interface_SubInterface{SubId: 7, OuterVlanId: 7}))
	e.set(nil, subif("s2", "lo1", &vppinterfaces.Interface_SubInterface{SubId: 7, OuterVlanId: 8}))
	e.expect(scheduler.CONFIGURED, "vpp/interface/s1")
	if st := e.s.Status("vpp/interface/s2"); st.State == scheduler.CONFIGURED || !errors.Is(st.LastErr, api.SUBIF_ALREADY_EXISTS) {
		t.Errorf("a second sub_id 7: %s (%v), want an error saying it exists", st.State, st.LastErr)
	}
	for _, v := range []*vppinterfaces.Interface{
		subif("s3", "lo1", &vppinterfaces.Interface_SubInterface{SubId: 1, OuterVlanId: 4096}),
		subif("s4", "", nil),
		{Name: "s5", Type: vppinterfaces.Interface_TYPE_LOOPBACK, SubInterface: &vppinterfaces.Interface_SubInterface{SubId: 1}},
	} {
		e.set(nil, v)
		e.expect(scheduler.INVALID, keyOf(v))
	}
}
