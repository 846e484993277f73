package vpp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/gre"
	"go.fd.io/govpp/binapi/interface_types"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// greTunnels holds what is particular to the interfaces of type
// GRE_TUNNEL.
type greTunnels struct{ p *Plugin }

// request is the add or delete request of the tunnel of v.
func (h greTunnels) request(v *vppinterfaces.Interface, add bool) (*gre.GreTunnelAddDel, error) {
	src, err1 := netip.ParseAddr(v.GetGre().GetSrcAddress())
	dst, err2 := netip.ParseAddr(v.GetGre().GetDstAddress())
	if err := errors.Join(err1, err2); err != nil {
		return nil, kv.NonRetriable(fmt.Errorf("gre: %w", err))
	}
	return &gre.GreTunnelAddDel{IsAdd: add, Tunnel: gre.GreTunnel{Type: gre.GreTunnelType(v.GetGre().GetKind()), Instance: ^uint32(0),
		SessionID: uint16(v.GetGre().GetSessionId()), Src: address(src), Dst: address(dst)}}, nil
}

// Create creates the tunnel.
// vppctl create gre tunnel src SRC dst DST [teb | erspan SESSION]
func (h greTunnels) Create(ctx context.Context, v *vppinterfaces.Interface) (interface_types.InterfaceIndex, error) {
	req, err := h.request(v, true)
	if err != nil {
		return 0, err
	}
	r, err := gre.NewServiceClient(h.p.conn).GreTunnelAddDel(ctx, req)
	if err != nil {
		return 0, vppErr("gre_tunnel_add_del", err)
	}
	return r.SwIfIndex, nil
}

// Delete deletes the tunnel: VPP finds it by its ends, kind and session.
func (h greTunnels) Delete(ctx context.Context, v *vppinterfaces.Interface) error {
	req, err := h.request(v, false)
	if err != nil {
		return err
	}
	_, err = gre.NewServiceClient(h.p.conn).GreTunnelAddDel(ctx, req)
	return vppErr("gre_tunnel_add_del", err)
}

// Retrieve fills in the tunnels' parameters among the interfaces found.
func (h greTunnels) Retrieve(ctx context.Context, found []vppinterfaces.InterfaceItem[InterfaceMeta]) error {
	byIndex := map[uint32]*vppinterfaces.Interface{}
	for _, it := range found {
		if it.Value.GetType() == vppinterfaces.Interface_TYPE_GRE_TUNNEL {
			byIndex[it.Metadata.SwIfIndex] = it.Value
		}
	}
	if len(byIndex) == 0 {
		return nil
	}
	// The dump ends with a reply, not a control ping: govpp's RPC client
	// reads only that reply, so the stream is read here.
	s, err := h.p.conn.NewStream(ctx)
	if err != nil {
		return vppErr("gre_tunnel_dump", err)
	}
	defer s.Close()
	if err := s.SendMsg(&gre.GreTunnelDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}); err != nil {
		return vppErr("gre_tunnel_dump", err)
	}
	for {
		msg, err := s.RecvMsg()
		if err != nil {
			return vppErr("gre_tunnel_dump", err)
		}
		if r, ok := msg.(*gre.GreTunnelDumpReply); ok {
			return vppErr("gre_tunnel_dump", api.RetvalToVPPApiError(r.Retval))
		}
		d, ok := msg.(*gre.GreTunnelDetails)
		if !ok {
			return fmt.Errorf("gre_tunnel_dump: %s in the dump", msg.GetMessageName())
		}
		if v := byIndex[uint32(d.Tunnel.SwIfIndex)]; v != nil {
			v.Gre = &vppinterfaces.Interface_Gre{Kind: vppinterfaces.Interface_Gre_Kind(d.Tunnel.Type), SrcAddress: addrOf(d.Tunnel.Src).String(),
				DstAddress: addrOf(d.Tunnel.Dst).String(), SessionId: uint32(d.Tunnel.SessionID)}
		}
	}
}
