package vpp

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/af_packet"
	"go.fd.io/govpp/binapi/ethernet_types"
	vppif "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/memif"
	"go.fd.io/govpp/binapi/tapv2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

var (
	mac1 = ethernet_types.MacAddress{0x02, 0, 0, 0, 0, 0x01}
	up   = interface_types.IF_STATUS_API_FLAG_ADMIN_UP
)

func TestInterfaceCreate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		value *vppinterfaces.Interface
		want  []api.Message
	}{
		{
			name:  "loopback with everything",
			value: &vppinterfaces.Interface{Name: "lo1", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, PhysAddress: "02:00:00:00:00:01", Mtu: 1500, Vrf: 3},
			want: []api.Message{
				&vppif.CreateLoopback{MacAddress: mac1},
				&vppif.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: 1, Tag: "lo1"},
				&vppif.HwInterfaceSetMtu{SwIfIndex: 1, Mtu: 1500},
				&vppif.SwInterfaceSetTable{SwIfIndex: 1, VrfID: 3},
				&vppif.SwInterfaceSetTable{SwIfIndex: 1, IsIPv6: true, VrfID: 3},
				&vppif.SwInterfaceSetFlags{SwIfIndex: 1, Flags: up},
			},
		},
		{
			name:  "memif master, down, default MTU",
			value: &vppinterfaces.Interface{Name: "memif1/2", Type: vppinterfaces.Interface_TYPE_MEMIF, Memif: &vppinterfaces.Interface_Memif{Master: true, Id: 2, SocketId: 1}},
			want: []api.Message{
				&memif.MemifCreateV2{Role: memif.MEMIF_ROLE_API_MASTER, Mode: memif.MEMIF_MODE_API_ETHERNET, ID: 2, SocketID: 1},
				&vppif.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: 1, Tag: "memif1/2"},
				&vppif.HwInterfaceSetMtu{SwIfIndex: 1, Mtu: 9000},
			},
		},
		{
			name:  "memif slave without parameters",
			value: &vppinterfaces.Interface{Name: "m0", Type: vppinterfaces.Interface_TYPE_MEMIF, Enabled: true},
			want: []api.Message{
				&memif.MemifCreateV2{Role: memif.MEMIF_ROLE_API_SLAVE, Mode: memif.MEMIF_MODE_API_ETHERNET},
				&vppif.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: 1, Tag: "m0"},
				&vppif.HwInterfaceSetMtu{SwIfIndex: 1, Mtu: 9000},
				&vppif.SwInterfaceSetFlags{SwIfIndex: 1, Flags: up},
			},
		},
		{
			name:  "tap with a host name",
			value: &vppinterfaces.Interface{Name: "tap0", Type: vppinterfaces.Interface_TYPE_TAP, Tap: &vppinterfaces.Interface_Tap{HostIfName: "vpp-tap0"}},
			want: []api.Message{
				&tapv2.TapCreateV3{ID: ^uint32(0), UseRandomMac: true, NumRxQueues: 1, NumTxQueues: 1, TxRingSz: 256, RxRingSz: 256, HostIfNameSet: true, HostIfName: "vpp-tap0"},
				&vppif.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: 1, Tag: "tap0"},
				&vppif.HwInterfaceSetMtu{SwIfIndex: 1, Mtu: 9000},
			},
		},
		{
			name:  "af_packet on veth1 with a MAC",
			value: &vppinterfaces.Interface{Name: "host-veth1", Type: vppinterfaces.Interface_TYPE_AF_PACKET, HostIfName: "veth1", PhysAddress: "02:00:00:00:00:01", Mtu: 1500},
			want: []api.Message{
				&af_packet.AfPacketCreateV3{Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: "veth1", HwAddr: mac1, NumRxQueues: 1, NumTxQueues: 1},
				&vppif.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: 1, Tag: "host-veth1"},
				&vppif.HwInterfaceSetMtu{SwIfIndex: 1, Mtu: 1500},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, f := newPlugin(t)
			h := &interfaces{p: p}
			m, err := h.Create(context.Background(), vppinterfaces.InterfaceKey{Name: tc.value.Name}, tc.value)
			if err != nil {
				t.Fatal(err)
			}
			if m.SwIfIndex != 1 {
				t.Errorf("metadata %+v, want sw_if_index 1", m)
			}
			expectRequests(t, f, tc.want...)
			if err := h.Delete(context.Background(), vppinterfaces.InterfaceKey{Name: tc.value.Name}, tc.value, m); err != nil {
				t.Fatal(err)
			}
			var del api.Message
			switch tc.value.Type {
			case vppinterfaces.Interface_TYPE_MEMIF:
				del = &memif.MemifDelete{SwIfIndex: 1}
			case vppinterfaces.Interface_TYPE_TAP:
				del = &tapv2.TapDeleteV2{SwIfIndex: 1}
			case vppinterfaces.Interface_TYPE_AF_PACKET:
				del = &af_packet.AfPacketDelete{HostIfName: "veth1"}
			default:
				del = &vppif.DeleteLoopback{SwIfIndex: 1}
			}
			expectRequests(t, f, del)
		})
	}
}

