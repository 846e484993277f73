package kv_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	mockv1 "github.com/kvdescriptor/kvdescriptor/generated/examples/mock/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// TestSchemaDescriptors checks the schemas that generated code registers:
// every model of a linked package is there (derived ones too), filtered by
// prefix; a schema descriptor validates as the model's own and refuses
// every call; a second registration of a name panics.
func TestSchemaDescriptors(t *testing.T) {
	ds, err := kv.SchemaDescriptors("examples.mock.v1.")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range ds {
		names = append(names, d.Name())
	}
	want := []string{mockv1.BridgeDomainModelName, mockv1.BridgeDomainInterfacesModelName, mockv1.FIBEntryModelName, mockv1.InterfaceModelName}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("SchemaDescriptors(examples.mock.v1.) = %v, want %v", names, want)
	}
	if other, _ := kv.SchemaDescriptors("no.such."); len(other) != 0 {
		t.Errorf("SchemaDescriptors(no.such.) = %d descriptors", len(other))
	}
	iface := ds[3]
	key := mockv1.InterfaceKey{Name: "eth0"}.String()
	if err := iface.Validate(key, &mockv1.Interface{Name: "eth1"}); err == nil {
		t.Errorf("%s with another name: valid", key)
	}
	if err := iface.Validate(key, &mockv1.Interface{Name: "eth0", Type: mockv1.Interface_TYPE_LOOPBACK}); err != nil {
		t.Errorf("%s: %v", key, err)
	}
	h := iface.(*kv.TypedDescriptor[mockv1.InterfaceKey, *mockv1.Interface, struct{}])
	if _, err := h.Handler().Create(context.Background(), mockv1.InterfaceKey{Name: "eth0"}, nil); !errors.Is(err, kv.ErrNoSouthbound) {
		t.Errorf("Create: %v, want ErrNoSouthbound", err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), mockv1.InterfaceModelName) {
			t.Errorf("registering %s twice: %v, want a panic naming it", mockv1.InterfaceModelName, r)
		}
	}()
	kv.RegisterSchema(mockv1.InterfaceModelName, func(kv.DynamicHandler) (kv.Descriptor, error) { return nil, nil })
}

// recorder is a DynamicHandler that records its calls and retrieves what
// it is told to.
type recorder struct {
	calls []string
	found []kv.DynamicItem
}

func (r *recorder) Create(_ context.Context, key string, _ proto.Message) error {
	r.calls = append(r.calls, "create "+key)
	return nil
}

func (r *recorder) Update(_ context.Context, key string, _, _ proto.Message) error {
	r.calls = append(r.calls, "update "+key)
	return nil
}

func (r *recorder) Delete(_ context.Context, key string, _ proto.Message) error {
	r.calls = append(r.calls, "delete "+key)
	return nil
}

func (r *recorder) Retrieve(_ context.Context, model string, correlate []kv.DynamicItem) ([]kv.DynamicItem, error) {
	r.calls = append(r.calls, "retrieve "+model)
	return r.found, nil
}

// TestDynamicDescriptors checks a DynamicHandler under the registered
// models' descriptors: calls arrive with the key's text, and what its
// Retrieve returns is typed, a key of another model or a value of another
// type refused naming it.
func TestDynamicDescriptors(t *testing.T) {
	r := &recorder{}
	ds, err := kv.DynamicDescriptors(r, mockv1.InterfaceModelName)
	if err != nil || len(ds) != 1 {
		t.Fatalf("DynamicDescriptors(%s) = %d descriptors, %v", mockv1.InterfaceModelName, len(ds), err)
	}
	d := ds[0].(*kv.TypedDescriptor[mockv1.InterfaceKey, *mockv1.Interface, struct{}])
	h := d.Handler()
	ctx := context.Background()
	key := mockv1.InterfaceKey{Name: "eth0"}
	v := &mockv1.Interface{Name: "eth0", Type: mockv1.Interface_TYPE_LOOPBACK}
	if _, err := h.Create(ctx, key, v); err != nil {
		t.Fatal(err)
	}
	if _, err := h.(kv.Updater[mockv1.InterfaceKey, *mockv1.Interface, struct{}]).Update(ctx, key, v, v, struct{}{}); err != nil {
		t.Fatal(err)
	}
	if err := h.Delete(ctx, key, v, struct{}{}); err != nil {
		t.Fatal(err)
	}
	ret := h.(kv.Retriever[mockv1.InterfaceKey, *mockv1.Interface, struct{}])
	r.found = []kv.DynamicItem{{Key: key.String(), Value: v, Origin: kv.OriginSB}}
	items, err := ret.Retrieve(ctx, nil)
	if err != nil || len(items) != 1 || items[0].Key != key || items[0].Value != v || items[0].Origin != kv.OriginSB {
		t.Errorf("Retrieve = %+v, %v", items, err)
	}
	want := "create mock/interface/eth0,update mock/interface/eth0,delete mock/interface/eth0,retrieve " + mockv1.InterfaceModelName
	if got := strings.Join(r.calls, ","); got != want {
		t.Errorf("calls %s, want %s", got, want)
	}
	r.found = []kv.DynamicItem{{Key: "mock/bd/x", Value: v}}
	if _, err := ret.Retrieve(ctx, nil); err == nil || !strings.Contains(err.Error(), "mock/bd/x") {
		t.Errorf("Retrieve of a key of another model: %v", err)
	}
	r.found = []kv.DynamicItem{{Key: key.String(), Value: &mockv1.FIBEntry{}}}
	if _, err := ret.Retrieve(ctx, nil); err == nil || !strings.Contains(err.Error(), "FIBEntry") {
		t.Errorf("Retrieve of a value of another type: %v", err)
	}
}
