package vpp

import (
	"context"
	"errors"
	"testing"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ipip"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func ipipIf(name, src, dst string) *vppinterfaces.Interface {
	return &vppinterfaces.Interface{Name: name, Type: vppinterfaces.Interface_TYPE_IPIP_TUNNEL, Enabled: true, Ipip: &vppinterfaces.Interface_Ipip{SrcAddress: src, DstAddress: dst}}
}

// TestIpipTunnel: created with its ends, read back unchanged by a resync,
// admin state in place, another end re-creates, deleted by its
// sw_if_index; what the schema or VPP refuses is refused.
func TestIpipTunnel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.set(nil, ipipIf("ip1", "10.0.0.1", "10.0.0.2"))
	e.expect(scheduler.CONFIGURED, "vpp/interface/ip1")
	var adds []*ipip.IpipAddTunnel
	for _, m := range e.f.Requests() {
		if a, ok := m.(*ipip.IpipAddTunnel); ok {
			adds = append(adds, a)
		}
	}
	if len(adds) != 1 || adds[0].Tunnel.Instance != ^uint32(0) || addrOf(adds[0].Tunnel.Src).String() != "10.0.0.1" || addrOf(adds[0].Tunnel.Dst).String() != "10.0.0.2" {
		t.Errorf("ipip_add_tunnel: %+v", adds)
	}
	e.resync()
	onlyDumps(t, e.f, "a resync of an unchanged IPIP tunnel")

	down := ipipIf("ip1", "10.0.0.1", "10.0.0.2")
	down.Enabled = false
	e.set(nil, down)
	if got := e.f.RequestNames(); len(got) != 1 || got[0] != "sw_interface_set_flags" {
		t.Errorf("an admin state change sent %v", got)
	}
	e.set(nil, ipipIf("ip1", "10.0.0.1", "10.0.0.3"))
	e.expect(scheduler.CONFIGURED, "vpp/interface/ip1")
	if got := e.f.RequestNames(); len(got) < 2 || got[0] != "ipip_del_tunnel" || got[1] != "ipip_add_tunnel" {
		t.Errorf("another end sent %v, want ipip_del_tunnel then ipip_add_tunnel", got)
	}
	e.resync()
	onlyDumps(t, e.f, "a resync of an unchanged IPIP tunnel")
	e.del("vpp/interface/ip1")
	e.f.Do(func(f *fakeVPP) {
		if len(f.ipips) != 0 || len(f.ifaces) != 1 {
			t.Errorf("VPP has %d tunnels and %d interfaces, want none and local0", len(f.ipips), len(f.ifaces))
		}
	})

	for _, v := range []*vppinterfaces.Interface{ipipIf("same", "10.0.0.1", "10.0.0.1"), ipipIf("nodst", "10.0.0.1", ""), {Name: "noipip", Type: vppinterfaces.Interface_TYPE_IPIP_TUNNEL}} {
		e.set(nil, v)
		e.expect(scheduler.INVALID, keyOf(v))
	}
	h := ipipTunnels{e.p}
	if _, err := h.Create(context.Background(), ipipIf("mixed", "10.0.0.1", "2001:db8::1")); err == nil || kv.IsRetriable(err) {
		t.Errorf("two families: %v, want an error not retried", err)
	}
	if _, err := h.Create(context.Background(), ipipIf("a", "10.0.0.1", "10.0.0.2")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Create(context.Background(), ipipIf("b", "10.0.0.1", "10.0.0.2")); !errors.Is(err, api.IF_ALREADY_EXISTS) {
		t.Errorf("a tunnel twice: %v, want VPP's interface exists", err)
	}
	if err := h.Delete(context.Background(), 77); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("deleting a missing tunnel: %v, want not found", err)
	}
}
