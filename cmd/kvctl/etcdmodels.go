package main

import (
	"context"
	"errors"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	vppabf "github.com/kvdescriptor/kvdescriptor/generated/vpp/abf/v1"
	vppacl "github.com/kvdescriptor/kvdescriptor/generated/vpp/acl/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

// localModels are the models kvctl is built with (Linux and VPP), as
// descriptors generated from their schema over a handler that touches
// nothing: they decode and validate values as the agent does before it
// applies them. A key resolves as in the agent's scheduler (the longest
// key prefix first, the key parsed by its model's template), so a key
// that no model handles is refused with the agent's own error
// (*nb.UnknownKeyError), and Validate is the descriptor's, the schema's
// checks the scheduler runs (a value they refuse is INVALID there). What
// a plugin checks beyond its schema (the Linux plugin's namespace
// allow-list, say) is the running agent's alone.
type localModels struct {
	ds []kv.Descriptor // longest key prefix first
}

var _ nb.Models = (*localModels)(nil)

// errNoSouthbound is what the handlers of localModels answer: they are
// never called.
var errNoSouthbound = errors.New("kvctl has no southbound")

// noSouthbound is the handler of a model of localModels.
type noSouthbound[K any, V proto.Message] struct{}

func (noSouthbound[K, V]) Create(context.Context, K, V) (struct{}, error) {
	return struct{}{}, errNoSouthbound
}

func (noSouthbound[K, V]) Delete(context.Context, K, V, struct{}) error { return errNoSouthbound }

// newLocalModels builds the descriptors of the models kvctl is built
// with.
func newLocalModels() (*localModels, error) {
	m := &localModels{}
	var errs []error
	add := func(d kv.Descriptor, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		m.ds = append(m.ds, d)
	}
	add(linuxinterfaces.NewInterfaceDescriptor[struct{}](noSouthbound[linuxinterfaces.InterfaceKey, *linuxinterfaces.Interface]{}))
	add(linuxinterfaces.NewInterfaceIpAddressesDescriptor[struct{}](noSouthbound[linuxinterfaces.InterfaceIpAddressesKey, *wrapperspb.StringValue]{}))
	add(linuxinterfaces.NewInterfaceMasterDescriptor[struct{}](noSouthbound[linuxinterfaces.InterfaceMasterKey, *wrapperspb.StringValue]{}))
	add(linuxl3.NewRouteDescriptor[struct{}](noSouthbound[linuxl3.RouteKey, *linuxl3.Route]{}))
	add(linuxl3.NewNeighbourDescriptor[struct{}](noSouthbound[linuxl3.NeighbourKey, *linuxl3.Neighbour]{}))
	add(vppinterfaces.NewInterfaceDescriptor[struct{}](noSouthbound[vppinterfaces.InterfaceKey, *vppinterfaces.Interface]{}))
	add(vppinterfaces.NewInterfaceIpAddressesDescriptor[struct{}](noSouthbound[vppinterfaces.InterfaceIpAddressesKey, *wrapperspb.StringValue]{}))
	add(vppl2.NewBridgeDomainDescriptor[struct{}](noSouthbound[vppl2.BridgeDomainKey, *vppl2.BridgeDomain]{}))
	add(vppl2.NewBridgeDomainInterfacesDescriptor[struct{}](noSouthbound[vppl2.BridgeDomainInterfacesKey, *vppl2.BridgeDomain_Interface]{}))
	add(vppl2.NewFIBEntryDescriptor[struct{}](noSouthbound[vppl2.FIBEntryKey, *vppl2.FIBEntry]{}))
	add(vppl3.NewVrfTableDescriptor[struct{}](noSouthbound[vppl3.VrfTableKey, *vppl3.VrfTable]{}))
	add(vppl3.NewARPEntryDescriptor[struct{}](noSouthbound[vppl3.ARPEntryKey, *vppl3.ARPEntry]{}))
	add(vppl3.NewRouteDescriptor[struct{}](noSouthbound[vppl3.RouteKey, *vppl3.Route]{}))
	add(vppacl.NewACLDescriptor[struct{}](noSouthbound[vppacl.ACLKey, *vppacl.ACL]{}))
	add(vppacl.NewACLIngressDescriptor[struct{}](noSouthbound[vppacl.ACLIngressKey, *wrapperspb.StringValue]{}))
	add(vppacl.NewACLEgressDescriptor[struct{}](noSouthbound[vppacl.ACLEgressKey, *wrapperspb.StringValue]{}))
	add(vppacl.NewMACIPACLDescriptor[struct{}](noSouthbound[vppacl.MACIPACLKey, *vppacl.MACIPACL]{}))
	add(vppacl.NewMACIPACLInterfacesDescriptor[struct{}](noSouthbound[vppacl.MACIPACLInterfacesKey, *wrapperspb.StringValue]{}))
	add(vppabf.NewABFDescriptor[struct{}](noSouthbound[vppabf.ABFKey, *vppabf.ABF]{}))
	add(vppabf.NewABFInterfacesDescriptor[struct{}](noSouthbound[vppabf.ABFInterfacesKey, *vppabf.ABF_Interface]{}))
	slices.SortStableFunc(m.ds, func(a, b kv.Descriptor) int { return len(b.KeyPrefix()) - len(a.KeyPrefix()) })
	return m, errors.Join(errs...)
}

// descriptor returns the descriptor of key, or nil.
func (m *localModels) descriptor(key string) kv.Descriptor {
	for _, d := range m.ds {
		if len(key) >= len(d.KeyPrefix()) && key[:len(d.KeyPrefix())] == d.KeyPrefix() && d.IsKey(key) {
			return d
		}
	}
	return nil
}

// MessageType returns the message type of key's values.
func (m *localModels) MessageType(key string) (protoreflect.MessageType, bool) {
	d := m.descriptor(key)
	if d == nil {
		return nil, false
	}
	return d.ValueType(), true
}

// validate checks the value of key as the agent's scheduler does.
func (m *localModels) validate(key string, v proto.Message) error {
	d := m.descriptor(key)
	if d == nil {
		return &nb.UnknownKeyError{Key: key}
	}
	return d.Validate(key, v)
}
