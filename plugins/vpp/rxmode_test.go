package vpp

import (
	"context"
	"errors"
	"testing"

	"go.fd.io/govpp/api"
	vppif "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"google.golang.org/protobuf/proto"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestRxMode: the receive mode is set at create, read back by a resync,
// changed in place, and given back to VPP's default when unset; refused
// for a type without receive queues, by the schema and by VPP.
func TestRxMode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m1 := &vppinterfaces.Interface{Name: "m1", Type: vppinterfaces.Interface_TYPE_MEMIF, Enabled: true, RxMode: vppinterfaces.Interface_RX_MODE_INTERRUPT}
	e.set(nil, m1)
	e.expect(scheduler.CONFIGURED, "vpp/interface/m1")
	found := false
	for _, m := range e.f.Requests() {
		if r, ok := m.(*vppif.SwInterfaceSetRxMode); ok {
			found = true
			if *r != (vppif.SwInterfaceSetRxMode{SwIfIndex: 1, Mode: interface_types.RX_MODE_API_INTERRUPT}) {
				t.Errorf("sw_interface_set_rx_mode %+v", r)
			}
		}
	}
	if !found {
		t.Error("no sw_interface_set_rx_mode at create")
	}
	e.resync()
	onlyDumps(t, e.f, "a resync of an unchanged receive mode")

	// Changed in place.
	m1 = proto.Clone(m1).(*vppinterfaces.Interface)
	m1.RxMode = vppinterfaces.Interface_RX_MODE_ADAPTIVE
	e.set(nil, m1)
	expectRequests(t, e.f, &vppif.SwInterfaceSetRxMode{SwIfIndex: 1, Mode: interface_types.RX_MODE_API_ADAPTIVE})
	e.f.Do(func(f *fakeVPP) {
		if f.rxMode[1] != interface_types.RX_MODE_API_ADAPTIVE {
			t.Errorf("VPP's mode %v", f.rxMode[1])
		}
	})
	// Unset: VPP's default again.
	m1 = proto.Clone(m1).(*vppinterfaces.Interface)
	m1.RxMode = vppinterfaces.Interface_RX_MODE_UNSPECIFIED
	e.set(nil, m1)
	expectRequests(t, e.f, &vppif.SwInterfaceSetRxMode{SwIfIndex: 1, Mode: interface_types.RX_MODE_API_DEFAULT})
	e.resync()
	onlyDumps(t, e.f, "a resync of an unspecified receive mode")

	// A loopback has no receive queue: INVALID before VPP is asked, and
	// VPP refuses it too.
	lo := &vppinterfaces.Interface{Name: "lo1", Type: vppinterfaces.Interface_TYPE_LOOPBACK, RxMode: vppinterfaces.Interface_RX_MODE_POLLING}
	e.set(nil, lo)
	e.expect(scheduler.INVALID, "vpp/interface/lo1")
	lo.RxMode = 0
	e.set(nil, lo)
	e.expect(scheduler.CONFIGURED, "vpp/interface/lo1")
	err := (rxModes{e.p}).Update(context.Background(), 2, lo, &vppinterfaces.Interface{RxMode: vppinterfaces.Interface_RX_MODE_POLLING})
	if !errors.Is(err, api.UNSUPPORTED) {
		t.Errorf("rx mode of a loopback: %v, want VPP's unsupported", err)
	}
}
