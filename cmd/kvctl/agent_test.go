package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// agentProc is an agent of one test, over a state directory of its own
// (the shared agent of TestMain keeps the sequence numbers its golden
// files hold).
type agentProc struct {
	cmd    *exec.Cmd
	log    *syncBuffer
	server string
	// flags are kvctl's flags besides --server (--token-file, say).
	flags []string
}

// startAgent starts the agent binary over the in-memory southbound with
// dir/state as its state directory and the file source of config, and
// waits until it serves.
func startAgent(t *testing.T, dir string) *agentProc {
	t.Helper()
	cfg := filepath.Join(dir, "cfg.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	a := &agentProc{server: "unix:" + filepath.Join(state, "grpc.sock")}
	return launchAgent(t, a, "-memory", "-file", cfg, "-state-dir", state, "-http", "", "-grpc", a.server)
}

// launchAgent starts the agent binary with args and waits until a.server
// answers (kvctl with a.flags) with veth2 CONFIGURED (the file source of
// config loaded).
func launchAgent(t *testing.T, a *agentProc, args ...string) *agentProc {
	t.Helper()
	a.log = &syncBuffer{}
	a.cmd = exec.Command(agentBin, args...)
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if a.cmd.ProcessState == nil {
			_ = a.cmd.Process.Signal(syscall.SIGTERM)
			_ = a.cmd.Wait()
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, code := a.kvctl(t, "status", "linux/interface/veth2")
		if code == 0 && strings.Contains(out, "CONFIGURED") {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not start: exit code %d\n%s\n%s", code, out, a.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill kills the agent (SIGKILL: no shutdown of its own).
func (a *agentProc) kill(t *testing.T) {
	t.Helper()
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
}

func (a *agentProc) kvctl(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return kvctl(t, append(append([]string{"--server", a.server}, a.flags...), args...)...)
}

// waitFor runs kvctl until its output satisfies cond, at most 30 s.
func (a *agentProc) waitFor(t *testing.T, what string, cond func(out string) bool, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := a.kvctl(t, args...)
		if cond(out) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; kvctl %s says:\n%s", what, strings.Join(args, " "), out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var confirmHint = regexp.MustCompile(`awaiting confirmation until \S+: kvctl confirm (\d+)`)

// applyConfirmed applies file with --confirm-within and returns the seq
// to confirm.
func (a *agentProc) applyConfirmed(t *testing.T, file, within string) string {
	t.Helper()
	out, code := a.kvctl(t, "apply", "-f", file, "--confirm-within", within)
	m := confirmHint.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("apply --confirm-within %s: exit code %d, no confirmation awaited\n%s", within, code, out)
	}
	return m[1]
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

func writeConfig(t *testing.T, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// historyLine returns the line of kvctl history whose description holds
// text, and its seq.
func historyLine(out, text string) (line, seq string) {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, text) {
			return l, strings.Fields(l)[0]
		}
	}
	return "", ""
}

// TestConfirmExpires: kvctl apply --confirm-within 2s, not confirmed: the
// agent rolls the commit back by a transaction of its own, which kvctl
// history shows, and kvctl status no longer shows the value. A confirmed
// commit that would change nothing is refused (exit code 1).
func TestConfirmExpires(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t, dir)
	file := writeConfig(t, dir, "c.yaml", "linux/interface/c1: {name: c1, type: TYPE_BRIDGE, mtu: 1400}\n")
	seq := a.applyConfirmed(t, file, "2s")
	// The commit created c1 (read from its record: a status read could come
	// after the 2 s deadline on a loaded machine).
	if out, code := a.kvctl(t, "history", "--seq", seq); code != 0 || !strings.Contains(out, "CREATE linux/interface/c1") {
		t.Fatalf("the confirmed commit %s did not create c1: exit code %d\n%s", seq, code, out)
	}
	a.waitFor(t, "the rollback", func(out string) bool {
		return strings.Contains(out, "veth2") && !strings.Contains(out, "linux/interface/c1")
	}, "status")
	out, code := a.kvctl(t, "history")
	line, rseq := historyLine(out, "rollback of commit "+seq+": not confirmed within 2s")
	if n, m := atoi(t, rseq), atoi(t, seq); code != 0 || line == "" || n <= m {
		t.Fatalf("history lacks the rollback of commit %s after it:\n%s", seq, out)
	}
	if !strings.Contains(line, "source api (resync)") {
		t.Errorf("the rollback is not a transaction of the api source: %s", line)
	}
	out, code = a.kvctl(t, "history", "--seq", rseq)
	if code != 0 || !strings.Contains(out, "DELETE linux/interface/c1 REMOVED") {
		t.Errorf("history --seq %s: exit code %d, no delete of c1:\n%s", rseq, code, out)
	}
	if out, code := a.kvctl(t, "confirm", seq); code != 1 || !strings.Contains(out, "does not await confirmation") {
		t.Errorf("confirm %s after the rollback: exit code %d\n%s", seq, code, out)
	}

	// Applied for good, then once more with --confirm-within: nothing
	// to confirm.
	if out, code := a.kvctl(t, "apply", "-f", file); code != 0 {
		t.Fatalf("apply: exit code %d\n%s", code, out)
	}
	before, _ := a.kvctl(t, "history")
	out, code = a.kvctl(t, "apply", "-f", file, "--confirm-within", "2s")
	if code != 1 || !strings.Contains(out, "confirm_within: ") || !strings.Contains(out, "no transaction to confirm") {
		t.Errorf("a confirmed commit with nothing to change: exit code %d, want 1 saying so\n%s", code, out)
	}
	if after, _ := a.kvctl(t, "history"); after != before {
		t.Errorf("the refused commit changed the history:\n%s\nwas\n%s", after, before)
	}
	if out, _ := a.kvctl(t, "status", "linux/interface/c1"); !strings.Contains(out, "CONFIGURED") {
		t.Errorf("c1 after the refused commit:\n%s", out)
	}
}

// TestConfirmAgentKilled: the agent killed while a commit awaits
// confirmation rolls it back when it starts again over the same state
// directory.
func TestConfirmAgentKilled(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t, dir)
	if out, code := a.kvctl(t, "apply", "-f", writeConfig(t, dir, "k1.yaml", "linux/interface/k1: {name: k1, type: TYPE_BRIDGE}\n")); code != 0 {
		t.Fatalf("apply: exit code %d\n%s", code, out)
	}
	seq := a.applyConfirmed(t, writeConfig(t, dir, "k2.yaml", "linux/interface/k2: {name: k2, type: TYPE_BRIDGE}\n"), "1h")
	if out, _ := a.kvctl(t, "status", "linux/interface/k2"); !strings.Contains(out, "CONFIGURED") {
		t.Fatalf("k2 before the kill:\n%s", out)
	}
	a.kill(t)

	a = startAgent(t, dir)
	out := a.waitFor(t, "k1 back", func(out string) bool { return strings.Contains(out, "linux/interface/k1") }, "status", "--owner", "api")
	if strings.Contains(out, "k2") {
		t.Errorf("k2 after the restart:\n%s", out)
	}
	out, _ = a.kvctl(t, "history")
	if line, _ := historyLine(out, "rollback of commit "+seq+", which awaited confirmation when the agent stopped"); line == "" {
		t.Errorf("history lacks the rollback of commit %s:\n%s", seq, out)
	}
	if out, code := a.kvctl(t, "confirm", seq); code != 1 {
		t.Errorf("confirm %s after the restart: exit code %d\n%s", seq, code, out)
	}
}

// TestWatchLostUpdates: kvctl watch with a buffer of one update, while
// transactions change forty values each: the stream says updates were
// lost, kvctl says so and re-reads every value under its prefix; then,
// whatever more was lost, the last row of every key is its state.
func TestWatchLostUpdates(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	watch := exec.CommandContext(ctx, kvctlBin, "--server", a.server, "watch", "--buffer", "1", "linux/interface/lw")
	var out syncBuffer
	watch.Stdout, watch.Stderr = &out, &out
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watch.Process.Kill(); _ = watch.Wait() }()
	for !strings.HasPrefix(out.String(), "KEY") {
		if ctx.Err() != nil {
			t.Fatal("watch printed no header")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the stream is set up
	const n = 40
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprintf("linux/interface/lw%02d", i))
	}
	// Each transaction changes the forty values; the agent delivers
	// their statuses at once, and a buffer of one keeps few.
	for round := 0; !regexp.MustCompile(`updates? lost`).MatchString(out.String()); round++ {
		if round == 10 {
			t.Fatalf("no update lost in %d rounds:\n%s", round, out.String())
		}
		var cfg strings.Builder
		for i := range n {
			fmt.Fprintf(&cfg, "linux/interface/lw%02d: {name: lw%02d, type: TYPE_BRIDGE, mtu: %d}\n", i, i, 1000+round)
		}
		if o, code := a.kvctl(t, "apply", "-f", writeConfig(t, dir, "lw.yaml", cfg.String())); code != 0 {
			t.Fatalf("apply: exit code %d\n%s", code, o)
		}
		time.Sleep(500 * time.Millisecond) // the agent reports a loss within 200 ms
	}
	// The re-read after the loss lists every key.
	waitOutput(t, &out, "the end of the re-read", func(s string) bool { return strings.Contains(s, "-- end of the re-read --") })
	s := out.String()
	i := strings.Index(s, " lost; the current state, re-read: --")
	j := strings.Index(s[i:], "-- end of the re-read --")
	for _, k := range keys {
		if !strings.Contains(s[i:i+j], k+" ") {
			t.Errorf("the re-read lacks %s:\n%s", k, s[i:i+j])
		}
	}
	// Every value deleted at once: at the end, the last row of every
	// key says it is gone (from the stream, or from a re-read).
	if o, code := a.kvctl(t, append([]string{"delete"}, keys...)...); code != 0 {
		t.Fatalf("delete: exit code %d\n%s", code, o)
	}
	waitOutput(t, &out, "every key gone", func(s string) bool {
		last := lastRows(s)
		for _, k := range keys {
			if st := last[k]; st == "" || st == "CONFIGURED" {
				return false
			}
		}
		return true
	})
	t.Logf("kvctl watch:\n%s", out.String())
}

// lastRows returns the state in the last row of each key of watch's
// output.
func lastRows(s string) map[string]string {
	last := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if f := strings.Fields(l); len(f) >= 2 && strings.HasPrefix(f[0], "linux/") {
			last[f[0]] = f[1]
		}
	}
	return last
}

func waitOutput(t *testing.T, out *syncBuffer, what string, cond func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s:\n%s", what, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
