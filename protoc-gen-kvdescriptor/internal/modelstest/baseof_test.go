package modelstest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestBaseOf checks the generated BaseOf of the derived models: each
// derived key names the key of the value that derives it, and other keys
// name none.
func TestBaseOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		baseOf func(string) string
		key    string
		want   string
	}{
		{"bridge domain binding", vppl2.BridgeDomainInterfacesSpec[struct{}]().BaseOf, "vpp/bd/bd 1/interface/memif%2F2", "vpp/bd/bd 1"},
		{"interface address", linuxinterfaces.InterfaceIpAddressesSpec[struct{}]().BaseOf, "linux/interface/veth%2F1/address/2001:db8::1/64", "linux/interface/veth%2F1"},
		{"interface master", linuxinterfaces.InterfaceMasterSpec[struct{}]().BaseOf, "linux/interface/eth0/master/br0", "linux/interface/eth0"},
		{"not a derived key", vppl2.BridgeDomainInterfacesSpec[struct{}]().BaseOf, "vpp/bd/bd1", ""},
		{"an address out of canonical form", linuxinterfaces.InterfaceIpAddressesSpec[struct{}]().BaseOf, "linux/interface/eth0/address/2001:DB8::1/64", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.baseOf == nil {
				t.Fatal("the spec has no BaseOf")
			}
			if got := tt.baseOf(tt.key); got != tt.want {
				t.Errorf("BaseOf(%q) = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
	for name, m := range models() {
		if m.desc.BaseOf("vpp/bd/bd1/interface/if1") != "" && name != vppl2.BridgeDomainInterfacesModelName {
			t.Errorf("%s: BaseOf names a base for a key of another model", name)
		}
	}
	// Every value a base derives names that base.
	ms := models()
	for _, v := range []proto.Message{
		&vppl2.BridgeDomain{Name: "bd/1", Interfaces: []*vppl2.BridgeDomain_Interface{{Name: "if1"}, {Name: "memif 2"}}},
		&linuxinterfaces.Interface{Name: "veth1", Type: linuxinterfaces.Interface_TYPE_DUMMY, IpAddresses: []string{"10.0.0.1/24", "2001:DB8::1/64"}},
	} {
		key := keyOf(v)
		for _, d := range ms[string(v.ProtoReflect().Descriptor().FullName())].desc.Derived(key, v) {
			for _, m := range ms {
				if m.desc.IsKey(d.Key) {
					if got := m.desc.BaseOf(d.Key); got != key {
						t.Errorf("%s: BaseOf(%q) = %q, want %q", m.name, d.Key, got, key)
					}
				}
			}
		}
	}
}

// found is a recording handler with a Retrieve that reports fixed items,
// all of them ours: what a southbound holds after a restart.
type found[K fmt.Stringer, V proto.Message] struct {
	recorder[K, V]
	items []kv.Item[K, V, struct{}]
}

func (f found[K, V]) Retrieve(context.Context, []kv.Item[K, V, struct{}]) ([]kv.Item[K, V, struct{}], error) {
	return f.items, nil
}

// mustKey returns a parsed key, panicking on a text that does not parse.
func mustKey[K any](k K, ok bool) K {
	if !ok {
		panic("not a key")
	}
	return k
}

// TestStaleBindingGoesBeforeItsBridgeDomain: after a restart nothing is
// intended, and the southbound reports a bridge domain without its members
// (they are items of their own) and a binding of it. The bridge domain's
// found version derives nothing, so only the binding's generated BaseOf
// links it to its bridge domain: the binding is deleted first.
func TestStaleBindingGoesBeforeItsBridgeDomain(t *testing.T) {
	t.Parallel()
	c := &calls{}
	ifKey, bdKey, bindingKey := "vpp/interface/if1", "vpp/bd/bd1", "vpp/bd/bd1/interface/if1"
	s := newScheduler(t,
		noErr(vppinterfaces.NewInterfaceDescriptor[struct{}](found[vppinterfaces.InterfaceKey, *vppinterfaces.Interface]{
			recorder[vppinterfaces.InterfaceKey, *vppinterfaces.Interface]{c},
			[]vppinterfaces.InterfaceItem[struct{}]{{Key: mustKey(vppinterfaces.ParseInterfaceKey(ifKey)), Value: &vppinterfaces.Interface{Name: "if1"}, Origin: kv.OriginNB}},
		})),
		noErr(vppl2.NewBridgeDomainDescriptor[struct{}](found[vppl2.BridgeDomainKey, *vppl2.BridgeDomain]{
			recorder[vppl2.BridgeDomainKey, *vppl2.BridgeDomain]{c},
			[]vppl2.BridgeDomainItem[struct{}]{{Key: mustKey(vppl2.ParseBridgeDomainKey(bdKey)), Value: &vppl2.BridgeDomain{Name: "bd1"}, Origin: kv.OriginNB}},
		})),
		noErr(vppl2.NewBridgeDomainInterfacesDescriptor[struct{}](found[vppl2.BridgeDomainInterfacesKey, *vppl2.BridgeDomain_Interface]{
			recorder[vppl2.BridgeDomainInterfacesKey, *vppl2.BridgeDomain_Interface]{c},
			[]vppl2.BridgeDomainInterfacesItem[struct{}]{{Key: mustKey(vppl2.ParseBridgeDomainInterfacesKey(bindingKey)), Value: &vppl2.BridgeDomain_Interface{Name: "if1"}, Origin: kv.OriginNB}},
		})),
	)
	res, err := s.Txn(scheduler.FullResync()).Commit(context.Background())
	if err != nil || res.Err != nil {
		t.Fatalf("full resync: %v %v", err, res.Err)
	}
	got := c.take()
	if diff := cmp.Diff([]string{"delete " + bdKey, "delete " + bindingKey, "delete " + ifKey}, slices.Sorted(slices.Values(got))); diff != "" {
		t.Fatalf("calls (-want +got):\n%s", diff)
	}
	if slices.Index(got, "delete "+bdKey) < slices.Index(got, "delete "+bindingKey) {
		t.Errorf("the bridge domain was deleted before its binding: %v", got)
	}
}
