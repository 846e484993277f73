package gen_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"github.com/google/go-cmp/cmp"
)

// generateSrc runs the generator on one test.proto (after header).
func generateSrc(t *testing.T, src string) (string, error) {
	t.Helper()
	r := protocompile.CompositeResolver{
		&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(map[string]string{"test.proto": header + src})},
		&protocompile.SourceResolver{ImportPaths: []string{filepath.Join(repoRoot(t), "models")}},
	}
	res, err := generate(t, compileRequest(t, r, "", "test.proto"))
	if err != nil {
		return "", err
	}
	var out []string
	for _, f := range res.GetFile() {
		out = append(out, f.GetContent())
	}
	return strings.Join(out, "\n"), nil
}

// TestUnsetFollows: a field with presence that follows another while
// unset gets an accessor, Effective<Field>, that returns it when set and
// the other field (through the other's own default accessor, when it has
// one) otherwise, and the comparison compares through it.
func TestUnsetFollows(t *testing.T) {
	t.Parallel()
	got, err := generateSrc(t, `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  uint32 v4 = 2 [(kvdescriptor.v1.field).compare.zero_equals = "7"];
  optional uint32 v6 = 3 [(kvdescriptor.v1.field).unset_follows = "v4"];
  Inner inner = 4;
}
message Inner {
  string mode = 1;
  optional string mode6 = 2 [(kvdescriptor.v1.field).unset_follows = "mode"];
}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"func (x *A) EffectiveV6() uint32 {\n\tif x != nil && x.V6 != nil {\n\t\treturn *x.V6\n\t}\n\treturn x.EffectiveV4()\n}",
		"func (x *Inner) EffectiveMode6() string {\n\tif x != nil && x.Mode6 != nil {\n\t\treturn *x.Mode6\n\t}\n\treturn x.GetMode()\n}",
		"a.EffectiveV6() == b.EffectiveV6()",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("generated code lacks\n%s\nin:\n%s", want, got)
		}
	}
}

// TestUnsetFollowsChecks: an unset_follows that does not fit its field
// is an error naming the file, the line and the option.
func TestUnsetFollowsChecks(t *testing.T) {
	t.Parallel()
	const opt = "test.proto:6: option (kvdescriptor.v1.field).unset_follows: "
	for _, tt := range []struct{ name, field, want string }{
		{"no presence", `uint32 v6 = 3 [(kvdescriptor.v1.field).unset_follows = "v4"];`,
			opt + "test.v1.A.v6: unset_follows applies to a single scalar or enum field with presence (declared proto3 optional), so that unset differs from zero"},
		{"repeated", `repeated uint32 v6 = 3 [(kvdescriptor.v1.field).unset_follows = "v4"];`,
			opt + "test.v1.A.v6: unset_follows applies to a single scalar or enum field with presence (declared proto3 optional), so that unset differs from zero"},
		{"unknown field", `optional uint32 v6 = 3 [(kvdescriptor.v1.field).unset_follows = "nope"];`,
			opt + `test.v1.A.v6: unset_follows: "nope" is not a field of test.v1.A`},
		{"itself", `optional uint32 v6 = 3 [(kvdescriptor.v1.field).unset_follows = "v6"];`,
			opt + "test.v1.A.v6: unset_follows names the field itself"},
		{"another type", `optional string v6 = 3 [(kvdescriptor.v1.field).unset_follows = "v4"];`,
			opt + "test.v1.A.v6: unset_follows: v4 is not a single field of the same type (string)"},
		{"with zero_equals", `optional uint32 v6 = 3 [(kvdescriptor.v1.field).unset_follows = "v4", (kvdescriptor.v1.field).compare.zero_equals = "1"];`,
			opt + "test.v1.A.v6: unset_follows and compare.zero_equals both say what unset stands for; keep one"},
		{"a chain", "optional uint32 v6 = 3 [(kvdescriptor.v1.field).unset_follows = \"v4\"];\n  optional uint32 v8 = 4 [(kvdescriptor.v1.field).unset_follows = \"v6\"];",
			"test.proto:7: option (kvdescriptor.v1.field).unset_follows: test.v1.A.v8: unset_follows: v6 follows another field itself; name the field it follows"},
		{"accessor named like a field", "optional uint32 v6 = 3 [(kvdescriptor.v1.field).unset_follows = \"v4\"];\n  uint32 effective_v6 = 4;",
			opt + "the generated method A.EffectiveV6 of test.v1.A.v6 is also a Go name of test.v1.A.effective_v6; rename one of them"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := generateSrc(t, "\nmessage A {\n  option (kvdescriptor.v1.model) = {key: \"a/{name}\"};\n  string name = 1;\n  uint32 v4 = 2;\n  "+tt.field+"\n}")
			if err == nil {
				t.Fatalf("generate succeeded, want error:\n%s", tt.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" && !slices.Contains(lines, tt.want) {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}
