package nb_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/boltstore"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// agent is a scheduler over the in-memory southbound sb, with one
// descriptor of keys iface/{name}.
func agent(t *testing.T, sb *kvtest.SB) *scheduler.Scheduler {
	t.Helper()
	s, err := scheduler.New(scheduler.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	d, err := sb.Descriptor(kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	return s
}

func newMux(t *testing.T, s *scheduler.Scheduler, opts ...nb.MuxOption) *nb.Mux {
	t.Helper()
	m := nb.NewMux(s, append([]nb.MuxOption{nb.WithMuxLogger(quiet), nb.WithLoadDeadline(0)}, opts...)...)
	t.Cleanup(m.Close)
	return m
}

func set(key, text string) nb.Change { return nb.Change{Key: key, Value: kvtest.Value(text)} }
func del(key string) nb.Change       { return nb.Change{Key: key} }

func apply(t *testing.T, k nb.Sink, resync bool, changes ...nb.Change) {
	t.Helper()
	if err := k.Apply(context.Background(), nb.Update{Resync: resync, Changes: changes, Description: "test"}); err != nil {
		t.Fatal(err)
	}
}

// calls returns the southbound's calls since the last, retrieves left out.
func calls(sb *kvtest.SB) []string {
	var out []string
	for _, c := range sb.TakeCalls() {
		if c.Op != "retrieve" {
			out = append(out, c.String())
		}
	}
	return out
}

func wantCalls(t *testing.T, sb *kvtest.SB, want ...string) {
	t.Helper()
	got := calls(sb)
	slices.Sort(got)
	slices.Sort(want)
	if !cmp.Equal(got, want, cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("southbound calls %q, want %q", got, want)
	}
}

// memStore is an nb.Store in memory.
type memStore struct {
	mu sync.Mutex
	m  map[string]nb.Applied
	// onRecord, when set, is called with the puts before they are
	// recorded.
	onRecord func(puts []nb.Applied)
}

func newMemStore(records ...nb.Applied) *memStore {
	s := &memStore{m: map[string]nb.Applied{}}
	for _, r := range records {
		s.m[r.Key] = r
	}
	return s
}

func (s *memStore) Load() ([]nb.Applied, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Values(s.m)), nil
}

func (s *memStore) Record(puts []nb.Applied, deletes []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.onRecord != nil && len(puts) > 0 {
		s.onRecord(puts)
	}
	for _, p := range puts {
		s.m[p.Key] = p
	}
	for _, k := range deletes {
		delete(s.m, k)
	}
	return nil
}

func (s *memStore) Close() error { return nil }

// keys returns the recorded keys with their sources and texts.
func (s *memStore) keys() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, r := range s.m {
		out[k] = r.Source + "=" + kvtest.Text(r.Value)
	}
	return out
}

func TestResyncOfOneSourceKeepsTheOthersKeys(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	m := newMux(t, agent(t, sb))
	file, etcd := m.Sink("file"), m.Sink("etcd")
	apply(t, file, true, set("iface/a", "a1"))
	if m.Ready() {
		t.Fatal("ready before etcd has loaded")
	}
	wantCalls(t, sb) // recorded only, until every source has loaded
	apply(t, etcd, true, set("iface/b", "b1"), set("iface/c", "c1"))
	if !m.Ready() {
		t.Fatal("not ready once every source has loaded")
	}
	wantCalls(t, sb, "create iface/a = a1", "create iface/b = b1", "create iface/c = c1")

	apply(t, etcd, true) // etcd's state is now empty
	wantCalls(t, sb, "delete iface/b = b1", "delete iface/c = c1")
	if got, want := sb.Values(), map[string]string{"iface/a": "a1"}; !cmp.Equal(got, want) {
		t.Errorf("southbound %v, want %v", got, want)
	}
	apply(t, file, false, set("iface/d", "d1"))
	wantCalls(t, sb, "create iface/d = d1")
	apply(t, etcd, true, set("iface/b", "b2"))
	wantCalls(t, sb, "create iface/b = b2")

	var states []string
	for _, st := range m.Sources() {
		states = append(states, fmt.Sprintf("%s loaded=%v keys=%d problem=%v updated=%v", st.Name, st.Loaded, st.Keys, st.Problem, !st.LastUpdate.IsZero()))
	}
	want := []string{"etcd loaded=true keys=1 problem=<nil> updated=true", "file loaded=true keys=2 problem=<nil> updated=true"}
	if !cmp.Equal(states, want) {
		t.Errorf("sources %q, want %q", states, want)
	}
}

