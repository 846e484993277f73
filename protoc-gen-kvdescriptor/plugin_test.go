package main

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// These tests run the plugin binary the way users do: under protoc, and
// under buf with the repository's own buf.yaml. Both must produce exactly
// the committed generated/**/*.kv.go. make test installs both tools (make
// tools); a missing tool fails the test, which never skips for it.

// generatedModule is the Go import path of generated/, the module= option
// of buf.gen.yaml.
const generatedModule = "github.com/kvdescriptor/kvdescriptor/generated"

var binDir string // where TestMain builds the plugins

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "protoc-gen-kvdescriptor-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var buildOnce = map[string]func() (string, error){}

func init() {
	for name, pkg := range map[string]string{
		"protoc-gen-kvdescriptor": ".",
		"protoc-gen-go":           "google.golang.org/protobuf/cmd/protoc-gen-go", // go.mod's tool
	} {
		buildOnce[name] = sync.OnceValues(func() (string, error) {
			bin := filepath.Join(binDir, name)
			out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
			if err != nil {
				return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
			}
			return bin, nil
		})
	}
}

// buildPlugin builds a plugin (once per test binary) and returns its path.
func buildPlugin(t testing.TB, name string) string {
	t.Helper()
	bin, err := buildOnce[name]()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// needTool returns the path of a tool, or fails the test naming the command
// that installs it: make test installs every tool first, so a skip would
// only hide a broken set-up.
func needTool(t testing.TB, name, path, install string) string {
	t.Helper()
	if path == "" {
		path = name
	}
	p, err := exec.LookPath(path)
	if err == nil {
		return p
	}
	t.Fatalf("%s not found (%v); make tools installs it (%s)", name, err, install)
	return ""
}

func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found: %v", err)
	}
	return root
}

