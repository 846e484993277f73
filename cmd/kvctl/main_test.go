package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

// The binaries that TestMain builds, and the agent it starts.
var (
	kvctlBin string
	agentBin string
	stateDir string
	server   string
)

const config = `linux/interface/veth1:
  name: veth1
  type: TYPE_VETH
  vethPeer: veth2
  ipAddresses: ["10.0.0.1/24"]
linux/interface/veth2: {name: veth2, type: TYPE_VETH, vethPeer: veth1}
`

// testAgentVersion is the version the test agent is built with.
const testAgentVersion = "v0.0.0-kvctltest"

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "kvctl-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	kvctlBin = filepath.Join(dir, "kvctl")
	agentBin = filepath.Join(dir, "agent")
	for bin, pkg := range map[string]string{kvctlBin: ".", agentBin: "../../examples/agent"} {
		// The agent's version, which AgentInfo (kvctl info, report) says.
		out, err := exec.Command("go", "build", "-race", "-ldflags", "-X main.version="+testAgentVersion, "-o", bin, pkg).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, out)
			return 1
		}
	}
	stateDir = filepath.Join(dir, "state")
	if err := os.Mkdir(stateDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := filepath.Join(dir, "cfg.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sock := filepath.Join(stateDir, "grpc.sock")
	server = "unix:" + sock
	var log bytes.Buffer
	agent := exec.Command(agentBin, "-memory", "-file", cfg, "-state-dir", stateDir, "-http", "", "-grpc", server)
	agent.Stdout, agent.Stderr = &log, &log
	if err := agent.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		_ = agent.Process.Signal(syscall.SIGTERM)
		_ = agent.Wait()
	}()
	// The agent serves once its socket answers and the file is loaded.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := exec.Command(kvctlBin, "--server", server, "status", "linux/interface/veth2").Output()
		if err == nil && strings.Contains(string(out), "CONFIGURED") {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "the agent did not start: %v\n%s", err, log.String())
			return 1
		}
		time.Sleep(100 * time.Millisecond)
	}
	return m.Run()
}

// kvctl runs kvctl against the agent; it returns its output (stdout, then
// stderr) and its exit code.
func kvctl(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kvctlBin, append([]string{"--server", server}, args...)...)
	cmd.Dir = "testdata"
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	if stderr.Len() > 0 {
		out += "--- stderr\n" + stderr.String()
	}
	return out, code
}

