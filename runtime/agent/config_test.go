package agent

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The file source's limit is a setting of the configuration file as well
// as a flag, and a negative one is refused by name.
func TestConfigFileMaxSize(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "agent.yaml")
	writeFile(t, conf, "sources:\n  file: {path: /x.yaml, max_size: 1048576}\n")
	c, err := ParseArgs([]string{"-config", conf}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sources.File.MaxSize != 1<<20 {
		t.Errorf("max_size %d, want %d", c.Sources.File.MaxSize, 1<<20)
	}
	if _, err := ParseArgs([]string{"-config", conf, "-file-max-size", "-1"}, nil); err == nil || !strings.Contains(err.Error(), "file max size: -1") {
		t.Errorf("a negative limit: %v", err)
	}
}

// TestConfigNetnsAllow: the allow-list from the flag and from the file;
// unset is nil (no limit), set empty is empty (only the agent's own).
func TestConfigNetnsAllow(t *testing.T) {
	dir := t.TempDir()
	parse := func(args ...string) (Config, error) {
		return ParseArgs(append([]string{"-file", "x.yaml", "-state-dir", dir}, args...), io.Discard)
	}
	c, err := parse()
	if err != nil || c.Southbound.Linux.NetnsAllow != nil {
		t.Errorf("no -netns-allow: %q, %v; want nil (any namespace)", c.Southbound.Linux.NetnsAllow, err)
	}
	c, err = parse("-netns-allow", "blue, red")
	if err != nil || !slices.Equal(c.Southbound.Linux.NetnsAllow, []string{"blue", "red"}) {
		t.Errorf("-netns-allow 'blue, red': %q, %v", c.Southbound.Linux.NetnsAllow, err)
	}
	c, err = parse("-netns-allow", "")
	if err != nil || c.Southbound.Linux.NetnsAllow == nil || len(c.Southbound.Linux.NetnsAllow) != 0 {
		t.Errorf("-netns-allow '': %q (nil: %v), %v; want empty, not nil", c.Southbound.Linux.NetnsAllow, c.Southbound.Linux.NetnsAllow == nil, err)
	}
	file := filepath.Join(dir, "agent.yaml")
	writeFile(t, file, "southbound:\n  linux: {netns_allow: [green]}\n")
	c, err = parse("-config", file)
	if err != nil || !slices.Equal(c.Southbound.Linux.NetnsAllow, []string{"green"}) {
		t.Errorf("netns_allow in the file: %q, %v", c.Southbound.Linux.NetnsAllow, err)
	}
	writeFile(t, file, "southbound:\n  linux: {netns_allow: []}\n")
	c, err = parse("-config", file)
	if err != nil || c.Southbound.Linux.NetnsAllow == nil {
		t.Errorf("netns_allow: [] in the file: %q (nil: %v), %v; want empty, not nil", c.Southbound.Linux.NetnsAllow, c.Southbound.Linux.NetnsAllow == nil, err)
	}
	for _, bad := range []string{"../x", "a/b", ".."} {
		if _, err := parse("-netns-allow", bad); err == nil || !strings.Contains(err.Error(), "netns allow: ") {
			t.Errorf("-netns-allow %q: %v; want an error naming netns allow", bad, err)
		}
	}
}

// The configuration file that README.md's "The agent" shows is one the
// agent reads, every key of it known.
func TestReadmeConfig(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## The agent\n")
	if !ok {
		t.Fatal("README.md has no section The agent")
	}
	_, rest, ok := strings.Cut(sec, "```yaml\n")
	if !ok {
		t.Fatal("The agent shows no yaml block")
	}
	yml, _, _ := strings.Cut(rest, "```\n")
	c, err := ParseConfig("README.md", []byte(yml))
	if err != nil {
		t.Fatalf("the README's configuration: %v\n%s", err, yml)
	}
	if c.Name != "edge1" || c.History.MaxAge != time.Hour || c.Transactions.Retry.MaxAttempts != 3 || c.Limits.ReadTimeout != 5*time.Minute {
		t.Errorf("the README's configuration read as %+v", c)
	}
}

// TestDriftConfig: the drift check is on by default, may be turned off,
// and a policy rule with a policy that does not exist is refused, naming
// the rule and the field.
func TestDriftConfig(t *testing.T) {
	t.Parallel()
	if d := Defaults().Drift.CheckInterval; d != DefaultDriftCheckInterval || d <= 0 {
		t.Errorf("default drift check interval %v", d)
	}
	c, err := ParseConfig("t", []byte("drift: {check_interval: 0s, policies: [{prefix: vpp/route/, policy: report}, {source: etcd, policy: adopt}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Drift.CheckInterval != 0 || len(c.Drift.Policies) != 2 || c.Drift.Policies[1].Source != "etcd" {
		t.Errorf("read as %+v", c.Drift)
	}
	_, err = ParseConfig("t", []byte("drift: {policies: [{prefix: a/, policy: report}, {prefix: b/, policy: fix}]}\n"))
	if err == nil || !strings.Contains(err.Error(), "drift: policies[1]: policy: ") || !strings.Contains(err.Error(), `"fix"`) {
		t.Errorf("a bad policy: %v", err)
	}
	if _, err := ParseConfig("t", []byte("drift: {check_interval: -1s}\n")); err == nil || !strings.Contains(err.Error(), "drift: check_interval") {
		t.Errorf("a negative interval: %v", err)
	}
}

// TestDriftPolicyRules: the first rule whose prefix matches decides; a
// rule of a source matches only the values that source intends.
func TestDriftPolicyRules(t *testing.T) {
	t.Parallel()
	r := &run{cfg: Defaults()}
	r.cfg.Drift.Policies = []DriftPolicyRule{{Prefix: "vpp/route/", Policy: "report"}, {Source: "etcd", Policy: "adopt"}, {Prefix: "vpp/", Policy: "repair"}}
	for key, want := range map[string]string{"vpp/route/1": "report", "vpp/interface/a": "repair", "linux/x": ""} {
		p, ok := r.driftPolicy(key, "d")
		got := ""
		if ok {
			got = p.String()
		}
		if got != want {
			t.Errorf("%s: %q, want %q (no mux: no source matches)", key, got, want)
		}
	}
}
