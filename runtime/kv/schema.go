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

// ErrNoSouthbound is what the handler of a schema descriptor answers: it
// has no southbound to call.
var ErrNoSouthbound = errors.New("a schema descriptor has no southbound")

// SchemaHandler is a handler that refuses every call with
// ErrNoSouthbound. A descriptor made with it parses keys, validates values
// and computes dependencies and derived values as the model's registered
// descriptor does, for a tool that checks values without a southbound
// (kvctl, a controller writing to etcd).
type SchemaHandler[K any, V proto.Message] struct{}

// Create returns ErrNoSouthbound.
func (SchemaHandler[K, V]) Create(context.Context, K, V) (struct{}, error) {
	return struct{}{}, ErrNoSouthbound
}

// Delete returns ErrNoSouthbound.
func (SchemaHandler[K, V]) Delete(context.Context, K, V, struct{}) error { return ErrNoSouthbound }

var schemas struct {
	mu     sync.Mutex
	byName map[string]func() (Descriptor, error)
}

// RegisterSchema records how to build a schema descriptor (over a
// SchemaHandler) of the model name. Generated code calls it from init for
// every model and derived model of a file, so that a program has the
// schema of every model it links. Registering a name twice panics, as
// registering a protobuf type twice does.
func RegisterSchema(name string, build func() (Descriptor, error)) {
	schemas.mu.Lock()
	defer schemas.mu.Unlock()
	if schemas.byName == nil {
		schemas.byName = map[string]func() (Descriptor, error){}
	}
	if _, dup := schemas.byName[name]; dup {
		panic(fmt.Sprintf("kv: the schema of model %s is registered twice", name))
	}
	schemas.byName[name] = build
}

// SchemaDescriptors returns a schema descriptor of every registered model
// whose name starts with one of prefixes (all of them without prefixes),
// sorted by name.
func SchemaDescriptors(prefixes ...string) ([]Descriptor, error) {
	schemas.mu.Lock()
	var names []string
	for n := range schemas.byName {
		if len(prefixes) == 0 || slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(n, p) }) {
			names = append(names, n)
		}
	}
	builds := make([]func() (Descriptor, error), len(names))
	slices.Sort(names)
	for i, n := range names {
		builds[i] = schemas.byName[n]
	}
	schemas.mu.Unlock()
	out := make([]Descriptor, 0, len(names))
	var errs []error
	for i, b := range builds {
		d, err := b()
		if err != nil {
			errs = append(errs, fmt.Errorf("model %s: %w", names[i], err))
			continue
		}
		out = append(out, d)
	}
	return out, errors.Join(errs...)
}
