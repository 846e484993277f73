package gen_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"github.com/google/go-cmp/cmp"
)

// generateFiles runs the generator on test files (sources after the
// header) and returns the content of the one generated file, or the error.
func generateFiles(t *testing.T, files map[string]string) (string, error) {
	t.Helper()
	srcs := map[string]string{}
	var names []string
	for name, src := range files {
		srcs[name] = header + src
		names = append(names, name)
	}
	slices.Sort(names)
	r := protocompile.CompositeResolver{
		&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(srcs)},
		&protocompile.SourceResolver{ImportPaths: []string{filepath.Join(repoRoot(t), "models")}},
	}
	resp, err := generate(t, compileRequest(t, r, "", names...))
	if err != nil {
		return "", err
	}
	var out []string
	for _, f := range resp.GetFile() {
		out = append(out, f.GetContent())
	}
	return strings.Join(out, "\n"), nil
}

// TestConditionChecks: the cross-field validation options (required_if,
// only_if, not_equal_to, zero_allowed, allow_unknown), derive's
// retrieve_after and the cycles between models that no values satisfy are
// checked when generating, with the file, the line and the option.
func TestConditionChecks(t *testing.T) {
	t.Parallel()
	const typed = `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  enum Type { TYPE_UNSPECIFIED = 0; TYPE_VETH = 1; TYPE_TAP = 2; }
  string name = 1;
  Type type = 2;
`
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{
			name: "required_if on an unknown field",
			files: map[string]string{"test.proto": typed + `
  string peer = 3 [(kvdescriptor.v1.field).validate.required_if = {field: "kind" in: "TYPE_VETH"}];
}`},
			want: `test.proto:8: option (kvdescriptor.v1.field).validate.required_if: test.v1.A.peer: required_if: "kind" is not a field of test.v1.A`,
		},
		{
			name: "only_if on an unknown enum value",
			files: map[string]string{"test.proto": typed + `
  string peer = 3 [(kvdescriptor.v1.field).validate = {
    only_if: {field: "type" in: ["TYPE_VETH", "TYPE_VXLAN"]}
  }];
}`},
			want: `test.proto:8: option (kvdescriptor.v1.field).validate.only_if: test.v1.A.peer: only_if: "TYPE_VXLAN" is not a value of test.v1.A.Type (the enum of type)`,
		},
		{
			name: "condition on a field that is not an enum",
			files: map[string]string{"test.proto": typed + `
  string peer = 3 [(kvdescriptor.v1.field).validate.required_if = {field: "name" in: "x"}];
}`},
			want: `test.proto:8: option (kvdescriptor.v1.field).validate.required_if: test.v1.A.peer: required_if: the condition's field name must be a single enum field, it is string`,
		},
		{
			name: "condition without values",
			files: map[string]string{"test.proto": typed + `
  string peer = 3 [(kvdescriptor.v1.field).validate.only_if = {field: "type"}];
}`},
			want: `test.proto:8: option (kvdescriptor.v1.field).validate.only_if: test.v1.A.peer: only_if: the condition on type lists no value (in)`,
		},
		{
			name: "condition without a field",
			files: map[string]string{"test.proto": typed + `
  string peer = 3 [(kvdescriptor.v1.field).validate.only_if = {in: "TYPE_VETH"}];
}`},
			want: `test.proto:8: option (kvdescriptor.v1.field).validate.only_if: test.v1.A.peer: only_if: the condition names no field`,
		},
		{
			name: "condition on the field itself",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  enum Type { TYPE_UNSPECIFIED = 0; TYPE_VETH = 1; }
  string name = 1;
  Type type = 2 [(kvdescriptor.v1.field).validate.only_if = {field: "type" in: "TYPE_VETH"}];
}`},
			want: `test.proto:6: option (kvdescriptor.v1.field).validate.only_if: test.v1.A.type: only_if: the condition is on the field itself`,
		},
		{
			name: "condition in a nested message on a field of the model, not a sibling",
			files: map[string]string{"test.proto": typed + `
  message Tunnel {
    uint32 vni = 1 [(kvdescriptor.v1.field).validate.required_if = {field: "type" in: "TYPE_VETH"}];
  }
  Tunnel tunnel = 3;
}`},
			want: `test.proto:9: option (kvdescriptor.v1.field).validate.required_if: test.v1.A.Tunnel.vni: required_if: "type" is not a field of test.v1.A.Tunnel`,
		},
		{
			name: "same_family_as an unknown field",
			files: map[string]string{"test.proto": typed + `
  string stop = 3 [(kvdescriptor.v1.field).format = IP, (kvdescriptor.v1.field).same_family_as = "strt"];
}`},
			want: `test.proto:8: option (kvdescriptor.v1.field).same_family_as: test.v1.A.stop: same_family_as strt: "strt" is not a field of test.v1.A`,
		},
		{
			name: "same_family_as a field that holds no address",
			files: map[string]string{"test.proto": typed + `
  string stop = 3 [(kvdescriptor.v1.field).format = IP, (kvdescriptor.v1.field).same_family_as = "name"];
}`},
			want: `test.proto:8: option (kvdescriptor.v1.field).same_family_as: test.v1.A.stop: same_family_as name: name is not a single string field of format IP, IPV4, IP_PREFIX or IP_INTERFACE`,
		},
		{
			name: "same_family_as on a repeated field",
			files: map[string]string{"test.proto": typed + `
  string start = 3 [(kvdescriptor.v1.field).format = IP];
  repeated string stops = 4 [(kvdescriptor.v1.field).format = IP, (kvdescriptor.v1.field).same_family_as = "start"];
}`},
			want: `test.proto:9: option (kvdescriptor.v1.field).same_family_as: test.v1.A.stops: same_family_as start: stops is not a single string field of format IP, IPV4, IP_PREFIX or IP_INTERFACE`,
		},
		{
			name: "not_equal_to an unknown field",
			files: map[string]string{"test.proto": typed + `
  string peer = 3 [(kvdescriptor.v1.field).validate.not_equal_to = "nme"];
}`},
			want: `test.proto:8: option (kvdescriptor.v1.field).validate.not_equal_to: test.v1.A.peer: not_equal_to: "nme" is not a field of test.v1.A`,
		},
		{
			name: "not_equal_to a field of another type",
			files: map[string]string{"test.proto": typed + `
  uint32 id = 3 [(kvdescriptor.v1.field).validate.not_equal_to = "name"];
}`},
			want: `test.proto:8: option (kvdescriptor.v1.field).validate.not_equal_to: test.v1.A.id: not_equal_to name: id is uint32 and name is string; they must have one type`,
		},
		{
			name: "not_equal_to on a repeated field",
			files: map[string]string{"test.proto": typed + `
  repeated string peers = 3 [(kvdescriptor.v1.field).validate.not_equal_to = "name"];
}`},
			want: `test.proto:8: option (kvdescriptor.v1.field).validate.not_equal_to: test.v1.A.peers: not_equal_to name: peers is string; not_equal_to compares single scalar or enum fields (not bytes)`,
		},
		{
			name: "not_equal_to the field itself",
			files: map[string]string{"test.proto": typed + `
  string peer = 3 [(kvdescriptor.v1.field).validate.not_equal_to = "peer"];
}`},
			want: `test.proto:8: option (kvdescriptor.v1.field).validate.not_equal_to: test.v1.A.peer: not_equal_to names the field itself`,
		},
		{
			name: "zero_allowed without bounds",
			files: map[string]string{"test.proto": typed + `
  uint32 mtu = 3 [(kvdescriptor.v1.field).validate.zero_allowed = true];
}`},
			want: `test.proto:8: option (kvdescriptor.v1.field).validate.zero_allowed: test.v1.A.mtu: zero_allowed applies with min or max (has_min, has_max)`,
		},
		{
			name: "allow_unknown on a field that is not an enum",
			files: map[string]string{"test.proto": typed + `
  uint32 mtu = 3 [(kvdescriptor.v1.field).validate.allow_unknown = true];
}`},
			want: `test.proto:8: option (kvdescriptor.v1.field).validate.allow_unknown: test.v1.A.mtu: allow_unknown applies to enum fields`,
		},
		{
			name: "derive retrieve_after naming a non-model",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  repeated string addrs = 2 [(kvdescriptor.v1.field).derive = {
    key: "a/{name}/addr/{addrs}"
    retrieve_after: "test.v1.Nope"
  }];
}`},
			want: `test.proto:5: option (kvdescriptor.v1.field).derive.retrieve_after: "test.v1.Nope" is not a model (an annotated message)`,
		},
		{
			name: "a model needs values derived from one that needs it",
			files: map[string]string{
				"a.proto": `
message A {
  option (kvdescriptor.v1.model) = {
    key: "a/{name}"
    dependencies: {label: "b address" key: "b/{b}/addr/{addr}"}
  };
  string name = 1;
  string b = 2;
  string addr = 3;
}`,
				"b.proto": `
message B {
  option (kvdescriptor.v1.model) = {key: "b/{name}"};
  string name = 1;
  string a = 2 [(kvdescriptor.v1.field).ref = {model: "test.v1.A"}];
  repeated string addrs = 3 [(kvdescriptor.v1.field).derive = {key: "b/{name}/addr/{addrs}"}];
}`,
			},
			want: `a.proto:3: option (kvdescriptor.v1.model).dependencies: dependency "b address" of test.v1.A is on test.v1.B.addrs, values derived from test.v1.B, which depends on test.v1.A: test.v1.B (ref a, b.proto:5) test.v1.A; a derived value exists only once its base is created, so values that close this cycle wait for each other forever`,
		},
		{
			name: "the same through a third model and an any_of prefix",
			files: map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {
    key: "a/{name}"
    dependencies: {label: "b address" any_of: {prefixes: "b/{b}/addr/"}}
  };
  string name = 1;
  string b = 2;
}
message B {
  option (kvdescriptor.v1.model) = {key: "b/{name}"};
  string name = 1;
  string c = 2 [(kvdescriptor.v1.field).ref = {model: "test.v1.C"}];
  repeated string addrs = 3 [(kvdescriptor.v1.field).derive = {key: "b/{name}/addr/{addrs}"}];
}
message C {
  option (kvdescriptor.v1.model) = {
    key: "c/{name}"
    dependencies: {label: "a" key: "a/{name}"}
  };
  string name = 1;
}`},
			want: `test.proto:3: option (kvdescriptor.v1.model).dependencies: dependency "b address" of test.v1.A is on test.v1.B.addrs, values derived from test.v1.B, which depends on test.v1.A: test.v1.B (ref c, test.proto:13) test.v1.C (dependency "a", test.proto:17) test.v1.A; a derived value exists only once its base is created, so values that close this cycle wait for each other forever`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := generateFiles(t, tt.files)
			if err == nil {
				t.Fatalf("generate succeeded, want error:\n%s", tt.want)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConditionsAccepted: what the checks let through generates, and a
// derived model retrieves after its base and what retrieve_after adds.
func TestConditionsAccepted(t *testing.T) {
	t.Parallel()
	out, err := generateFiles(t, map[string]string{"test.proto": `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  enum Type { TYPE_UNSPECIFIED = 0; TYPE_VETH = 1; TYPE_TAP = 2; }
  string name = 1;
  Type type = 2;
  string peer = 3 [(kvdescriptor.v1.field).validate = {
    required_if: {field: "type" in: "TYPE_VETH"}
    only_if: {field: "type" in: ["TYPE_VETH", "TYPE_TAP"]}
    not_equal_to: "name"
  }];
  uint32 mtu = 4 [(kvdescriptor.v1.field).validate = {has_min: true min: 68 zero_allowed: true}];
  Type other = 5 [(kvdescriptor.v1.field).validate.allow_unknown = true];
  repeated string addrs = 6 [(kvdescriptor.v1.field).derive = {
    key: "a/{name}/addr/{addrs}"
    retrieve_after: "test.v1.B"
  }];
}
message B {
  option (kvdescriptor.v1.model) = {key: "b/{name}"};
  string name = 1;
}`})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	for i := range lines {
		lines[i] = strings.Join(strings.Fields(lines[i]), " ")
	}
	text := "\n" + strings.Join(lines, "\n") + "\n"
	for _, w := range []string{
		`if _, ok := A_Type_name[int32(v.GetType())]; !ok {`,
		`if v.GetPeer() == "" && v.GetType() == A_TYPE_VETH {`,
		`errs = errs.Add("peer", "must be set when type is TYPE_VETH")`,
		`if v.GetPeer() != "" && v.GetType() != A_TYPE_VETH && v.GetType() != A_TYPE_TAP {`,
		`errs = errs.Add("peer", "must be empty unless type is TYPE_VETH or TYPE_TAP (it is %v)", v.GetType())`,
		`if v.GetPeer() != "" && v.GetPeer() == v.GetName() {`,
		`if v.GetMtu() != 0 && v.GetMtu() < 68 {`,
		`RetrieveDependencies: []string{"test.v1.A", "test.v1.B"},`,
	} {
		if !strings.Contains(text, "\n"+w+"\n") {
			t.Errorf("the output lacks the line %q", w)
		}
	}
	if strings.Contains(out, "A_Type_name[int32(v.GetOther())]") {
		t.Errorf("allow_unknown: the output checks other's values")
	}
}
