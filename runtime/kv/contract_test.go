package kv_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// oldUpdate is a string-keyed handler whose Update forgot the old metadata.
type oldUpdate struct{ *baseHandler }

func (oldUpdate) Update(context.Context, string, value, value) (*ifaceMeta, error) { return nil, nil }

// TestNewDescriptorRefusesMistypedCapability: a method named like an
// optional capability with another signature is a constructor error, for
// string keys too.
func TestNewDescriptorRefusesMistypedCapability(t *testing.T) {
	t.Parallel()
	_, err := kv.NewDescriptor(spec{Name: "iface", KeyTemplate: ifaceTemplate}, kv.Handler[string, value, *ifaceMeta](oldUpdate{&baseHandler{}}))
	if err == nil || !strings.Contains(err.Error(), "method Update") || !strings.Contains(err.Error(), "iface") {
		t.Fatalf("NewDescriptor = %v; want an error naming the descriptor and the method Update", err)
	}
}

// typedKey is a key type other than string.
type typedKey struct{ name string }

type typedHandler struct{}

func (typedHandler) Create(context.Context, typedKey, value) (struct{}, error) {
	return struct{}{}, nil
}
func (typedHandler) Delete(context.Context, typedKey, value, struct{}) error { return nil }

// TestTypedKeyNeedsParser: a key type other than string has no default
// parser or writer; the constructor says so.
func TestTypedKeyNeedsParser(t *testing.T) {
	t.Parallel()
	s := kv.Spec[typedKey, value, struct{}]{Name: "typed", KeyTemplate: ifaceTemplate}
	if _, err := kv.NewDescriptor(s, typedHandler{}); err == nil || !strings.Contains(err.Error(), "ParseKey") {
		t.Fatalf("NewDescriptor without ParseKey = %v; want an error naming ParseKey", err)
	}
	s.ParseKey = func(k string) (typedKey, bool) {
		name, ok := strings.CutPrefix(k, "linux/interface/")
		return typedKey{name}, ok && name != "" && !strings.Contains(name, "/")
	}
	s.KeyString = func(k typedKey) string { return "linux/interface/" + k.name }
	d, err := kv.NewDescriptor(s, typedHandler{})
	if err != nil {
		t.Fatal(err)
	}
	if !d.IsKey("linux/interface/eth0") || d.IsKey("linux/interface/a/b") {
		t.Errorf("IsKey does not follow ParseKey")
	}
	// A text that is not a key never reaches the handler.
	if _, err := d.Create(context.Background(), "linux/interface/a/b", str("x")); err == nil || kv.IsRetriable(err) {
		t.Errorf("Create with a text that is not a key = %v; want a non-retriable error", err)
	}
}
