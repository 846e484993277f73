package vpp

import (
	"context"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"

	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// bindings is the handler of vpp.l2.v1.BridgeDomain.interfaces: an
// interface's membership in a bridge domain. It has no Update: a change
// re-binds.
type bindings struct{ p *Plugin }

var _ vppl2.BridgeDomainInterfacesRetriever[struct{}] = (*bindings)(nil)

// Create puts the interface into the bridge domain.
// vppctl set interface l2 bridge NAME BD [bvi] [SHG]
func (h *bindings) Create(ctx context.Context, k vppl2.BridgeDomainInterfacesKey, v *vppl2.BridgeDomain_Interface) (struct{}, error) {
	return struct{}{}, h.set(ctx, k, v, true)
}

// Delete takes the interface out of the bridge domain (back to L3).
func (h *bindings) Delete(ctx context.Context, k vppl2.BridgeDomainInterfacesKey, v *vppl2.BridgeDomain_Interface, _ struct{}) error {
	return h.set(ctx, k, v, false)
}

func (h *bindings) set(ctx context.Context, k vppl2.BridgeDomainInterfacesKey, v *vppl2.BridgeDomain_Interface, enable bool) error {
	bd, err := h.p.bdID(k.Name)
	if err != nil {
		return err
	}
	idx, err := h.p.swIfIndex(k.InterfacesName)
	if err != nil {
		return err
	}
	port := l2.L2_API_PORT_TYPE_NORMAL
	if v.GetBvi() {
		port = l2.L2_API_PORT_TYPE_BVI
	}
	_, err = l2.NewServiceClient(h.p.conn).SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{
		RxSwIfIndex: interface_types.InterfaceIndex(idx), BdID: bd, PortType: port, Shg: uint8(v.GetSplitHorizonGroup()), Enable: enable,
	})
	return vppErr("sw_interface_set_l2_bridge", err)
}

// Retrieve reports the correlated bindings that their bridge domain has.
func (h *bindings) Retrieve(ctx context.Context, correlate []vppl2.BridgeDomainInterfacesItem[struct{}]) ([]vppl2.BridgeDomainInterfacesItem[struct{}], error) {
	if len(correlate) == 0 {
		return nil, nil
	}
	list, err := h.p.dumpBDs(ctx)
	if err != nil {
		return nil, err
	}
	byID := map[uint32]*l2.BridgeDomainDetails{}
	for _, d := range list {
		byID[d.BdID] = d
	}
	var out []vppl2.BridgeDomainInterfacesItem[struct{}]
	for _, c := range correlate {
		bd, err1 := h.p.bdID(c.Key.Name)
		idx, err2 := h.p.swIfIndex(c.Key.InterfacesName)
		if d := byID[bd]; err1 == nil && err2 == nil && d != nil {
			for _, m := range d.SwIfDetails {
				if uint32(m.SwIfIndex) == idx {
					got := &vppl2.BridgeDomain_Interface{Name: c.Key.InterfacesName, Bvi: d.BviSwIfIndex == m.SwIfIndex, SplitHorizonGroup: uint32(m.Shg)}
					out = append(out, vppl2.BridgeDomainInterfacesItem[struct{}]{Key: c.Key, Value: got, Origin: kv.OriginNB})
				}
			}
		}
	}
	return out, nil
}