func TestPriorityDecidesAndOwnerReportsTheBlame(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := agent(t, sb)
	m := newMux(t, s, nb.WithPriorityOrder("etcd", "file"))
	file, etcd := m.Sink("file"), m.Sink("etcd")
	apply(t, file, true, set("iface/x", "file"), set("iface/y", "file"))
	apply(t, etcd, true, set("iface/x", "etcd"))
	wantCalls(t, sb, "create iface/x = etcd", "create iface/y = file")

	owner, overridden := m.Owner("iface/x")
	if owner != "etcd" || !slices.Equal(overridden, []string{"file"}) {
		t.Errorf("Owner(iface/x) = %q, %q; want etcd, [file]", owner, overridden)
	}
	if owner, overridden := m.Owner("iface/y"); owner != "file" || overridden != nil {
		t.Errorf("Owner(iface/y) = %q, %q; want file, none", owner, overridden)
	}
	if owner, _ := m.Owner("iface/none"); owner != "" {
		t.Errorf("Owner of a key nobody sets = %q", owner)
	}

	// The loser's change of a key it does not own changes nothing.
	apply(t, file, false, set("iface/x", "file2"))
	wantCalls(t, sb)

	// The winner drops its value: the loser's applies.
	apply(t, etcd, false, del("iface/x"))
	wantCalls(t, sb, "update iface/x = file2")
	if owner, overridden := m.Owner("iface/x"); owner != "file" || overridden != nil {
		t.Errorf("Owner(iface/x) after etcd's delete = %q, %q; want file, none", owner, overridden)
	}

	apply(t, file, true)
	wantCalls(t, sb, "delete iface/x = file2", "delete iface/y = file")
}

func TestPriorityMapAndTies(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	m := newMux(t, agent(t, sb), nb.WithPriority(map[string]int{"low": -1}))
	names := []string{"b", "a", "low"}
	sinks := map[string]nb.Sink{}
	for _, name := range names {
		sinks[name] = m.Sink(name)
	}
	for _, name := range names {
		apply(t, sinks[name], true, set("iface/k", name))
	}
	wantCalls(t, sb, "create iface/k = a")
	owner, overridden := m.Owner("iface/k")
	if owner != "a" || !slices.Equal(overridden, []string{"b", "low"}) {
		t.Errorf("Owner = %q, %q; want a, [b low]", owner, overridden)
	}
}

