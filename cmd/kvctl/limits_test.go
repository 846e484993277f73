package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmptyTokenFile: a --token-file holding nothing but white space is
// bad usage naming the file, not a call with an empty token.
func TestEmptyTokenFile(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := kvctl(t, "--token-file", tok, "status")
	if code != 2 || !strings.Contains(out, "--token-file "+tok) || !strings.Contains(out, "empty") {
		t.Fatalf("exit code %d, want 2 and the file named:\n%s", code, out)
	}
}

// TestBoundsRefused: flags beyond the agent's bounds (runtime/apilimits)
// are bad usage naming the flag, refused before any call.
func TestBoundsRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"watch", "--buffer", "1000000000"}, "--buffer: 1000000000 is more than 65536"},
		{[]string{"apply", "-f", "apply1.yaml", "--confirm-within", "48h"}, "--confirm-within: 48h0m0s is more than 24h0m0s"},
		{[]string{"apply", "-f", "apply1.yaml", "--wait", "--timeout", "1h"}, "--timeout (with --wait): 1h0m0s is more than 10m0s"},
		{[]string{"delete", "--wait", "--timeout", "11m", "linux/interface/x"}, "--timeout (with --wait)"},
	} {
		out, code := kvctl(t, c.args...)
		if code != 2 || !strings.Contains(out, c.flag) {
			t.Errorf("kvctl %s: exit code %d, want 2 naming %q:\n%s", strings.Join(c.args, " "), code, c.flag, out)
		}
	}
}
