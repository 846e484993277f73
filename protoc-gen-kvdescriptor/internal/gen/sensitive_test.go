package gen_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"github.com/google/go-cmp/cmp"
)

// TestSensitiveChecks: a sensitive field that would show its secret (in a
// key, a label, a dependency, an error) or that is not text is refused,
// naming the file, the line and the option.
func TestSensitiveChecks(t *testing.T) {
	t.Parallel()
	models := filepath.Join(repoRoot(t), "models")
	tests := []struct {
		name, src, want string
	}{
		{
			name: "not text",
			src: `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  uint32 pin = 2 [(kvdescriptor.v1.field).sensitive = true];
}`,
			want: "test.proto:5: option (kvdescriptor.v1.field).sensitive: test.v1.A.pin: sensitive applies to string and bytes fields, pin is uint32",
		},
		{
			name: "in the key",
			src: `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}/{secret}"};
  string name = 1;
  string secret = 2 [(kvdescriptor.v1.field).sensitive = true];
}`,
			want: "test.proto:3: option (kvdescriptor.v1.model).key: the key names {secret}, a sensitive field: a secret cannot be in a key",
		},
		{
			name: "nested, in the key",
			src: `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}/{k.secret}"};
  message K { string secret = 1 [(kvdescriptor.v1.field).sensitive = true]; }
  string name = 1;
  K k = 2;
}`,
			want: "test.proto:3: option (kvdescriptor.v1.model).key: the key names {k.secret}, a sensitive field: a secret cannot be in a key",
		},
		{
			name: "in a dependency",
			src: `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}" dependencies: {label: "x" key: "b/{secret}"}};
  string name = 1;
  string secret = 2 [(kvdescriptor.v1.field).sensitive = true];
}`,
			want: "test.proto:3: option (kvdescriptor.v1.model).dependencies: the dependency x names {secret}, a sensitive field: a secret cannot be in a key",
		},
		{
			name: "a ref",
			src: `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  string other = 2 [(kvdescriptor.v1.field) = {sensitive: true ref: {model: "test.v1.A"}}];
}`,
			want: "test.proto:5: option (kvdescriptor.v1.field).sensitive: test.v1.A.other: a sensitive field cannot have ref (it would show the secret in keys or errors)",
		},
		{
			name: "derived key",
			src: `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  repeated string keys = 2 [(kvdescriptor.v1.field) = {sensitive: true derive: {key: "a/{name}/k/{keys}"}}];
}`,
			want: "test.proto:5: option (kvdescriptor.v1.field).sensitive: test.v1.A.keys: a sensitive field cannot have derive (it would show the secret in keys or errors)",
		},
		{
			name: "derived key through the element",
			src: `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message P { string psk = 1 [(kvdescriptor.v1.field).sensitive = true]; }
  string name = 1;
  repeated P peers = 2 [(kvdescriptor.v1.field).derive = {key: "a/{name}/p/{peers.psk}"}];
}`,
			want: "test.proto:6: option (kvdescriptor.v1.field).derive.key: the key names {peers.psk}, a sensitive field: a secret cannot be in a key",
		},
		{
			name: "unique",
			src: `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  repeated string keys = 2 [(kvdescriptor.v1.field) = {sensitive: true validate: {unique: true}}];
}`,
			want: "test.proto:5: option (kvdescriptor.v1.field).sensitive: test.v1.A.keys: a sensitive field cannot have validate.unique (it would show the secret in keys or errors)",
		},
		{
			name: "element of a repeated field that derives nothing",
			src: `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message P { string psk = 1 [(kvdescriptor.v1.field).sensitive = true]; }
  string name = 1;
  repeated P peers = 2;
}`,
			want: "test.proto:4: option (kvdescriptor.v1.field).sensitive: test.v1.A.P.psk (peers[].psk of test.v1.A): of the options, only ref applies to the fields of the elements of a repeated message field (derive the field to give its elements a model of their own)",
		},
		{
			name: "a field named like the method",
			src: `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  string secret = 2 [(kvdescriptor.v1.field).sensitive = true];
  bool redacted = 3;
}`,
			want: "test.proto:5: option (kvdescriptor.v1.field).sensitive: test.v1.A.secret: field redacted is named like the Redacted method that a message with sensitive fields gets",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := protocompile.CompositeResolver{
				&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(map[string]string{"test.proto": header + tt.src})},
				&protocompile.SourceResolver{ImportPaths: []string{models}},
			}
			_, err := generate(t, compileRequest(t, r, "", "test.proto"))
			if err == nil {
				t.Fatalf("generate succeeded, want error:\n%s", tt.want)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSensitiveRedacted: a message with sensitive fields, its own or
// nested, gets a Redacted method listing their paths; the element of a
// derived field too, and the base lists the path through the elements.
func TestSensitiveRedacted(t *testing.T) {
	t.Parallel()
	models := filepath.Join(repoRoot(t), "models")
	src := `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message W { bytes private_key = 1 [(kvdescriptor.v1.field).sensitive = true]; }
  message P { string id = 1; string psk = 2 [(kvdescriptor.v1.field).sensitive = true]; }
  string name = 1;
  W w = 2;
  repeated P peers = 3 [(kvdescriptor.v1.field).derive = {key: "a/{name}/peer/{peers.id}"}];
}`
	r := protocompile.CompositeResolver{
		&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(map[string]string{"test.proto": header + src})},
		&protocompile.SourceResolver{ImportPaths: []string{models}},
	}
	resp, err := generate(t, compileRequest(t, r, "", "test.proto"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.File) != 1 {
		t.Fatalf("%d files generated, want 1", len(resp.File))
	}
	code := resp.File[0].GetContent()
	for _, want := range []string{
		`func (x *A) Redacted() proto.Message {`,
		`return kv.RedactPaths(x, "w.private_key", "peers.psk")`,
		`func (x *A_W) Redacted() proto.Message {`,
		`return kv.RedactPaths(x, "private_key")`,
		`func (x *A_P) Redacted() proto.Message {`,
		`return kv.RedactPaths(x, "psk")`,
	} {
		if !strings.Contains(code, want) {
			t.Errorf("generated code lacks %q:\n%s", want, code)
		}
	}
}
