package vpp

import (
	"fmt"
	"maps"
	"math/bits"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/rdma"
	"go.fd.io/govpp/binapi/vmxnet3"
)

func init() { registerFakeExt(func() fakeExt { return &fakeNIC{} }) }

// The devices the fake's host has: vmxnet3 PCI devices (VPP's address
// form) and Linux network devices with RDMA.
var (
	fakePCI     = []uint32{0x0b00, 0x1300} // 0000:0b:00.0, 0000:13:00.0
	fakeRdmaDev = []string{"ens1f0", "ens1f1"}
)

// fakeNIC is the fake VPP's part for the vmxnet3 and RDMA drivers.
type fakeNIC struct {
	vmxnet3 map[uint32]*vmxnet3.SwVmxnet3InterfaceDetails
	rdma    map[uint32]*rdma.RdmaCreateV4
}

func (x *fakeNIC) reset() {
	x.vmxnet3, x.rdma = map[uint32]*vmxnet3.SwVmxnet3InterfaceDetails{}, map[uint32]*rdma.RdmaCreateV4{}
}

func (x *fakeNIC) forget(i uint32) {
	delete(x.vmxnet3, i)
	delete(x.rdma, i)
}

// queueSize says whether VPP takes n as a queue size: a power of 2 within
// the driver's bounds.
func queueSize(n uint16, lo, hi uint16) bool { return bits.OnesCount16(n) == 1 && n >= lo && n <= hi }

func (x *fakeNIC) apply(f *fakeVPP, msg api.Message, retval *int32) ([]api.Message, bool) {
	switch m := msg.(type) {
	case *vmxnet3.Vmxnet3Create:
		used := slices.ContainsFunc(slices.Collect(maps.Values(x.vmxnet3)), func(d *vmxnet3.SwVmxnet3InterfaceDetails) bool { return d.PciAddr == m.PciAddr })
		switch {
		case !slices.Contains(fakePCI, m.PciAddr):
			*retval = int32(api.INVALID_INTERFACE) // no such PCI device
		case used:
			*retval = int32(api.ADDRESS_IN_USE)
		case !queueSize(m.RxqSize, 64, 4096) || !queueSize(m.TxqSize, 64, 4096) || m.RxqNum > 16 || m.TxqNum > 8:
			*retval = int32(api.INVALID_VALUE)
		default:
			a := m.PciAddr
			name := fmt.Sprintf("vmxnet3-%x/%x/%x/%x", a>>16, a>>8&0xff, a>>3&0x1f, a&7)
			idx := f.newIf(name, "vmxnet3", [6]byte{})
			d := &vmxnet3.SwVmxnet3InterfaceDetails{SwIfIndex: idx, IfName: name, HwAddr: f.ifaces[uint32(idx)].L2Address, PciAddr: a, Version: 3, RxCount: 1, TxCount: 1}
			d.RxList[0].RxQsize, d.TxList[0].TxQsize = m.RxqSize, m.TxqSize
			x.vmxnet3[uint32(idx)] = d
			return []api.Message{&vmxnet3.Vmxnet3CreateReply{SwIfIndex: idx}}, true
		}
	case *vmxnet3.Vmxnet3Delete:
		if x.vmxnet3[uint32(m.SwIfIndex)] == nil {
			*retval = int32(api.INVALID_INTERFACE) // not a vmxnet3 interface
		} else {
			f.forget(uint32(m.SwIfIndex))
		}
	case *vmxnet3.SwVmxnet3InterfaceDump:
		var out []api.Message
		for _, i := range sortedKeys(x.vmxnet3) {
			if m.SwIfIndex == ^interface_types.InterfaceIndex(0) || uint32(m.SwIfIndex) == i {
				d := *x.vmxnet3[i]
				out = append(out, &d)
			}
		}
		return out, true
	case *rdma.RdmaCreateV4:
		used := slices.ContainsFunc(slices.Collect(maps.Values(x.rdma)), func(r *rdma.RdmaCreateV4) bool { return r.HostIf == m.HostIf })
		switch {
		case !slices.Contains(fakeRdmaDev, m.HostIf) || used:
			*retval = int32(api.INVALID_INTERFACE) // no such device, or VPP has it already
		case m.Mode > rdma.RDMA_API_MODE_DV || m.RxqNum == 0 || !queueSize(m.RxqSize, 1, 65535) || !queueSize(m.TxqSize, 1, 65535):
			*retval = int32(api.INVALID_VALUE)
		default:
			idx := f.newIf(m.Name, "rdma", [6]byte{})
			c := *m
			x.rdma[uint32(idx)] = &c
			return []api.Message{&rdma.RdmaCreateV4Reply{SwIfIndex: idx}}, true
		}
	case *rdma.RdmaDelete:
		if x.rdma[uint32(m.SwIfIndex)] == nil {
			*retval = int32(api.INVALID_INTERFACE) // not an RDMA interface
		} else {
			f.forget(uint32(m.SwIfIndex))
		}
	default:
		return nil, false
	}
	return nil, true
}
