package vpp

import (
	"context"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	vppnat "github.com/kvdescriptor/kvdescriptor/generated/vpp/nat/v1"
)

// nat44Interfaces is the handler of vpp.nat.v1.Nat44Interface: NAT44 on
// an interface's inside, outside or both. It has no Update: a change
// re-creates it.
type nat44Interfaces struct{ p *Plugin }

var _ vppnat.Nat44InterfaceRetriever[struct{}] = (*nat44Interfaces)(nil)

// natSides are the flags of the nat44_interface_add_del_feature calls
// that put NAT44 on each side (VPP takes a call without NAT_IS_INSIDE as
// the outside), and the side of the flags that VPP reports.
var natSides = map[vppnat.Nat44Interface_Side][]nat_types.NatConfigFlags{
	vppnat.Nat44Interface_INSIDE:             {nat_types.NAT_IS_INSIDE},
	vppnat.Nat44Interface_OUTSIDE:            {nat_types.NAT_IS_OUTSIDE},
	vppnat.Nat44Interface_INSIDE_AND_OUTSIDE: {nat_types.NAT_IS_INSIDE, nat_types.NAT_IS_OUTSIDE},
}

// Create enables NAT44 on the interface's side(s).
// vppctl set interface nat44 in NAME [out NAME]
func (h *nat44Interfaces) Create(ctx context.Context, k vppnat.Nat44InterfaceKey, v *vppnat.Nat44Interface) (struct{}, error) {
	return struct{}{}, h.set(ctx, k, v, true)
}

// Delete disables it.
// vppctl set interface nat44 in NAME [out NAME] del
func (h *nat44Interfaces) Delete(ctx context.Context, k vppnat.Nat44InterfaceKey, v *vppnat.Nat44Interface, _ struct{}) error {
	return h.set(ctx, k, v, false)
}

func (h *nat44Interfaces) set(ctx context.Context, k vppnat.Nat44InterfaceKey, v *vppnat.Nat44Interface, add bool) error {
	idx, err := h.p.swIfIndex(k.Name)
	for _, flags := range natSides[v.GetSide()] {
		if err == nil {
			_, err = h.p.natVPP().Nat44InterfaceAddDelFeature(ctx, &nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: add, Flags: flags, SwIfIndex: interface_types.InterfaceIndex(idx)})
			err = vppErr("nat44_interface_add_del_feature", err)
		}
	}
	return err
}

// Retrieve dumps the NAT44 interfaces: correlated ones are ours, others
// (set by hand) obtained.
func (h *nat44Interfaces) Retrieve(ctx context.Context, correlate []vppnat.Nat44InterfaceItem[struct{}]) ([]vppnat.Nat44InterfaceItem[struct{}], error) {
	list, err := dump[*nat44_ed.Nat44InterfaceDetails]("nat44_interface_dump")(h.p.natVPP().Nat44InterfaceDump(ctx, &nat44_ed.Nat44InterfaceDump{}))
	ours := map[string]bool{}
	for _, c := range correlate {
		ours[c.Key.Name] = true
	}
	names := h.p.interfaceNames()
	var out []vppnat.Nat44InterfaceItem[struct{}]
	for _, d := range list {
		side := vppnat.Nat44Interface_OUTSIDE
		switch in, both := nat_types.NAT_IS_INSIDE, nat_types.NAT_IS_INSIDE|nat_types.NAT_IS_OUTSIDE; {
		case d.Flags&both == both:
			side = vppnat.Nat44Interface_INSIDE_AND_OUTSIDE
		case d.Flags&in != 0:
			side = vppnat.Nat44Interface_INSIDE
		}
		if n, ok := names[uint32(d.SwIfIndex)]; ok {
			out = append(out, vppnat.Nat44InterfaceItem[struct{}]{Key: vppnat.Nat44InterfaceKey{Name: n}, Value: &vppnat.Nat44Interface{Name: n, Side: side}, Origin: origin(ours[n])})
		}
	}
	return out, err
}
