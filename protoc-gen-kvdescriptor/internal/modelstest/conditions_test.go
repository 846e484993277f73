package modelstest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestConditions: the cross-field conditions of the schema (required_if,
// only_if, not_equal_to, ranges with zero allowed, known enum values), each
// accepted and rejected, through the Spec's Validate and the descriptor's,
// with the field named.
func TestConditions(t *testing.T) {
	t.Parallel()
	type lIf = linuxinterfaces.Interface
	type vxlan = linuxinterfaces.Interface_Vxlan
	const (
		veth    = linuxinterfaces.Interface_TYPE_VETH
		tap     = linuxinterfaces.Interface_TYPE_TAP
		bridge  = linuxinterfaces.Interface_TYPE_BRIDGE
		vx      = linuxinterfaces.Interface_TYPE_VXLAN
		macvlan = linuxinterfaces.Interface_TYPE_MACVLAN
		vlan    = linuxinterfaces.Interface_TYPE_VLAN
		vrf     = linuxinterfaces.Interface_TYPE_VRF
	)
	ms := models()
	tests := []struct {
		name   string
		model  string
		value  proto.Message
		fields []string // nil: valid
		reason string   // text the error contains
	}{
		// Known enum values.
		{name: "type 99", value: &lIf{Name: "x", Type: 99}, fields: []string{"type"}, reason: "99 is not a value of linux.interfaces.v1.Interface.Type"},
		{name: "type unset", value: &lIf{Name: "x"}, fields: []string{"type"}, reason: "must be set"},
		{name: "macvlan_mode 9", value: &lIf{Name: "x", Type: macvlan, Parent: "p", MacvlanMode: 9}, fields: []string{"macvlan_mode"}, reason: "9 is not a value of linux.interfaces.v1.Interface.MacvlanMode"},
		{name: "vpp type 99", model: vppinterfaces.InterfaceModelName, value: &vppinterfaces.Interface{Name: "x", Type: 99}, fields: []string{"type"}, reason: "99 is not a value of vpp.interfaces.v1.Interface.Type"},

		// veth_peer: set for, and only for, a veth; not the interface itself.
		{name: "veth with its peer", value: &lIf{Name: "x", Type: veth, VethPeer: "y"}},
		{name: "veth without a peer", value: &lIf{Name: "x", Type: veth}, fields: []string{"veth_peer"}, reason: "must be set when type is TYPE_VETH"},
		{name: "peer of a tap", value: &lIf{Name: "x", Type: tap, VethPeer: "y"}, fields: []string{"veth_peer"}, reason: "must be empty unless type is TYPE_VETH (it is TYPE_TAP)"},
		{name: "veth its own peer", value: &lIf{Name: "x", Type: veth, VethPeer: "x"}, fields: []string{"veth_peer"}, reason: `"x" must differ from name`},

		// master: not the interface itself.
		{name: "member of a bridge", value: &lIf{Name: "x", Type: tap, Master: "br0"}},
		{name: "its own master", value: &lIf{Name: "br0", Type: bridge, Master: "br0"}, fields: []string{"master"}, reason: `"br0" must differ from name`},

		// parent: required for macvlan and vlan, allowed for vxlan too.
		{name: "macvlan without a parent", value: &lIf{Name: "x", Type: macvlan}, fields: []string{"parent"}, reason: "must be set when type is TYPE_MACVLAN or TYPE_VLAN"},
		{name: "macvlan with a parent", value: &lIf{Name: "x", Type: macvlan, Parent: "eth0"}},
		{name: "vxlan with a parent", value: &lIf{Name: "x", Type: vx, Parent: "eth0", Vxlan: &vxlan{Vni: 1}}},
		{name: "vxlan without a parent", value: &lIf{Name: "x", Type: vx, Vxlan: &vxlan{Vni: 1}}},
		{name: "parent of a tap", value: &lIf{Name: "x", Type: tap, Parent: "eth0"}, fields: []string{"parent"}, reason: "must be empty unless type is TYPE_VXLAN, TYPE_MACVLAN or TYPE_VLAN (it is TYPE_TAP)"},
		{name: "its own parent", value: &lIf{Name: "x", Type: macvlan, Parent: "x"}, fields: []string{"parent"}, reason: `"x" must differ from name`},

		// vxlan: set for, and only for, a vxlan.
		{name: "vxlan without its parameters", value: &lIf{Name: "x", Type: vx}, fields: []string{"vxlan"}, reason: "must be set when type is TYPE_VXLAN"},
		{name: "vxlan parameters of a tap", value: &lIf{Name: "x", Type: tap, Vxlan: &vxlan{Vni: 1}}, fields: []string{"vxlan"}, reason: "must be empty unless type is TYPE_VXLAN"},

		// macvlan_mode: only for a macvlan.
		{name: "macvlan mode", value: &lIf{Name: "x", Type: macvlan, Parent: "p", MacvlanMode: linuxinterfaces.Interface_MACVLAN_MODE_BRIDGE}},
		{name: "macvlan mode of a tap", value: &lIf{Name: "x", Type: tap, MacvlanMode: linuxinterfaces.Interface_MACVLAN_MODE_BRIDGE}, fields: []string{"macvlan_mode"}, reason: "must be empty unless type is TYPE_MACVLAN"},

		// vlan_id: set for, and only for, a vlan; 1 to 4094.
		{name: "vlan 1", value: &lIf{Name: "x", Type: vlan, Parent: "p", VlanId: 1}},
		{name: "vlan 4094", value: &lIf{Name: "x", Type: vlan, Parent: "p", VlanId: 4094}},
		{name: "vlan 4095", value: &lIf{Name: "x", Type: vlan, Parent: "p", VlanId: 4095}, fields: []string{"vlan_id"}, reason: "4095 is above the maximum 4094"},
		{name: "vlan without an id", value: &lIf{Name: "x", Type: vlan, Parent: "p"}, fields: []string{"vlan_id"}, reason: "must be set when type is TYPE_VLAN"},
		{name: "vlan id of a tap", value: &lIf{Name: "x", Type: tap, VlanId: 10}, fields: []string{"vlan_id"}, reason: "must be empty unless type is TYPE_VLAN"},

		// vrf_table: set for, and only for, a vrf.
		{name: "vrf with its table", value: &lIf{Name: "x", Type: vrf, VrfTable: 10}},
		{name: "vrf without a table", value: &lIf{Name: "x", Type: vrf}, fields: []string{"vrf_table"}, reason: "must be set when type is TYPE_VRF"},
		{name: "table of a tap", value: &lIf{Name: "x", Type: tap, VrfTable: 10}, fields: []string{"vrf_table"}, reason: "must be empty unless type is TYPE_VRF"},

		// mtu: 0 (the default) or 68 to 65535.
		{name: "mtu 0", value: &lIf{Name: "x", Type: tap}},
		{name: "mtu 67", value: &lIf{Name: "x", Type: tap, Mtu: 67}, fields: []string{"mtu"}, reason: "67 is below the minimum 68 (or 0, the default)"},
		{name: "mtu 68", value: &lIf{Name: "x", Type: tap, Mtu: 68}},
		{name: "mtu 65535", value: &lIf{Name: "x", Type: tap, Mtu: 65535}},
		{name: "mtu 65536", value: &lIf{Name: "x", Type: tap, Mtu: 65536}, fields: []string{"mtu"}, reason: "65536 is above the maximum 65535 (or 0, the default)"},

		// Several at once, in the order of the fields.
		{name: "macvlan with vxlan parameters", value: &lIf{Name: "x", Type: macvlan, Vxlan: &vxlan{Vni: 1 << 25}},
			fields: []string{"parent", "vxlan", "vxlan.vni"}},

		// VPP: host_if_name is for, and only for, an AF_PACKET interface.
		{name: "vpp af_packet with its host interface", model: vppinterfaces.InterfaceModelName,
			value: &vppinterfaces.Interface{Name: "x", Type: vppinterfaces.Interface_TYPE_AF_PACKET, HostIfName: "veth1"}},
		{name: "vpp af_packet without its host interface", model: vppinterfaces.InterfaceModelName,
			value:  &vppinterfaces.Interface{Name: "x", Type: vppinterfaces.Interface_TYPE_AF_PACKET},
			fields: []string{"host_if_name"}, reason: "must be set when type is TYPE_AF_PACKET"},
		{name: "vpp host interface of a memif", model: vppinterfaces.InterfaceModelName,
			value:  &vppinterfaces.Interface{Name: "x", Type: vppinterfaces.Interface_TYPE_MEMIF, HostIfName: "veth1"},
			fields: []string{"host_if_name"}, reason: "must be empty unless type is TYPE_AF_PACKET (it is TYPE_MEMIF)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := tc.model
			if name == "" {
				name = linuxinterfaces.InterfaceModelName
			}
			m := ms[name]
			var key string
			switch v := tc.value.(type) {
			case *lIf:
				key = linuxinterfaces.InterfaceKeyFor(v)
			case *vppinterfaces.Interface:
				key = vppinterfaces.InterfaceKeyFor(v)
			}
			for via, validate := range map[string]func(string, proto.Message) error{"Spec.Validate": m.validate, "Descriptor.Validate": m.desc.Validate} {
				err := validate(key, tc.value)
				if diff := cmp.Diff(tc.fields, fieldNames(t, err)); diff != "" {
					t.Errorf("%s: invalid fields (-want +got):\n%s\nerror: %v", via, diff, err)
				}
				if err != nil && !strings.Contains(err.Error(), tc.reason) {
					t.Errorf("%s = %q, want it to contain %q", via, err, tc.reason)
				}
			}
		})
	}
}

