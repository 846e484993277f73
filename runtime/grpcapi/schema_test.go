package grpcapi_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/dynamicpb"

	sysctlv1 "github.com/kvdescriptor/kvdescriptor/generated/examples/sysctl/v1"
	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
)

// noopSysctl handles sysctls by doing nothing: the test reads models only.
type noopSysctl struct{}

func (noopSysctl) Create(context.Context, sysctlv1.SysctlKey, *sysctlv1.Sysctl) (struct{}, error) {
	return struct{}{}, nil
}

func (noopSysctl) Delete(context.Context, sysctlv1.SysctlKey, *sysctlv1.Sysctl, struct{}) error {
	return nil
}

// TestModelsSchema: with include_schema, Models sends the .proto files of
// the models' messages and of everything they import, each once and after
// its imports; a registry built from them alone resolves every model's
// message with the fields Models lists, and decodes a value. Without it,
// no schema is sent.
func TestModelsSchema(t *testing.T) {
	t.Parallel()
	e := newEnv(t, kvtest.NewSB(), t.TempDir(), envOptions{})
	d, err := sysctlv1.NewSysctlDescriptor[struct{}](noopSysctl{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.s.Register(d); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	plain, err := e.client.Models(ctx, &apiv1.ModelsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.GetSchema() != nil {
		t.Errorf("Models without include_schema sent %d files", len(plain.GetSchema().GetFile()))
	}

	resp, err := e.client.Models(ctx, &apiv1.ModelsRequest{IncludeSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(plain.GetModels(), resp.GetModels(), protocmp.Transform()); diff != "" {
		t.Errorf("the models differ with include_schema (-without +with):\n%s", diff)
	}
	var names []string
	seen := map[string]bool{}
	for _, f := range resp.GetSchema().GetFile() {
		for _, dep := range f.GetDependency() {
			if !seen[dep] {
				t.Errorf("%s comes before its import %s", f.GetName(), dep)
			}
		}
		if seen[f.GetName()] {
			t.Errorf("%s is sent twice", f.GetName())
		}
		seen[f.GetName()] = true
		names = append(names, f.GetName())
	}
	// In the order of the descriptors' names, a file after its imports.
	want := []string{
		"google/protobuf/descriptor.proto",
		"kvdescriptor/v1/options.proto",
		"examples/sysctl/v1/sysctl.proto",
		"google/protobuf/wrappers.proto", // kvtest's values
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("the schema's files (-want +got):\n%s", diff)
	}

	files, err := protodesc.NewFiles(resp.GetSchema())
	if err != nil {
		t.Fatalf("a registry of the schema: %v", err)
	}
	if len(resp.GetModels()) != 3 {
		t.Fatalf("%d models, want 3", len(resp.GetModels()))
	}
	for _, m := range resp.GetModels() {
		desc, err := files.FindDescriptorByName(protoreflect.FullName(m.GetMessage()))
		if err != nil {
			t.Errorf("%s: the schema does not resolve %s: %v", m.GetDescriptor_(), m.GetMessage(), err)
			continue
		}
		md, ok := desc.(protoreflect.MessageDescriptor)
		if !ok {
			t.Errorf("%s: %s is a %T, not a message", m.GetDescriptor_(), m.GetMessage(), desc)
			continue
		}
		var got, want []string
		for i := range md.Fields().Len() {
			got = append(got, string(md.Fields().Get(i).Name()))
		}
		for _, f := range m.GetFields() {
			want = append(want, f.GetName())
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: the fields of the schema's %s (-Models +schema):\n%s", m.GetDescriptor_(), md.FullName(), diff)
		}
	}

	// A sysctl, decoded by the schema alone and encoded back, is the
	// compiled message's encoding.
	desc, _ := files.FindDescriptorByName("examples.sysctl.v1.Sysctl")
	dyn := dynamicpb.NewMessage(desc.(protoreflect.MessageDescriptor))
	if err := protojson.Unmarshal([]byte(`{"namespace": "ns1", "name": "net.ipv4.ip_forward", "value": "1"}`), dyn); err != nil {
		t.Fatal(err)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(dyn)
	if err != nil {
		t.Fatal(err)
	}
	var compiled sysctlv1.Sysctl
	if err := proto.Unmarshal(b, &compiled); err != nil {
		t.Fatal(err)
	}
	if want := (&sysctlv1.Sysctl{Namespace: "ns1", Name: "net.ipv4.ip_forward", Value: "1"}); !proto.Equal(&compiled, want) {
		t.Errorf("the schema's sysctl decodes as %v, want %v", &compiled, want)
	}

}
