package vpp

import (
	"context"
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// loopbacks creates loopbacks with the given labels (sw_if_index 1, 2...)
// and makes their indexes known as the scheduler's metadata would.
func loopbacks(t *testing.T, p *Plugin, f *fakeVPP, names ...string) {
	t.Helper()
	found := map[string]uint32{}
	for _, n := range names {
		m, err := (&interfaces{p: p}).Create(context.Background(), vppinterfaces.InterfaceKey{Name: n}, &vppinterfaces.Interface{Name: n})
		if err != nil {
			t.Fatal(err)
		}
		found[n] = m.SwIfIndex
	}
	p.setRetrieved(false, found)
	f.Requests()
}

func TestBridgeDomain(t *testing.T) {
	t.Parallel()
	p, f := newPlugin(t)
	loopbacks(t, p, f, "if1", "if2")
	h := &bridgeDomains{p: p}
	bd := &vppl2.BridgeDomain{Name: "bd1", Flood: true, Learn: true, MacAge: 5, ArpTermination: true,
		Interfaces: []*vppl2.BridgeDomain_Interface{{Name: "if1", Bvi: true}, {Name: "if2", SplitHorizonGroup: 1}}}
	m, err := h.Create(context.Background(), vppl2.BridgeDomainKey{Name: "bd1"}, bd)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != 1 {
		t.Errorf("metadata %+v, want bd_id 1", m)
	}
	expectRequests(t, f, &l2.BridgeDomainAddDelV2{BdID: ^uint32(0), Flood: true, UuFlood: true, Forward: true, Learn: true, ArpTerm: true, MacAge: 5, BdTag: "bd1", IsAdd: true})
	p.setRetrieved(true, map[string]uint32{"bd1": 1})

	b := &bindings{p: p}
	k1 := vppl2.BridgeDomainInterfacesKey{Name: "bd1", InterfacesName: "if1"}
	k2 := vppl2.BridgeDomainInterfacesKey{Name: "bd1", InterfacesName: "if2"}
	for i, k := range []vppl2.BridgeDomainInterfacesKey{k1, k2} {
		if _, err := b.Create(context.Background(), k, bd.Interfaces[i]); err != nil {
			t.Fatal(err)
		}
	}
	expectRequests(t, f,
		&l2.SwInterfaceSetL2Bridge{RxSwIfIndex: 1, BdID: 1, PortType: l2.L2_API_PORT_TYPE_BVI, Enable: true},
		&l2.SwInterfaceSetL2Bridge{RxSwIfIndex: 2, BdID: 1, PortType: l2.L2_API_PORT_TYPE_NORMAL, Shg: 1, Enable: true},
	)

	// A bridge domain made by hand: vppctl create bridge-domain 9.
	f.Do(func(f *fakeVPP) {
		f.bds[9] = &l2.BridgeDomainDetails{BdID: 9, Learn: true, BviSwIfIndex: ^interface_types.InterfaceIndex(0)}
	})
	got, err := h.Retrieve(context.Background(), []vppl2.BridgeDomainItem[BridgeDomainMeta]{{Key: vppl2.BridgeDomainKey{Name: "bd1"}, Value: bd}})
	if err != nil {
		t.Fatal(err)
	}
	want := []vppl2.BridgeDomainItem[BridgeDomainMeta]{
		{Key: vppl2.BridgeDomainKey{Name: "bd1"}, Value: bd, Metadata: BridgeDomainMeta{1}, Origin: kv.OriginNB},
		{Key: vppl2.BridgeDomainKey{Name: "bd-9"}, Value: &vppl2.BridgeDomain{Name: "bd-9", Learn: true}, Metadata: BridgeDomainMeta{9}, Origin: kv.OriginSB},
	}
	if diff := cmp.Diff(want, got, protoCmp); diff != "" {
		t.Errorf("Retrieve (-want +got):\n%s", diff)
	}
	gotB, err := b.Retrieve(context.Background(), []vppl2.BridgeDomainInterfacesItem[struct{}]{
		{Key: k1, Value: bd.Interfaces[0]}, {Key: k2, Value: bd.Interfaces[1]},
		{Key: vppl2.BridgeDomainInterfacesKey{Name: "bd1", InterfacesName: "if3"}, Value: &vppl2.BridgeDomain_Interface{Name: "if3"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantB := []vppl2.BridgeDomainInterfacesItem[struct{}]{
		{Key: k1, Value: bd.Interfaces[0], Origin: kv.OriginNB}, {Key: k2, Value: bd.Interfaces[1], Origin: kv.OriginNB},
	}
	if diff := cmp.Diff(wantB, gotB, protoCmp); diff != "" {
		t.Errorf("bindings' Retrieve (-want +got):\n%s", diff)
	}
	expectRequests(t, f,
		&l2.BridgeDomainDump{BdID: ^uint32(0), SwIfIndex: ^interface_types.InterfaceIndex(0)},
		&l2.BridgeDomainDump{BdID: ^uint32(0), SwIfIndex: ^interface_types.InterfaceIndex(0)},
	)

	// Flags and MAC age change in place.
	bd2 := &vppl2.BridgeDomain{Name: "bd1", Flood: false, Learn: true, MacAge: 10, ArpTermination: false, Interfaces: bd.Interfaces}
	if _, err := h.Update(context.Background(), vppl2.BridgeDomainKey{Name: "bd1"}, bd, bd2, m); err != nil {
		t.Fatal(err)
	}
	bd3 := &vppl2.BridgeDomain{Name: "bd1", Flood: true, Learn: false, MacAge: 10, Interfaces: bd.Interfaces}
	if _, err := h.Update(context.Background(), vppl2.BridgeDomainKey{Name: "bd1"}, bd2, bd3, m); err != nil {
		t.Fatal(err)
	}
	expectRequests(t, f,
		&l2.BridgeFlags{BdID: 1, Flags: l2.BRIDGE_API_FLAG_FLOOD | l2.BRIDGE_API_FLAG_UU_FLOOD | l2.BRIDGE_API_FLAG_ARP_TERM},
		&l2.BridgeDomainSetMacAge{BdID: 1, MacAge: 10},
		&l2.BridgeFlags{BdID: 1, IsSet: true, Flags: l2.BRIDGE_API_FLAG_FLOOD | l2.BRIDGE_API_FLAG_UU_FLOOD},
		&l2.BridgeFlags{BdID: 1, Flags: l2.BRIDGE_API_FLAG_LEARN},
	)
	f.Do(func(f *fakeVPP) {
		if d := f.bds[1]; d.Learn || !d.Flood || !d.UuFlood || d.ArpTerm || d.MacAge != 10 || len(d.SwIfDetails) != 2 {
			t.Errorf("bridge domain after the updates: %+v", d)
		}
	})
	if _, err := h.Update(context.Background(), vppl2.BridgeDomainKey{Name: "bd1"}, bd, bd, m); err != nil {
		t.Fatal(err)
	}
	expectRequests(t, f)

	// The L2 FIB entry through if2.
	fh := &fibEntries{p: p}
	fe := &vppl2.FIBEntry{BridgeDomain: "bd1", PhysAddress: "02:00:00:00:00:01", OutgoingInterface: "if2", StaticConfig: true}
	fk := vppl2.FIBEntryKey{BridgeDomain: "bd1", PhysAddress: net.HardwareAddr(mac1[:])}
	if _, err := fh.Create(context.Background(), fk, fe); err != nil {
		t.Fatal(err)
	}
	expectRequests(t, f, &l2.L2fibAddDel{Mac: mac1, BdID: 1, SwIfIndex: 2, IsAdd: true, StaticMac: true})
	gotF, err := fh.Retrieve(context.Background(), []vppl2.FIBEntryItem[struct{}]{{Key: fk, Value: fe}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]vppl2.FIBEntryItem[struct{}]{{Key: fk, Value: fe, Origin: kv.OriginNB}}, gotF, protoCmp); diff != "" {
		t.Errorf("FIB Retrieve (-want +got):\n%s", diff)
	}
	expectRequests(t, f, &l2.L2FibTableDump{BdID: 1})
	if err := fh.Delete(context.Background(), fk, fe, struct{}{}); err != nil {
		t.Fatal(err)
	}
	expectRequests(t, f, &l2.L2fibAddDel{Mac: mac1, BdID: 1, SwIfIndex: 2, StaticMac: true})

	if err := b.Delete(context.Background(), k1, bd.Interfaces[0], struct{}{}); err != nil {
		t.Fatal(err)
	}
	if err := h.Delete(context.Background(), vppl2.BridgeDomainKey{Name: "bd1"}, bd, m); err != nil {
		t.Fatal(err)
	}
	expectRequests(t, f,
		&l2.SwInterfaceSetL2Bridge{RxSwIfIndex: 1, BdID: 1, PortType: l2.L2_API_PORT_TYPE_BVI},
		&l2.BridgeDomainAddDelV2{BdID: 1},
	)
}
