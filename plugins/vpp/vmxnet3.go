package vpp

import (
	"context"
	"fmt"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/vmxnet3"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// vmxnet3s holds what is particular to the interfaces of type VMXNET3.
type vmxnet3s struct{ p *Plugin }

// Create attaches VPP's driver to the PCI device. VPP's PCI address is
// domain<<16 | bus<<8 | slot<<3 | function.
// vppctl create interface vmxnet3 PCI [rx-queue-size N] [tx-queue-size N] [elog]
func (h vmxnet3s) Create(ctx context.Context, v *vppinterfaces.Interface) (interface_types.InterfaceIndex, error) {
	x := v.GetVmxnet3()
	var dom, bus, slot, fn uint32
	if n, err := fmt.Sscanf(x.GetPciAddress(), "%4x:%2x:%2x.%1x", &dom, &bus, &slot, &fn); n != 4 || err != nil || slot > 0x1f || fn > 7 {
		return 0, kv.NonRetriable(fmt.Errorf("vmxnet3.pci_address: %q is not a PCI address DDDD:BB:SS.F", x.GetPciAddress()))
	}
	var elog int32
	if x.GetEnableElog() {
		elog = 1
	}
	r, err := vmxnet3.NewServiceClient(h.p.conn).Vmxnet3Create(ctx, &vmxnet3.Vmxnet3Create{PciAddr: dom<<16 | bus<<8 | slot<<3 | fn, EnableElog: elog,
		RxqSize: uint16(x.EffectiveRxqSize()), TxqSize: uint16(x.EffectiveTxqSize()), RxqNum: 1, TxqNum: 1})
	if err != nil {
		return 0, vppErr("vmxnet3_create", err)
	}
	return r.SwIfIndex, nil
}

// Delete detaches the driver.
func (h vmxnet3s) Delete(ctx context.Context, idx interface_types.InterfaceIndex) error {
	_, err := vmxnet3.NewServiceClient(h.p.conn).Vmxnet3Delete(ctx, &vmxnet3.Vmxnet3Delete{SwIfIndex: idx})
	return vppErr("vmxnet3_delete", err)
}

// Retrieve fills in the devices' parameters among the interfaces found
// (enable_elog, which VPP does not report, from the value correlated).
func (h vmxnet3s) Retrieve(ctx context.Context, found []vppinterfaces.InterfaceItem[InterfaceMeta], want map[string]*vppinterfaces.Interface) error {
	byIndex := map[uint32]vppinterfaces.InterfaceItem[InterfaceMeta]{}
	for _, it := range found {
		if it.Value.GetType() == vppinterfaces.Interface_TYPE_VMXNET3 {
			byIndex[it.Metadata.SwIfIndex] = it
		}
	}
	if len(byIndex) == 0 {
		return nil
	}
	list, err := dump[*vmxnet3.SwVmxnet3InterfaceDetails]("sw_vmxnet3_interface_dump")(vmxnet3.NewServiceClient(h.p.conn).SwVmxnet3InterfaceDump(ctx,
		&vmxnet3.SwVmxnet3InterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}))
	if err != nil {
		return err
	}
	for _, d := range list {
		if it, ok := byIndex[uint32(d.SwIfIndex)]; ok {
			a := d.PciAddr
			it.Value.Vmxnet3 = &vppinterfaces.Interface_Vmxnet3{PciAddress: fmt.Sprintf("%04x:%02x:%02x.%x", a>>16, a>>8&0xff, a>>3&0x1f, a&7),
				RxqSize: uint32(d.RxList[0].RxQsize), TxqSize: uint32(d.TxList[0].TxQsize), EnableElog: want[it.Key.Name].GetVmxnet3().GetEnableElog()}
		}
	}
	return nil
}
