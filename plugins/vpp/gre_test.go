package vpp

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/gre"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func greIf(name string, kind vppinterfaces.Interface_Gre_Kind, src, dst string, session uint32) *vppinterfaces.Interface {
	return &vppinterfaces.Interface{Name: name, Type: vppinterfaces.Interface_TYPE_GRE_TUNNEL, Enabled: true,
		Gre: &vppinterfaces.Interface_Gre{Kind: kind, SrcAddress: src, DstAddress: dst, SessionId: session}}
}

func greReq(add bool, kind gre.GreTunnelType, src, dst string, session uint16) *gre.GreTunnelAddDel {
	return &gre.GreTunnelAddDel{IsAdd: add, Tunnel: gre.GreTunnel{Type: kind, Instance: ^uint32(0), SessionID: session,
		Src: address(netip.MustParseAddr(src)), Dst: address(netip.MustParseAddr(dst))}}
}

func greRequests(f *fakeVPP) []*gre.GreTunnelAddDel {
	var out []*gre.GreTunnelAddDel
	for _, m := range f.Requests() {
		if x, ok := m.(*gre.GreTunnelAddDel); ok {
			out = append(out, x)
		}
	}
	return out
}

// TestGreTunnel: L3 and ERSPAN tunnels are created, read back unchanged
// by a resync (the dump that ends with its own reply), updated in place
// (admin state) or re-created (another end), and deleted.
func TestGreTunnel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	l3 := greIf("gre1", vppinterfaces.Interface_Gre_KIND_L3, "10.0.0.1", "10.0.0.2", 0)
	span := greIf("span1", vppinterfaces.Interface_Gre_KIND_ERSPAN, "2001:db8::1", "2001:db8::2", 7)
	e.set(nil, l3, span)
	e.expect(scheduler.CONFIGURED, "vpp/interface/gre1", "vpp/interface/span1")
	want := []*gre.GreTunnelAddDel{greReq(true, gre.GRE_API_TUNNEL_TYPE_L3, "10.0.0.1", "10.0.0.2", 0), greReq(true, gre.GRE_API_TUNNEL_TYPE_ERSPAN, "2001:db8::1", "2001:db8::2", 7)}
	got := greRequests(e.f)
	if len(got) == 2 && got[0].Tunnel.Type != 0 { // the order of two independent values is the scheduler's
		got[0], got[1] = got[1], got[0]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gre_tunnel_add_del (-want +got):\n%s", diff)
	}
	e.resync()
	onlyDumps(t, e.f, "a resync of unchanged GRE tunnels")
	e.expect(scheduler.CONFIGURED, "vpp/interface/gre1", "vpp/interface/span1")

	down := greIf("gre1", vppinterfaces.Interface_Gre_KIND_L3, "10.0.0.1", "10.0.0.2", 0)
	down.Enabled = false
	e.set(nil, down)
	if got := greRequests(e.f); len(got) != 0 {
		t.Errorf("an admin state change sent %v", got)
	}

	e.set(nil, greIf("gre1", vppinterfaces.Interface_Gre_KIND_TEB, "10.0.0.1", "10.0.0.3", 0))
	e.expect(scheduler.CONFIGURED, "vpp/interface/gre1")
	want = []*gre.GreTunnelAddDel{greReq(false, gre.GRE_API_TUNNEL_TYPE_L3, "10.0.0.1", "10.0.0.2", 0), greReq(true, gre.GRE_API_TUNNEL_TYPE_TEB, "10.0.0.1", "10.0.0.3", 0)}
	if diff := cmp.Diff(want, greRequests(e.f)); diff != "" {
		t.Errorf("re-create (-want +got):\n%s", diff)
	}
	e.resync()
	onlyDumps(t, e.f, "a resync of unchanged GRE tunnels")

	e.del("vpp/interface/gre1", "vpp/interface/span1")
	e.f.Do(func(f *fakeVPP) {
		if len(f.gres) != 0 || len(f.ifaces) != 1 {
			t.Errorf("VPP has %d tunnels and %d interfaces, want none and local0", len(f.gres), len(f.ifaces))
		}
	})
}

// TestGreRefused: what the schema says is refused before VPP is asked;
// what VPP refuses comes back as an error.
func TestGreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, v := range []*vppinterfaces.Interface{
		greIf("same", 0, "10.0.0.1", "10.0.0.1", 0),
		greIf("session-l3", vppinterfaces.Interface_Gre_KIND_L3, "10.0.0.1", "10.0.0.2", 5),
		greIf("session-big", vppinterfaces.Interface_Gre_KIND_ERSPAN, "10.0.0.1", "10.0.0.2", 1024),
		{Name: "nogre", Type: vppinterfaces.Interface_TYPE_GRE_TUNNEL},
	} {
		e.set(nil, v)
		e.expect(scheduler.INVALID, keyOf(v))
	}
	if got := greRequests(e.f); len(got) != 0 {
		t.Errorf("invalid tunnels sent %v", got)
	}
	h := greTunnels{e.p}
	if _, err := h.Create(context.Background(), greIf("mixed", 0, "10.0.0.1", "2001:db8::2", 0)); err == nil || kv.IsRetriable(err) {
		t.Errorf("two families: %v, want an error not retried", err)
	}
	if _, err := h.Create(context.Background(), greIf("a", 0, "10.0.0.1", "10.0.0.2", 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Create(context.Background(), greIf("b", 0, "10.0.0.1", "10.0.0.2", 0)); !errors.Is(err, api.IF_ALREADY_EXISTS) {
		t.Errorf("a tunnel twice: %v, want VPP's interface exists", err)
	}
	if err := h.Delete(context.Background(), greIf("c", 0, "10.0.0.1", "10.0.0.9", 0)); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("deleting a missing tunnel: %v, want not found", err)
	}
}
