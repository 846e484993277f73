package gen_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
)

// TestBaseOf checks when a derived model gets a BaseOf: when its key
// template carries every placeholder of its base's key, in any order, and
// not otherwise (its keys do not tell their base).
func TestBaseOf(t *testing.T) {
	t.Parallel()
	models := filepath.Join(repoRoot(t), "models")
	tests := []struct {
		name string
		src  string
		want []string // lines the output must hold
		not  []string // text it must not hold
	}{
		{
			name: "every base field carried, in another order",
			src: `
message Zone {
  option (kvdescriptor.v1.model) = {key: "zone/{region}/{name}"};
  string region = 1;
  string name = 2;
  repeated string hosts = 3 [(kvdescriptor.v1.field).derive = {key: "zone-host/{name}/{hosts}/in/{region}"}];
}`,
			want: []string{
				"// zoneHostsBaseOf returns the key of the test.v1.Zone that derives a key of",
				"var zoneHostsBaseOf = kvimpl.MustBaseKeyOf(zoneHostsKeyTemplate, zoneKeyTemplate)",
				"BaseOf: zoneHostsBaseOf,",
				"const _ = kv.IsAtLeastVersion0_4_0",
			},
		},
		{
			name: "a base field left out",
			src: `
message Zone {
  option (kvdescriptor.v1.model) = {key: "zone/{region}/{name}"};
  string region = 1;
  string name = 2;
  repeated string hosts = 3 [(kvdescriptor.v1.field).derive = {key: "zone-host/{name}/{hosts}"}];
}`,
			not: []string{"BaseOf"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := protocompile.CompositeResolver{
				&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(map[string]string{"test.proto": header + tt.src})},
				&protocompile.SourceResolver{ImportPaths: []string{models}},
			}
			resp, err := generate(t, compileRequest(t, r, "", "test.proto"))
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.GetFile()) != 1 {
				t.Fatalf("generated %d files, want 1", len(resp.GetFile()))
			}
			out := resp.GetFile()[0].GetContent()
			lines := strings.Split(out, "\n")
			// Lines compare with their spaces collapsed: gofmt aligns the
			// fields of the Spec literal by the longest name.
			for i := range lines {
				lines[i] = strings.Join(strings.Fields(lines[i]), " ")
			}
			for _, w := range tt.want {
				if !strings.Contains("\n"+strings.Join(lines, "\n")+"\n", "\n"+w+"\n") {
					t.Errorf("the output lacks the line %q:\n%s", w, out)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(out, n) {
					t.Errorf("the output holds %q:\n%s", n, out)
				}
			}
		})
	}
}
