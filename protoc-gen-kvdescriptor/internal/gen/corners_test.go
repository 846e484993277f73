package gen_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	gengo "google.golang.org/protobuf/cmd/protoc-gen-go/internal_gengo"
	"google.golang.org/protobuf/compiler/protogen"
)

// TestCornersCompile generates testdata/corners (every annotation, on
// fields of every kind the generator accepts, key fields named like Go
// keywords and packages, an editions file, element messages of another
// package) with protoc-gen-go and the generator, in-process, and runs go
// vet on the result in a module of its own: the generator must never write
// code that does not compile. Then go test runs testdata/corners's
// corners_test.go.txt next to the generated code: the behaviour of the
// validation options and of the members of a oneof.
func TestCornersCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet on generated code; skipped with -short")
	}
	t.Parallel()
	root := repoRoot(t)
	dir, err := filepath.Abs(filepath.Join("testdata", "corners"))
	if err != nil {
		t.Fatal(err)
	}
	r := &protocompile.SourceResolver{ImportPaths: []string{dir, filepath.Join(root, "models")}}
	req := compileRequest(t, r, "module=example.com/corners",
		"shared/v1/shared.proto", "corners/v1/corners.proto", "corners/v1/editions.proto")

	pb, err := runPlugin(t, req, func(p *protogen.Plugin) error {
		for _, f := range p.Files {
			if f.Generate {
				gengo.GenerateFile(p, f)
			}
		}
		p.SupportedFeatures = gengo.SupportedFeatures
		p.SupportedEditionsMinimum = gengo.SupportedEditionsMinimum
		p.SupportedEditionsMaximum = gengo.SupportedEditionsMaximum
		return nil
	})
	if err != nil {
		t.Fatalf("protoc-gen-go: %v", err)
	}
	kv, err := generate(t, req)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}

	mod := t.TempDir()
	writeFile(t, filepath.Join(mod, "go.mod"), consumerGoMod(t, root, "example.com/corners"))
	copyFile(t, filepath.Join(root, "go.sum"), filepath.Join(mod, "go.sum"))
	var kvFiles []string
	for _, f := range append(pb.GetFile(), kv.GetFile()...) {
		writeFile(t, filepath.Join(mod, filepath.FromSlash(f.GetName())), f.GetContent())
		if strings.HasSuffix(f.GetName(), ".kv.go") {
			kvFiles = append(kvFiles, f.GetName())
		}
	}
	// shared.v1 has a model too; corners.v1 has two files of models.
	if want := []string{"gen/shared/v1/shared.kv.go", "gen/corners/v1/corners.kv.go", "gen/corners/v1/editions.kv.go"}; strings.Join(kvFiles, " ") != strings.Join(want, " ") {
		t.Errorf("generated %v, want %v", kvFiles, want)
	}
	// The behaviour of what was generated: corners_test.go tests the
	// generated code of corners.v1 in its package.
	copyFile(t, filepath.Join(dir, "corners_test.go.txt"), filepath.Join(mod, "gen", "corners", "v1", "corners_test.go"))
	goCmd(t, mod, "vet", "./...")
	goCmd(t, mod, "test", "-count=1", "./...")
}

// consumerGoMod is the go.mod of a module that uses this repository (at
// root, by a replace directive) with the requirements of its go.mod.
func consumerGoMod(t testing.TB, root, module string) string {
	t.Helper()
	ours, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("module " + module + "\n\ngo 1.24.0\n\n")
	b.WriteString("require github.com/kvdescriptor/kvdescriptor v0.0.0\n\n")
	b.WriteString("replace github.com/kvdescriptor/kvdescriptor => " + root + "\n\n")
	// Our requirements, so that the consumer builds with the versions we test.
	inRequire := false
	for _, line := range strings.Split(string(ours), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "require (":
			inRequire = true
		case inRequire && line == ")":
			inRequire = false
		case inRequire && line != "":
			b.WriteString("require " + line + "\n")
		case strings.HasPrefix(line, "require "):
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// goCmd runs the go command in dir. GOFLAGS=-mod=mod lets it complete
// go.mod and go.sum; the module cache already holds the modules this
// repository needs, so nothing is downloaded once they have been built.
func goCmd(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(b))
}