func TestSourceThatNeverLoadsKeepsItsValues(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	// Applied before the restart: a of the file, b of etcd.
	sb.Put("iface/a", "a1")
	sb.Put("iface/b", "b1")
	st := newMemStore(
		nb.Applied{Key: "iface/a", Source: "file", Value: kvtest.Value("a1")},
		nb.Applied{Key: "iface/b", Source: "etcd", Value: kvtest.Value("b1")},
	)
	s := agent(t, sb)
	const deadline = 50 * time.Millisecond
	start := time.Now()
	// Both sources declared: the deadline may pass before the file's sink
	// is taken on a slow host, and a source the Mux does not know yet is
	// not kept (its values were deleted as stale, and created again).
	m := nb.NewMux(s, nb.WithMuxLogger(quiet), nb.WithStore(st), nb.WithLoadDeadline(deadline), nb.WithSources("file", "etcd"))
	t.Cleanup(m.Close)
	file := m.Sink("file")
	apply(t, file, true, set("iface/a", "a1"), set("iface/n", "n1"))
	// Nothing is applied before the deadline; a slow host may be past it
	// already, so only calls seen before it count.
	early := calls(sb)
	if elapsed := time.Since(start); len(early) > 0 && elapsed < deadline {
		t.Errorf("southbound calls %q %v after the start, before the load deadline", early, elapsed)
	}

	waitFor(t, func() bool { return s.Status("iface/n").State == scheduler.CONFIGURED })
	if got := append(early, calls(sb)...); !slices.Equal(got, []string{"create iface/n = n1"}) {
		t.Errorf("southbound calls %q, want only the create of iface/n (b kept, a unchanged)", got)
	}
	if m.Ready() {
		t.Error("ready while etcd has not loaded")
	}
	if owner, _ := m.Owner("iface/b"); owner != "etcd" {
		t.Errorf("the stand-in of iface/b is owned by %q, want etcd", owner)
	}
	if got := s.Status("iface/b"); got.State != scheduler.CONFIGURED || !got.Intended {
		t.Errorf("iface/b is %v (intended %v), want CONFIGURED and intended", got.State, got.Intended)
	}

	// etcd loads late: its real state replaces the stand-in.
	etcd := m.Sink("etcd")
	apply(t, etcd, true, set("iface/c", "c1"))
	wantCalls(t, sb, "delete iface/b = b1", "create iface/c = c1")
	if !m.Ready() {
		t.Error("not ready once etcd has loaded")
	}
	want := map[string]string{"iface/a": "file=a1", "iface/n": "file=n1", "iface/c": "etcd=c1"}
	if got := st.keys(); !cmp.Equal(got, want) {
		t.Errorf("store %v, want %v", got, want)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRestartRemovesOurStaleValuesOnly(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	sb.Put("iface/a", "a1")      // ours, still wanted
	sb.Put("iface/old", "old1")  // ours, wanted no more
	sb.Put("iface/eth0", "host") // never ours
	st := newMemStore(
		nb.Applied{Key: "iface/a", Source: "file", Value: kvtest.Value("a1")},
		nb.Applied{Key: "iface/old", Source: "file", Value: kvtest.Value("old1")},
		nb.Applied{Key: "iface/gone", Source: "file", Value: kvtest.Value("gone")},
	)
	m := newMux(t, agent(t, sb), nb.WithStore(st))
	apply(t, m.Sink("file"), true, set("iface/a", "a1"))
	wantCalls(t, sb, "delete iface/old = old1")
	if v, ok := sb.Get("iface/eth0"); !ok || v != "host" {
		t.Error("a foreign value was touched")
	}
	if got, want := st.keys(), map[string]string{"iface/a": "file=a1"}; !cmp.Equal(got, want) {
		t.Errorf("store %v, want %v", got, want)
	}
}

func TestValuesAreRecordedBeforeTheyAreApplied(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	st := newMemStore()
	var early []string
	st.onRecord = func(puts []nb.Applied) {
		for _, p := range puts {
			if _, ok := sb.Get(p.Key); !ok {
				early = append(early, p.Key)
			}
		}
	}
	m := newMux(t, agent(t, sb), nb.WithStore(st))
	k := m.Sink("file")
	apply(t, k, true, set("iface/a", "a1"))
	apply(t, k, false, set("iface/b", "b1"))
	if want := []string{"iface/a", "iface/b"}; !slices.Equal(early, want) {
		t.Errorf("recorded before being created: %q, want %q", early, want)
	}
	apply(t, k, false, del("iface/a"))
	if got, want := st.keys(), map[string]string{"iface/b": "file=b1"}; !cmp.Equal(got, want) {
		t.Errorf("store %v, want %v", got, want)
	}
}

// A crash after the write-ahead record, in the middle of the transaction
// (the value created, the transaction not finished): the value is still
// remembered at the restart, and removed once no source wants it.
func TestWriteAheadSurvivesACrash(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "applied.db")
	sb := kvtest.NewSB()

	st, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s1 := agent(t, sb)
	m1 := newMux(t, s1, nb.WithStore(st))
	apply(t, m1.Sink("file"), true, set("iface/a", "a1"))
	// The next transaction: recorded, its value created, then the crash.
	if err := st.Record([]nb.Applied{{Key: "iface/new", Source: "file", Value: kvtest.Value("n1")}}, nil); err != nil {
		t.Fatal(err)
	}
	sb.Put("iface/new", "n1")
	m1.Close()
	_ = s1.Close(context.Background())
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	sb.TakeCalls()

	st2, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st2.Close() })
	sb.Put("iface/eth0", "host")
	m2 := newMux(t, agent(t, sb), nb.WithStore(st2))
	apply(t, m2.Sink("file"), true, set("iface/a", "a1"))
	wantCalls(t, sb, "delete iface/new = n1")
	if got, want := sb.Values(), map[string]string{"iface/a": "a1", "iface/eth0": "host"}; !cmp.Equal(got, want) {
		t.Errorf("southbound %v, want %v", got, want)
	}
	recs, err := st2.Load()
	if err != nil || len(recs) != 1 || recs[0].Key != "iface/a" {
		t.Errorf("store after the restart: %v, %v; want iface/a only", recs, err)
	}
}

