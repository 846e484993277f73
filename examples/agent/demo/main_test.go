package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemo runs `make demo` as it is: the agent built, then the demo
// driving it, as root against a network namespace (and, not as root,
// against the in-memory southbound: both are run when the test is root).
func TestDemo(t *testing.T) {
	agent := filepath.Join(t.TempDir(), "agent")
	if out, err := exec.Command("go", "build", "-o", agent, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	modes := []bool{false}
	if os.Geteuid() == 0 {
		modes = append(modes, true)
	}
	for _, root := range modes {
		var out bytes.Buffer
		if err := run(context.Background(), &out, agent, root, false); err != nil {
			t.Fatalf("root %v: %v\n%s", root, err, out.String())
		}
		text := out.String()
		for _, want := range []string{
			routeKey + " PENDING",
			routeKey + " CONFIGURED",
			afPacketKey + " PENDING",
			afPacketKey + " CONFIGURED",
			"govpp's mock adapter",
			"/v1/graph?format=GRAPH_FORMAT_SVG",
			"docs/legend.md",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("root %v: the output lacks %q:\n%s", root, want, text)
			}
		}
		// The API's addresses are printed while the agent runs, with the
		// way to keep it running, not after it stopped.
		ui, stopped := strings.Index(text, "/v1/graph?"), strings.Index(text, "the agent stopped")
		if ui < 0 || stopped < 0 || ui > stopped || ui > strings.Index(text, "=== 5.") {
			t.Errorf("root %v: the API's addresses are not printed while the agent runs (at %d, stopped at %d):\n%s", root, ui, stopped, text)
		}
		if !strings.Contains(text, "DEMO_ARGS=-keep") {
			t.Errorf("root %v: the output does not say how to keep the agent running:\n%s", root, text)
		}
		if root && !strings.Contains(text, "10.20.0.0/16 via 10.10.0.254 dev veth0") {
			t.Errorf("the kernel's routes lack the route:\n%s", text)
		}
	}
}
