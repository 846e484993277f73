package vpp

import (
	"cmp"
	"context"

	vppif "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"google.golang.org/protobuf/proto"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
)

// subInterfaces holds what is particular to the interfaces of type
// SUB_INTERFACE: the parent is a dependency (the scheduler creates it
// first and deletes the sub-interface before it).
type subInterfaces struct{ p *Plugin }

// Create creates the sub-interface on its parent.
// vppctl create sub-interfaces PARENT SUB_ID dot1q|dot1ad OUTER [inner-dot1q INNER] [exact-match]
func (h subInterfaces) Create(ctx context.Context, v *vppinterfaces.Interface) (interface_types.InterfaceIndex, error) {
	parent, err := h.p.swIfIndex(v.GetParent())
	if err != nil {
		return 0, err
	}
	s := v.GetSubInterface()
	flags := interface_types.SUB_IF_API_FLAG_NO_TAGS
	switch {
	case s.GetInnerVlanId() != 0:
		flags = interface_types.SUB_IF_API_FLAG_TWO_TAGS
	case s.GetOuterVlanId() != 0:
		flags = interface_types.SUB_IF_API_FLAG_ONE_TAG
	}
	if s.GetDot1Ad() {
		flags |= interface_types.SUB_IF_API_FLAG_DOT1AD
	}
	if s.GetExactMatch() {
		flags |= interface_types.SUB_IF_API_FLAG_EXACT_MATCH
	}
	r, err := vppif.NewServiceClient(h.p.conn).CreateSubif(ctx, &vppif.CreateSubif{SwIfIndex: interface_types.InterfaceIndex(parent),
		SubID: s.GetSubId(), SubIfFlags: flags, OuterVlanID: uint16(s.GetOuterVlanId()), InnerVlanID: uint16(s.GetInnerVlanId())})
	if err != nil {
		return 0, vppErr("create_subif", err)
	}
	return r.SwIfIndex, nil
}

// Delete deletes the sub-interface.
func (h subInterfaces) Delete(ctx context.Context, idx interface_types.InterfaceIndex) error {
	_, err := vppif.NewServiceClient(h.p.conn).DeleteSubif(ctx, &vppif.DeleteSubif{SwIfIndex: idx})
	return vppErr("delete_subif", err)
}

// Retrieve returns the parent (its label: tag or VPP name) and the VLAN
// match of a sub-interface of the dump; nothing for other interfaces.
func (h subInterfaces) Retrieve(d *vppif.SwInterfaceDetails, all []*vppif.SwInterfaceDetails) (string, *vppinterfaces.Interface_SubInterface) {
	if d.Type != interface_types.IF_API_TYPE_SUB {
		return "", nil
	}
	var parent string
	for _, x := range all {
		if uint32(x.SwIfIndex) == d.SupSwIfIndex {
			parent = cmp.Or(x.Tag, x.InterfaceName)
		}
	}
	s := &vppinterfaces.Interface_SubInterface{SubId: d.SubID, OuterVlanId: uint32(d.SubOuterVlanID), InnerVlanId: uint32(d.SubInnerVlanID),
		Dot1Ad: d.SubIfFlags&interface_types.SUB_IF_API_FLAG_DOT1AD != 0, ExactMatch: d.SubIfFlags&interface_types.SUB_IF_API_FLAG_EXACT_MATCH != 0}
	if proto.Equal(s, &vppinterfaces.Interface_SubInterface{}) {
		s = nil // unset in the model
	}
	return parent, s
}