func TestInterfaceUpdate(t *testing.T) {
	t.Parallel()
	p, f := newPlugin(t)
	h := &interfaces{p: p}
	k := vppinterfaces.InterfaceKey{Name: "lo1"}
	old := &vppinterfaces.Interface{Name: "lo1", Enabled: true, Vrf: 3}
	m, err := h.Create(context.Background(), k, old)
	if err != nil {
		t.Fatal(err)
	}
	f.Requests()
	v := &vppinterfaces.Interface{Name: "lo1", PhysAddress: "02:00:00:00:00:01", Mtu: 1500}
	if _, err := h.Update(context.Background(), k, old, v, m); err != nil {
		t.Fatal(err)
	}
	expectRequests(t, f,
		&vppif.SwInterfaceSetMacAddress{SwIfIndex: 1, MacAddress: mac1},
		&vppif.HwInterfaceSetMtu{SwIfIndex: 1, Mtu: 1500},
		&ip.IPAddressDump{SwIfIndex: 1},
		&vppif.SwInterfaceSetTable{SwIfIndex: 1, VrfID: 0},
		&ip.IPAddressDump{SwIfIndex: 1, IsIPv6: true},
		&vppif.SwInterfaceSetTable{SwIfIndex: 1, IsIPv6: true, VrfID: 0},
		&vppif.SwInterfaceSetFlags{SwIfIndex: 1, Flags: 0},
	)
	// Another VRF with addresses: they are taken off and put back, family
	// by family.
	f.Do(func(f *fakeVPP) { f.addrs[1] = []ip_types.AddressWithPrefix{addrWithPrefix("10.0.0.1/24")} })
	v2 := &vppinterfaces.Interface{Name: "lo1", PhysAddress: "02:00:00:00:00:01", Mtu: 1500, Vrf: 4}
	if _, err := h.Update(context.Background(), k, v, v2, m); err != nil {
		t.Fatal(err)
	}
	expectRequests(t, f,
		&ip.IPAddressDump{SwIfIndex: 1},
		&vppif.SwInterfaceAddDelAddress{SwIfIndex: 1, Prefix: addrWithPrefix("10.0.0.1/24")},
		&vppif.SwInterfaceSetTable{SwIfIndex: 1, VrfID: 4},
		&vppif.SwInterfaceAddDelAddress{SwIfIndex: 1, IsAdd: true, Prefix: addrWithPrefix("10.0.0.1/24")},
		&ip.IPAddressDump{SwIfIndex: 1, IsIPv6: true},
		&vppif.SwInterfaceSetTable{SwIfIndex: 1, IsIPv6: true, VrfID: 4},
	)
	v = v2
	// Nothing changed: no call.
	if _, err := h.Update(context.Background(), k, v, v, m); err != nil {
		t.Fatal(err)
	}
	expectRequests(t, f)
}

func TestInterfaceErrors(t *testing.T) {
	t.Parallel()
	p, f := newPlugin(t)
	h := &interfaces{p: p}
	f.Fail("create_loopback", -7)
	_, err := h.Create(context.Background(), vppinterfaces.InterfaceKey{Name: "lo1"}, &vppinterfaces.Interface{Name: "lo1"})
	if err == nil || err.Error() != "create_loopback: VPPApiError: Invalid value (-7)" {
		t.Errorf("error %v, want one naming create_loopback and the value -7", err)
	}
	if kv.IsRetriable(err) {
		t.Errorf("an invalid value is retried: %v", err)
	}
	f.Fail("create_loopback", -1)
	_, err = h.Create(context.Background(), vppinterfaces.InterfaceKey{Name: "lo1"}, &vppinterfaces.Interface{Name: "lo1"})
	if !kv.IsRetriable(err) {
		t.Errorf("error %v: want a retriable one", err)
	}
	// A failed tag takes the new interface away again.
	f.Requests()
	f.Fail("sw_interface_tag_add_del", -1)
	_, err = h.Create(context.Background(), vppinterfaces.InterfaceKey{Name: "lo1"}, &vppinterfaces.Interface{Name: "lo1"})
	if err == nil {
		t.Error("a failed tag: no error")
	}
	expectRequests(t, f, &vppif.CreateLoopback{}, &vppif.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: 1, Tag: "lo1"}, &vppif.DeleteLoopback{SwIfIndex: 1})
	f.Do(func(f *fakeVPP) {
		if len(f.ifaces) != 1 {
			t.Errorf("VPP has %d interfaces after a failed create, want local0 alone", len(f.ifaces))
		}
	})
	// Deleting what is gone succeeds.
	err = h.Delete(context.Background(), vppinterfaces.InterfaceKey{Name: "lo9"}, &vppinterfaces.Interface{Name: "lo9"}, InterfaceMeta{SwIfIndex: 9})
	if !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("delete of a missing interface: %v, want not found", err)
	}
}

