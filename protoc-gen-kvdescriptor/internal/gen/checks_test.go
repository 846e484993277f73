package gen_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/bufbuild/protocompile"
	"github.com/google/go-cmp/cmp"
)

// header is the first line of every test .proto file. The sources of the
// cases below start with a newline, right after the backtick: the
// backtick's line is the header's line 1, so line numbers in the wanted
// errors are the lines as they read in the case.
const header = `syntax = "proto3"; package test.v1; import "kvdescriptor/v1/options.proto"; option go_package = "example.com/test/v1;testv1";`

// TestChecks runs the generator on small invalid models: each must fail
// with exactly the error given, naming the .proto file, the line of the
// offending option (or of its field or message) and the option.
func TestChecks(t *testing.T) {
	t.Parallel()
	models := filepath.Join(repoRoot(t), "models") // for kvdescriptor/v1/options.proto
	tests := []struct {
		name  string
		files map[string]string // file name -> source after the header
		want  string
	}{
		// Key templates.
		{
			name: "key template without a literal prefix",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "{name}"};
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).key: key template "{name}" has no literal prefix before its first placeholder: a descriptor's keys are mapped to it by their prefix`,
		},
		{
			name: "derive key template without a literal prefix",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  repeated string addrs = 2 [(kvdescriptor.v1.field).derive = {key: "{name}/{addrs}"}];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).derive.key: key template "{name}/{addrs}" has no literal prefix before its first placeholder: a descriptor's keys are mapped to it by their prefix`,
		},
		{
			name: "placeholder not a field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{nope}"};
  string name = 1;
}`},
			want: "test.proto:3: option (kvdescriptor.v1.model).key: placeholder {nope} is not a field of test.v1.A",
		},
		{
			name: "nested placeholder unknown in the nested message",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{peer.nope}"};
  message Peer { string name = 1; }
  Peer peer = 1;
}`},
			want: "test.proto:3: option (kvdescriptor.v1.model).key: placeholder {peer.nope}: nope is not a field of test.v1.A.Peer",
		},
		{
			name: "placeholder of a message field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{inner}"};
  message Inner { string name = 1; }
  Inner inner = 1;
}`},
			want: "test.proto:3: option (kvdescriptor.v1.model).key: placeholder {inner}: inner is a message; a key needs a scalar field (write {inner.<field>})",
		},
		{
			name: "placeholder of a repeated field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{names}"};
  repeated string names = 1;
}`},
			want: "test.proto:3: option (kvdescriptor.v1.model).key: placeholder {names}: names is a repeated field; a key needs a single value",
		},
		{
			name: "placeholder of a bool field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{up}"};
  bool up = 1;
}`},
			want: "test.proto:3: option (kvdescriptor.v1.model).key: placeholder {up}: up is bool; a key needs a string or integer field",
		},
		{
			name: "nested placeholder through a scalar",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name.first}"};
  string name = 1;
}`},
			want: "test.proto:3: option (kvdescriptor.v1.model).key: placeholder {name.first}: name is not a message, it has no field first",
		},
		{
			name: "placeholder twice",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}/b/{name}"};
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).key: key template "a/{name}/b/{name}": placeholder {name} at offset 11 repeats the field of {name} at offset 2; a key carries each field once`,
		},
		// The grammar of runtime/kv (kv.ParseKeyTemplate): what the
		// runtime would refuse is a generator error, never generated code.
		{
			name: "NUL in the key",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/\000/{name}"};
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).key: key template "a/\x00/{name}": control character 0x00 at offset 2`,
		},
		{
			name: "newline in the key",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}\n"};
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).key: key template "a/{name}\n": control character 0x0a at offset 8`,
		},
		{
			name: "tab in a placeholder",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{\tname}"};
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).key: key template "a/{\tname}": control character 0x09 at offset 3`,
		},
		{
			name: "DEL in the key",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a\177/{name}"};
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).key: key template "a\x7f/{name}": control character 0x7f at offset 1`,
		},
		{
			name: "trailing slash",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}/"};
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).key: key template "a/{name}/": ends with '/' (offset 8): the last segment is empty`,
		},
		{
			name: "leading slash",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "/a/{name}"};
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).key: key template "/a/{name}": starts with '/': the first segment is empty`,
		},
		{
			name: "double slash",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a//{name}"};
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).key: key template "a//{name}": empty segment "//" at offset 1`,
		},
		{
			name: "percent in the key",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a%2F/{name}"};
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).key: key template "a%2F/{name}": '%' at offset 1: it starts escapes in keys and cannot be literal text`,
		},
		{
			name: "empty key set explicitly",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: ""};
  string name = 1;
}`},
			want: "test.proto:3: option (kvdescriptor.v1.model).key: the key template is empty",
		},
		{
			name: "derived key with a trailing slash",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  repeated string addrs = 2 [(kvdescriptor.v1.field).derive = {key: "a/{name}/addr/{addrs}/"}];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).derive.key: key template "a/{name}/addr/{addrs}/": ends with '/' (offset 21): the last segment is empty`,
		},
		{
			name: "derived key with a repeated placeholder",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  repeated string addrs = 2 [(kvdescriptor.v1.field).derive = {key: "a/{addrs}/{addrs}"}];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).derive.key: key template "a/{addrs}/{addrs}": placeholder {addrs} at offset 10 repeats the field of {addrs} at offset 2; a key carries each field once`,
		},
		{
			name: "dependency key with a double slash",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {
    key: "a/{name}"
    dependencies: {label: "x" key: "b//{name}"}
  };
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).dependencies: dependency "x": key template "b//{name}": empty segment "//" at offset 1`,
		},
		{
			name: "any_of prefix without its trailing slash",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {
    key: "a/{name}"
    dependencies: {label: "x" any_of: {prefixes: "b/{name}"}}
  };
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).dependencies: dependency "x": prefix: key prefix "b/{name}" does not end with '/': a prefix ends where a segment of the key does`,
		},
		{
			name: "any_of prefix with a double slash",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {
    key: "a/{name}"
    dependencies: {label: "x" any_of: {prefixes: "b/{name}//"}}
  };
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).dependencies: dependency "x": prefix: key template "b/{name}/": ends with '/' (offset 8): the last segment is empty`,
		},
		{
			name: "any_of prefix of a slash only",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {
    key: "a/{name}"
    dependencies: {label: "x" any_of: {prefixes: "/"}}
  };
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).dependencies: dependency "x": prefix: key prefix "/" is empty before its '/'`,
		},
		{
			name: "two key placeholders with one Go name",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{peer.name}/{peer_name}"};
  message Peer { string name = 1; }
  Peer peer = 1;
  string peer_name = 2;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).key: placeholders {peer.name} and {peer_name} of the key "a/{peer.name}/{peer_name}" would both be the key field PeerName`,
		},
		{
			name: "unclosed brace",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name"};
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).key: key template "a/{name": unclosed '{'`,
		},
		{
			name: "format written in the template",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{addr:ip}"};
  string addr = 1;
}`},
			want: "test.proto:3: option (kvdescriptor.v1.model).key: placeholder {addr}: formats come from the field's (kvdescriptor.v1.field).format, not from the template",
		},
		{
			name: "format IP on an integer key field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{id}"};
  uint32 id = 1 [(kvdescriptor.v1.field).format = IP];
}`},
			want: "test.proto:3: option (kvdescriptor.v1.model).key: placeholder {id}: format IP needs a string field, id is uint32",
		},
		{
			name: "format UINT on a string key field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{id}"};
  string id = 1 [(kvdescriptor.v1.field).format = UINT];
}`},
			want: "test.proto:3: option (kvdescriptor.v1.model).key: placeholder {id}: format UINT needs an integer field, id is string",
		},
		{
			name: "format MAC on an integer field outside the key",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  uint64 mac = 2 [(kvdescriptor.v1.field).format = MAC];
}`},
			want: "test.proto:5: option (kvdescriptor.v1.field).format: test.v1.A.mac: format MAC needs a string field, mac is uint64",
		},
		{
			name: "format IPV4 on an integer field outside the key",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  fixed32 addr = 2 [(kvdescriptor.v1.field).format = IPV4];
}`},
			want: "test.proto:5: option (kvdescriptor.v1.field).format: test.v1.A.addr: format IPV4 needs a string field, addr is fixed32",
		},
		{
			name: "ambiguous: adjacent placeholders",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{x}{y}"};
  string x = 1;
  string y = 2;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).key: ambiguous key template "a/{x}{y}": placeholders {x} and {y} have no literal text between them`,
		},
		{
			name: "ambiguous: a name followed by a literal a name can contain",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{x}-{y}"};
  string x = 1;
  string y = 2;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).key: ambiguous key template "a/{x}-{y}": placeholder {x} (format name) is followed by "-", and its values can contain that text (e.g. "a-"), so keys split in more than one place`,
		},
		{
			name: "empty key",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {with_metadata: true};
  string name = 1;
}`},
			want: "test.proto:3: option (kvdescriptor.v1.model).key: the key template is empty",
		},
		{
			name: "label not a placeholder",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {
    key: "a/{name}"
    label: "id"
  };
  string name = 1;
  string id = 2;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).label: label "id" is not a placeholder of the key "a/{name}"`,
		},

		{
			name: "key set as its own option statement",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model).with_metadata = true;
  option (kvdescriptor.v1.model).key = "a/{nope}";
  string name = 1;
}`},
			want: "test.proto:4: option (kvdescriptor.v1.model).key: placeholder {nope} is not a field of test.v1.A",
		},

		// Refs.
		{
			name: "ref to an unknown model",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  string b = 2 [(kvdescriptor.v1.field).ref = {model: "test.v1.Nope"}];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).ref: ref of test.v1.A.b: "test.v1.Nope" is not a model (an annotated message in the files given to the generator)`,
		},
		{
			name: "ref to a message that is not a model",
			files: map[string]string{"test.proto": `
