package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd/etcdtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const prefix = "/kvdescriptor/agent/config/"

// models resolves the keys a/..., b/... to harness values (StringValue):
// their protojson is a JSON string, e.g. "x".
func models(t testing.TB) (*scheduler.Scheduler, *kvtest.SB) {
	t.Helper()
	sb := kvtest.NewSB()
	s, err := scheduler.New(scheduler.WithTxnLog(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	for _, name := range []string{"a", "b"} {
		d, err := sb.Descriptor(kvtest.Config{Name: name, KeyPrefix: name + "/"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	return s, sb
}

// recSink records the updates and problems and keeps the state they make.
type recSink struct {
	mu       sync.Mutex
	updates  []nb.Update
	state    map[string]string
	problems []error
	// block, when set, is waited on by Apply before it applies; blocked,
	// when set, is told each time Apply begins to wait on block.
	block   chan struct{}
	blocked chan struct{}
	// then applies the update to a scheduler too.
	then func(ctx context.Context, u nb.Update) error
}

func newRecSink() *recSink { return &recSink{state: map[string]string{}} }

func (r *recSink) Apply(ctx context.Context, u nb.Update) error {
	r.mu.Lock()
	block, blocked := r.block, r.blocked
	r.mu.Unlock()
	if block != nil {
		select {
		case blocked <- struct{}{}:
		default: // told already (a nil channel: not asked)
		}
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if r.then != nil {
		if err := r.then(ctx, u); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, u)
	if u.Resync {
		r.state = map[string]string{}
	}
	for _, c := range u.Changes {
		if c.Value == nil {
			delete(r.state, c.Key)
		} else {
			r.state[c.Key] = kvtest.Text(c.Value)
		}
	}
	return nil
}

func (r *recSink) Problem(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, err)
}

func (r *recSink) snapshot() (updates []nb.Update, state map[string]string, problem error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var p error
	if len(r.problems) > 0 {
		p = r.problems[len(r.problems)-1]
	}
	return slices.Clone(r.updates), maps.Clone(r.state), p
}

// waitFor polls cond until it holds or fails the test after 20s, with
// what show says.
func waitFor(t testing.TB, what string, cond func() bool, show ...func() string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			var detail []string
			for _, f := range show {
				detail = append(detail, f())
			}
			t.Fatalf("timed out waiting for %s %s", what, strings.Join(detail, "; "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runSource runs src until the test ends.
func runSource(t testing.TB, src *etcd.Source, sink nb.Sink) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, sink) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// etcdState returns what etcd holds under the prefix, decoded as harness
// values (JSON strings or wire form), bad values left out.
func etcdState(t testing.TB, c *clientv3.Client, ms nb.Models) map[string]string {
	t.Helper()
	resp, err := c.Get(context.Background(), prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		key := strings.TrimPrefix(string(kv.Key), prefix)
		enc := nb.Binary
		if len(kv.Value) > 0 && kv.Value[0] == '"' {
			enc = nb.JSON
		}
		v, err := nb.Decode(ms, key, kv.Value, enc)
		if err != nil {
			continue
		}
		out[key] = kvtest.Text(v)
	}
	return out
}

func put(t testing.TB, c *clientv3.Client, key, value string) {
	t.Helper()
	if _, err := c.Put(context.Background(), prefix+key, value); err != nil {
		t.Fatal(err)
	}
}

func jsonValue(text string) string { return fmt.Sprintf("%q", text) }

func wireValue(t testing.TB, text string) string {
	b, err := proto.Marshal(kvtest.Value(text))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// testLog writes a source's log to the test's.
type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Helper()
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func newSource(t testing.TB, c *clientv3.Client, s *scheduler.Scheduler, opts ...etcd.Option) *etcd.Source {
	logger := slog.New(slog.NewTextHandler(testLog{t}, nil))
	opts = append([]etcd.Option{etcd.WithLogger(logger), etcd.WithRetry(50*time.Millisecond, 500*time.Millisecond), etcd.WithRequestTimeout(2 * time.Second)}, opts...)
	return etcd.New(c, nb.SchedulerModels(s), opts...)
}

func TestInitialLoadIsOneResync(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient()
	s, _ := models(t)
	put(t, c, "a/1", jsonValue("one"))
	put(t, c, "a/2", wireValue(t, "two"))
	put(t, c, "b/x", jsonValue("ex"))
	if _, err := c.Put(context.Background(), "/kvdescriptor/other/config/a/9", jsonValue("not ours")); err != nil {
		t.Fatal(err)
	}

	sink := newRecSink()
	src := newSource(t, c, s)
	if src.Name() != "etcd" || src.Prefix() != prefix || src.StatusPrefix() != "/kvdescriptor/agent/status/" {
		t.Fatalf("defaults: name %q prefix %q status %q", src.Name(), src.Prefix(), src.StatusPrefix())
	}
	runSource(t, src, sink)
	waitFor(t, "the initial load", func() bool { u, _, _ := sink.snapshot(); return len(u) > 0 })
	updates, state, problem := sink.snapshot()
	u := updates[0]
	if !u.Resync || len(u.Changes) != 3 || !strings.HasPrefix(u.Description, "etcd revision ") {
		t.Fatalf("first update: %+v, want a resync of 3 keys", u)
	}
	want := map[string]string{"a/1": "one", "a/2": "two", "b/x": "ex"}
	if !maps.Equal(state, want) {
		t.Fatalf("state %v, want %v", state, want)
	}
	if problem != nil {
		t.Fatalf("problem %v", problem)
	}
}

func TestTxnIsOneUpdate(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient()
	s, _ := models(t)
	put(t, c, "a/1", jsonValue("one"))
	put(t, c, "a/2", jsonValue("two"))
	sink := newRecSink()
	runSource(t, newSource(t, c, s), sink)
	waitFor(t, "the initial load", func() bool { u, _, _ := sink.snapshot(); return len(u) == 1 })

	_, err := c.Txn(context.Background()).Then(
		clientv3.OpPut(prefix+"a/1", jsonValue("uno")),
		clientv3.OpDelete(prefix+"a/2"),
		clientv3.OpPut(prefix+"b/3", wireValue(t, "three")),
	).Commit()
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the update", func() bool { u, _, _ := sink.snapshot(); return len(u) == 2 })
	time.Sleep(200 * time.Millisecond) // no more updates follow
	updates, state, _ := sink.snapshot()
	if len(updates) != 2 {
		t.Fatalf("%d updates, want 2", len(updates))
	}
	u := updates[1]
	if u.Resync || len(u.Changes) != 3 {
		t.Fatalf("update %+v, want one of 3 changes", u)
	}
	want := map[string]string{"a/1": "uno", "b/3": "three"}
	if !maps.Equal(state, want) {
		t.Fatalf("state %v, want %v", state, want)
	}
	if !maps.Equal(state, etcdState(t, c, nb.SchedulerModels(s))) {
		t.Fatalf("state %v differs from etcd's", state)
	}
}

func TestBadValueIsReportedAndSkipped(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient()
	s, _ := models(t)
	put(t, c, "a/1", jsonValue("one"))
	put(t, c, "nomodel/1", jsonValue("x"))
	sink := newRecSink()
	runSource(t, newSource(t, c, s), sink)
	waitFor(t, "the initial load", func() bool { u, _, _ := sink.snapshot(); return len(u) == 1 })
	_, state, problem := sink.snapshot()
	if problem == nil || !strings.Contains(problem.Error(), prefix+"nomodel/1") || !strings.Contains(problem.Error(), "unknown key") {
		t.Fatalf("problem %v, want the unknown key named", problem)
	}
	if !maps.Equal(state, map[string]string{"a/1": "one"}) {
		t.Fatalf("state %v", state)
	}

	// A bad value of an applied key: reported, the applied value stays.
	put(t, c, "a/1", `{"not": "a string"}`)
	waitFor(t, "the bad value reported", func() bool {
		_, _, p := sink.snapshot()
		return p != nil && strings.Contains(p.Error(), prefix+"a/1")
	})
	put(t, c, "a/2", jsonValue("two"))
	waitFor(t, "a/2", func() bool { _, st, _ := sink.snapshot(); return st["a/2"] == "two" })
	_, state, _ = sink.snapshot()
	if state["a/1"] != "one" {
		t.Fatalf("a/1 is %q after a bad value, want the applied one kept", state["a/1"])
	}
	for _, u := range func() []nb.Update { u, _, _ := sink.snapshot(); return u }() {
		for _, ch := range u.Changes {
			if ch.Key == "a/1" && ch.Value == nil {
				t.Fatalf("a/1 was deleted by %+v", u)
			}
		}
	}

	// Fixing the value and deleting the unknown key clear the problem.
	put(t, c, "a/1", jsonValue("fixed"))
	if _, err := c.Delete(context.Background(), prefix+"nomodel/1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the problem cleared", func() bool {
		_, st, p := sink.snapshot()
		return p == nil && st["a/1"] == "fixed"
	})
}

// TestRestart stops the etcd server under a running source, changes the
// data on the restarted server, and checks the source resyncs to it.
func TestRestart(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient()
	s, _ := models(t)
	for i := range 5 {
		put(t, c, fmt.Sprintf("a/%d", i), jsonValue(fmt.Sprint("v", i)))
	}
	sink := newRecSink()
	runSource(t, newSource(t, c, s, etcd.WithProbe(100*time.Millisecond), etcd.WithRequestTimeout(500*time.Millisecond)), sink)
	waitFor(t, "the initial load", func() bool { u, _, _ := sink.snapshot(); return len(u) == 1 })
	// A bad value: its last good value survives the resync below.
	put(t, c, "a/2", "{bad")
	waitFor(t, "the bad value reported", func() bool {
		_, _, p := sink.snapshot()
		return p != nil && strings.Contains(p.Error(), prefix+"a/2")
	})

	srv.Stop()
	// (The bad value's problem names etcd too: the outage's is "lost".)
	waitFor(t, "the outage reported", func() bool {
		_, _, p := sink.snapshot()
		return p != nil && strings.Contains(p.Error(), "lost")
	})
	srv.Start()
	_, err := c.Txn(context.Background()).Then(
		clientv3.OpDelete(prefix+"a/0"),
		clientv3.OpPut(prefix+"a/1", jsonValue("changed")),
		clientv3.OpPut(prefix+"b/new", jsonValue("new")),
	).Commit()
	if err != nil {
		t.Fatal(err)
	}
	want := etcdState(t, c, nb.SchedulerModels(s))
	want["a/2"] = "v2"
	waitFor(t, "the resync after the restart", func() bool {
		u, st, p := sink.snapshot()
		resyncs := 0
		for _, x := range u {
			if x.Resync {
				resyncs++
			}
		}
		// The outage cleared; the bad value is still reported.
		return resyncs >= 2 && p != nil && !strings.Contains(p.Error(), "lost") && maps.Equal(st, want)
	}, func() string {
		u, st, p := sink.snapshot()
		return fmt.Sprintf("%d updates, state %v, problem %v", len(u), st, p)
	})
	// Fixed, the value is applied and nothing is reported.
	put(t, c, "a/2", jsonValue("fixed"))
	waitFor(t, "the fix", func() bool {
		_, st, p := sink.snapshot()
		return p == nil && st["a/2"] == "fixed"
	})
}

// TestCompactedWhileSlow compacts past the loaded revision while the sink
// is still applying the load: the watch from the next revision finds it
// compacted, and the source resyncs instead of leaving a gap.
func TestCompactedWhileSlow(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient()
	s, _ := models(t)
	put(t, c, "a/1", jsonValue("one"))
	put(t, c, "a/2", jsonValue("two"))
	sink := newRecSink()
	release := make(chan struct{})
	sink.block = release
	sink.blocked = make(chan struct{}, 1)
	runSource(t, newSource(t, c, s), sink)
	// Once the source has loaded and blocks in Apply, change and compact.
	select {
	case <-sink.blocked:
	case <-time.After(20 * time.Second):
		t.Fatal("the source did not apply its load in 20s")
	}
	put(t, c, "a/1", jsonValue("uno"))
	if _, err := c.Delete(context.Background(), prefix+"a/2"); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Put(context.Background(), prefix+"b/3", jsonValue("three"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compact(context.Background(), resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	sink.block = nil
	sink.mu.Unlock()
	close(release)
	want := map[string]string{"a/1": "uno", "b/3": "three"}
	waitFor(t, "the resync after the compaction", func() bool {
		_, st, _ := sink.snapshot()
		return maps.Equal(st, want)
	})
	updates, _, _ := sink.snapshot()
	if len(updates) < 2 || !updates[0].Resync || !updates[1].Resync {
		t.Fatalf("updates %+v, want the load then a resync", updates)
	}
	for _, u := range updates[1:] {
		for _, ch := range u.Changes {
			if ch.Key == "a/1" && ch.Value == nil {
				t.Fatalf("a/1 deleted by %+v", u)
			}
		}
	}
}

// TestReplacedStore replaces etcd by an empty one on the same address (its
// data lost): the revisions start again, lower than the watched one, so the
// source must resync rather than wait for revisions that mean something
// else.
func TestReplacedStore(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient()
	s, _ := models(t)
	for i := range 30 {
		put(t, c, "a/1", jsonValue(fmt.Sprint("v", i)))
	}
	put(t, c, "a/2", jsonValue("two"))
	sink := newRecSink()
	// The probe is what sees it: slower than the restart below, so the
	// outage itself goes unnoticed.
	runSource(t, newSource(t, c, s, etcd.WithProbe(2*time.Second)), sink)
	waitFor(t, "the initial load", func() bool { u, _, _ := sink.snapshot(); return len(u) == 1 })

	srv.Stop()
	if err := os.RemoveAll(srv.Dir); err != nil {
		t.Fatal(err)
	}
	srv.Start()
	put(t, c, "b/1", jsonValue("new store"))
	want := map[string]string{"b/1": "new store"}
	waitFor(t, "the resync to the new store", func() bool {
		_, st, _ := sink.snapshot()
		return maps.Equal(st, want)
	}, func() string { _, st, p := sink.snapshot(); return fmt.Sprintf("state %v, problem %v", st, p) })
}

// TestRejectedUpdate: a sink that refuses an update keeps the source's
// previous state; the source reports it and resyncs.
func TestRejectedUpdate(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient()
	s, _ := models(t)
	put(t, c, "a/1", jsonValue("one"))
	sink := newRecSink()
	var mu sync.Mutex
	refuse := 1
	sink.then = func(_ context.Context, u nb.Update) error {
		mu.Lock()
		defer mu.Unlock()
		if !u.Resync && refuse > 0 {
			refuse--
			return errors.New("refused")
		}
		return nil
	}
	runSource(t, newSource(t, c, s), sink)
	waitFor(t, "the initial load", func() bool { u, _, _ := sink.snapshot(); return len(u) == 1 })
	put(t, c, "a/2", jsonValue("two"))
	waitFor(t, "the resync after the refusal", func() bool {
		u, st, p := sink.snapshot()
		return len(u) == 2 && u[1].Resync && p == nil && maps.Equal(st, map[string]string{"a/1": "one", "a/2": "two"})
	})
	sink.mu.Lock()
	defer sink.mu.Unlock()
	var saw bool
	for _, p := range sink.problems {
		saw = saw || (p != nil && strings.Contains(p.Error(), "refused"))
	}
	if !saw {
		t.Errorf("problems %v, want the refusal reported", sink.problems)
	}
}

// TestProbeAtRestReadsNothing: a source whose watch is silent checks etcd
// with progress requests on its watch stream, not with reads: over ten
// probes at rest, etcd serves no Range (before: one per probe).
func TestProbeAtRestReadsNothing(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient()
	s, _ := models(t)
	put(t, c, "a/1", jsonValue("one"))
	sink := newRecSink()
	runSource(t, newSource(t, c, s, etcd.WithProbe(50*time.Millisecond)), sink)
	waitFor(t, "the initial load", func() bool { u, _, _ := sink.snapshot(); return len(u) == 1 })
	m0, err := srv.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	// Ten probes: ten progress requests on the watch stream, or (before)
	// ten reads, whichever comes.
	var ranges, progress float64
	waitFor(t, "ten probes", func() bool {
		m, err := srv.Metrics()
		if err != nil {
			return false
		}
		ranges = m.GRPCHandled["Range"] - m0.GRPCHandled["Range"]
		progress = m.GRPCReceived["Watch"] - m0.GRPCReceived["Watch"]
		return ranges >= 10 || progress >= 10
	}, func() string { return fmt.Sprintf("%v ranges, %v watch messages", ranges, progress) })
	if ranges > 1 {
		t.Errorf("%v Ranges served over %v probes at rest (%v progress requests), want none", ranges, max(ranges, progress), progress)
	}
	// The source still answers changes after them.
	put(t, c, "a/2", jsonValue("two"))
	waitFor(t, "a/2", func() bool { _, st, _ := sink.snapshot(); return st["a/2"] == "two" })
}
