package gen_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"github.com/google/go-cmp/cmp"
	gengo "google.golang.org/protobuf/cmd/protoc-gen-go/internal_gengo"
	"google.golang.org/protobuf/compiler/protogen"
)

// TestDefaultsGolden generates testdata/defaults (a file without models,
// with a default of every kind zero_equals accepts) and compares its
// .kv.go with the golden testdata/defaults/plain.kv.go.golden (-update
// rewrites it); then go-vets it with protoc-gen-go's code, in a module of
// its own.
func TestDefaultsGolden(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	dir, err := filepath.Abs(filepath.Join("testdata", "defaults"))
	if err != nil {
		t.Fatal(err)
	}
	r := &protocompile.SourceResolver{ImportPaths: []string{dir, filepath.Join(root, "models")}}
	req := compileRequest(t, r, "module=example.com/defaults", "plain/v1/plain.proto")
	kv, err := generate(t, req)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	if n := len(kv.GetFile()); n != 1 || kv.GetFile()[0].GetName() != "gen/plain/v1/plain.kv.go" {
		var names []string
		for _, f := range kv.GetFile() {
			names = append(names, f.GetName())
		}
		t.Fatalf("generated %v, want gen/plain/v1/plain.kv.go: a file with defaults and no models has its .kv.go", names)
	}
	got := kv.GetFile()[0].GetContent()
	golden := filepath.Join(dir, "plain.kv.go.golden")
	if *update {
		writeFile(t, golden, got)
	} else {
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got, "\n")); diff != "" {
			t.Errorf("%s is stale; review and run go test -update (-golden +generated):\n%s", golden, diff)
		}
	}

	if testing.Short() {
		return
	}
	pb, err := runPlugin(t, req, func(p *protogen.Plugin) error {
		for _, f := range p.Files {
			if f.Generate {
				gengo.GenerateFile(p, f)
			}
		}
		p.SupportedFeatures = gengo.SupportedFeatures
		return nil
	})
	if err != nil {
		t.Fatalf("protoc-gen-go: %v", err)
	}
	mod := t.TempDir()
	writeFile(t, filepath.Join(mod, "go.mod"), consumerGoMod(t, root, "example.com/defaults"))
	copyFile(t, filepath.Join(root, "go.sum"), filepath.Join(mod, "go.sum"))
	for _, f := range append(pb.GetFile(), kv.GetFile()...) {
		writeFile(t, filepath.Join(mod, filepath.FromSlash(f.GetName())), f.GetContent())
	}
	goCmd(t, mod, "vet", "./...")
}

// TestDefaultsChecks runs the generator on defaults whose generated names
// would collide, or that do not fit a field of a message no model uses:
// each must fail with exactly the error given.
func TestDefaultsChecks(t *testing.T) {
	t.Parallel()
	models := filepath.Join(repoRoot(t), "models")
	tests := []struct {
		name, src, want string
	}{
		{
			name: "two defaults, one constant",
			src: `
message A {
  uint32 b_c = 1 [(kvdescriptor.v1.field).compare.zero_equals = "1"];
}
message AB {
  uint32 c = 1 [(kvdescriptor.v1.field).compare.zero_equals = "2"];
}`,
			want: "test.proto:6: option (kvdescriptor.v1.field).compare.zero_equals: the generated Go identifier ABCDefault of the default of test.v1.AB.c is also declared for the default of test.v1.A.b_c; rename one of them",
		},
		{
			name: "constant named like a message",
			src: `
message AMtuDefault {}
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  uint32 mtu = 2 [(kvdescriptor.v1.field).compare.zero_equals = "1500"];
}`,
			want: "test.proto:6: option (kvdescriptor.v1.field).compare.zero_equals: the generated Go identifier AMtuDefault of the default of test.v1.A.mtu is also declared for message test.v1.AMtuDefault; rename one of them",
		},
		{
			name: "accessor named like a field",
			src: `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  uint32 mtu = 2 [(kvdescriptor.v1.field).compare.zero_equals = "1500"];
  uint32 effective_mtu = 3;
}`,
			want: "test.proto:5: option (kvdescriptor.v1.field).compare.zero_equals: the generated method A.EffectiveMtu of the default of test.v1.A.mtu is also the Go name of the field test.v1.A.effective_mtu; rename one of them",
		},
		{
			name: "accessor named like a oneof",
			src: `
message A {
  uint32 mtu = 1 [(kvdescriptor.v1.field).compare.zero_equals = "1500"];
  oneof effective_mtu {
    uint32 fixed = 2;
    string auto = 3;
  }
}`,
			want: "test.proto:3: option (kvdescriptor.v1.field).compare.zero_equals: the generated method A.EffectiveMtu of the default of test.v1.A.mtu is also the Go name of the oneof test.v1.A.effective_mtu; rename one of them",
		},
		{
			name: "default that does not fit, in a message no model uses",
			src: `
message A {
  uint32 mtu = 1 [(kvdescriptor.v1.field).compare.zero_equals = "-1"];
}`,
			want: `test.proto:3: option (kvdescriptor.v1.field).compare.zero_equals: test.v1.A.mtu: zero_equals "-1" is not a valid uint32`,
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

// TestDefaultsOnlyInGeneratedFiles checks that a file given to the
// generator as an import only gets no .kv.go for its defaults.
func TestDefaultsOnlyInGeneratedFiles(t *testing.T) {
	t.Parallel()
	models := filepath.Join(repoRoot(t), "models")
	srcs := map[string]string{
		"dep.proto":  header + "\nmessage D { uint32 mtu = 1 [(kvdescriptor.v1.field).compare.zero_equals = \"1500\"]; }",
		"main.proto": header + "\nimport \"dep.proto\";\nmessage M { option (kvdescriptor.v1.model) = {key: \"m/{name}\"}; string name = 1; D d = 2; }",
	}
	r := protocompile.CompositeResolver{
		&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(srcs)},
		&protocompile.SourceResolver{ImportPaths: []string{models}},
	}
	req := compileRequest(t, r, "", "main.proto", "dep.proto")
	req.FileToGenerate = []string{"main.proto"}
	resp, err := generate(t, req)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	var names []string
	for _, f := range resp.GetFile() {
		names = append(names, f.GetName())
		if strings.Contains(f.GetContent(), "MtuDefault") {
			t.Errorf("%s declares the default of D, a message of a file not to generate", f.GetName())
		}
	}
	if !slices.Equal(names, []string{"example.com/test/v1/main.kv.go"}) {
		t.Errorf("generated %v, want only main.kv.go", names)
	}
}
