package ext

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// reset empties the registry (the tests of this package only).
func reset(t *testing.T) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	registry.factories, registry.twice = nil, nil
	t.Cleanup(func() {
		registry.mu.Lock()
		defer registry.mu.Unlock()
		registry.factories, registry.twice = nil, nil
	})
}

func descriptor(t *testing.T, prefix string) kv.Descriptor {
	t.Helper()
	d, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, struct{}]{Name: prefix, KeyPrefix: prefix + "/"}, nopHandler{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type nopHandler struct{}

func (nopHandler) Create(context.Context, string, *wrapperspb.StringValue) (struct{}, error) {
	return struct{}{}, nil
}

func (nopHandler) Delete(context.Context, string, *wrapperspb.StringValue, struct{}) error {
	return nil
}

func TestDescriptorsInNameOrder(t *testing.T) {
	reset(t)
	var calls []string
	var got Env
	Register("b", func(env Env) ([]kv.Descriptor, error) {
		calls, got = append(calls, "b"), env
		return []kv.Descriptor{descriptor(t, "b1"), descriptor(t, "b2")}, nil
	})
	Register("a", func(Env) ([]kv.Descriptor, error) {
		calls = append(calls, "a")
		return []kv.Descriptor{descriptor(t, "a1")}, nil
	})
	if names := Names(); !slices.Equal(names, []string{"a", "b"}) {
		t.Errorf("Names %q", names)
	}
	descs, err := Descriptors(Env{Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range descs {
		names = append(names, d.Name())
	}
	if !slices.Equal(names, []string{"a1", "b1", "b2"}) || !slices.Equal(calls, []string{"a", "b"}) || !got.Memory {
		t.Errorf("descriptors %q, calls %q, env %+v", names, calls, got)
	}
}

func TestDescriptorsErrors(t *testing.T) {
	tests := []struct {
		name     string
		register func()
		want     string
	}{
		{"twice", func() {
			f := func(Env) ([]kv.Descriptor, error) { return nil, nil }
			Register("x", f)
			Register("x", f)
		}, "registered twice, or with no factory: x"},
		{"no factory", func() { Register("y", nil) }, "registered twice, or with no factory: y"},
		{"failing factory", func() {
			Register("z", func(Env) ([]kv.Descriptor, error) { return nil, errors.New("no kernel") })
		}, "extension z: no kernel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reset(t)
			tt.register()
			if _, err := Descriptors(Env{}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}
