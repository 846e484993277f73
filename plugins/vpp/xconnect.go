package vpp

import (
	"context"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"

	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
)

// xconnects is the handler of vpp.l2.v1.XConnectPair. It has no Update:
// another transmit interface re-creates it.
type xconnects struct{ p *Plugin }

var _ vppl2.XConnectPairRetriever[struct{}] = (*xconnects)(nil)

// Create cross-connects the receive interface to the transmit interface.
// vppctl set interface l2 xconnect RX TX
func (h *xconnects) Create(ctx context.Context, k vppl2.XConnectPairKey, v *vppl2.XConnectPair) (struct{}, error) {
	return struct{}{}, h.set(ctx, k, v, true)
}

// Delete puts the receive interface back to L3.
// vppctl set interface l3 RX
func (h *xconnects) Delete(ctx context.Context, k vppl2.XConnectPairKey, v *vppl2.XConnectPair, _ struct{}) error {
	return h.set(ctx, k, v, false)
}

func (h *xconnects) set(ctx context.Context, k vppl2.XConnectPairKey, v *vppl2.XConnectPair, enable bool) error {
	rx, err := h.p.swIfIndex(k.ReceiveInterface)
	if err != nil {
		return err
	}
	tx, err := h.p.swIfIndex(v.GetTransmitInterface())
	if err != nil {
		return err
	}
	_, err = l2.NewServiceClient(h.p.conn).SwInterfaceSetL2Xconnect(ctx, &l2.SwInterfaceSetL2Xconnect{
		RxSwIfIndex: interface_types.InterfaceIndex(rx), TxSwIfIndex: interface_types.InterfaceIndex(tx), Enable: enable,
	})
	return vppErr("sw_interface_set_l2_xconnect", err)
}

// Retrieve dumps the cross-connects between interfaces it can name:
// correlated ones are ours, the others obtained.
func (h *xconnects) Retrieve(ctx context.Context, correlate []vppl2.XConnectPairItem[struct{}]) ([]vppl2.XConnectPairItem[struct{}], error) {
	list, err := dump[*l2.L2XconnectDetails]("l2_xconnect_dump")(l2.NewServiceClient(h.p.conn).L2XconnectDump(ctx, &l2.L2XconnectDump{}))
	if err != nil {
		return nil, err
	}
	ours := map[vppl2.XConnectPairKey]bool{}
	for _, it := range correlate {
		ours[it.Key] = true
	}
	names := h.p.interfaceNames()
	var out []vppl2.XConnectPairItem[struct{}]
	for _, d := range list {
		rx, tx := names[uint32(d.RxSwIfIndex)], names[uint32(d.TxSwIfIndex)]
		if k := (vppl2.XConnectPairKey{ReceiveInterface: rx}); rx != "" && tx != "" {
			out = append(out, vppl2.XConnectPairItem[struct{}]{Key: k, Value: &vppl2.XConnectPair{ReceiveInterface: rx, TransmitInterface: tx}, Origin: origin(ours[k])})
		}
	}
	return out, nil
}
