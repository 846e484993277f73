package modelstest

import (
	"context"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	vppnat "github.com/kvdescriptor/kvdescriptor/generated/vpp/nat/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// nop is a keyed handler that does nothing: enough to build a descriptor
// whose schema-derived part is under test.
type nop[K any, V proto.Message] struct{}

func (nop[K, V]) Create(context.Context, K, V) (struct{}, error) { return struct{}{}, nil }
func (nop[K, V]) Delete(context.Context, K, V, struct{}) error   { return nil }

// model is the generated code of one model seen through the type-erased
// contract: its Spec's functions and its descriptor.
type model struct {
	name       string
	validate   func(key string, v proto.Message) error // Spec.Validate
	deps       func(key string, v proto.Message) []kv.Dependency
	derived    func(key string, v proto.Message) []kv.Derived
	equivalent func(a, b proto.Message) bool
	recreate   func(a, b proto.Message) bool
	desc       kv.Descriptor
}

func erase[K any, V proto.Message](spec kv.Spec[K, V, struct{}], desc kv.Descriptor) model {
	m := model{name: spec.Name, desc: desc}
	m.validate = func(key string, v proto.Message) error { return spec.Validate(key, v.(V)) }
	m.deps = func(key string, v proto.Message) []kv.Dependency {
		if spec.Dependencies == nil {
			return nil
		}
		return spec.Dependencies(key, v.(V))
	}
	m.derived = func(key string, v proto.Message) []kv.Derived {
		if spec.Derived == nil {
			return nil
		}
		return spec.Derived(key, v.(V))
	}
	m.equivalent = func(a, b proto.Message) bool {
		if spec.Equivalent == nil {
			return proto.Equal(a, b)
		}
		return spec.Equivalent("", a.(V), b.(V))
	}
	m.recreate = func(a, b proto.Message) bool {
		return spec.NeedsRecreate != nil && spec.NeedsRecreate("", a.(V), b.(V))
	}
	return m
}

// models returns every generated model, keyed by its model name; the
// descriptors come from the generated NewXDescriptor constructors.
func models() map[string]model {
	out := map[string]model{}
	add := func(m model) { out[m.name] = m }
	add(erase(vppinterfaces.InterfaceSpec[struct{}](), noErr(vppinterfaces.NewInterfaceDescriptor[struct{}](nop[vppinterfaces.InterfaceKey, *vppinterfaces.Interface]{}))))
	add(erase(vppinterfaces.InterfaceIpAddressesSpec[struct{}](), noErr(vppinterfaces.NewInterfaceIpAddressesDescriptor[struct{}](nop[vppinterfaces.InterfaceIpAddressesKey, *wrapperspb.StringValue]{}))))
	add(erase(vppl3.VrfTableSpec[struct{}](), noErr(vppl3.NewVrfTableDescriptor[struct{}](nop[vppl3.VrfTableKey, *vppl3.VrfTable]{}))))
	add(erase(vppl3.ARPEntrySpec[struct{}](), noErr(vppl3.NewARPEntryDescriptor[struct{}](nop[vppl3.ARPEntryKey, *vppl3.ARPEntry]{}))))
	add(erase(vppl3.RouteSpec[struct{}](), noErr(vppl3.NewRouteDescriptor[struct{}](nop[vppl3.RouteKey, *vppl3.Route]{}))))
	add(erase(vppl2.BridgeDomainSpec[struct{}](), noErr(vppl2.NewBridgeDomainDescriptor[struct{}](nop[vppl2.BridgeDomainKey, *vppl2.BridgeDomain]{}))))
	add(erase(vppl2.BridgeDomainInterfacesSpec[struct{}](), noErr(vppl2.NewBridgeDomainInterfacesDescriptor[struct{}](nop[vppl2.BridgeDomainInterfacesKey, *vppl2.BridgeDomain_Interface]{}))))
	add(erase(vppl2.FIBEntrySpec[struct{}](), noErr(vppl2.NewFIBEntryDescriptor[struct{}](nop[vppl2.FIBEntryKey, *vppl2.FIBEntry]{}))))
	add(erase(linuxinterfaces.InterfaceSpec[struct{}](), noErr(linuxinterfaces.NewInterfaceDescriptor[struct{}](nop[linuxinterfaces.InterfaceKey, *linuxinterfaces.Interface]{}))))
	add(erase(linuxinterfaces.InterfaceIpAddressesSpec[struct{}](), noErr(linuxinterfaces.NewInterfaceIpAddressesDescriptor[struct{}](nop[linuxinterfaces.InterfaceIpAddressesKey, *wrapperspb.StringValue]{}))))
	add(erase(linuxl3.RouteSpec[struct{}](), noErr(linuxl3.NewRouteDescriptor[struct{}](nop[linuxl3.RouteKey, *linuxl3.Route]{}))))
	add(erase(vppnat.Nat44AddressPoolSpec[struct{}](), noErr(vppnat.NewNat44AddressPoolDescriptor[struct{}](nop[vppnat.Nat44AddressPoolKey, *vppnat.Nat44AddressPool]{}))))
	add(erase(vppnat.DNat44StaticMappingsSpec[struct{}](), noErr(vppnat.NewDNat44StaticMappingsDescriptor[struct{}](nop[vppnat.DNat44StaticMappingsKey, *vppnat.DNat44_StaticMapping]{}))))
	add(erase(vppinterfaces.InterfaceIp6NdSpec[struct{}](), noErr(vppinterfaces.NewInterfaceIp6NdDescriptor[struct{}](nop[vppinterfaces.InterfaceIp6NdKey, *vppinterfaces.Interface_Ip6Nd]{}))))
	add(erase(vppinterfaces.InterfaceIp6NdPrefixesSpec[struct{}](), noErr(vppinterfaces.NewInterfaceIp6NdPrefixesDescriptor[struct{}](nop[vppinterfaces.InterfaceIp6NdPrefixesKey, *vppinterfaces.Interface_Ip6NdPrefix]{}))))
	return out
}

// noErr returns d, panicking on a constructor error (a broken generated
// constructor fails every test that uses it).
func noErr[K any, V proto.Message, M any](d *kv.TypedDescriptor[K, V, M], err error) kv.Descriptor {
	if err != nil {
		panic(err)
	}
	return d
}

// isKey is the key test of a generated parser.
func isKey[K any](parse func(string) (K, bool)) func(string) bool {
	return func(key string) bool { _, ok := parse(key); return ok }
}

// linuxAddressKey is the key of the address value that a linux interface
// named name derives from its address addr, built by the generated Derived.
func linuxAddressKey(name, addr string) string {
	v := &linuxinterfaces.Interface{Name: name, IpAddresses: []string{addr}}
	return firstDerived(linuxinterfaces.InterfaceSpec[struct{}]().Derived(linuxinterfaces.InterfaceKeyFor(v), v))
}

// bdBindingKey is the key of the binding that bridge domain bd derives for
// its member iface, built by the generated Derived.
func bdBindingKey(bd, iface string) string {
	v := &vppl2.BridgeDomain{Name: bd, Interfaces: []*vppl2.BridgeDomain_Interface{{Name: iface}}}
	return firstDerived(vppl2.BridgeDomainSpec[struct{}]().Derived(vppl2.BridgeDomainKeyFor(v), v))
}

func firstDerived(d []kv.Derived) string {
	if len(d) == 0 {
		return ""
	}
	return d[0].Key
}
