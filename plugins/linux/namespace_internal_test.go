//go:build linux

package linux

import (
	"errors"
	"strings"
	"testing"

	"github.com/vishvananda/netns"
)

// TestNamespacePathStaysInNetnsDir: even when validation is bypassed, a
// namespace name that is not a plain name is never opened, and a plain
// one resolves to a file directly under NetnsDir.
func TestNamespacePathStaysInNetnsDir(t *testing.T) {
	s := newNamespaces(netns.None(), nil)
	for _, name := range []string{"../../proc/1/ns/net", "/proc/1/ns/net", "..", ".", "a/b", "a\x00b", "a b"} {
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

	limited := newNamespaces(netns.None(), map[string]bool{"blue": true})
	if _, err := limited.path("blue"); err != nil {
		t.Errorf(`allowed "blue": %v`, err)
	}
	if _, err := limited.get("red"); err == nil || !strings.Contains(err.Error(), `"red" is not among the namespaces`) {
		t.Errorf(`get("red") with only "blue" allowed: %v; want it refused`, err)
	}
	if err := limited.check(""); err != nil {
		t.Errorf(`the plugin's own namespace: %v; want it allowed`, err)
	}
}