func TestInterfaceRetrieve(t *testing.T) {
	t.Parallel()
	p, f := newPlugin(t)
	h := &interfaces{p: p}
	ours := &vppinterfaces.Interface{Name: "lo1", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, Vrf: 3, IpAddresses: []string{"10.0.0.1/24"}}
	if _, err := h.Create(context.Background(), vppinterfaces.InterfaceKey{Name: "lo1"}, ours); err != nil {
		t.Fatal(err)
	}
	af := &vppinterfaces.Interface{Name: "a1", Type: vppinterfaces.Interface_TYPE_AF_PACKET, HostIfName: "veth1", PhysAddress: "02:00:00:00:00:01"}
	if _, err := h.Create(context.Background(), vppinterfaces.InterfaceKey{Name: "a1"}, af); err != nil {
		t.Fatal(err)
	}
	// One made by hand: vppctl create host-interface name eth7.
	f.Do(func(f *fakeVPP) {
		f.ifaces[7] = &vppif.SwInterfaceDetails{SwIfIndex: 7, InterfaceName: "host-eth7", InterfaceDevType: "af_packet", L2Address: mac1, LinkMtu: 1500, Flags: up}
	})
	f.Requests()
	got, err := h.Retrieve(context.Background(), []vppinterfaces.InterfaceItem[InterfaceMeta]{
		{Key: vppinterfaces.InterfaceKey{Name: "lo1"}, Value: ours}, {Key: vppinterfaces.InterfaceKey{Name: "a1"}, Value: af},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []vppinterfaces.InterfaceItem[InterfaceMeta]{
		{Key: vppinterfaces.InterfaceKey{Name: "local0"}, Value: &vppinterfaces.Interface{Name: "local0"}, Metadata: InterfaceMeta{0}, Origin: kv.OriginSB},
		{Key: vppinterfaces.InterfaceKey{Name: "lo1"}, Value: &vppinterfaces.Interface{Name: "lo1", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, Mtu: 9000, Vrf: 3, IpAddresses: []string{"10.0.0.1/24"}}, Metadata: InterfaceMeta{1}, Origin: kv.OriginNB},
		{Key: vppinterfaces.InterfaceKey{Name: "a1"}, Value: &vppinterfaces.Interface{Name: "a1", Type: vppinterfaces.Interface_TYPE_AF_PACKET, HostIfName: "veth1", PhysAddress: "02:00:00:00:00:01", Mtu: 9000}, Metadata: InterfaceMeta{2}, Origin: kv.OriginNB},
		{Key: vppinterfaces.InterfaceKey{Name: "host-eth7"}, Value: &vppinterfaces.Interface{Name: "host-eth7", Type: vppinterfaces.Interface_TYPE_AF_PACKET, HostIfName: "eth7", Enabled: true, PhysAddress: "02:00:00:00:00:01", Mtu: 1500}, Metadata: InterfaceMeta{7}, Origin: kv.OriginSB},
	}
	if diff := cmp.Diff(want, got, protoCmp); diff != "" {
		t.Errorf("Retrieve (-want +got):\n%s", diff)
	}
	expectRequests(t, f,
		&vppif.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)},
		&vppif.SwInterfaceGetTable{SwIfIndex: 1},
		&vppif.SwInterfaceGetTable{SwIfIndex: 1, IsIPv6: true},
		&vppif.SwInterfaceGetTable{SwIfIndex: 2},
		&vppif.SwInterfaceGetTable{SwIfIndex: 2, IsIPv6: true},
	)
}

