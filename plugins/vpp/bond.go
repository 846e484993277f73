package vpp

import (
	"context"
	"errors"
	"fmt"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/bond"
	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/interface_types"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// bonds holds what is particular to the interfaces of type BOND.
type bonds struct{ p *Plugin }

// Create creates the bond, without members (they are values of their
// own).
// vppctl create bond mode MODE [load-balance LB] [id ID] [hw-addr MAC]
func (h bonds) Create(ctx context.Context, v *vppinterfaces.Interface) (interface_types.InterfaceIndex, error) {
	mac, _ := ethernet_types.ParseMacAddress(v.GetPhysAddress())
	b := v.GetBond()
	r, err := bond.NewServiceClient(h.p.conn).BondCreate2(ctx, &bond.BondCreate2{Mode: bond.BondMode(b.GetMode()), Lb: bond.BondLbAlgo(b.GetLoadBalance()),
		ID: b.GetId(), UseCustomMac: v.GetPhysAddress() != "", MacAddress: mac})
	if err != nil {
		return 0, vppErr("bond_create2", err)
	}
	return r.SwIfIndex, nil
}

// Delete deletes the bond.
func (h bonds) Delete(ctx context.Context, idx interface_types.InterfaceIndex) error {
	_, err := bond.NewServiceClient(h.p.conn).BondDelete(ctx, &bond.BondDelete{SwIfIndex: idx})
	return vppErr("bond_delete", err)
}

// Retrieve fills in the bonds' parameters among the interfaces found.
// VPP reports the hash of the modes other than XOR and LACP as the mode's
// own: the model leaves it unset there.
func (h bonds) Retrieve(ctx context.Context, found []vppinterfaces.InterfaceItem[InterfaceMeta]) error {
	byIndex := map[uint32]*vppinterfaces.Interface{}
	for _, it := range found {
		if it.Value.GetType() == vppinterfaces.Interface_TYPE_BOND {
			byIndex[it.Metadata.SwIfIndex] = it.Value
		}
	}
	if len(byIndex) == 0 {
		return nil
	}
	list, err := dump[*bond.SwBondInterfaceDetails]("sw_bond_interface_dump")(bond.NewServiceClient(h.p.conn).SwBondInterfaceDump(ctx, &bond.SwBondInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}))
	if err != nil {
		return err
	}
	for _, d := range list {
		if v := byIndex[uint32(d.SwIfIndex)]; v != nil {
			v.Bond = &vppinterfaces.Interface_Bond{Mode: vppinterfaces.Interface_Bond_Mode(d.Mode), Id: d.ID}
			if d.Mode == bond.BOND_API_MODE_XOR || d.Mode == bond.BOND_API_MODE_LACP {
				v.Bond.LoadBalance = vppinterfaces.Interface_Bond_LoadBalance(d.Lb)
			}
		}
	}
	return nil
}

// bondMembers is the handler of vpp.interfaces.v1.Interface.bond_members:
// an interface's membership in a bond. It has no Update: a change
// detaches the member and adds it again.
type bondMembers struct{ p *Plugin }

var _ vppinterfaces.InterfaceBondMembersRetriever[struct{}] = (*bondMembers)(nil)

// Create adds the member to the bond.
// vppctl bond add BOND MEMBER [passive] [long-timeout]
func (h *bondMembers) Create(ctx context.Context, k vppinterfaces.InterfaceBondMembersKey, v *vppinterfaces.Interface_BondMember) (struct{}, error) {
	b, err1 := h.p.swIfIndex(k.Name)
	m, err2 := h.p.swIfIndex(k.BondMembersName)
	if err := errors.Join(err1, err2); err != nil {
		return struct{}{}, err
	}
	_, err := bond.NewServiceClient(h.p.conn).BondAddMember(ctx, &bond.BondAddMember{SwIfIndex: interface_types.InterfaceIndex(m),
		BondSwIfIndex: interface_types.InterfaceIndex(b), IsPassive: v.GetPassive(), IsLongTimeout: v.GetLongTimeout()})
	return struct{}{}, vppErr("bond_add_member", err)
}

// Delete detaches the member; one that is no member (any more) is gone.
// vppctl bond del MEMBER
func (h *bondMembers) Delete(ctx context.Context, k vppinterfaces.InterfaceBondMembersKey, _ *vppinterfaces.Interface_BondMember, _ struct{}) error {
	m, err := h.p.swIfIndex(k.BondMembersName)
	if err != nil {
		return err
	}
	_, err = bond.NewServiceClient(h.p.conn).BondDetachMember(ctx, &bond.BondDetachMember{SwIfIndex: interface_types.InterfaceIndex(m)})
	if errors.Is(err, api.INVALID_INTERFACE) {
		return fmt.Errorf("bond_detach_member: %w (%w)", err, kv.ErrNotFound)
	}
	return vppErr("bond_detach_member", err)
}

// Retrieve reports the members of the bonds VPP has, by label: the
// correlated ones as ours, the others (added by hand) obtained.
func (h *bondMembers) Retrieve(ctx context.Context, correlate []vppinterfaces.InterfaceBondMembersItem[struct{}]) ([]vppinterfaces.InterfaceBondMembersItem[struct{}], error) {
	ours := map[vppinterfaces.InterfaceBondMembersKey]bool{}
	for _, c := range correlate {
		ours[c.Key] = true
	}
	c := bond.NewServiceClient(h.p.conn)
	list, err := dump[*bond.SwBondInterfaceDetails]("sw_bond_interface_dump")(c.SwBondInterfaceDump(ctx, &bond.SwBondInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}))
	if err != nil {
		return nil, err
	}
	names := h.p.interfaceNames()
	var out []vppinterfaces.InterfaceBondMembersItem[struct{}]
	for _, b := range list {
		members, err := dump[*bond.SwMemberInterfaceDetails]("sw_member_interface_dump")(c.SwMemberInterfaceDump(ctx, &bond.SwMemberInterfaceDump{SwIfIndex: b.SwIfIndex}))
		if err != nil {
			return nil, err
		}
		for _, m := range members {
			name, ok1 := names[uint32(b.SwIfIndex)]
			member, ok2 := names[uint32(m.SwIfIndex)]
			k := vppinterfaces.InterfaceBondMembersKey{Name: name, BondMembersName: member}
			if ok1 && ok2 {
				v := &vppinterfaces.Interface_BondMember{Name: member, Passive: m.IsPassive, LongTimeout: m.IsLongTimeout}
				out = append(out, vppinterfaces.InterfaceBondMembersItem[struct{}]{Key: k, Value: v, Origin: origin(ours[k])})
			}
		}
	}
	return out, nil
}
