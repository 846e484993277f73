package vpp

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/vxlan"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func vxlanIf(name, src, dst string, vni uint32, mcast string) *vppinterfaces.Interface {
	return &vppinterfaces.Interface{Name: name, Type: vppinterfaces.Interface_TYPE_VXLAN_TUNNEL, Enabled: true,
		Vxlan: &vppinterfaces.Interface_Vxlan{SrcAddress: src, DstAddress: dst, Vni: vni}, VxlanMulticast: mcast}
}

// vxlanRequests returns the vxlan_add_del_tunnel_v3 requests since the
// last check.
func vxlanRequests(f *fakeVPP) []*vxlan.VxlanAddDelTunnelV3 {
	var out []*vxlan.VxlanAddDelTunnelV3
	for _, m := range f.Requests() {
		if x, ok := m.(*vxlan.VxlanAddDelTunnelV3); ok {
			out = append(out, x)
		}
	}
	return out
}

func vxlanReq(add bool, src, dst string, vni uint32, mcast interface_types.InterfaceIndex) *vxlan.VxlanAddDelTunnelV3 {
	return &vxlan.VxlanAddDelTunnelV3{IsAdd: add, Instance: ^uint32(0), SrcAddress: address(netip.MustParseAddr(src)),
		DstAddress: address(netip.MustParseAddr(dst)), McastSwIfIndex: mcast, Vni: vni, DecapNextIndex: ^uint32(0)}
}

// TestVxlanTunnel: a multicast tunnel waits for its multicast interface,
// is created with it, updated in place (admin state) or re-created
// (another VNI), read back unchanged by a resync, and deleted before the
// multicast interface goes.
func TestVxlanTunnel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tun := vxlanIf("vx1", "10.0.0.1", "239.1.1.1", 10, "lo1")
	e.set(nil, tun)
	e.expect(scheduler.PENDING, "vpp/interface/vx1")
	if got := vxlanRequests(e.f); len(got) != 0 {
		t.Errorf("a tunnel without its multicast interface sent %v", got)
	}
	e.set(nil, loop("lo1"))
	e.expect(scheduler.CONFIGURED, "vpp/interface/lo1", "vpp/interface/vx1")
	if diff := cmp.Diff([]*vxlan.VxlanAddDelTunnelV3{vxlanReq(true, "10.0.0.1", "239.1.1.1", 10, 1)}, vxlanRequests(e.f)); diff != "" {
		t.Errorf("vxlan_add_del_tunnel_v3 (-want +got):\n%s", diff)
	}
	// A unicast tunnel next to it, without a multicast interface.
	e.set(nil, vxlanIf("vx2", "2001:db8::1", "2001:db8::2", 20, ""))
	e.expect(scheduler.CONFIGURED, "vpp/interface/vx2")
	if diff := cmp.Diff([]*vxlan.VxlanAddDelTunnelV3{vxlanReq(true, "2001:db8::1", "2001:db8::2", 20, ^interface_types.InterfaceIndex(0))}, vxlanRequests(e.f)); diff != "" {
		t.Errorf("vxlan_add_del_tunnel_v3 (-want +got):\n%s", diff)
	}

	// In place: the admin state.
	down := vxlanIf("vx1", "10.0.0.1", "239.1.1.1", 10, "lo1")
	down.Enabled = false
	e.set(nil, down)
	if got := vxlanRequests(e.f); len(got) != 0 {
		t.Errorf("an admin state change sent %v", got)
	}
	e.f.Do(func(f *fakeVPP) {
		if i, _ := f.ifIndex("vx1"); f.ifaces[i].Flags&up != 0 {
			t.Error("vx1 is still up in VPP")
		}
	})
	e.resync()
	onlyDumps(t, e.f, "a resync of unchanged tunnels")

	// Another VNI: re-created, the old tunnel found by its ends and VNI.
	e.set(nil, vxlanIf("vx1", "10.0.0.1", "239.1.1.1", 11, "lo1"))
	e.expect(scheduler.CONFIGURED, "vpp/interface/vx1")
	want := []*vxlan.VxlanAddDelTunnelV3{vxlanReq(false, "10.0.0.1", "239.1.1.1", 10, 1), vxlanReq(true, "10.0.0.1", "239.1.1.1", 11, 1)}
	if diff := cmp.Diff(want, vxlanRequests(e.f)); diff != "" {
		t.Errorf("re-create (-want +got):\n%s", diff)
	}
	e.resync()
	onlyDumps(t, e.f, "a resync of unchanged tunnels")

	// The multicast interface goes: the tunnel first, and it waits.
	e.del("vpp/interface/lo1")
	names := e.f.RequestNames()
	if len(names) < 2 || names[0] != "vxlan_add_del_tunnel_v3" {
		t.Errorf("requests %v: want the tunnel deleted first", names)
	}
	e.expect(scheduler.PENDING, "vpp/interface/vx1")
	e.f.Do(func(f *fakeVPP) {
		if len(f.vxlans) != 1 {
			t.Errorf("VPP has %d tunnels, want vx2 alone", len(f.vxlans))
		}
	})
}

// TestVxlanRefused: what the schema says is refused before VPP is asked;
// what VPP refuses comes back as an error.
func TestVxlanRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, v := range []*vppinterfaces.Interface{
		vxlanIf("same", "10.0.0.1", "10.0.0.1", 1, ""),
		vxlanIf("vni", "10.0.0.1", "10.0.0.2", 1<<24, ""),
		vxlanIf("nodst", "10.0.0.1", "", 1, ""),
		{Name: "nolink", Type: vppinterfaces.Interface_TYPE_VXLAN_TUNNEL},
		{Name: "mcastonly", Type: vppinterfaces.Interface_TYPE_LOOPBACK, VxlanMulticast: "lo1"},
	} {
		e.set(nil, v)
		e.expect(scheduler.INVALID, keyOf(v))
	}
	if got := vxlanRequests(e.f); len(got) != 0 {
		t.Errorf("invalid tunnels sent %v", got)
	}
	h := vxlanTunnels{e.p}
	// Two families: VPP says the value is invalid; not retried.
	_, err := h.Create(context.Background(), vxlanIf("mixed", "10.0.0.1", "2001:db8::2", 1, ""))
	if err == nil || kv.IsRetriable(err) {
		t.Errorf("two families: %v, want an error not retried", err)
	}
	// A multicast destination without a multicast interface.
	_, err = h.Create(context.Background(), vxlanIf("m", "10.0.0.1", "239.1.1.1", 1, ""))
	if !errors.Is(err, api.INVALID_SW_IF_INDEX) {
		t.Errorf("multicast without an interface: %v, want VPP's invalid sw_if_index", err)
	}
	// The same tunnel twice.
	if _, err := h.Create(context.Background(), vxlanIf("a", "10.0.0.1", "10.0.0.2", 1, "")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Create(context.Background(), vxlanIf("b", "10.0.0.1", "10.0.0.2", 1, "")); !errors.Is(err, api.TUNNEL_EXIST) {
		t.Errorf("a tunnel twice: %v, want VPP's tunnel exists", err)
	}
	// Deleting a tunnel that is gone succeeds (not found).
	if err := h.Delete(context.Background(), vxlanIf("c", "10.0.0.1", "10.0.0.3", 1, "")); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("deleting a missing tunnel: %v, want not found", err)
	}
}
