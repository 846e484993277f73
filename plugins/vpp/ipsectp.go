package vpp

import (
	"context"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ipsec"

	vppipsec "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipsec/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// maxSAIn is the most inbound SAs VPP takes for a protection
// (ITP_MAX_N_SA_IN).
const maxSAIn = 4

// tunnelProtections is the handler of vpp.ipsec.v1.TunnelProtection. VPP
// changes a protection's SAs in place: Update re-issues the update call.
type tunnelProtections struct{ p *Plugin }

var (
	_ vppipsec.TunnelProtectionUpdater[struct{}]   = (*tunnelProtections)(nil)
	_ vppipsec.TunnelProtectionRetriever[struct{}] = (*tunnelProtections)(nil)
	_ vppipsec.TunnelProtectionValidator           = (*tunnelProtections)(nil)
)

// Validate checks the number of inbound SAs.
func (h *tunnelProtections) Validate(_ vppipsec.TunnelProtectionKey, v *vppipsec.TunnelProtection) error {
	if len(v.GetSaIn()) > maxSAIn {
		return kv.Invalid("sa_in", "%d SAs: VPP takes at most %d", len(v.GetSaIn()), maxSAIn)
	}
	return nil
}

// Create protects the tunnel.
// vppctl ipsec tunnel protect INTERFACE sa-out ID sa-in ID...
func (h *tunnelProtections) Create(ctx context.Context, k vppipsec.TunnelProtectionKey, v *vppipsec.TunnelProtection) (struct{}, error) {
	sw, err := h.p.swIfIndex(k.Interface)
	if err != nil {
		return struct{}{}, err
	}
	_, err = ipsec.NewServiceClient(h.p.conn).IpsecTunnelProtectUpdate(ctx, &ipsec.IpsecTunnelProtectUpdate{Tunnel: ipsec.IpsecTunnelProtect{
		SwIfIndex: interface_types.InterfaceIndex(sw), SaOut: v.GetSaOut(), NSaIn: uint8(len(v.GetSaIn())), SaIn: v.GetSaIn()}})
	return struct{}{}, vppErr("ipsec_tunnel_protect_update", err)
}

// Update gives the protection its new SAs, in place.
func (h *tunnelProtections) Update(ctx context.Context, k vppipsec.TunnelProtectionKey, _, v *vppipsec.TunnelProtection, _ struct{}) (struct{}, error) {
	return h.Create(ctx, k, v)
}

// Delete removes the protection.
// vppctl ipsec tunnel protect INTERFACE del
func (h *tunnelProtections) Delete(ctx context.Context, k vppipsec.TunnelProtectionKey, _ *vppipsec.TunnelProtection, _ struct{}) error {
	sw, err := h.p.swIfIndex(k.Interface)
	if err != nil {
		return err
	}
	_, err = ipsec.NewServiceClient(h.p.conn).IpsecTunnelProtectDel(ctx, &ipsec.IpsecTunnelProtectDel{SwIfIndex: interface_types.InterfaceIndex(sw)})
	return vppErr("ipsec_tunnel_protect_del", err)
}

// Retrieve dumps the protections of the interfaces we know: correlated
// ones are ours, the others obtained.
func (h *tunnelProtections) Retrieve(ctx context.Context, correlate []vppipsec.TunnelProtectionItem[struct{}]) (out []vppipsec.TunnelProtectionItem[struct{}], _ error) {
	list, err := dump[*ipsec.IpsecTunnelProtectDetails]("ipsec_tunnel_protect_dump")(ipsec.NewServiceClient(h.p.conn).IpsecTunnelProtectDump(ctx,
		&ipsec.IpsecTunnelProtectDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}))
	if err != nil {
		return nil, err
	}
	ours := map[string]bool{}
	for _, c := range correlate {
		ours[c.Key.Interface] = true
	}
	names := h.p.interfaceNames()
	for _, d := range list {
		if name, ok := names[uint32(d.Tun.SwIfIndex)]; ok {
			got := &vppipsec.TunnelProtection{Interface: name, SaOut: d.Tun.SaOut, SaIn: d.Tun.SaIn}
			out = append(out, vppipsec.TunnelProtectionItem[struct{}]{Key: vppipsec.TunnelProtectionKey{Interface: name}, Value: got, Origin: origin(ours[name])})
		}
	}
	return out, nil
}