// TestUnknownEnumEndToEnd: an interface of type 99 is INVALID, naming
// type, and never reaches the southbound (it was FAILED at Create).
func TestUnknownEnumEndToEnd(t *testing.T) {
	t.Parallel()
	c := &calls{}
	s, _ := linuxScheduler(t, c)
	v := &linuxinterfaces.Interface{Name: "eth0", Type: 99}
	key := linuxinterfaces.InterfaceKeyFor(v)
	_, err := s.Txn().Set(key, v).CommitAndWait(context.Background())
	var txnErr *scheduler.TxnError
	if !errors.As(err, &txnErr) {
		t.Fatalf("CommitAndWait error = %v, want a *scheduler.TxnError", err)
	}
	st := s.Status(key)
	if st.State != scheduler.INVALID {
		t.Errorf("state %s, want INVALID (error %v)", st.State, st.LastErr)
	}
	if diff := cmp.Diff([]string{"type"}, fieldNames(t, st.LastErr)); diff != "" {
		t.Errorf("invalid fields (-want +got):\n%s", diff)
	}
	wantCalls(t, c)
}

// TestDerivedRetrieveAfterBase: the descriptor of a derived model retrieves
// after its base's, from the schema alone (no plugin sets it).
func TestDerivedRetrieveAfterBase(t *testing.T) {
	t.Parallel()
	master, err := linuxinterfaces.NewInterfaceMasterDescriptor[struct{}](nop[linuxinterfaces.InterfaceMasterKey, *wrapperspb.StringValue]{})
	if err != nil {
		t.Fatal(err)
	}
	ms := models()
	for _, tc := range []struct {
		name string
		got  []string
		want []string
	}{
		{"linux addresses", ms[linuxinterfaces.InterfaceIpAddressesModelName].desc.RetrieveDependencies(), []string{linuxinterfaces.InterfaceModelName}},
		{"linux master", master.RetrieveDependencies(), []string{linuxinterfaces.InterfaceModelName}},
		{"vpp bridge domain interfaces", ms[vppl2.BridgeDomainInterfacesModelName].desc.RetrieveDependencies(), []string{vppl2.BridgeDomainModelName}},
		{"a base", ms[linuxinterfaces.InterfaceModelName].desc.RetrieveDependencies(), nil},
	} {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s: RetrieveDependencies (-want +got):\n%s", tc.name, diff)
		}
	}
}
