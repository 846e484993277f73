package vpp

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/rdma"
	"go.fd.io/govpp/binapi/vmxnet3"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// creates returns the requests of the given type among those since the
// last check.
func creates[T api.Message](f *fakeVPP) []T {
	var out []T
	for _, m := range f.Requests() {
		if x, ok := m.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

func vmxIf(name, pci string, rxq uint32) *vppinterfaces.Interface {
	return &vppinterfaces.Interface{Name: name, Type: vppinterfaces.Interface_TYPE_VMXNET3, Enabled: true,
		Vmxnet3: &vppinterfaces.Interface_Vmxnet3{PciAddress: pci, RxqSize: rxq}}
}

// TestVmxnet3: the driver is attached to the PCI device (VPP's address
// form, the queue sizes' defaults sent), read back by a resync with no
// calls (VPP's 1024 is the value's 0), changed in place (admin state,
// receive mode) or re-created (queue size), and detached.
func TestVmxnet3(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := vmxIf("vmx1", "0000:0b:00.0", 0)
	e.set(nil, v)
	e.expect(scheduler.CONFIGURED, "vpp/interface/vmx1")
	want := []*vmxnet3.Vmxnet3Create{{PciAddr: 0x0b00, RxqSize: 1024, TxqSize: 1024, RxqNum: 1, TxqNum: 1}}
	if diff := cmp.Diff(want, creates[*vmxnet3.Vmxnet3Create](e.f)); diff != "" {
		t.Errorf("vmxnet3_create (-want +got):\n%s", diff)
	}
	e.f.Do(func(f *fakeVPP) {
		if i, ok := f.ifIndex("vmx1"); !ok || f.ifaces[i].InterfaceName != "vmxnet3-0/b/0/0" {
			t.Errorf("VPP's interface %d (%v): %+v", i, ok, f.ifaces[i])
		}
	})
	e.resync()
	onlyReads(t, e.f, "a resync of an unchanged vmxnet3 interface")

	v = vmxIf("vmx1", "0000:0b:00.0", 0)
	v.Enabled, v.RxMode = false, vppinterfaces.Interface_RX_MODE_INTERRUPT
	e.set(nil, v)
	if diff := cmp.Diff([]string{"sw_interface_set_rx_mode", "sw_interface_set_flags"}, e.f.RequestNames()); diff != "" {
		t.Errorf("changing admin state and receive mode (-want +got):\n%s", diff)
	}
	e.resync()
	onlyReads(t, e.f, "a resync of an unchanged vmxnet3 interface")

	e.set(nil, vmxIf("vmx1", "0000:0b:00.0", 256))
	e.expect(scheduler.CONFIGURED, "vpp/interface/vmx1")
	names := e.f.RequestNames()
	if d, c := slices.Index(names, "vmxnet3_delete"), slices.Index(names, "vmxnet3_create"); d < 0 || c < d {
		t.Errorf("another queue size sent %v, want vmxnet3_delete then vmxnet3_create", names)
	}
	e.resync()
	onlyReads(t, e.f, "a resync of an unchanged vmxnet3 interface")
	e.del("vpp/interface/vmx1")
	e.f.Do(func(f *fakeVPP) {
		if n := len(fakeExtOf[*fakeNIC](f).vmxnet3); n != 0 || len(f.ifaces) != 1 {
			t.Errorf("VPP has %d vmxnet3 interfaces and %d interfaces, want none and local0", n, len(f.ifaces))
		}
	})
}

// TestVmxnet3Refused: a queue size out of bounds is refused before VPP is
// asked; a malformed PCI address fails without a call; VPP refuses a
// device that is not there, one in use and a size not a power of 2.
func TestVmxnet3Refused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, v := range []*vppinterfaces.Interface{vmxIf("small", "0000:0b:00.0", 32), {Name: "novmx", Type: vppinterfaces.Interface_TYPE_VMXNET3}} {
		e.set(nil, v)
		e.expect(scheduler.INVALID, keyOf(v))
	}
	e.set(nil, vmxIf("bad", "0b:00.0", 0))
	e.expect(scheduler.FAILED, "vpp/interface/bad")
	if got := creates[*vmxnet3.Vmxnet3Create](e.f); len(got) != 0 {
		t.Errorf("invalid interfaces sent %v", got)
	}
	e.set(nil, vmxIf("absent", "0000:0c:00.0", 0), vmxIf("odd", "0000:13:00.0", 100))
	e.expect(scheduler.FAILED, "vpp/interface/absent", "vpp/interface/odd")
	e.set(nil, vmxIf("a", "0000:0b:00.0", 0))
	e.set(nil, vmxIf("b", "0000:0b:00.0", 0))
	e.expect(scheduler.CONFIGURED, "vpp/interface/a")
	e.expect(scheduler.FAILED, "vpp/interface/b")
}

// TestRdma: the driver is attached to the Linux device with the
// defaults sent, kept by a resync with no calls (VPP does not report its
// parameters: the value's stand), re-created when they change, detached;
// VPP refuses a device it does not have or has already.
func TestRdma(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := &vppinterfaces.Interface{Name: "r1", Type: vppinterfaces.Interface_TYPE_RDMA, Enabled: true,
		Rdma: &vppinterfaces.Interface_Rdma{HostIfName: "ens1f0", Mode: vppinterfaces.Interface_Rdma_MODE_DV}}
	e.set(nil, r)
	e.expect(scheduler.CONFIGURED, "vpp/interface/r1")
	want := []*rdma.RdmaCreateV4{{HostIf: "ens1f0", Name: "rdma-ens1f0", RxqNum: 1, RxqSize: 1024, TxqSize: 1024, Mode: rdma.RDMA_API_MODE_DV}}
	if diff := cmp.Diff(want, creates[*rdma.RdmaCreateV4](e.f)); diff != "" {
		t.Errorf("rdma_create_v4 (-want +got):\n%s", diff)
	}
	e.resync()
	onlyReads(t, e.f, "a resync of an unchanged RDMA interface")

	r2 := &vppinterfaces.Interface{Name: "r1", Type: vppinterfaces.Interface_TYPE_RDMA, Enabled: true,
		Rdma: &vppinterfaces.Interface_Rdma{HostIfName: "ens1f0", RxqNum: 4}}
	e.set(nil, r2)
	e.expect(scheduler.CONFIGURED, "vpp/interface/r1")
	if diff := cmp.Diff([]string{"rdma_delete", "rdma_create_v4"}, slices.DeleteFunc(e.f.RequestNames(), func(n string) bool { return n != "rdma_delete" && n != "rdma_create_v4" })); diff != "" {
		t.Errorf("another queue count (-want +got):\n%s", diff)
	}

	other := &vppinterfaces.Interface{Name: "r2", Type: vppinterfaces.Interface_TYPE_RDMA, Rdma: &vppinterfaces.Interface_Rdma{HostIfName: "ens1f0"}}
	absent := &vppinterfaces.Interface{Name: "r3", Type: vppinterfaces.Interface_TYPE_RDMA, Rdma: &vppinterfaces.Interface_Rdma{HostIfName: "eth9"}}
	e.set(nil, other, absent)
	e.expect(scheduler.FAILED, "vpp/interface/r2", "vpp/interface/r3")

	e.del("vpp/interface/r1")
	e.f.Do(func(f *fakeVPP) {
		if n := len(fakeExtOf[*fakeNIC](f).rdma); n != 0 {
			t.Errorf("VPP has %d RDMA interfaces, want none", n)
		}
	})
}
