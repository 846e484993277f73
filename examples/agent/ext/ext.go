// Package ext is the agent's extension point: a package that adds item
// types to the agent (an annotated model and its handler) registers here,
// from its init function, a function that builds its descriptors, and the
// agent binary links it with a blank import (examples/agent/extensions.go).
// The agent registers those descriptors with the scheduler next to its
// plugins' at start; from then on its file and etcd sources, the API and
// kvctl's reads know the new models like any other, through
// the scheduler.
//
// This registry is package state filled by init functions, the one place
// that has it: a Go program cannot otherwise be extended without editing
// its main package. It never panics: a name registered twice is reported
// by Descriptors, which the agent turns into a start-up error.
package ext

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// Env is what the agent gives an extension to build its descriptors.
type Env struct {
	// Logger is the agent's logger.
	Logger *slog.Logger
	// Memory is set when the agent runs over its in-memory southbound
	// instead of the kernel: an extension that would touch the system may
	// then return no descriptor.
	Memory bool
	// AllowedNetns, when not nil, lists the only named network namespaces
	// that values may name (the agent's -netns-allow): an extension that
	// works in namespaces refuses others (INVALID, naming the field).
	AllowedNetns []string
}

// Factory builds the descriptors of an extension.
type Factory func(Env) ([]kv.Descriptor, error)

var registry struct {
	mu        sync.Mutex
	factories map[string]Factory
	twice     []string
}

// Register registers the extension called name. Call it from an init
// function.
func Register(name string, f Factory) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.factories == nil {
		registry.factories = map[string]Factory{}
	}
	if _, ok := registry.factories[name]; ok || f == nil {
		registry.twice = append(registry.twice, name)
		return
	}
	registry.factories[name] = f
}

// Names returns the names of the registered extensions, sorted.
func Names() []string {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	var names []string
	for name := range registry.factories {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Descriptors builds the descriptors of every registered extension, in
// the order of their names. It fails on a name registered twice (or with
// no factory) and on the first factory that fails, naming the extension.
func Descriptors(env Env) ([]kv.Descriptor, error) {
	registry.mu.Lock()
	twice := slices.Clone(registry.twice)
	registry.mu.Unlock()
	if len(twice) > 0 {
		return nil, fmt.Errorf("extensions registered twice, or with no factory: %s", strings.Join(twice, ", "))
	}
	var out []kv.Descriptor
	for _, name := range Names() {
		registry.mu.Lock()
		f := registry.factories[name]
		registry.mu.Unlock()
		descs, err := f(env)
		if err != nil {
			return nil, fmt.Errorf("extension %s: %w", name, err)
		}
		out = append(out, descs...)
	}
	return out, nil
}