var (
	timestamps = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	durations  = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|ms|s)\b`)
	spaces     = regexp.MustCompile(`(\S)  +`)
)

// mask replaces what changes from run to run: times, durations, the state
// directory. Where it replaced something, columns no longer align: runs
// of spaces after text become two.
func mask(s string) string {
	s = strings.ReplaceAll(s, stateDir, "STATEDIR")
	s = strings.ReplaceAll(s, filepath.Dir(stateDir), "TMPDIR")
	m := timestamps.ReplaceAllString(s, "TIME")
	m = durations.ReplaceAllString(m, "DUR")
	if m != s {
		m = spaces.ReplaceAllString(m, "$1  ")
	}
	return m
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: output differs from %s (go test -update rewrites it)\n--- got\n%s--- want\n%s", name, path, got, want)
	}
}

// TestCommands runs the commands in order against one agent, each
// compared with its golden file.
func TestCommands(t *testing.T) {
	steps := []struct {
		name string
		args []string
		code int
	}{
		{"status", []string{"status"}, 0},
		{"status-prefix", []string{"status", "linux/interface/veth1"}, 0},
		{"models", []string{"models"}, 0},
		{"apply-plan", []string{"apply", "-f", "apply1.yaml", "--plan"}, 0},
		{"apply-wait-pending", []string{"apply", "-f", "apply1.yaml", "--wait", "--timeout", "2s"}, 1},
		{"status-pending", []string{"status"}, 0},
		{"why", []string{"why", "linux/route/eth9/10.9.0.0/16"}, 0},
		{"why-configured", []string{"why", "linux/interface/veth2"}, 0},
		{"apply-plan-create", []string{"apply", "-f", "apply2.yaml", "--plan"}, 0},
		{"apply", []string{"apply", "-f", "apply2.yaml", "--wait"}, 0},
		{"apply-plan-update", []string{"apply", "-f", "apply3.yaml", "--plan"}, 0},
		{"apply-confirm-within", []string{"apply", "-f", "apply3.yaml", "--confirm-within", "2m"}, 0},
		{"confirm", []string{"confirm", "4"}, 0},
		{"status-json", []string{"-o", "json", "status", "linux/interface/veth4"}, 0},
		{"dump", []string{"dump"}, 0},
		{"dump-sb-yaml", []string{"dump", "--view", "sb", "--model", "linux.interfaces.v1.Interface", "-o", "yaml"}, 0},
		{"dump-cached", []string{"dump", "--view", "cached"}, 0},
		{"timeline", []string{"timeline", "linux/interface/veth4"}, 0},
		{"history", []string{"history"}, 0},
		{"history-since", []string{"history", "--since", "1h"}, 0},
		{"history-seq", []string{"history", "--seq", "4"}, 0},
		{"graph", []string{"graph"}, 0},
		{"rollback", []string{"rollback", "--to", "3"}, 0},
		{"delete", []string{"delete", "linux/route/eth9/10.9.0.0/16"}, 0},
		{"resync-downstream", []string{"resync", "--downstream"}, 0},
		{"resync", []string{"resync"}, 0},
		{"status-end", []string{"status"}, 0},
		{"apply-dummy", []string{"apply", "-f", "apply4.yaml"}, 0},
		{"apply-plan-recreate", []string{"apply", "-f", "apply5.yaml", "--plan"}, 0},
		{"apply-plan-prune", []string{"apply", "-f", "apply5.yaml", "--plan", "--prune"}, 0},
		{"apply-plan-prune-yaml", []string{"apply", "-f", "apply5.yaml", "--plan", "--prune", "-o", "yaml"}, 0},
		{"apply-plan-shadowed", []string{"apply", "-f", "apply6.yaml", "--plan"}, 0},
		{"dump-prefix", []string{"dump", "linux/interface/veth1"}, 0},
		{"dump-prefix-cached", []string{"dump", "--view", "cached", "--model", "linux.interfaces.v1.Interface", "linux/interface/veth"}, 0},
		{"dump-bad-prefix", []string{"dump", "--model", "linux.interfaces.v1.Interface", "linux/route/"}, 1},
		{"confirm-unknown", []string{"confirm", "99"}, 1},
		{"apply-bad-file", []string{"apply", "-f", "bad.yaml"}, 1},
	}
	for _, s := range steps {
		out, code := kvctl(t, s.args...)
		if code != s.code {
			t.Errorf("kvctl %s: exit code %d, want %d\n%s", strings.Join(s.args, " "), code, s.code, out)
		}
		golden(t, s.name, mask(out))
	}
}

func TestBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bogus"},
		{"status", "a", "b"},
		{"--nosuchflag", "status"},
		{"-o", "xml", "status"},
		{"why"},
		{"apply"},
		{"dump", "--view", "other"},
		{"dump", "linux/", "vpp/"},
		{"graph", "--format", "png"},
		{"confirm", "x"},
		{"rollback"},
		{"history", "--since", "yesterday"},
		{"apply", "-f", "x.yaml", "--confirm-within", "soon"},
		{"report"},
		{"apply", "-f", "x.yaml", "--retry-attempts", "0"},
		{"apply", "-f", "x.yaml", "--retry-attempts", "1001"},
		{"apply", "-f", "x.yaml", "--retry-period", "2h"},
		{"apply", "-f", "x.yaml", "--retry", "--retry-period", "2s", "--retry-max-period", "1s"},
	} {
		out, code := kvctl(t, args...)
		if code != 2 {
			t.Errorf("kvctl %s: exit code %d, want 2\n%s", strings.Join(args, " "), code, out)
		}
	}
}

func TestGraphSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graph.svg")
	if out, code := kvctl(t, "graph", "--format", "svg", "-O", path); code != 0 || out != "" {
		t.Fatalf("graph: exit code %d\n%s", code, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "<svg") {
		t.Errorf("%s is not SVG:\n%.300s", path, b)
	}
}

func TestCompletion(t *testing.T) {
	out, code := kvctl(t, "completion", "bash")
	if code != 0 || !strings.Contains(out, "kvctl") {
		t.Errorf("completion bash: exit code %d\n%.300s", code, out)
	}
}

func TestUnreachable(t *testing.T) {
	out, code := kvctl(t, "--server", "unix:"+filepath.Join(t.TempDir(), "none.sock"), "status")
	if code != 3 {
		t.Errorf("exit code %d, want 3\n%s", code, out)
	}
	if !strings.Contains(out, "cannot reach the agent") {
		t.Errorf("output %q does not say the agent cannot be reached", out)
	}
}

// TestWatch watches a prefix while a value under it is committed.
func TestWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kvctlBin, "--server", server, "watch", "linux/interface/watched")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The agent does not say when the watch is in place: a commit made
	// before it goes unseen, so the value is committed again (deleted,
	// then applied) until the watch shows it.
	seen := func() bool { return strings.Contains(out.String(), "linux/interface/watched") }
	for deadline := time.Now().Add(30 * time.Second); !seen() && time.Now().Before(deadline); {
		if o, code := kvctl(t, "apply", "-f", "watched.yaml"); code != 0 {
			t.Fatalf("apply: exit code %d\n%s", code, o)
		}
		for wait := time.Now().Add(2 * time.Second); !seen() && time.Now().Before(wait); {
			time.Sleep(50 * time.Millisecond)
		}
		if !seen() {
			if o, code := kvctl(t, "delete", "linux/interface/watched"); code != 0 {
				t.Fatalf("delete: exit code %d\n%s", code, o)
			}
		}
	}
	_ = cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if err != nil {
		t.Errorf("watch ended with %v", err)
	}
	if !strings.Contains(out.String(), "linux/interface/watched") {
		t.Errorf("watch output lacks the committed value:\n%s", out.String())
	}
	if o, code := kvctl(t, "delete", "linux/interface/watched"); code != 0 {
		t.Errorf("delete: exit code %d\n%s", code, o)
	}
}

// syncBuffer is a buffer written by a command and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
