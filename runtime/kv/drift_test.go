package kv_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// secretField is a message whose default_value is sensitive (a
// Redactor, as generated for a field marked sensitive).
type secretField struct {
	*descriptorpb.FieldDescriptorProto
}

func (m secretField) Redacted() proto.Message {
	c := proto.Clone(m.FieldDescriptorProto).(*descriptorpb.FieldDescriptorProto)
	if c.DefaultValue != nil {
		c.DefaultValue = proto.String(kv.RedactedText)
	}
	return c
}

func TestDiff(t *testing.T) {
	t.Parallel()
	want := &descriptorpb.FieldDescriptorProto{Name: proto.String("a"), Number: proto.Int32(1), DefaultValue: proto.String("s1"),
		Options: &descriptorpb.FieldOptions{Packed: proto.Bool(true)}}
	found := &descriptorpb.FieldDescriptorProto{Name: proto.String("b"), Number: proto.Int32(1), DefaultValue: proto.String("s2"),
		JsonName: proto.String("j"), Options: &descriptorpb.FieldOptions{Packed: proto.Bool(false)}}
	got := kv.Diff(secretField{want}, secretField{found}, nil)
	wantDiff := []kv.FieldDiff{
		{Path: "name", Want: `"a"`, Found: `"b"`},
		{Path: "default_value", Want: `"REDACTED"`, Found: `"REDACTED"`}, // differs; its contents are not shown
		{Path: "options.packed", Want: "true", Found: "false"},
		{Path: "json_name", Want: "", Found: `"j"`},
	}
	if len(got) != len(wantDiff) {
		t.Fatalf("Diff: %v, want %v", got, wantDiff)
	}
	byPath := map[string]kv.FieldDiff{}
	for _, d := range got {
		byPath[d.Path] = d
	}
	for _, w := range wantDiff {
		if byPath[w.Path] != w {
			t.Errorf("%s: %+v, want %+v", w.Path, byPath[w.Path], w)
		}
	}
	if s := (kv.FieldDiff{Path: "json_name", Found: `"j"`}).String(); s != `json_name: (unset) -> "j"` {
		t.Errorf("String: %s", s)
	}
	// A comparison that leaves out the name and the JSON name: only the
	// fields it compares are differences.
	eq := func(a, b proto.Message) bool {
		x, y := proto.Clone(a).(*descriptorpb.FieldDescriptorProto), proto.Clone(b).(*descriptorpb.FieldDescriptorProto)
		x.Name, y.Name, x.JsonName, y.JsonName = nil, nil, nil, nil
		return proto.Equal(x, y)
	}
	got = kv.Diff(want, found, eq)
	if len(got) != 2 || got[0].Path != "default_value" || got[1].Path != "options.packed" {
		t.Errorf("Diff with the comparison: %v", got)
	}
	if d := kv.Diff(want, &descriptorpb.FileDescriptorProto{}, nil); d != nil {
		t.Errorf("Diff of two types: %v", d)
	}
}

func TestParseDriftPolicy(t *testing.T) {
	t.Parallel()
	for _, p := range []kv.DriftPolicy{kv.DriftRepair, kv.DriftReport, kv.DriftAdopt} {
		if got, err := kv.ParseDriftPolicy(p.String()); err != nil || got != p {
			t.Errorf("%v: %v %v", p, got, err)
		}
	}
	if _, err := kv.ParseDriftPolicy("fix"); err == nil {
		t.Error("fix parsed")
	}
}
