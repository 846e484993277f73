package southbound

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// memory is an in-memory southbound for the Linux models, for a machine
// where the agent cannot be root: every value it is given is "applied" by
// keeping it, and Retrieve reports what it keeps. It lets the demo and a
// person exploring the API run the whole agent without a kernel.
type memory struct {
	mu     sync.Mutex
	values map[string]proto.Message
}

func newMemory() *memory { return &memory{values: map[string]proto.Message{}} }

// descriptors returns the descriptors of the Linux models over m.
func (m *memory) descriptors() ([]kv.Descriptor, error) {
	var out []kv.Descriptor
	add := func(d kv.Descriptor, err error) error {
		if err != nil {
			return err
		}
		out = append(out, d)
		return nil
	}
	for _, err := range []error{
		add(linuxinterfaces.NewInterfaceDescriptor[struct{}](&memHandler[linuxinterfaces.InterfaceKey, *linuxinterfaces.Interface]{m})),
		add(linuxinterfaces.NewInterfaceIpAddressesDescriptor[struct{}](&memHandler[linuxinterfaces.InterfaceIpAddressesKey, *wrapperspb.StringValue]{m})),
		add(linuxinterfaces.NewInterfaceMasterDescriptor[struct{}](&memHandler[linuxinterfaces.InterfaceMasterKey, *wrapperspb.StringValue]{m})),
		add(linuxl3.NewRouteDescriptor[struct{}](&memHandler[linuxl3.RouteKey, *linuxl3.Route]{m})),
		add(linuxl3.NewNeighbourDescriptor[struct{}](&memHandler[linuxl3.NeighbourKey, *linuxl3.Neighbour]{m})),
	} {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// memHandler keeps the values of one model in m.
type memHandler[K fmt.Stringer, V proto.Message] struct{ m *memory }

func (h *memHandler[K, V]) Create(_ context.Context, k K, v V) (struct{}, error) {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	h.m.values[k.String()] = v
	return struct{}{}, nil
}

func (h *memHandler[K, V]) Update(_ context.Context, k K, _, v V, _ struct{}) (struct{}, error) {
	return h.Create(context.Background(), k, v)
}

func (h *memHandler[K, V]) Delete(_ context.Context, k K, _ V, _ struct{}) error {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	delete(h.m.values, k.String())
	return nil
}

// Retrieve reports the correlated values that m keeps, as they are kept.
func (h *memHandler[K, V]) Retrieve(_ context.Context, correlate []kv.Item[K, V, struct{}]) ([]kv.Item[K, V, struct{}], error) {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	var out []kv.Item[K, V, struct{}]
	for _, c := range correlate {
		if v, ok := h.m.values[c.Key.String()].(V); ok {
			out = append(out, kv.Item[K, V, struct{}]{Key: c.Key, Value: v, Origin: kv.OriginNB})
		}
	}
	return out, nil
}