// modelFiles lists the .proto files under models/ that buf.gen.yaml
// generates (all but the vocabulary), relative to models/.
func modelFiles(t testing.TB, models string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(models, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(models, path)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && rel == "kvdescriptor":
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(rel, ".proto"):
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// kvFiles reads the .kv.go files under dir, by path relative to dir.
func kvFiles(t testing.TB, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".kv.go") {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// compareWithCommitted compares the .kv.go files under out with generated/.
func compareWithCommitted(t *testing.T, root, out string) {
	t.Helper()
	got := kvFiles(t, out)
	want := kvFiles(t, filepath.Join(root, "generated"))
	if len(want) == 0 {
		t.Fatal("no .kv.go files in generated/")
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range want {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: committed but not generated", name)
			continue
		}
		if diff := cmp.Diff(strings.Split(want[name], "\n"), strings.Split(g, "\n")); diff != "" {
			t.Errorf("%s differs from the committed file (-committed +generated):\n%s", name, diff)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: generated but not committed", name)
		}
	}
}

func run(t testing.TB, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// TestProtoc runs the plugin under plain protoc on models/.
func TestProtoc(t *testing.T) {
	t.Parallel()
	protoc := needTool(t, "protoc", "", "apt-get install -y protobuf-compiler")
	root := repoRoot(t)
	plugin := buildPlugin(t, "protoc-gen-kvdescriptor")
	out := t.TempDir()
	models := filepath.Join(root, "models")
	args := []string{
		"-I", models,
		"--plugin=protoc-gen-kvdescriptor=" + plugin,
		"--kvdescriptor_out=" + out,
		"--kvdescriptor_opt=module=" + generatedModule,
	}
	run(t, root, nil, protoc, append(args, modelFiles(t, models)...)...)
	compareWithCommitted(t, root, out)
}

// TestProtocErrors checks that protoc's source info places the
// generator's errors on the lines the in-process checks test expects:
// the line of each option, also in a field's multi-line option list.
func TestProtocErrors(t *testing.T) {
	t.Parallel()
	protoc := needTool(t, "protoc", "", "apt-get install -y protobuf-compiler")
	root := repoRoot(t)
	plugin := buildPlugin(t, "protoc-gen-kvdescriptor")
	dir := t.TempDir()
	const src = `syntax = "proto3";
package test.v1;
import "kvdescriptor/v1/options.proto";
option go_package = "example.com/test/v1;testv1";
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}"};
  string name = 1;
  repeated string addrs = 2 [
    (kvdescriptor.v1.field).format = IP,
    (kvdescriptor.v1.field).derive = {key: "a/{name}/addr"}
  ];
  uint32 mtu = 3 [(kvdescriptor.v1.field).validate = {has_min: true min: -1}];
}
`
	if err := os.WriteFile(filepath.Join(dir, "test.proto"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(protoc, "-I", dir, "-I", filepath.Join(root, "models"),
		"--plugin=protoc-gen-kvdescriptor="+plugin, "--kvdescriptor_out="+t.TempDir(), "test.proto")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("protoc succeeded; want the generator's errors. Output:\n%s", out)
	}
	want := "--kvdescriptor_out: " +
		`test.proto:10: option (kvdescriptor.v1.field).derive.key: the key "a/{name}/addr" has no placeholder of the element (addrs...): every element would get the same key` + "\n" +
		"test.proto:12: option (kvdescriptor.v1.field).validate.min: test.v1.A.mtu: min -1 is out of the range of uint32\n"
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("protoc output (-want +got):\n%s", diff)
	}
}

// TestBuf runs buf generate with the repository's buf.yaml, the plugin
// built from this tree, into a temporary directory.
func TestBuf(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	buf := needTool(t, "buf", filepath.Join(root, "tools", "node_modules", ".bin", "buf"), "make tools")
	plugin := buildPlugin(t, "protoc-gen-kvdescriptor")
	out := t.TempDir()
	template := fmt.Sprintf(`version: v2
inputs:
  - directory: models
    exclude_paths:
      - models/kvdescriptor
plugins:
  - local: %s
    out: %s
    opt: module=%s
    strategy: all
`, plugin, out, generatedModule)
	tmpl := filepath.Join(t.TempDir(), "buf.gen.yaml")
	if err := os.WriteFile(tmpl, []byte(template), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, root, nil, buf, "generate", "--template", tmpl)
	compareWithCommitted(t, root, out)
}

// TestVersion checks the plugin's --version.
func TestVersion(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(buildPlugin(t, "protoc-gen-kvdescriptor"), "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "protoc-gen-kvdescriptor "+version+"\n"; got != want {
		t.Errorf("--version printed %q, want %q", got, want)
	}
}

// allFiles reads the files under dir, by path relative to dir.
func allFiles(t testing.TB, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestProtocDocs runs the plugin with docs=true under plain protoc on
// models/: it must write exactly the committed docs/models (the pages and
// the index), and no code.
func TestProtocDocs(t *testing.T) {
	t.Parallel()
	protoc := needTool(t, "protoc", "", "apt-get install -y protobuf-compiler")
	root := repoRoot(t)
	plugin := buildPlugin(t, "protoc-gen-kvdescriptor")
	out := t.TempDir()
	models := filepath.Join(root, "models")
	args := []string{
		"-I", models,
		"--plugin=protoc-gen-kvdescriptor=" + plugin,
		"--kvdescriptor_out=" + out,
		"--kvdescriptor_opt=docs=true",
	}
	run(t, root, nil, protoc, append(args, modelFiles(t, models)...)...)
	got, want := allFiles(t, out), allFiles(t, filepath.Join(root, "docs", "models"))
	if _, ok := want["README.md"]; !ok {
		t.Fatal("docs/models/README.md is not committed")
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("docs/models/%s: committed but not generated", name)
		case g != want[name]:
			t.Errorf("docs/models/%s differs from what docs=true generates (-committed +generated):\n%s", name, cmp.Diff(strings.Split(want[name], "\n"), strings.Split(g, "\n")))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: generated with docs=true but not committed under docs/models", name)
		}
	}

	// A parameter that is not a boolean is refused, naming it.
	cmd := exec.Command(protoc, "-I", models, "--plugin=protoc-gen-kvdescriptor="+plugin,
		"--kvdescriptor_out="+t.TempDir(), "--kvdescriptor_opt=docs=yes please", "vpp/l3/v1/l3.proto")
	msg, err := cmd.CombinedOutput()
	if want := "parameter docs=yes please: parse error"; err == nil || !strings.Contains(string(msg), want) {
		t.Errorf("protoc with docs=\"yes please\": err %v, output %q; want a failure saying %q", err, msg, want)
	}
}
