package vpp

import (
	"context"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/rdma"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
)

// rdmas holds what is particular to the interfaces of type RDMA. VPP has
// no dump of their parameters: Retrieve takes them from the value
// correlated, as those of memif and TAP interfaces.
type rdmas struct{ p *Plugin }

// Create attaches VPP's driver to the Linux device.
// vppctl create interface rdma host-if HOST [num-rx-queues N] [rx-queue-size N] [tx-queue-size N] [mode MODE]
func (h rdmas) Create(ctx context.Context, v *vppinterfaces.Interface) (interface_types.InterfaceIndex, error) {
	x := v.GetRdma()
	r, err := rdma.NewServiceClient(h.p.conn).RdmaCreateV4(ctx, &rdma.RdmaCreateV4{HostIf: x.GetHostIfName(), Name: "rdma-" + x.GetHostIfName(),
		RxqNum: uint16(x.EffectiveRxqNum()), RxqSize: uint16(x.EffectiveRxqSize()), TxqSize: uint16(x.EffectiveTxqSize()), Mode: rdma.RdmaMode(x.GetMode())})
	if err != nil {
		return 0, vppErr("rdma_create_v4", err)
	}
	return r.SwIfIndex, nil
}

// Delete detaches the driver.
func (h rdmas) Delete(ctx context.Context, idx interface_types.InterfaceIndex) error {
	_, err := rdma.NewServiceClient(h.p.conn).RdmaDelete(ctx, &rdma.RdmaDelete{SwIfIndex: idx})
	return vppErr("rdma_delete", err)
}
