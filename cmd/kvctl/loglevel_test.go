package main

import (
	"strings"
	"testing"
)

// TestLogLevel: kvctl log-level reads the agent's log level, sets it
// (SetLogLevel), and a level that is none is refused, naming the
// argument.
func TestLogLevel(t *testing.T) {
	t.Parallel()
	a := startAgent(t, t.TempDir())
	if out, code := a.kvctl(t, "log-level"); code != 0 || out != "log level: info\n" {
		t.Errorf("log-level: exit code %d: %q", code, out)
	}
	if out, code := a.kvctl(t, "log-level", "debug"); code != 0 || out != "log level: debug (was info)\n" {
		t.Errorf("log-level debug: exit code %d: %q", code, out)
	}
	if out, code := a.kvctl(t, "-o", "json", "log-level"); code != 0 || !strings.Contains(out, `"level": "debug"`) {
		t.Errorf("log-level -o json: exit code %d: %q", code, out)
	}
	if out, code := a.kvctl(t, "log-level", "loud"); code != 1 || !strings.Contains(out, "level: ") {
		t.Errorf("log-level loud: exit code %d, want 1 naming level: %q", code, out)
	}
}
