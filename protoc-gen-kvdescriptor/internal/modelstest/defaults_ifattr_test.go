package modelstest

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
)

// vppIfattrDefault is a case of TestDefaults for a uint32 default of the
// VPP interface attributes: effective(x) is the accessor of a message
// whose field holds x (nil-safety is the generator's, tested on the
// others), withField a value of model whose field holds x.
func vppIfattrDefault(field protoreflect.FullName, constant, want uint32, model string, set uint32,
	effective func(x uint32) uint32, withField func(x uint32) proto.Message) struct {
	field     protoreflect.FullName
	constant  uint64
	want      uint64
	model     string
	effective func() (ofNil, ofZero, ofSet uint64)
	set       uint64
	withField func(x uint64) proto.Message
} {
	return struct {
		field     protoreflect.FullName
		constant  uint64
		want      uint64
		model     string
		effective func() (ofNil, ofZero, ofSet uint64)
		set       uint64
		withField func(x uint64) proto.Message
	}{
		field: field, constant: uint64(constant), want: uint64(want), model: model, set: uint64(set),
		effective: func() (uint64, uint64, uint64) {
			return uint64(effective(0)), uint64(effective(0)), uint64(effective(set))
		},
		withField: func(x uint64) proto.Message { return withField(uint32(x)) },
	}
}

// vmxWith is a vmxnet3 interface with the parameters x.
func vmxWith(x *vppinterfaces.Interface_Vmxnet3) *vppinterfaces.Interface {
	x.PciAddress = "0000:0b:00.0"
	return &vppinterfaces.Interface{Name: "vmx", Type: vppinterfaces.Interface_TYPE_VMXNET3, Vmxnet3: x}
}

// rdmaWith is an RDMA interface with the parameters x.
func rdmaWith(x *vppinterfaces.Interface_Rdma) *vppinterfaces.Interface {
	x.HostIfName = "ens1f0"
	return &vppinterfaces.Interface{Name: "rdma", Type: vppinterfaces.Interface_TYPE_RDMA, Rdma: x}
}
