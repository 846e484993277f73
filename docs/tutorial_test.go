package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTutorial follows docs/tutorial.md in a fresh module: its files are
// written and its commands run in order (with buf and the plugins on PATH
// and KVD naming this tree, as the README's installs leave them), and
// every output it shows must be what the commands print.
func TestTutorial(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a module of its own; skipped with -short")
	}
	t.Parallel()
	md := readRepoFile(t, "docs/tutorial.md")
	bs := blocks(t, md)
	texts := 0
	for i, b := range bs {
		if b.info == "text" && i > 0 && bs[i-1].info == "sh" {
			texts++
		}
	}
	if texts < 2 {
		t.Fatalf("the tutorial shows %d outputs of commands; the test expects the generated files and the program's", texts)
	}

	home := t.TempDir()
	mod := filepath.Join(home, "lab")
	if err := os.Mkdir(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(freshEnv(t, home, plugins(t), bufDir(t)), "KVD="+repoRoot(t))
	w := &walk{t: t, doc: "docs/tutorial.md", dir: mod, env: env}
	files, _ := w.run(bs)
	want := []string{"buf.yaml", "buf.gen.yaml", "proto/lab/v1/lab.proto", "handlers.go", "main.go"}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Errorf("the tutorial's files, in order: %q, want %q", files, want)
	}
}
