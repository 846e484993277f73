package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAgentFileMaxSize: a configuration file over -file-max-size is a bad
// file. /readyz names the file and the limit, and the configuration
// applied before stays; the file back under the limit applies.
func TestAgentFileMaxSize(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	const small = "linux/interface/br0: {name: br0, type: TYPE_BRIDGE}\n"
	const limit = 200
	writeFile(t, cfg, small)
	a := startAgent(t, "-name", "tm", "-memory", "-file", cfg, "-file-max-size", fmt.Sprint(limit), "-state-dir", filepath.Join(dir, "state"))
	eventually(t, 30*time.Second, "br0 configured", func() (bool, string) {
		_, body := a.get("/v1/status?key=linux/interface/br0")
		return strings.Contains(body, `"CONFIGURED"`), body
	})

	big := "linux/interface/br1: {name: br1, type: TYPE_BRIDGE}\n# " + strings.Repeat("x", limit) + "\n"
	writeFile(t, cfg, big)
	want := fmt.Sprintf("%s: the file is larger than the limit of %d bytes", cfg, limit)
	eventually(t, 30*time.Second, "the problem at /readyz", func() (bool, string) {
		_, body := a.get("/readyz")
		return strings.Contains(body, want), body
	})
	if _, body := a.get("/v1/status?key=linux/interface/br1"); strings.Contains(body, `"CONFIGURED"`) {
		t.Errorf("br1 of the file over the limit was applied: %s", body)
	}
	if _, body := a.get("/v1/status?key=linux/interface/br0"); !strings.Contains(body, `"CONFIGURED"`) {
		t.Errorf("br0 is no longer configured: %s", body)
	}

	writeFile(t, cfg, small+"linux/interface/br1: {name: br1, type: TYPE_BRIDGE}\n")
	eventually(t, 30*time.Second, "br1 configured and the problem cleared", func() (bool, string) {
		_, status := a.get("/v1/status?key=linux/interface/br1")
		_, ready := a.get("/readyz")
		return strings.Contains(status, `"CONFIGURED"`) && !strings.Contains(ready, "larger than the limit"), status + ready
	})
}
