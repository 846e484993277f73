package kv_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// TestRedactPaths: set string fields on the paths, singular, repeated and
// through repeated messages, read kv.RedactedText in a copy; the original
// is untouched; a message with none of them set is returned as it is.
func TestRedactPaths(t *testing.T) {
	t.Parallel()
	in := &descriptorpb.FileDescriptorProto{
		Name:       proto.String("secret-name"),
		Package:    proto.String("shown"),
		Dependency: []string{"dep-a", "dep-b"},
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("m1")}, {}, {Name: proto.String("m3")},
		},
		Options: &descriptorpb.FileOptions{GoPackage: proto.String("go-secret")},
	}
	orig := proto.Clone(in)
	paths := []string{"name", "dependency", "message_type.name", "options.go_package", "options.java_package", "syntax", "nope.x"}
	got := kv.RedactPaths(in, paths...)
	want := &descriptorpb.FileDescriptorProto{
		Name:       proto.String(kv.RedactedText),
		Package:    proto.String("shown"),
		Dependency: []string{kv.RedactedText, kv.RedactedText},
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String(kv.RedactedText)}, {}, {Name: proto.String(kv.RedactedText)},
		},
		Options: &descriptorpb.FileOptions{GoPackage: proto.String(kv.RedactedText)},
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("redacted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(orig, in, protocmp.Transform()); diff != "" {
		t.Errorf("the original was modified (-was +now):\n%s", diff)
	}
	plain := &descriptorpb.FileDescriptorProto{Package: proto.String("p"), MessageType: []*descriptorpb.DescriptorProto{{}}}
	if r := kv.RedactPaths(plain, paths...); r != proto.Message(plain) {
		t.Errorf("a message with nothing to redact was copied")
	}
	if kv.Redact(nil) != nil || kv.RedactPaths(nil, "x") != nil {
		t.Errorf("nil not returned as nil")
	}
	if r := kv.Redact(plain); r != proto.Message(plain) {
		t.Errorf("Redact changed a message without a Redacted method")
	}
}
