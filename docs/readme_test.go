package docs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeSection is the README's section for users of the module.
const readmeSection = "## Use it in your own repository"

// TestReadmeOwnRepository does what the README's "Use it in your own
// repository" says, as written, in a fresh module with an empty go.sum and
// the go command's default module flags: the installs of the plugins (into
// a fresh GOPATH), go mod init and edit, the files, buf generate, go mod
// tidy, go vet and go run, whose output must be the README's. Three lines
// are the test's to provide: the clone (the checkout is this tree, $KVD),
// its export, and the npm install of buf (the repository's own buf, of the
// version the README pins, which must be tools/package.json's).
func TestReadmeOwnRepository(t *testing.T) {
	if testing.Short() {
		t.Skip("installs the plugins and builds a module of its own; skipped with -short")
	}
	t.Parallel()
	root := repoRoot(t)
	sec := section(t, readRepoFile(t, "README.md"), readmeSection)
	bs := blocks(t, sec)

	home := t.TempDir()
	mod := filepath.Join(home, "acme")
	if err := os.Mkdir(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(freshEnv(t, home, bufDir(t)), "KVD="+root)
	var sawNpm, sawClone bool
	w := &walk{t: t, doc: "README.md " + readmeSection, dir: mod, env: env,
		line: func(t *testing.T, l string) (string, bool) {
			switch {
			case strings.HasPrefix(l, "git clone "):
				sawClone = true
				return "", false
			case strings.HasPrefix(l, "export KVD="):
				return "", false
			case strings.HasPrefix(l, "npm install "):
				sawNpm = true
				checkBufPin(t, l)
				return "", false
			case strings.HasPrefix(l, "go install google.golang.org/protobuf/cmd/protoc-gen-go@"):
				checkProtocGenGoPin(t, l)
			}
			return l, true
		}}
	files, ran := w.run(bs)
	if !sawClone || !sawNpm {
		t.Errorf("the section shows no git clone (%v) or no npm install of buf (%v)", sawClone, sawNpm)
	}
	if ran < 3 {
		t.Errorf("the section has %d sh blocks; the test expects the installs, the module and the generation", ran)
	}
	for _, want := range []string{"buf.yaml", "buf.gen.yaml", "main.go"} {
		found := false
		for _, f := range files {
			found = found || f == want
		}
		if !found {
			t.Errorf("the section shows no %s (a block whose first line is a comment naming it)", want)
		}
	}

	// A fresh GOPATH got the plugins the section installs.
	for _, p := range []string{"protoc-gen-go", "protoc-gen-kvdescriptor"} {
		if _, err := os.Stat(filepath.Join(home, "go", "bin", p)); err != nil {
			t.Errorf("the section's go install left no %s in $HOME/go/bin: %v", p, err)
		}
	}
	// buf generate wrote a descriptor.
	kvFiles, _ := filepath.Glob(filepath.Join(mod, "gen", "*", "*", "*", "*.kv.go"))
	if len(kvFiles) == 0 {
		t.Fatal("buf generate wrote no .kv.go file under gen/")
	}
	gen, err := os.ReadFile(kvFiles[0])
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`func New\w+Descriptor\[`).Match(gen) {
		t.Errorf("%s has no New...Descriptor", kvFiles[0])
	}
	// go mod tidy completed go.mod and go.sum from nothing.
	sum, err := os.ReadFile(filepath.Join(mod, "go.sum"))
	if err != nil || !strings.Contains(string(sum), "google.golang.org/protobuf ") {
		t.Errorf("go.sum after go mod tidy lacks google.golang.org/protobuf (err %v)", err)
	}
}

// checkBufPin fails unless the npm line installs the buf version of
// tools/package.json.
func checkBufPin(t *testing.T, line string) {
	t.Helper()
	var pkg struct {
		DevDependencies map[string]string `json:"devDependencies"`
	}
	if err := json.Unmarshal([]byte(readRepoFile(t, "tools/package.json")), &pkg); err != nil {
		t.Fatal(err)
	}
	want := "@bufbuild/buf@" + pkg.DevDependencies["@bufbuild/buf"]
	if !strings.Contains(line+" ", " "+want+" ") {
		t.Errorf("README installs buf with %q; tools/package.json pins %s", line, want)
	}
}

// checkProtocGenGoPin fails unless protoc-gen-go is installed at the
// protobuf version of go.mod.
func checkProtocGenGoPin(t *testing.T, line string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*google\.golang\.org/protobuf (v\S+)`).FindStringSubmatch(readRepoFile(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod requires no google.golang.org/protobuf")
	}
	if !strings.HasSuffix(strings.TrimSpace(line), "@"+m[1]) {
		t.Errorf("README installs %q; go.mod requires google.golang.org/protobuf %s", line, m[1])
	}
}
