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