func TestInvalidValueIsNotAnApplyError(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := agent(t, sb)
	m := newMux(t, s)
	apply(t, m.Sink("file"), true, set("iface/a", "invalid:mtu"))
	if st := s.Status("iface/a"); st.State != scheduler.INVALID {
		t.Errorf("iface/a is %v, want INVALID", st.State)
	}
	if owner, _ := m.Owner("iface/a"); owner != "file" {
		t.Errorf("owner %q, want file", owner)
	}
}

func TestApplyAfterTheSchedulerClosedIsNotApplied(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := agent(t, sb)
	st := newMemStore()
	m := newMux(t, s, nb.WithStore(st))
	k := m.Sink("file")
	apply(t, k, true, set("iface/a", "a1"))
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := k.Apply(context.Background(), nb.Update{Changes: []nb.Change{set("iface/b", "b1")}})
	if !errors.Is(err, scheduler.ErrClosed) {
		t.Fatalf("Apply after Close: %v, want ErrClosed", err)
	}
	if owner, _ := m.Owner("iface/b"); owner != "" {
		t.Errorf("an update not applied is kept: iface/b owned by %q", owner)
	}
	if got, want := st.keys(), map[string]string{"iface/a": "file=a1"}; !cmp.Equal(got, want) {
		t.Errorf("store %v, want %v (the write-ahead record of an update not applied is undone)", got, want)
	}
	if p := m.Sources()[0].Problem; !errors.Is(p, scheduler.ErrClosed) {
		t.Errorf("the source's problem is %v", p)
	}
}

func TestConcurrentSources(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	m := newMux(t, agent(t, sb))
	names := []string{"s1", "s2", "s3"}
	sinks := map[string]nb.Sink{}
	for _, n := range names {
		sinks[n] = m.Sink(n)
	}
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			apply(t, sinks[n], true)
			for i := range 20 {
				apply(t, sinks[n], false, set(fmt.Sprintf("iface/%s-%d", n, i), "v"), set("iface/shared", n))
				_ = m.Sources()
				_, _ = m.Owner("iface/shared")
			}
		}()
	}
	wg.Wait()
	if got := len(sb.Values()); got != 61 {
		t.Errorf("%d values in the southbound, want 61", got)
	}
	if v, _ := sb.Get("iface/shared"); v != "s1" {
		t.Errorf("iface/shared = %q, want s1 (the tie is broken by name)", v)
	}
}

