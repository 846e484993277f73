package vpp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ipip"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// ipipTunnels holds what is particular to the interfaces of type
// IPIP_TUNNEL.
type ipipTunnels struct{ p *Plugin }

// Create creates the tunnel.
// vppctl create ipip tunnel src SRC dst DST
func (h ipipTunnels) Create(ctx context.Context, v *vppinterfaces.Interface) (interface_types.InterfaceIndex, error) {
	src, err1 := netip.ParseAddr(v.GetIpip().GetSrcAddress())
	dst, err2 := netip.ParseAddr(v.GetIpip().GetDstAddress())
	if err := errors.Join(err1, err2); err != nil {
		return 0, kv.NonRetriable(fmt.Errorf("ipip: %w", err))
	}
	r, err := ipip.NewServiceClient(h.p.conn).IpipAddTunnel(ctx, &ipip.IpipAddTunnel{Tunnel: ipip.IpipTunnel{Instance: ^uint32(0), Src: address(src), Dst: address(dst)}})
	if err != nil {
		return 0, vppErr("ipip_add_tunnel", err)
	}
	return r.SwIfIndex, nil
}

// Delete deletes the tunnel.
func (h ipipTunnels) Delete(ctx context.Context, idx interface_types.InterfaceIndex) error {
	_, err := ipip.NewServiceClient(h.p.conn).IpipDelTunnel(ctx, &ipip.IpipDelTunnel{SwIfIndex: idx})
	return vppErr("ipip_del_tunnel", err)
}

// Retrieve fills in the tunnels' ends among the interfaces found.
func (h ipipTunnels) Retrieve(ctx context.Context, found []vppinterfaces.InterfaceItem[InterfaceMeta]) error {
	byIndex := map[uint32]*vppinterfaces.Interface{}
	for _, it := range found {
		if it.Value.GetType() == vppinterfaces.Interface_TYPE_IPIP_TUNNEL {
			byIndex[it.Metadata.SwIfIndex] = it.Value
		}
	}
	if len(byIndex) == 0 {
		return nil
	}
	list, err := dump[*ipip.IpipTunnelDetails]("ipip_tunnel_dump")(ipip.NewServiceClient(h.p.conn).IpipTunnelDump(ctx, &ipip.IpipTunnelDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}))
	if err != nil {
		return err
	}
	for _, d := range list {
		if v := byIndex[uint32(d.Tunnel.SwIfIndex)]; v != nil {
			v.Ipip = &vppinterfaces.Interface_Ipip{SrcAddress: addrOf(d.Tunnel.Src).String(), DstAddress: addrOf(d.Tunnel.Dst).String()}
		}
	}
	return nil
}
