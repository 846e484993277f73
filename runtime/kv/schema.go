package kv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
)

// ErrNoSouthbound is what a schema descriptor's handler answers: it has
// no southbound to call.
var ErrNoSouthbound = errors.New("a schema descriptor has no southbound")

// DynamicItem is a value of any model, by key text, as a DynamicHandler's
// Retrieve exchanges them.
type DynamicItem struct {
	Key    string
	Value  proto.Message
	Origin Origin
}

// A DynamicHandler handles the values of any model by key text: one
// handler for every model of a program (an in-memory southbound, a
// recorder, a proxy). DynamicDescriptors puts it under each registered
// model's generated descriptor, which parses keys, validates values and
// computes dependencies as with a typed handler.
type DynamicHandler interface {
	Create(ctx context.Context, key string, value proto.Message) error
	Update(ctx context.Context, key string, oldValue, newValue proto.Message) error
	Delete(ctx context.Context, key string, value proto.Message) error
	// Retrieve returns the values of the model that the southbound holds;
	// correlate are the values the scheduler expects.
	Retrieve(ctx context.Context, model string, correlate []DynamicItem) ([]DynamicItem, error)
}

// DynamicAdapter is the typed handler of one model over a DynamicHandler
// (see Dynamic).
type DynamicAdapter[K fmt.Stringer, V proto.Message] struct {
	model string
	h     DynamicHandler
	parse func(string) (K, bool)
}

// Dynamic returns the typed handler of model over h; parse is the model's
// generated key parser. Generated code calls it when it registers a
// model's schema.
func Dynamic[K fmt.Stringer, V proto.Message](model string, h DynamicHandler, parse func(string) (K, bool)) *DynamicAdapter[K, V] {
	return &DynamicAdapter[K, V]{model: model, h: h, parse: parse}
}

// Create calls the DynamicHandler's Create.
func (a *DynamicAdapter[K, V]) Create(ctx context.Context, key K, value V) (struct{}, error) {
	return struct{}{}, a.h.Create(ctx, key.String(), value)
}

// Update calls the DynamicHandler's Update.
func (a *DynamicAdapter[K, V]) Update(ctx context.Context, key K, oldValue, newValue V, _ struct{}) (struct{}, error) {
	return struct{}{}, a.h.Update(ctx, key.String(), oldValue, newValue)
}

// Delete calls the DynamicHandler's Delete.
func (a *DynamicAdapter[K, V]) Delete(ctx context.Context, key K, value V, _ struct{}) error {
	return a.h.Delete(ctx, key.String(), value)
}

// Retrieve calls the DynamicHandler's Retrieve and types what it returns:
// a key the model does not parse, or a value of another type, is an error
// naming it.
func (a *DynamicAdapter[K, V]) Retrieve(ctx context.Context, correlate []Item[K, V, struct{}]) ([]Item[K, V, struct{}], error) {
	in := make([]DynamicItem, len(correlate))
	for i, c := range correlate {
		in[i] = DynamicItem{Key: c.Key.String(), Value: c.Value, Origin: c.Origin}
	}
	found, err := a.h.Retrieve(ctx, a.model, in)
	if err != nil {
		return nil, err
	}
	out := make([]Item[K, V, struct{}], 0, len(found))
	for _, f := range found {
		k, ok := a.parse(f.Key)
		if !ok {
			return nil, fmt.Errorf("retrieve %s: %q is not a key of the model", a.model, f.Key)
		}
		v, ok := f.Value.(V)
		if !ok {
			return nil, fmt.Errorf("retrieve %s: %s: a value of type %T", a.model, f.Key, f.Value)
		}
		out = append(out, Item[K, V, struct{}]{Key: k, Value: v, Origin: f.Origin})
	}
	return out, nil
}

// refuseAll is the DynamicHandler of schema descriptors.
type refuseAll struct{}

func (refuseAll) Create(context.Context, string, proto.Message) error { return ErrNoSouthbound }
func (refuseAll) Update(context.Context, string, proto.Message, proto.Message) error {
	return ErrNoSouthbound
}
func (refuseAll) Delete(context.Context, string, proto.Message) error { return ErrNoSouthbound }
func (refuseAll) Retrieve(context.Context, string, []DynamicItem) ([]DynamicItem, error) {
	return nil, ErrNoSouthbound
}

var schemas struct {
	mu     sync.Mutex
	byName map[string]func(DynamicHandler) (Descriptor, error)
}

// RegisterSchema records how to build the descriptor of the model name
// over a DynamicHandler. Generated code calls it from init for every model
// and derived model of a file, so that a program has the schema of every
// model it links. Registering a name twice panics, as registering a
// protobuf type twice does.
func RegisterSchema(name string, build func(DynamicHandler) (Descriptor, error)) {
	schemas.mu.Lock()
	defer schemas.mu.Unlock()
	if schemas.byName == nil {
		schemas.byName = map[string]func(DynamicHandler) (Descriptor, error){}
	}
	if _, dup := schemas.byName[name]; dup {
		panic(fmt.Sprintf("kv: the schema of model %s is registered twice", name))
	}
	schemas.byName[name] = build
}

// SchemaDescriptors returns a descriptor of every registered model whose
// name starts with one of prefixes (all of them without prefixes), sorted
// by name, over a handler that refuses every call with ErrNoSouthbound:
// for a tool that checks values without a southbound (kvctl, a
// controller writing to etcd).
func SchemaDescriptors(prefixes ...string) ([]Descriptor, error) {
	return DynamicDescriptors(refuseAll{}, prefixes...)
}

// DynamicDescriptors returns a descriptor of every registered model whose
// name starts with one of prefixes (all of them without prefixes), sorted
// by name, each over h.
func DynamicDescriptors(h DynamicHandler, prefixes ...string) ([]Descriptor, error) {
	schemas.mu.Lock()
	var names []string
	for n := range schemas.byName {
		if len(prefixes) == 0 || slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(n, p) }) {
			names = append(names, n)
		}
	}
	builds := make([]func(DynamicHandler) (Descriptor, error), len(names))
	slices.Sort(names)
	for i, n := range names {
		builds[i] = schemas.byName[n]
	}
	schemas.mu.Unlock()
	out := make([]Descriptor, 0, len(names))
	var errs []error
	for i, b := range builds {
		d, err := b(h)
		if err != nil {
			errs = append(errs, fmt.Errorf("model %s: %w", names[i], err))
			continue
		}
		out = append(out, d)
	}
	return out, errors.Join(errs...)
}
