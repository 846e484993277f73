package vpp

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// noLifecycle checks that no call created or deleted an interface.
func noLifecycle(t *testing.T, names []string, what string) {
	t.Helper()
	for _, n := range names {
		if slices.Contains([]string{"create_loopback", "delete_loopback", "memif_create_v2", "memif_delete", "tap_create_v3", "tap_delete_v2",
			"af_packet_create_v3", "af_packet_delete", "create_subif", "delete_subif", "vxlan_add_del_tunnel_v3"}, n) {
			t.Errorf("%s sent %s", what, n)
		}
	}
}

// TestDPDKInterface: a hardware interface VPP found is adopted by its
// name and configured (tag, MTU, VRF, addresses, admin state), updated in
// place, read back unchanged, and released by a delete (down, default
// VRF, untagged) but never deleted; one VPP does not have is not
// configured, and nothing is created for it.
func TestDPDKInterface(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var hw uint32
	e.f.Do(func(f *fakeVPP) { hw = f.addHardware("GigabitEthernet0/8/0") })
	e.resync() // the agent's start: VPP's interfaces are read
	eth := &vppinterfaces.Interface{Name: "GigabitEthernet0/8/0", Type: vppinterfaces.Interface_TYPE_DPDK, Enabled: true, Mtu: 1500, Vrf: 3,
		IpAddresses: []string{"192.0.2.1/24"}}
	e.f.Requests()
	e.set(nil, &vppl3.VrfTable{Id: 3}, eth)
	e.expect(scheduler.CONFIGURED, keyOf(eth), "vpp/interface/GigabitEthernet0%2F8%2F0/address/192.0.2.1/24")
	noLifecycle(t, e.f.RequestNames(), "adopting a DPDK interface")
	e.f.Do(func(f *fakeVPP) {
		d := f.ifaces[hw]
		if d.Tag != "GigabitEthernet0/8/0" || d.LinkMtu != 1500 || d.Flags&up == 0 || f.ifVrf[hw] != 3 || len(f.addrs[hw]) != 1 {
			t.Errorf("VPP's interface: %+v, VRF %d, addresses %v", d, f.ifVrf[hw], f.addrs[hw])
		}
	})
	e.resync()
	onlyDumps(t, e.f, "a resync of an unchanged DPDK interface")

	// In place: the MTU.
	eth2 := proto.Clone(eth).(*vppinterfaces.Interface)
	eth2.Mtu = 9000
	e.set(nil, eth2)
	names := e.f.RequestNames()
	if !slices.Equal(names, []string{"hw_interface_set_mtu"}) {
		t.Errorf("an MTU change sent %v", names)
	}

	// Deleted: released, not deleted.
	e.del(keyOf(eth))
	noLifecycle(t, e.f.RequestNames(), "releasing a DPDK interface")
	e.f.Do(func(f *fakeVPP) {
		d := f.ifaces[hw]
		if d == nil || d.Tag != "" || d.Flags&up != 0 || f.ifVrf[hw] != 0 || len(f.addrs[hw]) != 0 {
			t.Errorf("VPP's interface after the delete: %+v, VRF %d, addresses %v; want it there, untagged, down, in VRF 0, without addresses", d, f.ifVrf[hw], f.addrs[hw])
		}
	})

	// Hardware VPP does not have.
	missing := &vppinterfaces.Interface{Name: "GigabitEthernet0/9/0", Type: vppinterfaces.Interface_TYPE_DPDK, Enabled: true}
	e.set(nil, missing)
	if st := e.s.Status(keyOf(missing)); st.State == scheduler.CONFIGURED || st.LastErr == nil {
		t.Errorf("missing hardware: %s (%v), want an error", st.State, st.LastErr)
	}
	noLifecycle(t, e.f.RequestNames(), "missing hardware")
}
