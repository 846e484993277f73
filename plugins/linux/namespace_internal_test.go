//go:build linux

package linux

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netns"
)

// TestNamespacePathStaysInNetnsDir: even when validation is bypassed, a
// namespace name that is not a plain name is never opened, and a plain
// one resolves to a file directly under NetnsDir.
func TestNamespacePathStaysInNetnsDir(t *testing.T) {
	s := newNamespaces(netns.None(), nil, nil)
	for _, name := range []string{"../../proc/1/ns/net", "/proc/1/ns/../../etc/x", "/var/run/netns/blue", "..", ".", "a/b", "a\x00b", "a b"} {
		if p, err := s.path(name); err == nil || !errors.Is(err, errNamespace) {
			t.Errorf("path(%q) = %q, %v; want it refused", name, p, err)
		}
		if n, err := s.get(name); err == nil || !errors.Is(err, errNamespace) {
			t.Errorf("get(%q) = %v, %v; want it refused", name, n, err)
		}
	}
	if p, err := s.path("blue"); err != nil || p != NetnsDir+"/blue" {
		t.Errorf(`path("blue") = %q, %v; want %s/blue`, p, err, NetnsDir)
	}

	limited := newNamespaces(netns.None(), map[string]bool{"blue": true}, nil)
	if _, err := limited.path("blue"); err != nil {
		t.Errorf(`allowed "blue": %v`, err)
	}
	if _, err := limited.get("red"); err == nil || !strings.Contains(err.Error(), `"red" is not among the namespaces`) {
		t.Errorf(`get("red") with only "blue" allowed: %v; want it refused`, err)
	}
	if err := limited.check(""); err != nil {
		t.Errorf(`the plugin's own namespace: %v; want it allowed`, err)
	}
	// A process's namespace: allowed but with an allow-list of names.
	if err := s.check("/proc/1/ns/net"); err != nil {
		t.Errorf("a PID's namespace without an allow-list: %v; want it allowed", err)
	}
	if err := limited.check("/proc/1/ns/net"); err == nil || !strings.Contains(err.Error(), "a namespace by PID") {
		t.Errorf("a PID's namespace with an allow-list: %v; want it refused", err)
	}
}

// TestNamespacePathUnderAllowedDirs: a path is opened only when it is
// absolute, clean and under an allowed directory, symbolic links
// resolved.
func TestNamespacePathUnderAllowedDirs(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	if err := os.Symlink(filepath.Join(other, "ns"), filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "real"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(other, "real"), filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	s := newNamespaces(netns.None(), nil, []string{dir})
	for p, want := range map[string]string{
		dir + "/ns":             "",
		dir + "/sub/ns":         "",
		dir:                     "not under a directory",
		dir + "/../x":           "shortest form",
		dir + "/./ns":           "shortest form",
		other + "/ns":           "not under a directory",
		dir + "/out":            "leads to " + other + "/real",
		dir + "/escape":         "leads to no file",
		"relative/ns":           "shortest form",
		"/proc/self/ns/net":     "not under a directory",
		"/proc/1/ns/net/../net": "shortest form",
	} {
		err := s.checkPath(p)
		switch {
		case want == "" && err != nil:
			t.Errorf("check(%q): %v; want it allowed", p, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("check(%q): %v; want it refused: %s", p, err, want)
		}
	}
	none := newNamespaces(netns.None(), nil, nil)
	if err := none.check(dir + "/ns"); err == nil || !strings.Contains(err.Error(), "allows no directory") {
		t.Errorf("a path with no directory allowed: %v; want it refused", err)
	}
}
