package agent

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// running is an agent run by a test.
type running struct {
	a      *Agent
	cancel context.CancelFunc
	done   chan error
}

// startTestAgent runs an agent of the harness model x/{name} over sb, on
// the file source file, with its state in dir.
func startTestAgent(t *testing.T, sb *kvtest.SB, file, dir string, edit func(*Config)) *running {
	t.Helper()
	d, err := sb.Descriptor(kvtest.Config{Name: "x", KeyTemplate: "x/{name}"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.Name, cfg.StateDir, cfg.Sources.File.Path = "t", dir, file
	cfg.HTTP.Address, cfg.GRPC.Address = "", "off"
	cfg.LogOutput = io.Discard
	if edit != nil {
		edit(&cfg)
	}
	a, err := New(cfg, Descriptors("harness", d))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{a: a, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	select {
	case <-a.Started():
	case err := <-r.done:
		t.Fatalf("the agent stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not start within 30 s")
	}
	return r
}

func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not stop within 30 s")
	}
}

// waitSeqs waits until the history holds n records after the first skip.
func waitHistory(t *testing.T, s *scheduler.Scheduler, n int) []scheduler.Record {
	t.Helper()
	end := time.Now().Add(30 * time.Second)
	for {
		h := s.History()
		if len(h) >= n {
			return h
		}
		if time.Now().After(end) {
			t.Fatalf("the history has %d records, not %d, after 30 s", len(h), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRunHistoryAcrossRestart: after a restart the history, a key's
// timeline and the graph as of an earlier transaction answer for the
// transactions of the run before, with their numbers; the new ones come
// after them.
func TestRunHistoryAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	writeFile(t, file, "x/a: one\n")
	sb := kvtest.NewSB()
	r := startTestAgent(t, sb, file, filepath.Join(dir, "state"), nil)
	s := r.a.Scheduler()
	n := len(waitHistory(t, s, 1))
	for i, v := range []string{"two", "three"} {
		writeFile(t, file, "x/a: "+v+"\nx/b: "+v+"\n")
		waitHistory(t, s, n+i+1)
	}
	before := s.History()
	timeline := s.Timeline("x/a")
	mid := before[len(before)-2].Seq
	snap, err := s.GraphSnapshot(mid)
	if err != nil {
		t.Fatal(err)
	}
	r.stop(t)

	r = startTestAgent(t, sb, file, filepath.Join(dir, "state"), nil)
	defer r.stop(t)
	s = r.a.Scheduler()
	after := s.History()
	if len(after) <= len(before) {
		t.Fatalf("after the restart %d records, want the %d before and the startup's", len(after), len(before))
	}
	opts := []cmp.Option{protocmp.Transform(), cmp.Comparer(func(a, b error) bool { return (a == nil) == (b == nil) })}
	for i, rec := range before {
		got := after[i]
		if got.Seq != rec.Seq || got.Description != rec.Description || got.Kind != rec.Kind || !got.End.Equal(rec.End) {
			t.Errorf("record %d after the restart: #%d %q, want #%d %q", i, got.Seq, got.Description, rec.Seq, rec.Description)
		}
		if diff := cmp.Diff(rec.Values, got.Values, opts...); diff != "" {
			t.Errorf("record #%d's values (-before +after):\n%s", rec.Seq, diff)
		}
	}
	if first := after[len(before)].Seq; first <= before[len(before)-1].Seq {
		t.Errorf("the first transaction after the restart is #%d, not after #%d", first, before[len(before)-1].Seq)
	}
	got := s.Timeline("x/a")
	if len(got) < len(timeline) {
		t.Fatalf("timeline of x/a after the restart: %d entries, want the %d before first", len(got), len(timeline))
	}
	for i, e := range timeline {
		g := got[i]
		if g.Seq != e.Seq || g.Op != e.Op || g.State != e.State || kvtest.Text(g.Value) != kvtest.Text(e.Value) {
			t.Errorf("timeline %d: #%d %v %v %q, want #%d %v %v %q", i, g.Seq, g.Op, g.State, kvtest.Text(g.Value), e.Seq, e.Op, e.State, kvtest.Text(e.Value))
		}
	}
	snap2, err := s.GraphSnapshot(mid)
	if err != nil {
		t.Fatalf("the graph as of #%d after the restart: %v", mid, err)
	}
	if diff := cmp.Diff(nodeValues(snap), nodeValues(snap2)); diff != "" {
		t.Errorf("the graph as of #%d (-before +after the restart):\n%s", mid, diff)
	}
}

func nodeValues(s *scheduler.GraphSnapshot) map[string]string {
	out := map[string]string{}
	for _, n := range s.Nodes {
		out[n.Key] = n.State.String() + " " + kvtest.Text(n.Value)
	}
	return out
}

// TestRunRetriesFileValues: a value of the file source whose create fails
// is retried (the default policy) and ends CONFIGURED; with no retry
// (max_attempts 0) it stays FAILED.
func TestRunRetriesFileValues(t *testing.T) {
	for _, attempts := range []int{3, 0} {
		dir := t.TempDir()
		file := filepath.Join(dir, "config.yaml")
		writeFile(t, file, "x/a: one\n")
		sb := kvtest.NewSB()
		r := startTestAgent(t, sb, file, filepath.Join(dir, "state"), func(c *Config) {
			c.Transactions.Retry.MaxAttempts = attempts
			c.Transactions.Retry.Period = 10 * time.Millisecond
		})
		s := r.a.Scheduler()
		sb.Fail("x/b", kvtest.Failure{Op: "create"})
		writeFile(t, file, "x/a: one\nx/b: two\n")
		want := scheduler.CONFIGURED
		if attempts == 0 {
			want = scheduler.FAILED
		}
		end := time.Now().Add(30 * time.Second)
		for s.Status("x/b").State != want {
			if time.Now().After(end) {
				t.Fatalf("retry %d: x/b is %v, not %v", attempts, s.Status("x/b").State, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if attempts == 0 {
			// No retry comes: the value is still FAILED once a
			// transaction after the failure has run.
			if _, err := s.Txn().Set("x/c", kvtest.Value("c")).Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
			if st := s.Status("x/b").State; st != scheduler.FAILED {
				t.Errorf("no retry: x/b is %v", st)
			}
		}
		r.stop(t)
	}
}

// The configuration's YAML refuses an unknown field, naming it with its
// path and line.
func TestConfigUnknownField(t *testing.T) {
	_, err := ParseConfig("agent.yaml", []byte("name: a\nsources:\n  file: {path: /x}\nhistory:\n  record: 5\n"))
	if err == nil || !strings.Contains(err.Error(), "agent.yaml:5:3: history.record: unknown field") {
		t.Errorf("an unknown field: %v", err)
	}
	_, err = ParseConfig("agent.yaml", []byte("name: a\nsources:\n  file: {path: /x}\ntransactions: {retry: {max_attempts: -1}}\n"))
	if err == nil || !strings.Contains(err.Error(), "transactions: retry: max_attempts: -1") {
		t.Errorf("a negative retry: %v", err)
	}
	_, err = ParseConfig("agent.yaml", []byte("name: a\nsources:\n  file: {path: /x}\nhistory:\n  max_age: soon\n"))
	if err == nil || !strings.Contains(err.Error(), "agent.yaml:5: history.max_age: cannot unmarshal") {
		t.Errorf("a bad duration: %v", err)
	}
	c, err := ParseConfig("agent.yaml", []byte("name: a\nsources:\n  file: {path: /x}\ntransactions: {revert: true, retry: {max_attempts: 0}}\n"))
	if err != nil || !c.Transactions.Revert || c.Transactions.Retry.MaxAttempts != 0 || c.Transactions.Retry.Period != time.Second {
		t.Errorf("a policy: %+v %v", c.Transactions, err)
	}
	if _, err := os.Stat("agent.yaml"); err == nil {
		t.Error("ParseConfig wrote a file")
	}
}

// The log level is the agent's LevelVar: changed while it runs, the
// logger follows.
func TestLogLevel(t *testing.T) {
	var out strings.Builder
	cfg := Defaults()
	cfg.Name, cfg.Sources.File.Path, cfg.LogOutput = "t", "/x", &out
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.Logger().Debug("hidden")
	a.LogLevel().Set(-4) // debug
	a.Logger().Debug("shown")
	if strings.Contains(out.String(), "hidden") || !strings.Contains(out.String(), "shown") {
		t.Errorf("log: %q", out.String())
	}
}

// TestRunAPIOnly: an agent whose only source is the API's starts (the
// API's source loads at once) and runs until its context ends; with the
// API off too, it has no source and is refused.
func TestRunAPIOnly(t *testing.T) {
	dir := t.TempDir()
	sb := kvtest.NewSB()
	r := startTestAgent(t, sb, "", dir, func(c *Config) { c.GRPC.Address = "" })
	if _, err := os.Stat(filepath.Join(dir, "grpc.sock")); err != nil {
		t.Errorf("no gRPC socket: %v", err)
	}
	select {
	case err := <-r.done:
		t.Fatalf("the agent stopped: %v", err)
	default:
	}
	if h := r.a.Scheduler().History(); len(h) == 0 || h[0].Kind != scheduler.FullResyncTxn {
		t.Errorf("no startup resync: %+v", h)
	}
	r.stop(t)

	cfg := Defaults()
	cfg.GRPC.Address = "off"
	if _, err := New(cfg); err != nil {
		t.Errorf("the API on the http listener alone is a source: %v", err)
	}
	cfg.HTTP.Address = "off"
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "sources: none configured") {
		t.Errorf("no source at all: %v", err)
	}
}
