package docs

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goLine returns the major.minor of the go directive of a go.mod file.
func goLine(t *testing.T, rel string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(readRepoFile(t, rel))
	if m == nil {
		t.Fatalf("%s has no go directive", rel)
	}
	return m[1]
}

// TestReadmeGoVersions checks that the README says the truth about the Go
// versions, in one place: the library's (go.mod) and the one make test
// needs (tools/go.mod, staticcheck). A fresh root with an older Go and
// GOTOOLCHAIN=local otherwise fails with a message the README never
// prepared its reader for.
func TestReadmeGoVersions(t *testing.T) {
	t.Parallel()
	readme := readRepoFile(t, "README.md")
	lib, tools := goLine(t, "go.mod"), goLine(t, "tools/go.mod")
	setup := section(t, readme, "## Set-up")
	for _, want := range []string{
		"the library (`go.mod`) needs **Go " + lib + "** or newer",
		"`make test` needs **Go\n" + tools + "** or newer",
	} {
		if !strings.Contains(setup, want) && !strings.Contains(setup, strings.ReplaceAll(want, "\n", " ")) {
			t.Errorf("README.md's set-up does not say %q (go.mod says go %s, tools/go.mod go %s)", want, lib, tools)
		}
	}
	// Every other mention of a Go version in the README must be one of the two.
	for _, m := range regexp.MustCompile(`Go (\d+\.\d+) or newer`).FindAllStringSubmatch(readme, -1) {
		if m[1] != lib && m[1] != tools {
			t.Errorf("README.md says %q, but go.mod needs %s and tools/go.mod %s", m[0], lib, tools)
		}
	}
}

// committedFiles lists the files that git tracks, or, outside a git
// checkout, every file of the tree but the build and tool outputs that
// .gitignore keeps out of it.
func committedFiles(t *testing.T, root string) []string {
	t.Helper()
	if out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output(); err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
		return files
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			switch rel {
			case ".git", ".bin", ".cache", "bin", "dist", filepath.Join("tools", "node_modules"):
				return filepath.SkipDir
			}
			return nil
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// binaryMagic are the openings of executables and object files.
var binaryMagic = [][]byte{
	[]byte("\x7fELF"),        // Linux executables, .so, .o
	[]byte("MZ"),             // Windows executables
	{0xcf, 0xfa, 0xed, 0xfe}, // Mach-O 64-bit
	{0xce, 0xfa, 0xed, 0xfe}, // Mach-O 32-bit
	[]byte("!<arch>\n"),      // archives (.a)
	[]byte("\x00asm"),        // WebAssembly
	{0xca, 0xfe, 0xba, 0xbe}, // Mach-O universal
}

// TestNoBinaryCommitted fails when the repository tracks an executable or
// an object file, or any file over 2 MiB: a build output (an agent binary
// of 34 MB was once committed at the root) dirties every checkout that
// builds and bloats every clone. Build outputs are in .gitignore.
func TestNoBinaryCommitted(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	const maxSize = 2 << 20
	for _, f := range committedFiles(t, root) {
		p := filepath.Join(root, f)
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue // removed in the work tree, or a symbolic link
		}
		if fi.Size() > maxSize {
			t.Errorf("%s: %d bytes committed (over %d): a build output or a data file that belongs elsewhere", f, fi.Size(), maxSize)
			continue
		}
		fh, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 8)
		n, _ := io.ReadFull(fh, head)
		fh.Close()
		head = head[:n]
		for _, m := range binaryMagic {
			if bytes.HasPrefix(head, m) && !(string(m) == "MZ" && !strings.HasSuffix(f, ".exe") && isText(p)) {
				t.Errorf("%s: an executable or object file is committed (it opens with %q); build outputs belong in .gitignore", f, m)
			}
		}
	}
}

// isText reports whether the first 8 KiB of a file hold no NUL byte.
func isText(p string) bool {
	b, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	if len(b) > 8192 {
		b = b[:8192]
	}
	return !bytes.Contains(b, []byte{0})
}
