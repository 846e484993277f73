package vpp

import (
	"context"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ipsec"

	vppipsec "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipsec/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// securityPolicyDatabases is the handler of
// vpp.ipsec.v1.SecurityPolicyDatabase. It has no Update: an SPD is only
// its index, and its interfaces are derived values.
type securityPolicyDatabases struct{ p *Plugin }

// spdBindings is the handler of vpp.ipsec.v1.SecurityPolicyDatabase.interfaces:
// an interface bound to an SPD.
type spdBindings struct{ p *Plugin }

var (
	_ vppipsec.SecurityPolicyDatabaseRetriever[struct{}]           = (*securityPolicyDatabases)(nil)
	_ vppipsec.SecurityPolicyDatabaseInterfacesRetriever[struct{}] = (*spdBindings)(nil)
)

// Create adds the SPD.
// vppctl ipsec spd add ID
func (h *securityPolicyDatabases) Create(ctx context.Context, k vppipsec.SecurityPolicyDatabaseKey, _ *vppipsec.SecurityPolicyDatabase) (struct{}, error) {
	_, err := ipsec.NewServiceClient(h.p.conn).IpsecSpdAddDel(ctx, &ipsec.IpsecSpdAddDel{IsAdd: true, SpdID: k.Index})
	return struct{}{}, vppErr("ipsec_spd_add_del", err)
}

// Delete removes the SPD.
// vppctl ipsec spd del ID
func (h *securityPolicyDatabases) Delete(ctx context.Context, k vppipsec.SecurityPolicyDatabaseKey, _ *vppipsec.SecurityPolicyDatabase, _ struct{}) error {
	_, err := ipsec.NewServiceClient(h.p.conn).IpsecSpdAddDel(ctx, &ipsec.IpsecSpdAddDel{SpdID: k.Index})
	return vppErr("ipsec_spd_add_del", err)
}

// Retrieve dumps the SPDs: correlated ones are ours (as they were asked
// for: their interfaces are derived values, read by spdBindings), the
// others obtained with the interfaces VPP has bound to them.
func (h *securityPolicyDatabases) Retrieve(ctx context.Context, correlate []vppipsec.SecurityPolicyDatabaseItem[struct{}]) ([]vppipsec.SecurityPolicyDatabaseItem[struct{}], error) {
	c := ipsec.NewServiceClient(h.p.conn)
	spds, err := dump[*ipsec.IpsecSpdsDetails]("ipsec_spds_dump")(c.IpsecSpdsDump(ctx, &ipsec.IpsecSpdsDump{}))
	if err != nil {
		return nil, err
	}
	bound, err := dump[*ipsec.IpsecSpdInterfaceDetails]("ipsec_spd_interface_dump")(c.IpsecSpdInterfaceDump(ctx, &ipsec.IpsecSpdInterfaceDump{}))
	if err != nil {
		return nil, err
	}
	want := map[uint32]*vppipsec.SecurityPolicyDatabase{}
	for _, it := range correlate {
		want[it.Key.Index] = it.Value
	}
	names := h.p.interfaceNames()
	var out []vppipsec.SecurityPolicyDatabaseItem[struct{}]
	for _, d := range spds {
		got := want[d.SpdID]
		if got == nil {
			got = &vppipsec.SecurityPolicyDatabase{Index: d.SpdID}
			for _, b := range bound {
				if name, ok := names[uint32(b.SwIfIndex)]; ok && b.SpdIndex == d.SpdID {
					got.Interfaces = append(got.Interfaces, &vppipsec.SecurityPolicyDatabase_Interface{Name: name})
				}
			}
		}
		out = append(out, vppipsec.SecurityPolicyDatabaseItem[struct{}]{Key: vppipsec.SecurityPolicyDatabaseKey{Index: d.SpdID}, Value: got, Origin: origin(want[d.SpdID] != nil)})
	}
	return out, nil
}

// Create binds the interface to the SPD.
// vppctl set interface ipsec spd INTERFACE ID
func (h *spdBindings) Create(ctx context.Context, k vppipsec.SecurityPolicyDatabaseInterfacesKey, _ *vppipsec.SecurityPolicyDatabase_Interface) (struct{}, error) {
	return struct{}{}, h.set(ctx, k, true)
}

// Delete unbinds it.
// vppctl set interface ipsec spd del INTERFACE ID
func (h *spdBindings) Delete(ctx context.Context, k vppipsec.SecurityPolicyDatabaseInterfacesKey, _ *vppipsec.SecurityPolicyDatabase_Interface, _ struct{}) error {
	return h.set(ctx, k, false)
}

func (h *spdBindings) set(ctx context.Context, k vppipsec.SecurityPolicyDatabaseInterfacesKey, add bool) error {
	sw, err := h.p.swIfIndex(k.InterfacesName)
	if err != nil {
		return err
	}
	_, err = ipsec.NewServiceClient(h.p.conn).IpsecInterfaceAddDelSpd(ctx, &ipsec.IpsecInterfaceAddDelSpd{IsAdd: add, SwIfIndex: interface_types.InterfaceIndex(sw), SpdID: k.Index})
	return vppErr("ipsec_interface_add_del_spd", err, errSPDAssigned)
}

// Retrieve reports the correlated bindings that VPP has.
func (h *spdBindings) Retrieve(ctx context.Context, correlate []vppipsec.SecurityPolicyDatabaseInterfacesItem[struct{}]) ([]vppipsec.SecurityPolicyDatabaseInterfacesItem[struct{}], error) {
	if len(correlate) == 0 {
		return nil, nil
	}
	list, err := dump[*ipsec.IpsecSpdInterfaceDetails]("ipsec_spd_interface_dump")(ipsec.NewServiceClient(h.p.conn).IpsecSpdInterfaceDump(ctx, &ipsec.IpsecSpdInterfaceDump{}))
	if err != nil {
		return nil, err
	}
	names := h.p.interfaceNames()
	var out []vppipsec.SecurityPolicyDatabaseInterfacesItem[struct{}]
	for _, c := range correlate {
		for _, d := range list {
			if d.SpdIndex == c.Key.Index && names[uint32(d.SwIfIndex)] == c.Key.InterfacesName {
				out = append(out, vppipsec.SecurityPolicyDatabaseInterfacesItem[struct{}]{Key: c.Key, Value: c.Value, Origin: kv.OriginNB})
			}
		}
	}
	return out, nil
}
