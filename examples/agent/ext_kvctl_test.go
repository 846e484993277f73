package main

import (
	"encoding/json"
	"maps"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExtKvctl (root: a network namespace): kvctl, which is not built
// with the sysctl extension's model, applies a file of sysctls, shows
// their status and values (decoded through the schema the agent sends)
// and plans a change of one with the changed field.
func TestExtKvctl(t *testing.T) {
	ns, _ := newNetns(t)
	const name = "net.ipv4.ip_forward"
	key := "linux/sysctl/" + ns + "/" + name
	before := nsSysctl(t, ns, name)
	after := flip(before)

	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	// The agent's file source holds nothing: kvctl sets the sysctl.
	empty := filepath.Join(dir, "agent.yaml")
	writeFile(t, empty, "{}\n")
	a := startAgent(t, "-name", "tk", "-netns", ns, "-file", empty, "-state-dir", state, "-load-deadline", "5s")
	kvctl := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(kvctlBinary(t), append([]string{"--server", "unix:" + filepath.Join(state, "grpc.sock")}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("kvctl %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
		}
		return string(out)
	}

	// apply: the file's sysctl, encoded by the agent's schema, is written
	// in the namespace.
	cfg := filepath.Join(dir, "sysctl.yaml")
	writeFile(t, cfg, sysctlEntry(ns, name, after))
	out := kvctl("apply", "-f", cfg, "--wait")
	if !strings.Contains(out, "+ "+key+"\n") || !strings.Contains(out, "CREATE "+key+" CONFIGURED") {
		t.Errorf("kvctl apply: want a create of %s, CONFIGURED:\n%s", key, out)
	}
	if got := nsSysctl(t, ns, name); got != after {
		t.Errorf("%s after kvctl apply: %s, want %s", name, got, after)
	}

	// status: CONFIGURED, owned by the gRPC source.
	out = kvctl("status", "linux/sysctl/")
	if !containsLine(out, key, "CONFIGURED", "api") {
		t.Errorf("kvctl status: want %s CONFIGURED, owned by api:\n%s", key, out)
	}

	// dump: the value, decoded, as JSON and as a table.
	out = kvctl("dump", "linux/sysctl/", "-o", "json")
	var dump struct {
		Items []struct {
			Key   string            `json:"key"`
			Value map[string]string `json:"value"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &dump); err != nil {
		t.Fatalf("kvctl dump -o json: %v\n%s", err, out)
	}
	want := map[string]string{"@type": "type.googleapis.com/examples.sysctl.v1.Sysctl", "namespace": ns, "name": name, "value": after}
	if len(dump.Items) != 1 || dump.Items[0].Key != key || !maps.Equal(dump.Items[0].Value, want) {
		t.Errorf("kvctl dump -o json: want %s = %v:\n%s", key, want, out)
	}
	out = kvctl("dump", "linux/sysctl/")
	if want := `{"name":"` + name + `","namespace":"` + ns + `","value":"` + after + `"}`; !containsLine(out, key, want) {
		t.Errorf("kvctl dump: want %s %s:\n%s", key, want, out)
	}

	// apply --plan of a changed value: an update, with the field, and
	// nothing changes.
	writeFile(t, cfg, sysctlEntry(ns, name, before))
	out = kvctl("apply", "-f", cfg, "--plan")
	if wantPlan := "~ " + key + "\n    value: \"" + after + "\" -> \"" + before + "\"\n"; !strings.Contains(out, wantPlan) {
		t.Errorf("kvctl apply --plan: want\n%s\ngot:\n%s", wantPlan, out)
	}
	if got := nsSysctl(t, ns, name); got != after {
		t.Errorf("%s after kvctl apply --plan: %s, want %s (unchanged)", name, got, after)
	}
	a.stop()
}

// containsLine reports whether a line of out starts with key and has
// every one of fields after it, in order.
func containsLine(out, key string, fields ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, key+" ")
		for _, f := range fields {
			if !ok {
				break
			}
			var i int
			if i = strings.Index(rest, f); i < 0 {
				ok = false
				break
			}
			rest = rest[i+len(f):]
		}
		if ok {
			return true
		}
	}
	return false
}