message Plain { string name = 1; }
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  string b = 2 [(kvdescriptor.v1.field).ref = {model: "test.v1.Plain"}];
}`},
			want: `test.proto:6: option (kvdescriptor.v1.field).ref: ref of test.v1.A.b: "test.v1.Plain" is not a model (an annotated message in the files given to the generator)`,
		},
		{
			name: "ref without a model",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  string b = 2 [(kvdescriptor.v1.field).ref = {label: "b"}];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).ref: ref of test.v1.A.b names no model`,
		},
		{
			name: "ref to a model with several placeholders",
			files: map[string]string{"test.proto": `
message B {
  option (kvdescriptor.v1.model) = {key: "b/{x}/{y}"};
  string x = 1;
  string y = 2;
}
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  string b = 2 [(kvdescriptor.v1.field).ref = {model: "test.v1.B"}];
}`},
			want: `test.proto:10: option (kvdescriptor.v1.field).ref: ref of test.v1.A.b: the key "b/{x}/{y}" of test.v1.B has 2 placeholders, so a label alone cannot name a value; use a dependency key template`,
		},
		{
			name: "ref type mismatch",
			files: map[string]string{"test.proto": `
message B {
  option (kvdescriptor.v1.model) = {key: "b/{name}"};
  string name = 1;
}
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  uint32 b = 2 [(kvdescriptor.v1.field).ref = {model: "test.v1.B"}];
}`},
			want: `test.proto:9: option (kvdescriptor.v1.field).ref: ref of test.v1.A.b: the field is uint32 but the label of test.v1.B is string`,
		},
		{
			name: "ref on a message field",
			files: map[string]string{"test.proto": `
message B {
  option (kvdescriptor.v1.model) = {key: "b/{name}"};
  string name = 1;
}
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  B b = 2 [(kvdescriptor.v1.field).ref = {model: "test.v1.B"}];
}`},
			want: `test.proto:9: option (kvdescriptor.v1.field).ref: ref of test.v1.A.b: the field must hold a label (string or integer), not a message`,
		},

		// Derived values.
		{
			name: "derive on a map",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  map<string, string> tags = 2 [(kvdescriptor.v1.field).derive = {key: "a/{name}/tag"}];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).derive: tags is a map; only a message or scalar field, or a repeated one, can derive values`,
		},
		{
			name: "derive on a bool",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  bool up = 2 [(kvdescriptor.v1.field).derive = {key: "a/{name}/up"}];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).derive: up is bool; derived values come from message, string or integer fields`,
		},
		{
			name: "derive on a float",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  repeated float weights = 2 [(kvdescriptor.v1.field).derive = {key: "a/{name}/w/{weights}"}];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).derive: weights is float; derived values come from message, string or integer fields`,
		},
		{
			name: "derive of an element that is a model",
			files: map[string]string{"test.proto": `
