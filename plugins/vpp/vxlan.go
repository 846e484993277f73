package vpp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/vxlan"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// vxlanTunnels holds what is particular to the interfaces of type
// VXLAN_TUNNEL: the multicast interface is a dependency.
type vxlanTunnels struct{ p *Plugin }

// request is the add or delete request of the tunnel of v.
func (h vxlanTunnels) request(v *vppinterfaces.Interface, add bool) (*vxlan.VxlanAddDelTunnelV3, error) {
	mcast := ^interface_types.InterfaceIndex(0)
	if v.GetVxlanMulticast() != "" {
		i, err := h.p.swIfIndex(v.GetVxlanMulticast())
		if err != nil {
			return nil, err
		}
		mcast = interface_types.InterfaceIndex(i)
	}
	src, err1 := netip.ParseAddr(v.GetVxlan().GetSrcAddress())
	dst, err2 := netip.ParseAddr(v.GetVxlan().GetDstAddress())
	if err := errors.Join(err1, err2); err != nil {
		return nil, kv.NonRetriable(fmt.Errorf("vxlan: %w", err))
	}
	return &vxlan.VxlanAddDelTunnelV3{IsAdd: add, Instance: ^uint32(0), McastSwIfIndex: mcast, Vni: v.GetVxlan().GetVni(), DecapNextIndex: ^uint32(0),
		SrcAddress: address(src), DstAddress: address(dst)}, nil
}

// Create creates the tunnel.
// vppctl create vxlan tunnel src SRC dst DST vni VNI [mcast-sw-if IF]
func (h vxlanTunnels) Create(ctx context.Context, v *vppinterfaces.Interface) (interface_types.InterfaceIndex, error) {
	req, err := h.request(v, true)
	if err != nil {
		return 0, err
	}
	r, err := vxlan.NewServiceClient(h.p.conn).VxlanAddDelTunnelV3(ctx, req)
	if err != nil {
		return 0, vppErr("vxlan_add_del_tunnel_v3", err)
	}
	return r.SwIfIndex, nil
}

// Delete deletes the tunnel: VPP finds it by its ends and VNI.
func (h vxlanTunnels) Delete(ctx context.Context, v *vppinterfaces.Interface) error {
	req, err := h.request(v, false)
	if err != nil {
		return err
	}
	_, err = vxlan.NewServiceClient(h.p.conn).VxlanAddDelTunnelV3(ctx, req)
	return vppErr("vxlan_add_del_tunnel_v3", err)
}

// Retrieve fills in the tunnels' parameters among the interfaces found,
// the multicast interface by its label.
func (h vxlanTunnels) Retrieve(ctx context.Context, found []vppinterfaces.InterfaceItem[InterfaceMeta]) error {
	byIndex := map[uint32]*vppinterfaces.Interface{}
	names := map[uint32]string{}
	for _, it := range found {
		names[it.Metadata.SwIfIndex] = it.Key.Name
		if it.Value.GetType() == vppinterfaces.Interface_TYPE_VXLAN_TUNNEL {
			byIndex[it.Metadata.SwIfIndex] = it.Value
		}
	}
	if len(byIndex) == 0 {
		return nil
	}
	list, err := dump[*vxlan.VxlanTunnelV2Details]("vxlan_tunnel_v2_dump")(vxlan.NewServiceClient(h.p.conn).VxlanTunnelV2Dump(ctx, &vxlan.VxlanTunnelV2Dump{SwIfIndex: ^interface_types.InterfaceIndex(0)}))
	if err != nil {
		return err
	}
	for _, d := range list {
		if v := byIndex[uint32(d.SwIfIndex)]; v != nil {
			v.Vxlan = &vppinterfaces.Interface_Vxlan{SrcAddress: addrOf(d.SrcAddress).String(), DstAddress: addrOf(d.DstAddress).String(), Vni: d.Vni}
			v.VxlanMulticast = names[uint32(d.McastSwIfIndex)]
		}
	}
	return nil
}
