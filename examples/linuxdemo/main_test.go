package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestDemo runs the demo as `make demo` does. It needs root, and fails
// (never skips) without it.
func TestDemo(t *testing.T) {
	if err := checkRoot(os.Geteuid()); err != nil {
		t.Fatalf("the demo cannot run here: %v", err)
	}
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	text := out.String()
	// The log shows the route PENDING first, then created.
	pending := strings.Index(text, "NONE "+routeKey+" [IS-PENDING]")
	created := strings.Index(text, "CREATE "+routeKey)
	if pending < 0 || created < pending {
		t.Errorf("the log does not show %s PENDING and then created:\n%s", routeKey, text)
	}
	// The address removed behind the agent's back is found MISSING and
	// created again; the resync after that has nothing to do.
	for _, want := range []string{
		"NONE " + brAddressKey + " [DERIVED MISSING]\n  2. CREATE " + brAddressKey + " [DERIVED]",
		"(downstream resync) executed no operation",
		"found every value in the kernel and made no call",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "FAIL ") {
		t.Errorf("a kernel check failed:\n%s", text)
	}
}

func TestCheckRoot(t *testing.T) {
	err := checkRoot(1000)
	if err == nil || !strings.Contains(err.Error(), "needs root") {
		t.Errorf("checkRoot(1000) = %v, want an error saying that root is needed", err)
	}
	if err := checkRoot(0); err != nil {
		t.Errorf("checkRoot(0) = %v", err)
	}
}