// runSource is a Source that applies its updates, then waits for ctx or
// returns err.
type runSource struct {
	name    string
	updates []nb.Update
	err     error
}

func (r runSource) Name() string { return r.name }

func (r runSource) Run(ctx context.Context, sink nb.Sink) error {
	for _, u := range r.updates {
		if err := sink.Apply(ctx, u); err != nil {
			return err
		}
	}
	if r.err != nil {
		return r.err
	}
	<-ctx.Done()
	return nil
}

func TestRun(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	m := newMux(t, agent(t, sb))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	broken := errors.New("broken")
	go func() {
		done <- m.Run(ctx,
			runSource{name: "file", updates: []nb.Update{{Resync: true, Changes: []nb.Change{set("iface/a", "a1")}}}},
			runSource{name: "etcd", updates: []nb.Update{{Resync: true, Changes: []nb.Change{set("iface/b", "b1")}}}, err: broken},
		)
	}()
	waitFor(t, m.Ready)
	cancel()
	err := <-done
	if !errors.Is(err, broken) {
		t.Errorf("Run: %v, want the etcd source's error", err)
	}
	if got, want := sb.Values(), map[string]string{"iface/a": "a1", "iface/b": "b1"}; !cmp.Equal(got, want) {
		t.Errorf("southbound %v, want %v", got, want)
	}
	for _, st := range m.Sources() {
		if (st.Name == "etcd") != errors.Is(st.Problem, broken) {
			t.Errorf("source %s: problem %v", st.Name, st.Problem)
		}
	}
}

// unreadableStore is a Store whose records cannot be read.
type unreadableStore struct{ memStore }

func (*unreadableStore) Load() ([]nb.Applied, error) { return nil, errors.New("unreadable") }

// Without the records, the values of a source not loaded cannot be kept:
// the deadline does not start the agent, every source's load does.
func TestUnreadableStoreWaitsForEverySource(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	sb.Put("iface/b", "b1")
	st := &unreadableStore{memStore: *newMemStore()}
	m := nb.NewMux(agent(t, sb), nb.WithMuxLogger(quiet), nb.WithStore(st), nb.WithLoadDeadline(20*time.Millisecond))
	t.Cleanup(m.Close)
	file, etcd := m.Sink("file"), m.Sink("etcd")
	apply(t, file, true, set("iface/a", "a1"))
	time.Sleep(100 * time.Millisecond)
	wantCalls(t, sb)
	apply(t, etcd, true, set("iface/b", "b1"))
	wantCalls(t, sb, "create iface/a = a1")
	if !m.Ready() {
		t.Error("not ready once every source has loaded")
	}
}