func TestAddresses(t *testing.T) {
	t.Parallel()
	p, f := newPlugin(t)
	if _, err := (&interfaces{p: p}).Create(context.Background(), vppinterfaces.InterfaceKey{Name: "lo1"}, &vppinterfaces.Interface{Name: "lo1"}); err != nil {
		t.Fatal(err)
	}
	p.setRetrieved(false, map[string]uint32{"lo1": 1}) // as the scheduler would keep the metadata
	f.Requests()
	h := &addresses{p: p}
	k4, _ := vppinterfaces.ParseInterfaceIpAddressesKey("vpp/interface/lo1/address/10.0.0.1/24")
	k6, _ := vppinterfaces.ParseInterfaceIpAddressesKey("vpp/interface/lo1/address/2001:db8::1/64")
	for _, k := range []vppinterfaces.InterfaceIpAddressesKey{k4, k6} {
		if _, err := h.Create(context.Background(), k, wrapperspb.String(k.IpAddresses.String())); err != nil {
			t.Fatal(err)
		}
	}
	expectRequests(t, f,
		&vppif.SwInterfaceAddDelAddress{SwIfIndex: 1, IsAdd: true, Prefix: addrWithPrefix("10.0.0.1/24")},
		&vppif.SwInterfaceAddDelAddress{SwIfIndex: 1, IsAdd: true, Prefix: addrWithPrefix("2001:db8::1/64")},
	)
	k3, _ := vppinterfaces.ParseInterfaceIpAddressesKey("vpp/interface/lo1/address/10.0.0.3/24")
	got, err := h.Retrieve(context.Background(), []vppinterfaces.InterfaceIpAddressesItem[struct{}]{
		{Key: k4, Value: wrapperspb.String("10.0.0.1/24")}, {Key: k6, Value: wrapperspb.String("2001:db8::1/64")}, {Key: k3, Value: wrapperspb.String("10.0.0.3/24")},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []vppinterfaces.InterfaceIpAddressesItem[struct{}]{
		{Key: k4, Value: wrapperspb.String("10.0.0.1/24"), Origin: kv.OriginNB}, {Key: k6, Value: wrapperspb.String("2001:db8::1/64"), Origin: kv.OriginNB},
	}
	if diff := cmp.Diff(want, got, protoCmp); diff != "" {
		t.Errorf("Retrieve (-want +got):\n%s", diff)
	}
	expectRequests(t, f, &ip.IPAddressDump{SwIfIndex: 1}, &ip.IPAddressDump{SwIfIndex: 1, IsIPv6: true})
	if err := h.Delete(context.Background(), k4, nil, struct{}{}); err != nil {
		t.Fatal(err)
	}
	expectRequests(t, f, &vppif.SwInterfaceAddDelAddress{SwIfIndex: 1, Prefix: addrWithPrefix("10.0.0.1/24")})
	if err := h.Delete(context.Background(), k4, nil, struct{}{}); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("deleting an address that is gone: %v, want not found", err)
	}
}

// TestTagLength checks that a label longer than VPP's tag (63 bytes and
// the NUL) is refused before any call: VPP would truncate it, and the
// value would never be found as ours again.
func TestTagLength(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name  string
		value proto.Message
		bad   bool
	}{
		{name: "interface, 63 bytes", value: loop(name(63))},
		{name: "interface, 64 bytes", value: loop(name(64)), bad: true},
		{name: "interface, 21 runes of 3 bytes", value: loop(strings.Repeat("€", 21))},
		{name: "interface, 22 runes of 3 bytes", value: loop(strings.Repeat("€", 22)), bad: true},
		{name: "bridge domain, 63 bytes", value: &vppl2.BridgeDomain{Name: name(63)}},
		{name: "bridge domain, 100 bytes", value: &vppl2.BridgeDomain{Name: name(100)}, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := keyOf(tt.value)
			var d kv.Descriptor = e.p.iface
			if _, ok := tt.value.(*vppl2.BridgeDomain); ok {
				d = e.p.bd
			}
			err := d.Validate(key, tt.value)
			var iv *kv.InvalidValueError
			switch {
			case !tt.bad && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.bad && !errors.As(err, &iv):
				t.Fatalf("Validate: %v, want an *kv.InvalidValueError", err)
			case tt.bad && (len(iv.Fields) != 1 || iv.Fields[0].Field != "name" || !strings.Contains(iv.Error(), "at most 63 bytes")):
				t.Fatalf("Validate: %v, want the field name and the limit named", err)
			}
		})
	}
	// Through the scheduler: INVALID, and VPP never asked.
	e.f.Requests()
	long := loop(name(64))
	e.set(nil, long)
	e.expect(scheduler.INVALID, keyOf(long))
	if got := e.f.RequestNames(); len(got) != 0 {
		t.Errorf("an invalid interface sent %v", got)
	}
}
