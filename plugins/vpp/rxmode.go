package vpp

import (
	"context"

	vppif "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
)

// rxModes holds the receive mode of interfaces, a field of the
// interface applied in place.
type rxModes struct{ p *Plugin }

// Update sets the mode of all the queues when it changed; back to
// unspecified, VPP's default.
func (h rxModes) Update(ctx context.Context, idx interface_types.InterfaceIndex, old, v *vppinterfaces.Interface) error {
	if v.GetRxMode() == old.GetRxMode() {
		return nil
	}
	mode := interface_types.RxMode(v.GetRxMode())
	if mode == 0 {
		mode = interface_types.RX_MODE_API_DEFAULT
	}
	_, err := vppif.NewServiceClient(h.p.conn).SwInterfaceSetRxMode(ctx, &vppif.SwInterfaceSetRxMode{SwIfIndex: idx, Mode: mode})
	return vppErr("sw_interface_set_rx_mode", err)
}

// Retrieve reads the mode of the interfaces whose value sets one (of
// their first queue: the model sets all alike).
func (h rxModes) Retrieve(ctx context.Context, found []vppinterfaces.InterfaceItem[InterfaceMeta], want map[string]*vppinterfaces.Interface) error {
	for _, it := range found {
		if want[it.Key.Name].GetRxMode() == 0 {
			continue
		}
		list, err := dump[*vppif.SwInterfaceRxPlacementDetails]("sw_interface_rx_placement_dump")(vppif.NewServiceClient(h.p.conn).SwInterfaceRxPlacementDump(ctx,
			&vppif.SwInterfaceRxPlacementDump{SwIfIndex: interface_types.InterfaceIndex(it.Metadata.SwIfIndex)}))
		if err != nil {
			return err
		}
		if len(list) > 0 {
			it.Value.RxMode = vppinterfaces.Interface_RxMode(list[0].Mode)
		}
	}
	return nil
}
