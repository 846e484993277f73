package docs

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// repoRoot is the repository's root: the parent of this package.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod in %s: %v", root, err)
	}
	return root
}

// readRepoFile returns the text of a file of the repository.
func readRepoFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// walk follows a document in a fresh directory: file blocks are written,
// sh blocks run with bash, and a text block right after an sh block must
// equal what that block printed on its standard output.
type walk struct {
	t   *testing.T
	doc string   // the document's name, for messages
	dir string   // the fresh module's directory
	env []string // the commands' environment
	// line, when set, sees each line of an sh block first: it returns the
	// line to run, or false to leave it out (the test provides what it
	// does).
	line func(t *testing.T, line string) (string, bool)
	// exports is what the last sh block exported (export -p).
	exports string
}

// commandTimeout bounds one sh block.
const commandTimeout = 3 * time.Minute

// run follows the blocks in order and returns the paths of the files it
// wrote and the number of sh blocks it ran.
func (w *walk) run(bs []block) (files []string, ran int) {
	w.t.Helper()
	var lastOut *string
	for i, b := range bs {
		switch {
		case b.path() != "":
			p := filepath.Join(w.dir, filepath.FromSlash(b.path()))
			writeFile(w.t, p, b.text)
			files = append(files, b.path())
		case b.info == "sh":
			out := w.sh(b)
			lastOut = &out
			ran++
			continue
		case b.info == "text" && lastOut != nil && i > 0 && bs[i-1].info == "sh":
			if got := *lastOut; got != b.text {
				w.t.Errorf("%s:%d: the commands above printed:\n%s\nthe document says:\n%s", w.doc, b.line, got, b.text)
			}
		}
		lastOut = nil
	}
	return files, ran
}

// sh runs the lines of an sh block as one bash script, stopping at the
// first that fails, and returns its standard output.
func (w *walk) sh(b block) string {
	w.t.Helper()
	// One shell for the whole document, as a reader has: what a block
	// exports (PATH, KVD) is kept for the next ones.
	state := filepath.Join(w.t.TempDir(), "exports")
	if w.exports != "" {
		writeFile(w.t, state, w.exports)
	}
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	if w.exports != "" {
		script.WriteString(". " + state + "\n")
	}
	for _, l := range strings.Split(strings.TrimSuffix(b.text, "\n"), "\n") {
		if w.line != nil {
			var ok bool
			if l, ok = w.line(w.t, l); !ok {
				continue
			}
		}
		script.WriteString(l + "\n")
	}
	script.WriteString("export -p >" + state + "\n")
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = w.dir
	cmd.Env = w.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		w.t.Fatalf("%s:%d: the commands failed (%v) after %v:\n%s\nstdout:\n%s\nstderr:\n%s",
			w.doc, b.line, err, time.Since(start).Round(time.Millisecond), script.String(), stdout.String(), stderr.String())
	}
	w.t.Logf("%s:%d: ran in %v", w.doc, b.line, time.Since(start).Round(time.Millisecond))
	exports, err := os.ReadFile(state)
	if err != nil {
		w.t.Fatal(err)
	}
	w.exports = string(exports)
	return stdout.String()
}

// freshEnv is the environment of a newcomer's shell: HOME is a new
// directory (so nothing installed in the real one is found), GOFLAGS is
// not set (the module flags are the go command's defaults: no -mod=mod)
// and the go command's configuration file is left out; the module proxy,
// the checksum database settings, the toolchain choice and the caches are
// the machine's own, so that no module is downloaded twice. pathDirs go
// first on PATH.
func freshEnv(t testing.TB, home string, pathDirs ...string) []string {
	t.Helper()
	goEnv := machineGoEnv(t)
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "HOME" || name == "PATH" || name == "GOENV":
		case strings.HasPrefix(name, "GO"):
			// Every Go setting is decided below.
		default:
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+home, "GOENV=off",
		"PATH="+strings.Join(append(pathDirs, os.Getenv("PATH")), string(os.PathListSeparator)))
	for _, name := range []string{"GOPROXY", "GOSUMDB", "GONOSUMDB", "GONOPROXY", "GOPRIVATE", "GOINSECURE",
		"GOTOOLCHAIN", "GOCACHE", "GOMODCACHE"} {
		if v := goEnv[name]; v != "" {
			env = append(env, name+"="+v)
		}
	}
	return env
}

var (
	goEnvOnce sync.Once
	goEnvVals map[string]string
	goEnvErr  error
)

// machineGoEnv is `go env` of the test's own environment.
func machineGoEnv(t testing.TB) map[string]string {
	t.Helper()
	goEnvOnce.Do(func() {
		var out []byte
		out, goEnvErr = exec.Command("go", "env", "-json").Output()
		if goEnvErr == nil {
			goEnvErr = json.Unmarshal(out, &goEnvVals)
		}
	})
	if goEnvErr != nil {
		t.Fatalf("go env: %v", goEnvErr)
	}
	return goEnvVals
}

// bufDir returns a directory holding only buf: the repository's own,
// installed by make tools.
func bufDir(t testing.TB) string {
	t.Helper()
	buf := filepath.Join(repoRoot(t), "tools", "node_modules", ".bin", "buf")
	if _, err := os.Stat(buf); err != nil {
		t.Fatalf("buf is not installed (%v): run make tools", err)
	}
	dir := t.TempDir()
	if err := os.Symlink(buf, filepath.Join(dir, "buf")); err != nil {
		t.Fatal(err)
	}
	return dir
}

var (
	pluginsOnce sync.Once
	pluginsDir  string
	pluginsErr  error
)

// plugins returns a directory holding protoc-gen-go (the version of
// go.mod) and protoc-gen-kvdescriptor, built from this tree once per test
// binary.
func plugins(t testing.TB) string {
	t.Helper()
	pluginsOnce.Do(func() {
		pluginsDir, pluginsErr = os.MkdirTemp("", "kvd-docs-plugins")
		if pluginsErr != nil {
			return
		}
		for _, pkg := range []string{"google.golang.org/protobuf/cmd/protoc-gen-go", "./protoc-gen-kvdescriptor"} {
			cmd := exec.Command("go", "build", "-o", pluginsDir, pkg)
			cmd.Dir = repoRoot(t)
			if out, err := cmd.CombinedOutput(); err != nil {
				pluginsErr = &buildError{pkg: pkg, out: string(out), err: err}
				return
			}
		}
	})
	if pluginsErr != nil {
		t.Fatal(pluginsErr)
	}
	return pluginsDir
}

type buildError struct {
	pkg, out string
	err      error
}

func (e *buildError) Error() string { return "go build " + e.pkg + ": " + e.err.Error() + "\n" + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if pluginsDir != "" {
		os.RemoveAll(pluginsDir)
	}
	os.Exit(code)
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
