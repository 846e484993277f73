package gen_test

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/pluginpb"
)

var update = flag.Bool("update", false, "rewrite generated/**/*.kv.go with the generator's output")

// generatedModule is the Go import path of generated/, the module= option
// of buf.gen.yaml.
const generatedModule = "github.com/kvdescriptor/kvdescriptor/generated"

// modelFiles lists the .proto files under models/ that buf.gen.yaml
// generates: all but the annotation vocabulary itself.
func modelFiles(t testing.TB, models string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(models, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(models, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && (rel == "kvdescriptor" || rel == "google"):
			// Our API and options, and the google.api schema the API's
			// REST rules use: none of them holds models.
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(rel, ".proto"):
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no .proto files under %s", models)
	}
	return files
}

// committedKV lists the .kv.go files under generated/, relative to it.
func committedKV(t testing.TB, generated string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(generated, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".kv.go") {
			return err
		}
		rel, err := filepath.Rel(generated, path)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestGolden generates the models under models/ in-process and compares
// the output with the committed generated/**/*.kv.go: it fails when the
// generator and the committed code disagree, without buf or protoc. Run
// with -update to rewrite the committed files (make generate does the same
// with buf).
func TestGolden(t *testing.T) {
	root := repoRoot(t)
	models := filepath.Join(root, "models")
	generated := filepath.Join(root, "generated")
	files := modelFiles(t, models)
	req := compileRequest(t, &protocompile.SourceResolver{ImportPaths: []string{models}}, "module="+generatedModule, files...)
	resp, err := generate(t, req)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	wantFeatures := uint64(pluginpb.CodeGeneratorResponse_FEATURE_PROTO3_OPTIONAL | pluginpb.CodeGeneratorResponse_FEATURE_SUPPORTS_EDITIONS)
	if resp.GetSupportedFeatures() != wantFeatures {
		t.Errorf("supported features = %b, want %b", resp.GetSupportedFeatures(), wantFeatures)
	}

	var produced []string
	for _, f := range resp.GetFile() {
		name := f.GetName()
		produced = append(produced, name)
		path := filepath.Join(generated, filepath.FromSlash(name))
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(f.GetContent()), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: generated but not committed (run make generate): %v", name, err)
			continue
		}
		if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(f.GetContent(), "\n")); diff != "" {
			t.Errorf("generated/%s is stale; run make generate (or go test -update) and commit (-committed +generated):\n%s", name, diff)
		}
	}
	for _, name := range committedKV(t, generated) {
		if !slices.Contains(produced, name) {
			if *update {
				if err := os.Remove(filepath.Join(generated, filepath.FromSlash(name))); err != nil {
					t.Fatal(err)
				}
				continue
			}
			t.Errorf("generated/%s is committed but no longer generated; run make generate", name)
		}
	}
	// One .kv.go per model file: every model file has models.
	if len(produced) != len(files) {
		t.Errorf("generated %d files %v from %d model files %v", len(produced), produced, len(files), files)
	}
}
