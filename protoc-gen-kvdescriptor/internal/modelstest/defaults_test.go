package modelstest

import (
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/options/kvdescriptorv1"
)

// TestDefaults checks the generated constant and Effective accessor of
// every zero_equals default of the models: the constant is the schema's
// text, the accessor returns the field when set and the constant when it
// is zero or the message is nil, and the comparator agrees (a zero field
// is equivalent to the constant, the accessor's value to the field's).
func TestDefaults(t *testing.T) {
	t.Parallel()
	ms := models()
	type (
		lIf   = linuxinterfaces.Interface
		vxlan = linuxinterfaces.Interface_Vxlan
	)
	tests := []struct {
		field    protoreflect.FullName // the field with the default
		constant uint64                // the generated constant
		want     uint64                // the schema's default
		model    string                // the model compared
		// effective returns the accessor's value on a nil message, on a
		// message whose field is zero and on one whose field is set.
		effective func() (ofNil, ofZero, ofSet uint64)
		set       uint64 // the value the field is set to
		// withField builds a value of the model whose field holds x.
		withField func(x uint64) proto.Message
	}{
		{
			field: "linux.interfaces.v1.Interface.mtu", constant: uint64(linuxinterfaces.InterfaceMtuDefault), want: 1500,
			model: linuxinterfaces.InterfaceModelName, set: 9000,
			effective: func() (uint64, uint64, uint64) {
				var none *lIf
				return uint64(none.EffectiveMtu()), uint64((&lIf{Name: "a"}).EffectiveMtu()), uint64((&lIf{Mtu: 9000}).EffectiveMtu())
			},
			withField: func(x uint64) proto.Message { return &lIf{Name: "a", Mtu: uint32(x)} },
		},
		{
			field: "linux.interfaces.v1.Interface.macvlan_mode", constant: uint64(linuxinterfaces.InterfaceMacvlanModeDefault),
			want: uint64(linuxinterfaces.Interface_MACVLAN_MODE_VEPA), model: linuxinterfaces.InterfaceModelName,
			set: uint64(linuxinterfaces.Interface_MACVLAN_MODE_BRIDGE),
			effective: func() (uint64, uint64, uint64) {
				var none *lIf
				return uint64(none.EffectiveMacvlanMode()), uint64((&lIf{Name: "a"}).EffectiveMacvlanMode()),
					uint64((&lIf{MacvlanMode: linuxinterfaces.Interface_MACVLAN_MODE_BRIDGE}).EffectiveMacvlanMode())
			},
			withField: func(x uint64) proto.Message {
				return &lIf{Name: "m", Type: linuxinterfaces.Interface_TYPE_MACVLAN, Parent: "eth0", MacvlanMode: linuxinterfaces.Interface_MacvlanMode(x)}
			},
		},
		{
			field: "linux.interfaces.v1.Interface.Vxlan.dst_port", constant: uint64(linuxinterfaces.Interface_VxlanDstPortDefault), want: 4789,
			model: linuxinterfaces.InterfaceModelName, set: 8472,
			effective: func() (uint64, uint64, uint64) {
				// A nil Vxlan, as an Interface of another type has.
				none := (&lIf{}).GetVxlan()
				return uint64(none.EffectiveDstPort()), uint64((&vxlan{Vni: 1}).EffectiveDstPort()), uint64((&vxlan{DstPort: 8472}).EffectiveDstPort())
			},
			withField: func(x uint64) proto.Message { return &lIf{Name: "vx", Vxlan: &vxlan{Vni: 1, DstPort: uint32(x)}} },
		},
		{
			field: "linux.l3.v1.Route.table", constant: uint64(linuxl3.RouteTableDefault), want: 254,
			model: linuxl3.RouteModelName, set: 100,
			effective: func() (uint64, uint64, uint64) {
				var none *linuxl3.Route
				return uint64(none.EffectiveTable()), uint64((&linuxl3.Route{Metric: 5}).EffectiveTable()), uint64((&linuxl3.Route{Table: 100}).EffectiveTable())
			},
			withField: func(x uint64) proto.Message {
				return &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.0.0.0/8", Table: uint32(x)}
			},
		},
		{
			field: "vpp.interfaces.v1.Interface.mtu", constant: uint64(vppinterfaces.InterfaceMtuDefault), want: 9000,
			model: vppinterfaces.InterfaceModelName, set: 1500,
			effective: func() (uint64, uint64, uint64) {
				var none *vppinterfaces.Interface
				return uint64(none.EffectiveMtu()), uint64((&vppinterfaces.Interface{Name: "a"}).EffectiveMtu()), uint64((&vppinterfaces.Interface{Mtu: 1500}).EffectiveMtu())
			},
			withField: func(x uint64) proto.Message { return &vppinterfaces.Interface{Name: "a", Mtu: uint32(x)} },
		},
		{
			field: "vpp.l3.v1.Route.weight", constant: uint64(vppl3.RouteWeightDefault), want: 1,
			model: vppl3.RouteModelName, set: 3,
			effective: func() (uint64, uint64, uint64) {
				var none *vppl3.Route
				return uint64(none.EffectiveWeight()), uint64((&vppl3.Route{Preference: 2}).EffectiveWeight()), uint64((&vppl3.Route{Weight: 3}).EffectiveWeight())
			},
			withField: func(x uint64) proto.Message {
				return &vppl3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "10.0.0.1", Weight: uint32(x)}
			},
		},
		vppIfattrDefault("vpp.interfaces.v1.Interface.Ip6Nd.max_interval", vppinterfaces.Interface_Ip6NdMaxIntervalDefault, 200, "vpp.interfaces.v1.Interface.ip6_nd", 60,
			func(x uint32) uint32 { return (&vppinterfaces.Interface_Ip6Nd{MaxInterval: x}).EffectiveMaxInterval() },
			func(x uint32) proto.Message { return &vppinterfaces.Interface_Ip6Nd{MaxInterval: x} }),
		vppIfattrDefault("vpp.interfaces.v1.Interface.Ip6NdPrefix.valid_lifetime", vppinterfaces.Interface_Ip6NdPrefixValidLifetimeDefault, 2592000,
			"vpp.interfaces.v1.Interface.ip6_nd_prefixes", 3600,
			func(x uint32) uint32 {
				return (&vppinterfaces.Interface_Ip6NdPrefix{ValidLifetime: x}).EffectiveValidLifetime()
			},
			func(x uint32) proto.Message {
				return &vppinterfaces.Interface_Ip6NdPrefix{Prefix: "2001:db8::/64", ValidLifetime: x}
			}),
		vppIfattrDefault("vpp.interfaces.v1.Interface.Ip6NdPrefix.preferred_lifetime", vppinterfaces.Interface_Ip6NdPrefixPreferredLifetimeDefault, 604800,
			"vpp.interfaces.v1.Interface.ip6_nd_prefixes", 1800,
			func(x uint32) uint32 {
				return (&vppinterfaces.Interface_Ip6NdPrefix{PreferredLifetime: x}).EffectivePreferredLifetime()
			},
			func(x uint32) proto.Message {
				return &vppinterfaces.Interface_Ip6NdPrefix{Prefix: "2001:db8::/64", PreferredLifetime: x}
			}),
		vppIfattrDefault("vpp.interfaces.v1.Interface.Vmxnet3.rxq_size", vppinterfaces.Interface_Vmxnet3RxqSizeDefault, 1024, vppinterfaces.InterfaceModelName, 256,
			func(x uint32) uint32 { return (&vppinterfaces.Interface_Vmxnet3{RxqSize: x}).EffectiveRxqSize() },
			func(x uint32) proto.Message { return vmxWith(&vppinterfaces.Interface_Vmxnet3{RxqSize: x}) }),
		vppIfattrDefault("vpp.interfaces.v1.Interface.Vmxnet3.txq_size", vppinterfaces.Interface_Vmxnet3TxqSizeDefault, 1024, vppinterfaces.InterfaceModelName, 256,
			func(x uint32) uint32 { return (&vppinterfaces.Interface_Vmxnet3{TxqSize: x}).EffectiveTxqSize() },
			func(x uint32) proto.Message { return vmxWith(&vppinterfaces.Interface_Vmxnet3{TxqSize: x}) }),
		vppIfattrDefault("vpp.interfaces.v1.Interface.Rdma.rxq_num", vppinterfaces.Interface_RdmaRxqNumDefault, 1, vppinterfaces.InterfaceModelName, 4,
			func(x uint32) uint32 { return (&vppinterfaces.Interface_Rdma{RxqNum: x}).EffectiveRxqNum() },
			func(x uint32) proto.Message { return rdmaWith(&vppinterfaces.Interface_Rdma{RxqNum: x}) }),
		vppIfattrDefault("vpp.interfaces.v1.Interface.Rdma.rxq_size", vppinterfaces.Interface_RdmaRxqSizeDefault, 1024, vppinterfaces.InterfaceModelName, 512,
			func(x uint32) uint32 { return (&vppinterfaces.Interface_Rdma{RxqSize: x}).EffectiveRxqSize() },
			func(x uint32) proto.Message { return rdmaWith(&vppinterfaces.Interface_Rdma{RxqSize: x}) }),
		vppIfattrDefault("vpp.interfaces.v1.Interface.Rdma.txq_size", vppinterfaces.Interface_RdmaTxqSizeDefault, 1024, vppinterfaces.InterfaceModelName, 512,
			func(x uint32) uint32 { return (&vppinterfaces.Interface_Rdma{TxqSize: x}).EffectiveTxqSize() },
			func(x uint32) proto.Message { return rdmaWith(&vppinterfaces.Interface_Rdma{TxqSize: x}) }),
	}
	var tested []protoreflect.FullName
	for _, tc := range tests {
		tested = append(tested, tc.field)
		t.Run(string(tc.field), func(t *testing.T) {
			t.Parallel()
			if tc.constant != tc.want {
				t.Errorf("constant = %d, want the schema's %d", tc.constant, tc.want)
			}
			ofNil, ofZero, ofSet := tc.effective()
			if ofNil != tc.want || ofZero != tc.want || ofSet != tc.set {
				t.Errorf("Effective: of nil %d, of zero %d, of %d %d; want %d, %d, %d", ofNil, ofZero, tc.set, ofSet, tc.want, tc.want, tc.set)
			}
			eq := ms[tc.model].equivalent
			if !eq(tc.withField(0), tc.withField(tc.constant)) {
				t.Errorf("the comparator finds a zero %s different from the constant %d", tc.field, tc.constant)
			}
			if eq(tc.withField(0), tc.withField(tc.set)) {
				t.Errorf("the comparator finds a zero %s equal to %d", tc.field, tc.set)
			}
		})
	}
	// Every default of the models is tested: a new one needs a case.
	for _, f := range zeroEqualsFields() {
		if !slices.Contains(tested, f) {
			t.Errorf("%s has a zero_equals default that TestDefaults does not test", f)
		}
	}
}