func TestApplyWithAnEndedContextIsNotApplied(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	m := newMux(t, agent(t, sb))
	k := m.Sink("file")
	apply(t, k, true, set("iface/a", "a1"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := k.Apply(ctx, nb.Update{Changes: []nb.Change{set("iface/b", "b1")}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Apply with an ended context: %v", err)
	}
	if owner, _ := m.Owner("iface/b"); owner != "" {
		t.Errorf("iface/b owned by %q after an update not applied", owner)
	}
	var nilValue *wrapperspb.StringValue
	if err := k.Apply(context.Background(), nb.Update{Changes: []nb.Change{{Key: "iface/c", Value: nilValue}}}); err == nil || !strings.Contains(err.Error(), "iface/c") {
		t.Errorf("Apply of a nil message: %v, want an error naming the key", err)
	}
	wantCalls(t, sb, "create iface/a = a1")
}

// TestReadersDoNotWaitForAnUpdate: while an update is being applied (here
// held in its write-ahead record), Owner, Ready and Sources answer at
// once: an HTTP status page or a readiness probe never waits for a
// transaction.
func TestReadersDoNotWaitForAnUpdate(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := agent(t, sb)
	st := newMemStore()
	m := newMux(t, s, nb.WithStore(st))
	k := m.Sink("file")
	apply(t, k, true, set("iface/a", "up"))

	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	st.mu.Lock()
	st.onRecord = func([]nb.Applied) {
		once.Do(func() { close(entered) })
		<-release
	}
	st.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- k.Apply(context.Background(), nb.Update{Changes: []nb.Change{set("iface/b", "up")}}) }()
	<-entered
	read := make(chan struct{})
	go func() {
		defer close(read)
		if owner, _ := m.Owner("iface/a"); owner != "file" {
			t.Errorf("Owner(iface/a) = %q during an update", owner)
		}
		if !m.Ready() {
			t.Errorf("not ready during an update")
		}
		_ = m.Sources()
	}()
	select {
	case <-read:
	case <-time.After(5 * time.Second):
		t.Error("Owner, Ready or Sources waited for the update")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-read
}

// TestStartedClosesAtTheStartupResync: Started is closed once the startup
// resync has run, not before (when only some sources have loaded), and
// stays closed.
func TestStartedClosesAtTheStartupResync(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	m := newMux(t, agent(t, sb))
	file, etcd := m.Sink("file"), m.Sink("etcd")
	apply(t, file, true, set("iface/a", "a1"))
	select {
	case <-m.Started():
		t.Fatal("started before etcd has loaded")
	default:
	}
	apply(t, etcd, true, set("iface/b", "b1"))
	select {
	case <-m.Started():
	default:
		t.Fatal("not started once every source has loaded")
	}
	wantCalls(t, sb, "create iface/a = a1", "create iface/b = b1")
	apply(t, etcd, true)
	<-m.Started()
}

// TestFailedDeleteStaysRecorded: a value whose delete failed is still in
// the southbound and still ours: its record stays, so that the next
// startup finds it stale and deletes it (dropped from the record, it would
// be taken for another program's and left behind); once deleted, the
// startup forgets it.
func TestFailedDeleteStaysRecorded(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	st := newMemStore()
	m := newMux(t, agent(t, sb), nb.WithStore(st))
	file := m.Sink("file")
	apply(t, file, true, set("iface/a", "a1"), set("iface/b", "b1"))
	sb.Fail("iface/b", kvtest.Failure{Op: "delete", Times: -1, Terminal: true})
	apply(t, file, true, set("iface/a", "a1"))
	if got, want := st.keys(), map[string]string{"iface/a": "file=a1", "iface/b": "file=b1"}; !cmp.Equal(got, want) {
		t.Errorf("store after the failed delete %v, want %v", got, want)
	}

	// The restart: the record says b is ours, so it goes.
	sb.ClearFailures()
	m2 := newMux(t, agent(t, sb), nb.WithStore(st))
	apply(t, m2.Sink("file"), true, set("iface/a", "a1"))
	if _, ok := sb.Get("iface/b"); ok {
		t.Errorf("iface/b, ours, was left behind: %v", sb.Values())
	}
	if got, want := st.keys(), map[string]string{"iface/a": "file=a1"}; !cmp.Equal(got, want) {
		t.Errorf("store after the restart %v, want %v", got, want)
	}
}

// TestLoadDeadlinePassesWithoutARace: a load deadline that passes starts
// the Mux from the timer's goroutine; NewMux kept the timer in the Mux
// without the lock that goroutine reads it under (a data race under
// -race, reported by any test whose deadline passed on a loaded machine).
func TestLoadDeadlinePassesWithoutARace(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	m := nb.NewMux(agent(t, sb), nb.WithMuxLogger(quiet), nb.WithLoadDeadline(time.Millisecond), nb.WithSources("etcd"))
	t.Cleanup(m.Close)
	select {
	case <-m.Started():
	case <-time.After(30 * time.Second):
		t.Fatal("not started 30s after a load deadline of 1ms")
	}
	if m.Ready() {
		t.Error("ready while etcd has not loaded")
	}
}
