package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeSection is the README section that TestConsumer follows.
const readmeSection = "## Use it in your own repository"

// readmeExample is what the README section shows: files (fenced blocks
// whose first line is a comment naming a path) and the program's output
// (the text block).
type readmeExample struct {
	files  map[string]string
	output string
}

var fileMarker = regexp.MustCompile(`^(?:#|//) ([\w./-]+\.\w+)$`)

// parseReadme extracts the example of the README section.
func parseReadme(t testing.TB, readme string) readmeExample {
	t.Helper()
	start := strings.Index(readme, "\n"+readmeSection+"\n")
	if start < 0 {
		t.Fatalf("README.md has no section %q", readmeSection)
	}
	section := readme[start+len(readmeSection)+2:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	ex := readmeExample{files: map[string]string{}}
	lines := strings.Split(section, "\n")
	for i := 0; i < len(lines); i++ {
		info, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		var block []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			block = append(block, lines[i])
		}
		if len(block) == 0 {
			continue
		}
		text := strings.Join(block, "\n") + "\n"
		switch m := fileMarker.FindStringSubmatch(block[0]); {
		case m != nil:
			ex.files[m[1]] = text
		case info == "text":
			ex.output = text
		}
	}
	for _, name := range []string{"buf.yaml", "buf.gen.yaml", "main.go"} {
		if ex.files[name] == "" {
			t.Fatalf("README section %q shows no %s (a fenced block starting with a comment naming it)", readmeSection, name)
		}
	}
	if ex.output == "" {
		t.Fatalf("README section %q shows no output (a text block)", readmeSection)
	}
	return ex
}

// TestConsumer does what the README's "Use it in your own repository"
// says, with the files it shows: a module of its own that requires this
// one (by a replace directive), the options copied into its proto tree,
// buf generate with the locally built plugins on PATH, go vet, and go run,
// whose output must be the README's.
func TestConsumer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a module of its own; skipped with -short")
	}
	t.Parallel()
	root := repoRoot(t)
	buf := needTool(t, "buf", filepath.Join(root, "tools", "node_modules", ".bin", "buf"), "make tools")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ex := parseReadme(t, string(readme))

	mod := t.TempDir()
	for name, content := range ex.files {
		writeFile(t, filepath.Join(mod, filepath.FromSlash(name)), content)
	}
	options, err := os.ReadFile(filepath.Join(root, "models", "kvdescriptor", "v1", "options.proto"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mod, "proto", "kvdescriptor", "v1", "options.proto"), string(options))
	writeFile(t, filepath.Join(mod, "go.mod"), consumerGoMod(t, root, "example.com/acme"))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mod, "go.sum"), string(sum))

	// The plugins the README installs with go install, found on PATH.
	buildPlugin(t, "protoc-gen-go")
	buildPlugin(t, "protoc-gen-kvdescriptor")
	path := "PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH")
	run(t, mod, []string{path}, buf, "generate")
	for _, f := range []string{"gen/acme/net/v1/net.pb.go", "gen/acme/net/v1/net.kv.go"} {
		if _, err := os.Stat(filepath.Join(mod, f)); err != nil {
			t.Errorf("buf generate wrote no %s: %v", f, err)
		}
	}

	goCmd(t, mod, "vet", "./...")
	if got := goCmd(t, mod, "run", "."); got != ex.output {
		t.Errorf("go run . printed:\n%s\nthe README says:\n%s", got, ex.output)
	}
}

// consumerGoMod is the go.mod of a module that uses this repository (at
// root, by a replace directive) with the requirements of its go.mod, so
// that it builds with the versions we test.
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

// goCmd runs the go command in dir and returns its standard output.
// GOFLAGS=-mod=mod lets it complete go.mod and go.sum; the module cache
// already holds every module this repository needs, so no download
// happens once the repository's own tests have been built.
func goCmd(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s%s", strings.Join(args, " "), dir, err, out, stderr.String())
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