// zeroEqualsFields lists the fields of the model messages (and of the
// messages nested in them) that have a zero_equals default.
func zeroEqualsFields() []protoreflect.FullName {
	var out []protoreflect.FullName
	seen := map[protoreflect.FullName]bool{}
	var walk func(md protoreflect.MessageDescriptor)
	walk = func(md protoreflect.MessageDescriptor) {
		if seen[md.FullName()] {
			return
		}
		seen[md.FullName()] = true
		for i := range md.Fields().Len() {
			f := md.Fields().Get(i)
			o, _ := proto.GetExtension(f.Options(), kvdescriptorv1.E_Field).(*kvdescriptorv1.FieldOptions)
			if o.GetCompare().GetZeroEquals() != "" {
				out = append(out, f.FullName())
			}
			if f.Message() != nil {
				walk(f.Message())
			}
		}
	}
	for _, m := range []proto.Message{
		&linuxinterfaces.Interface{}, &linuxl3.Route{}, &linuxl3.Neighbour{},
		&vppinterfaces.Interface{}, &vppl3.Route{}, &vppl3.VrfTable{}, &vppl3.ARPEntry{},
		&vppl2.BridgeDomain{}, &vppl2.FIBEntry{},
	} {
		walk(m.ProtoReflect().Descriptor())
	}
	return out
}

// Example_effectiveTable shows a handler reading the table the
// schema means instead of writing the default again.
func Example_effectiveTable() {
	r := &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.0.0.0/8"}
	fmt.Println(r.EffectiveTable(), linuxl3.RouteTableDefault)
	// Output: 254 254
}