message B {
  option (kvdescriptor.v1.model) = {key: "b/{name}"};
  string name = 1;
}
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  repeated B bs = 2 [(kvdescriptor.v1.field).derive = {key: "a/{name}/b/{bs.name}"}];
}`},
			want: `test.proto:9: option (kvdescriptor.v1.field).derive: bs holds test.v1.B, which is a model itself; a derived value's element cannot be a model`,
		},
		{
			name: "derive key without the element on a repeated field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  repeated string addrs = 2 [(kvdescriptor.v1.field).derive = {key: "a/{name}/addr"}];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).derive.key: the key "a/{name}/addr" has no placeholder of the element (addrs...): every element would get the same key`,
		},
		{
			name: "derive on the second line of the field's options",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  repeated string addrs = 2 [
    (kvdescriptor.v1.field).format = IP,
    (kvdescriptor.v1.field).derive = {key: "a/{name}/addr"}
  ];
}`},
			want: `test.proto:7: option (kvdescriptor.v1.field).derive.key: the key "a/{name}/addr" has no placeholder of the element (addrs...): every element would get the same key`,
		},
		{
			name: "derive key placeholder neither base nor element",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Member { string id = 1; }
  string name = 1;
  repeated Member members = 2 [(kvdescriptor.v1.field).derive = {key: "a/{name}/m/{members.nope}"}];
}`},
			want: `test.proto:6: option (kvdescriptor.v1.field).derive.key: placeholder {members.nope}: nope is not a field of test.v1.A.Member`,
		},
		{
			name: "derive key placeholder unknown at the top level",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Member { string id = 1; }
  string name = 1;
  repeated Member members = 2 [(kvdescriptor.v1.field).derive = {key: "a/{nope}/m/{members.id}"}];
}`},
			want: `test.proto:6: option (kvdescriptor.v1.field).derive.key: placeholder {nope} is not a field of test.v1.A or its element members`,
		},
		{
			name: "derive key placeholder of the element message itself",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Member { string id = 1; }
  string name = 1;
  repeated Member members = 2 [(kvdescriptor.v1.field).derive = {key: "a/{name}/m/{members}"}];
}`},
			want: `test.proto:6: option (kvdescriptor.v1.field).derive.key: placeholder {members} is the element message itself, not one of its scalar fields`,
		},
		{
			name: "derived dependency on a base field the derived key does not carry",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  string vrf = 2;
  repeated string addrs = 3 [(kvdescriptor.v1.field).derive = {
    key: "a/{name}/addr/{addrs}"
    dependencies: {label: "vrf" key: "vrf/{vrf}"}
  }];
}`},
			want: `test.proto:6: option (kvdescriptor.v1.field).derive.dependencies: dependency "vrf": placeholder {vrf} is neither a field of the element nor a field of the base that the key carries`,
		},

		// Dependencies.
		{
			name: "dependency with neither key nor any_of",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {
    key: "a/{name}"
    dependencies: {label: "x"}
  };
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).dependencies: dependency "x": set key or any_of`,
		},
		{
			name: "dependency with both key and any_of",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {
    key: "a/{name}"
    dependencies: {label: "x" key: "b/{name}" any_of: {prefixes: "c/"}}
  };
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).dependencies: dependency "x": set key or any_of, not both`,
		},
		{
			name: "dependency without a label",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {
    key: "a/{name}"
    dependencies: {key: "b/{name}"}
  };
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).dependencies: a dependency needs a label`,
		},
		{
			name: "any_of without prefixes",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {
    key: "a/{name}"
    dependencies: {label: "x" any_of: {network_contains: "gw"}}
  };
  string name = 1;
  string gw = 2 [(kvdescriptor.v1.field).format = IP];
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).dependencies: dependency "x": any_of needs at least one prefix`,
		},
		{
			name: "network_contains on a non-string field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {
    key: "a/{name}"
    dependencies: {label: "gw" any_of: {prefixes: "b/{name}/" network_contains: "gw"}}
  };
  string name = 1;
  uint32 gw = 2;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).dependencies: dependency "gw": network_contains: gw must be a string field holding an IP address`,
		},
		{
			name: "dependency key with an unknown placeholder",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {
    key: "a/{name}"
    dependencies: {label: "x" key: "b/{nope}"}
  };
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).dependencies: dependency "x": placeholder {nope} is not a field of test.v1.A`,
		},
		{
			name: "dependency on the value's own key",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {
    key: "a/{name}"
    dependencies: {label: "self" key: "a/{name}"}
  };
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).dependencies: dependency "self" is the value's own key "a/{name}": a value cannot wait for itself`,
		},
		{
			name: "dependency on the model's own derived value",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {
    key: "a/{name}"
    dependencies: {label: "first address" key: "a/{name}/addr/{first}"}
  };
  string name = 1;
  string first = 2;
  repeated string addrs = 3 [(kvdescriptor.v1.field).derive = {key: "a/{name}/addr/{addrs}"}];
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).dependencies: dependency "first address" is on a value derived from this very value (test.v1.A.addrs, key "a/{name}/addr/{addrs}"), which exists only once this value does`,
		},
		{
			name: "derived value depending on its own base",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  repeated string addrs = 2 [(kvdescriptor.v1.field).derive = {
    key: "a/{name}/addr/{addrs}"
    dependencies: {label: "base" key: "a/{name}"}
  }];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).derive.dependencies: dependency "base" of a derived value is on its own base "a/{name}", which it lives and dies with anyway`,
		},

		// Models against each other.
		{
			name: "overlapping key spaces in two files",
			files: map[string]string{
				"a.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "x/{name}"};
  string name = 1;
}`,
				"b.proto": `
message B {
  option (kvdescriptor.v1.model) = {key: "x/{id}"};
  uint32 id = 1;
}`,
			},
			want: `b.proto:3: option (kvdescriptor.v1.model).key: the key "x/{id}" of test.v1.B overlaps the key "x/{name}" of test.v1.A (a.proto:3): both match "x/0"`,
		},
		{
			name: "two models with one descriptor name",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}" name: "x"};
  string name = 1;
}
message B {
  option (kvdescriptor.v1.model) = {key: "b/{name}" name: "x"};
  string name = 1;
}`},
			want: `test.proto:7: option (kvdescriptor.v1.model): descriptor name "x" is also the name of test.v1.A (test.proto:3)`,
		},
		{
			name: "derived Go name collides with a model",
			files: map[string]string{"test.proto": `
message AAddrs {
  option (kvdescriptor.v1.model) = {key: "b/{name}"};
  string name = 1;
}
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  repeated string addrs = 2 [(kvdescriptor.v1.field).derive = {key: "a/{name}/addr/{addrs}"}];
}`},
			want: "test.proto:9: option (kvdescriptor.v1.field).derive: the generated Go identifier AAddrsModelName of the values derived from test.v1.A.addrs is also declared for test.v1.AAddrs (test.proto:3); rename one of them",
		},
		{
			name: "generated key type collides with a message",
			files: map[string]string{"test.proto": `
message AKey { string name = 1; }
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
}`},
			want: "test.proto:4: option (kvdescriptor.v1.model): the generated Go identifier AKey of test.v1.A is also declared for message test.v1.AKey; rename one of them",
		},
		{
			name: "error in an element message of another file, reported there once",
			files: map[string]string{
				"a.proto": `
message Member {
  string name = 1 [(kvdescriptor.v1.field).ref = {model: "test.v1.Nope"}];
}`,
				"b.proto": `
import "a.proto";
message G {
  option (kvdescriptor.v1.model) = {key: "g/{name}"};
  string name = 1;
  repeated Member members = 2 [(kvdescriptor.v1.field).derive = {key: "g/{name}/m/{members.name}"}];
  Member leader = 3 [(kvdescriptor.v1.field).derive = {key: "g/{name}/leader"}];
}`,
			},
			want: `a.proto:3: option (kvdescriptor.v1.field).ref: ref of test.v1.Member.name: "test.v1.Nope" is not a model (an annotated message in the files given to the generator)`,
		},
		{
			name: "retrieve_after naming a non-model",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {
    key: "a/{name}"
    retrieve_after: "test.v1.Nope"
  };
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).retrieve_after: "test.v1.Nope" is not a model (an annotated message)`,
		},

		{
			name: "every error is reported, in order",
			files: map[string]string{
				"a.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{nope}"};
  string name = 1;
}
message B {
  string a = 1;
  string b = 2;
  string c = 3;
  string d = 4;
}
message C {
  option (kvdescriptor.v1.model) = {key: ""};
  string name = 1;
}`,
				"b.proto": `
message D {
  option (kvdescriptor.v1.model) = {key: "d/{name}" label: "x"};
  string name = 1;
}`,
			},
			want: "a.proto:3: option (kvdescriptor.v1.model).key: placeholder {nope} is not a field of test.v1.A\n" +
				"a.proto:13: option (kvdescriptor.v1.model).key: the key template is empty\n" +
				`b.proto:3: option (kvdescriptor.v1.model).label: label "x" is not a placeholder of the key "d/{name}"`,
		},

		// Comparison and validation hints.
		{
			name: "zero_equals not a number",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  uint32 mtu = 2 [(kvdescriptor.v1.field).compare.zero_equals = "big"];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).compare.zero_equals: test.v1.A.mtu: zero_equals "big" is not a valid uint32`,
		},
		{
			name: "zero_equals negative for an unsigned field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  uint32 mtu = 2 [(kvdescriptor.v1.field).compare.zero_equals = "-1"];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).compare.zero_equals: test.v1.A.mtu: zero_equals "-1" is not a valid uint32`,
		},
		{
			name: "zero_equals out of the range of the field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  uint32 mtu = 2 [(kvdescriptor.v1.field).compare.zero_equals = "5000000000"];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).compare.zero_equals: test.v1.A.mtu: zero_equals "5000000000" is not a valid uint32`,
		},
		{
			name: "zero_equals of a float with trailing text",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  double ratio = 2 [(kvdescriptor.v1.field).compare.zero_equals = "1.5x"];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).compare.zero_equals: test.v1.A.ratio: zero_equals "1.5x" is not a finite double`,
		},
		{
			name: "zero_equals NaN",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  float ratio = 2 [(kvdescriptor.v1.field).compare.zero_equals = "NaN"];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).compare.zero_equals: test.v1.A.ratio: zero_equals "NaN" is not a finite float`,
		},
		{
			name: "zero_equals of a bool that is not true",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  bool up = 2 [(kvdescriptor.v1.field).compare.zero_equals = "yes"];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).compare.zero_equals: test.v1.A.up: zero_equals "yes" of a bool field can only be true`,
		},
		{
			name: "zero_equals not an enum value",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  enum Mode { MODE_UNSPECIFIED = 0; MODE_FAST = 1; }
  string name = 1;
  Mode mode = 2 [(kvdescriptor.v1.field).compare.zero_equals = "MODE_SLOW"];
}`},
			want: `test.proto:6: option (kvdescriptor.v1.field).compare.zero_equals: test.v1.A.mode: zero_equals "MODE_SLOW" is not a value of test.v1.A.Mode`,
		},
		{
			name: "zero_equals on a repeated field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  repeated uint32 ports = 2 [(kvdescriptor.v1.field).compare.zero_equals = "1"];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).compare.zero_equals: test.v1.A.ports: zero_equals applies to scalar fields only`,
		},
		{
			name: "unordered on a single field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  string addr = 2 [(kvdescriptor.v1.field).compare.unordered = true];
}`},
			want: "test.proto:5: option (kvdescriptor.v1.field).compare.unordered: test.v1.A.addr: unordered applies to repeated fields (not bytes)",
		},
		{
			name: "unique on a single field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  string addr = 2 [(kvdescriptor.v1.field).validate.unique = true];
}`},
			want: "test.proto:5: option (kvdescriptor.v1.field).validate.unique: test.v1.A.addr: unique applies to repeated scalar fields (not bytes); for messages use unique_by",
		},
		{
			name: "min on a string field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  string descr = 2 [(kvdescriptor.v1.field).validate = {has_min: true min: 1}];
}`},
			want: "test.proto:5: option (kvdescriptor.v1.field).validate: test.v1.A.descr: min and max apply to single numeric fields",
		},
		{
			name: "min out of the range of the field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  uint32 mtu = 2 [(kvdescriptor.v1.field).validate = {has_min: true min: -1}];
}`},
			want: "test.proto:5: option (kvdescriptor.v1.field).validate.min: test.v1.A.mtu: min -1 is out of the range of uint32",
		},
		{
			name: "at_most_one on a non-repeated field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Member { string id = 1; bool bvi = 2; }
  string name = 1;
  Member member = 2 [(kvdescriptor.v1.field).validate.at_most_one = "bvi"];
}`},
			want: `test.proto:6: option (kvdescriptor.v1.field).validate.at_most_one: test.v1.A.member: at_most_one applies to repeated message fields`,
		},
		{
			name: "at_most_one naming a missing field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Member { string id = 1; bool bvi = 2; }
  string name = 1;
  repeated Member members = 2 [(kvdescriptor.v1.field).validate.at_most_one = "bvx"];
}`},
			want: `test.proto:6: option (kvdescriptor.v1.field).validate.at_most_one: test.v1.A.members: "bvx" is not a field of test.v1.A.Member`,
		},
		{
			name: "at_most_one naming a non-bool field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Member { string id = 1; bool bvi = 2; }
  string name = 1;
  repeated Member members = 2 [(kvdescriptor.v1.field).validate.at_most_one = "id"];
}`},
			want: "test.proto:6: option (kvdescriptor.v1.field).validate.at_most_one: test.v1.A.members: at_most_one must name a bool field of test.v1.A.Member, id is string",
		},
		{
			name: "unique_by naming a bytes field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Member { bytes id = 1; }
  string name = 1;
  repeated Member members = 2 [(kvdescriptor.v1.field).validate.unique_by = "id"];
}`},
			want: "test.proto:6: option (kvdescriptor.v1.field).validate.unique_by: test.v1.A.members: unique_by must name a single scalar field (not bytes) of test.v1.A.Member, id is bytes",
		},

		// Options at depth: applied, or rejected with the field's path.
		{
			name: "ref on a field of a nested message",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Inner { string peer = 1 [(kvdescriptor.v1.field).ref = {model: "test.v1.A"}]; }
  string name = 1;
  Inner inner = 2;
}`},
			want: "test.proto:4: option (kvdescriptor.v1.field).ref: test.v1.A.Inner.peer (inner.peer of test.v1.A): ref applies to the fields of a model's message or of a derived value's element, not to the fields of a nested message",
		},
		{
			name: "derive two levels deep",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Inner { Deep deep = 1; }
  message Deep { repeated string addrs = 1 [(kvdescriptor.v1.field).derive = {key: "a/{name}/x"}]; }
  string name = 1;
  Inner inner = 2;
}`},
			want: "test.proto:5: option (kvdescriptor.v1.field).derive: test.v1.A.Deep.addrs (inner.deep.addrs of test.v1.A): derive applies to the fields of a model's message, not to the fields of a nested message",
		},
		{
			name: "ref in a nested message of a derived value's element",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Member { string id = 1; Inner inner = 2; }
  message Inner { string peer = 1 [(kvdescriptor.v1.field).ref = {model: "test.v1.A"}]; }
  string name = 1;
  repeated Member members = 2 [(kvdescriptor.v1.field).derive = {key: "a/{name}/m/{members.id}"}];
}`},
			want: "test.proto:5: option (kvdescriptor.v1.field).ref: test.v1.A.Inner.peer (inner.peer of test.v1.A.members): ref applies to the fields of a model's message or of a derived value's element, not to the fields of a nested message",
		},
		{
			name: "ref in the elements of a repeated message field of a nested message",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Elem { string peer = 1 [(kvdescriptor.v1.field).ref = {model: "test.v1.A"}]; }
  message Outer { repeated Elem elems = 1; }
  string name = 1;
  Outer outer = 2;
}`},
			want: "test.proto:4: option (kvdescriptor.v1.field).ref: test.v1.A.Elem.peer (outer.elems[].peer of test.v1.A): options do not apply to the fields of the elements of a repeated or map field (derive the field to give its elements a model of their own)",
		},
		{
			name: "ref in the values of a map",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Elem { string peer = 1 [(kvdescriptor.v1.field).ref = {model: "test.v1.A"}]; }
  string name = 1;
  map<string, Elem> elems = 2;
}`},
			want: "test.proto:4: option (kvdescriptor.v1.field).ref: test.v1.A.Elem.peer (elems[].peer of test.v1.A): options do not apply to the fields of the elements of a repeated or map field (derive the field to give its elements a model of their own)",
		},
		{
			name: "ref on a list in the elements of a repeated message field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Elem { repeated string peers = 1 [(kvdescriptor.v1.field).ref = {model: "test.v1.A"}]; }
  string name = 1;
  repeated Elem elems = 2;
}`},
			want: "test.proto:4: option (kvdescriptor.v1.field).ref: ref of test.v1.A.Elem.peers: a field of the elements of elems must hold one label, not a list",
		},
		{
			name: "unset_equals_empty on a scalar",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  uint32 mtu = 2 [(kvdescriptor.v1.field).compare.unset_equals_empty = true];
}`},
			want: "test.proto:5: option (kvdescriptor.v1.field).compare.unset_equals_empty: test.v1.A.mtu: unset_equals_empty applies to singular message fields",
		},
		{
			name: "resolution of a string",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  string interval = 2 [(kvdescriptor.v1.field).compare.resolution = 10];
}`},
			want: "test.proto:5: option (kvdescriptor.v1.field).compare.resolution: test.v1.A.interval: resolution applies to single unsigned integer fields",
		},
		{
			name: "resolution of 1",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  uint32 interval = 2 [(kvdescriptor.v1.field).compare.resolution = 1];
}`},
			want: "test.proto:5: option (kvdescriptor.v1.field).compare.resolution: test.v1.A.interval: resolution 1: at least 2 (1 compares as without it)",
		},
		{
			name: "resolution with zero_equals",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  uint32 interval = 2 [(kvdescriptor.v1.field).compare = {resolution: 10 zero_equals: "1000"}];
}`},
			want: "test.proto:5: option (kvdescriptor.v1.field).compare.resolution: test.v1.A.interval: resolution and zero_equals together: the default's unit is ambiguous",
		},
		{
			name: "format in the elements of a repeated message field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Elem { string ip = 1 [(kvdescriptor.v1.field).format = IP]; }
  string name = 1;
  repeated Elem elems = 2;
}`},
			want: "test.proto:4: option (kvdescriptor.v1.field).format: test.v1.A.Elem.ip (elems[].ip of test.v1.A): of the options, only ref applies to the fields of the elements of a repeated message field (derive the field to give its elements a model of their own)",
		},
		{
			name: "validate beside a ref in the elements of a repeated message field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Path { Hop hop = 1; string via = 2 [(kvdescriptor.v1.field).ref = {model: "test.v1.A"}, (kvdescriptor.v1.field).validate.required = true]; }
  message Hop { string peer = 1 [(kvdescriptor.v1.field).ref = {model: "test.v1.A"}]; }
  string name = 1;
  repeated Path paths = 2;
}`},
			want: "test.proto:4: option (kvdescriptor.v1.field).validate: test.v1.A.Path.via (paths[].via of test.v1.A): of the options, only ref applies to the fields of the elements of a repeated message field (derive the field to give its elements a model of their own)\n" +
				"test.proto:5: option (kvdescriptor.v1.field).ref: test.v1.A.Hop.peer (paths[].hop.peer of test.v1.A): of the options, only ref applies to the fields of the elements of a repeated message field (derive the field to give its elements a model of their own)",
		},
		{
			name: "ref in the elements of a repeated field of a nested message",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Outer { repeated Elem elems = 1; }
  message Elem { string peer = 1 [(kvdescriptor.v1.field).ref = {model: "test.v1.A"}]; }
  string name = 1;
  Outer outer = 2;
}`},
			want: "test.proto:5: option (kvdescriptor.v1.field).ref: test.v1.A.Elem.peer (outer.elems[].peer of test.v1.A): options do not apply to the fields of the elements of a repeated or map field (derive the field to give its elements a model of their own)",
		},
		{
			name: "ref in the elements of a repeated field of a derived value's element",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Member { string id = 1; repeated Elem elems = 2; }
  message Elem { string peer = 1 [(kvdescriptor.v1.field).ref = {model: "test.v1.A"}]; }
  string name = 1;
  repeated Member members = 2 [(kvdescriptor.v1.field).derive = {key: "a/{name}/m/{members.id}"}];
}`},
			want: "test.proto:5: option (kvdescriptor.v1.field).ref: test.v1.A.Elem.peer (elems[].peer of test.v1.A.members): options do not apply to the fields of the elements of a repeated or map field (derive the field to give its elements a model of their own)",
		},
		{
			name: "ref of a message field in the elements of a repeated message field",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Path { Hop hop = 1 [(kvdescriptor.v1.field).ref = {model: "test.v1.A"}]; }
  message Hop { string peer = 1; }
  string name = 1;
  repeated Path paths = 2;
}`},
			want: "test.proto:4: option (kvdescriptor.v1.field).ref: ref of test.v1.A.Path.hop: the field must hold a label (string or integer), not a message",
		},
		{
			name: "validate in the values of a map, one level further",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Elem { Inner inner = 1; }
  message Inner { uint32 mtu = 1 [(kvdescriptor.v1.field).validate = {has_max: true max: 9000}]; }
  string name = 1;
  message Outer { map<string, Elem> elems = 1; }
  Outer outer = 2;
}`},
			want: "test.proto:5: option (kvdescriptor.v1.field).validate: test.v1.A.Inner.mtu (outer.elems[].inner.mtu of test.v1.A): options do not apply to the fields of the elements of a repeated or map field (derive the field to give its elements a model of their own)",
		},
		{
			name: "format that does not fit a field of a nested message",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Inner { uint32 ip = 1 [(kvdescriptor.v1.field).format = IP]; }
  string name = 1;
  Inner inner = 2;
}`},
			want: "test.proto:4: option (kvdescriptor.v1.field).format: test.v1.A.Inner.ip: format IP needs a string field, ip is uint32",
		},
		{
			name: "options in a recursive message",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  message Node {
    Node next = 1;
    uint32 mtu = 2 [(kvdescriptor.v1.field).compare.zero_equals = "1500"];
  }
  string name = 1;
  Node node = 2;
}`},
			want: "test.proto:6: option (kvdescriptor.v1.field).compare: test.v1.A.Node.mtu (node.next.mtu of test.v1.A): its message is recursive, and options apply at a bounded depth only",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srcs := map[string]string{}
			var names []string
			for name, src := range tt.files {
				srcs[name] = header + src
				names = append(names, name)
			}
			slices.Sort(names) // the order protoc gets them in on its command line
			r := protocompile.CompositeResolver{
				&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(srcs)},
				&protocompile.SourceResolver{ImportPaths: []string{models}},
			}
			_, err := generate(t, compileRequest(t, r, "", names...))
			if err == nil {
				t.Fatalf("generate succeeded, want error:\n%s", tt.want)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}
