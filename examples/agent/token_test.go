package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAgentEmptyTokenFile: a token file that holds nothing but white
// space would make the token "", which checks nothing; the agent refuses
// to start, exits non-zero and names the file (-token-file and
// -grpc-token-file alike).
func TestAgentEmptyTokenFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, "linux/interface/br0: {name: br0, type: TYPE_BRIDGE, enabled: true}\n")
	for _, tc := range []struct{ flag, content string }{
		{"-token-file", ""},
		{"-token-file", " \n\t\n"},
		{"-grpc-token-file", "\n"},
	} {
		tok := filepath.Join(dir, "token"+strings.TrimPrefix(tc.flag, "-"))
		writeFile(t, tok, tc.content)
		a := startAgentNoWait(t, "-name", "tt", "-memory", "-file", cfg, "-state-dir", filepath.Join(dir, "state"), tc.flag, tok)
		select {
		case err := <-a.exited:
			a.done = true
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() == 0 {
				t.Fatalf("%s naming an empty file: the agent exited with %v", tc.flag, err)
			}
			if log := a.log.String(); !strings.Contains(log, tok) || !strings.Contains(log, "empty") {
				t.Fatalf("%s naming an empty file: the error does not name %s:\n%s", tc.flag, tok, log)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%s naming an empty file: the agent still runs (%s)", tc.flag, a.log.String())
		}
	}
}
