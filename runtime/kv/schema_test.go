package kv_test

import (
	"context"
	"errors"
	"strings"
	"testing"

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
	h := kv.SchemaHandler[mockv1.InterfaceKey, *mockv1.Interface]{}
	if _, err := h.Create(context.Background(), mockv1.InterfaceKey{}, nil); !errors.Is(err, kv.ErrNoSouthbound) {
		t.Errorf("Create: %v, want ErrNoSouthbound", err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), mockv1.InterfaceModelName) {
			t.Errorf("registering %s twice: %v, want a panic naming it", mockv1.InterfaceModelName, r)
		}
	}()
	kv.RegisterSchema(mockv1.InterfaceModelName, func() (kv.Descriptor, error) { return nil, nil })
}
