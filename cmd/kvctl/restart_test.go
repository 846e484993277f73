package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var txnLine = regexp.MustCompile(`(?m)^transaction (\d+)$`)

// TestRollbackAfterKill: the agent SIGKILLed after two commits of kvctl,
// then restarted over its state directory: kvctl history --seq, timeline
// and rollback --to take the numbers of the transactions before the kill.
func TestRollbackAfterKill(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t, dir)
	apply := func(name, data string) string {
		t.Helper()
		out, code := a.kvctl(t, "apply", "-f", writeConfig(t, dir, name, data))
		m := txnLine.FindStringSubmatch(out)
		if code != 0 || m == nil {
			t.Fatalf("apply %s: exit code %d\n%s", name, code, out)
		}
		return m[1]
	}
	seq1 := apply("k1.yaml", "linux/interface/k1: {name: k1, type: TYPE_BRIDGE, mtu: 1400}\n")
	seq2 := apply("k2.yaml", "linux/interface/k2: {name: k2, type: TYPE_BRIDGE}\nlinux/interface/k1: {name: k1, type: TYPE_BRIDGE, mtu: 1500}\n")
	waitPersisted(t, a.server, seq2)
	a.kill(t)

	state := filepath.Join(dir, "state")
	b := launchAgent(t, &agentProc{server: a.server}, "-memory", "-file", filepath.Join(dir, "cfg.yaml"), "-state-dir", state, "-http", "", "-grpc", a.server)
	if out, code := b.kvctl(t, "history", "--seq", seq1); code != 0 || !strings.Contains(out, "CREATE linux/interface/k1") {
		t.Errorf("history --seq %s after the kill: exit code %d\n%s", seq1, code, out)
	}
	out, code := b.kvctl(t, "timeline", "linux/interface/k1")
	if code != 0 || !regexp.MustCompile(`(?m)^\s*`+seq1+`\s`).MatchString(out) || !regexp.MustCompile(`(?m)^\s*`+seq2+`\s`).MatchString(out) {
		t.Errorf("timeline of k1 after the kill lacks transactions %s and %s: exit code %d\n%s", seq1, seq2, code, out)
	}
	if out, code := b.kvctl(t, "rollback", "--to", seq1); code != 0 {
		t.Fatalf("rollback --to %s after the kill: exit code %d\n%s", seq1, code, out)
	}
	b.waitFor(t, "k2 gone, k1 back to its MTU of transaction "+seq1, func(out string) bool {
		return !strings.Contains(out, "linux/interface/k2") && strings.Contains(out, "mtu: 1400")
	}, "dump", "linux/interface/k", "-o", "yaml")
}

// waitPersisted waits until the agent at server has written the history
// record of transaction seq (its metric says so).
func waitPersisted(t *testing.T, server, seq string) {
	t.Helper()
	want, _ := strconv.ParseFloat(seq, 64)
	sock := strings.TrimPrefix(server, "unix:")
	cl := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	defer cl.CloseIdleConnections()
	re := regexp.MustCompile(`(?m)^kvdescriptor_agent_history_persisted_seq (\S+)$`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := cl.Get("http://localhost/metrics")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if m := re.FindSubmatch(body); m != nil {
				if f, err := strconv.ParseFloat(string(m[1]), 64); err == nil && f >= want {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("history record %s not written within 30 s", seq)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
