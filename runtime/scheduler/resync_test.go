package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func TestRetrieveDependencyCycleIsARegistrationError(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := newScheduler(t)
	a := harness(t, sb, kvtest.Config{Name: "a", KeyPrefix: "a/", RetrieveDependencies: []string{"c"}})
	b := harness(t, sb, kvtest.Config{Name: "b", KeyPrefix: "b/", RetrieveDependencies: []string{"a"}})
	c := harness(t, sb, kvtest.Config{Name: "c", KeyPrefix: "c/", RetrieveDependencies: []string{"b"}})
	// A dependency is registered before, or in the same call: a cycle
	// forms within one call.
	err := s.Register(a, b, c)
	var re *scheduler.RegistrationError
	if !errors.As(err, &re) || re.Descriptor != "c" || !strings.Contains(re.Reason, "RetrieveDependencies form a cycle: a -> c -> b -> a") {
		t.Fatalf("Register: %v", err)
	}
	if got := s.Descriptors(); len(got) != 0 {
		t.Errorf("registered after the refused call: %v", got)
	}
}

// badRetriever returns what the test tells it to.
type badRetriever struct {
	items []kv.Item[string, *wrapperspb.StringValue, struct{}]
}

func (b *badRetriever) Create(context.Context, string, *wrapperspb.StringValue) (struct{}, error) {
	return struct{}{}, nil
}

func (b *badRetriever) Delete(context.Context, string, *wrapperspb.StringValue, struct{}) error {
	return nil
}

func (b *badRetriever) Retrieve(context.Context, []kv.Item[string, *wrapperspb.StringValue, struct{}]) ([]kv.Item[string, *wrapperspb.StringValue, struct{}], error) {
	return b.items, nil
}

func TestRetrieveOutputIsChecked(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	s := newScheduler(t, scheduler.WithLogger(slog.New(scheduler.NewLogHandler(&log, slog.LevelInfo))))
	h := &badRetriever{}
	d, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, struct{}]{Name: "x", KeyTemplate: "x/{name}"}, h)
	if err != nil {
		t.Fatal(err)
	}
	other := harness(t, kvtest.NewSB(), kvtest.Config{Name: "y", KeyTemplate: "y/{name}"})
	if err := s.Register(d, other); err != nil {
		t.Fatal(err)
	}
	type item = kv.Item[string, *wrapperspb.StringValue, struct{}]
	h.items = []item{
		{Key: "", Value: wrapperspb.String("a")},
		{Key: "x/ok", Value: wrapperspb.String("b")},
		{Key: "x/ok", Value: wrapperspb.String("c")},
		{Key: "x/novalue"},
		{Key: "y/other", Value: wrapperspb.String("d")},
		{Key: "x/too/deep", Value: wrapperspb.String("e")},
	}
	res, err := s.Txn(scheduler.DownstreamResync()).Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := scheduler.FormatOps(res.Executed); got != "  1. NONE x/ok [OBTAINED]" {
		t.Errorf("executed:\n%s", got)
	}
	if st := s.Status("x/ok"); !proto.Equal(st.Applied, wrapperspb.String("b")) {
		t.Errorf("x/ok holds %v, want the first of the duplicates", st.Applied)
	}
	for _, want := range []string{
		"item=0 key= reason=empty key", "item=2 key=x/ok reason=duplicate key", "item=3 key=x/novalue reason=no value",
		"item=4 key=y/other reason=the key is outside the descriptor's key space",
		"item=5 key=x/too/deep reason=the key is outside the descriptor's key space",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, log.String())
		}
	}
	for _, k := range []string{"y/other", "x/too/deep", "x/novalue"} {
		if st := s.Status(k); st.State != scheduler.NONEXISTENT {
			t.Errorf("%s is %v", k, st.State)
		}
	}
}

func TestUpstreamResyncTrustsTheView(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := newScheduler(t)
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Txn().Set("iface/a", kvtest.Value("up")).Set("iface/b", kvtest.Value("up")).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	sb.Remove("iface/a") // not noticed: the view is trusted
	sb.TakeCalls()
	res, err := s.Txn(scheduler.UpstreamResync()).Set("iface/a", kvtest.Value("up")).Set("iface/c", kvtest.Value("up")).Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != scheduler.UpstreamResyncTxn {
		t.Errorf("kind %v", res.Kind)
	}
	var calls []string
	for _, c := range sb.TakeCalls() {
		calls = append(calls, c.String())
	}
	want := []string{"delete iface/b = up", "create iface/c = up"}
	if !cmp.Equal(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}
}

func TestPeriodicResyncRepairs(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := newScheduler(t, scheduler.WithPeriodicResync(20*time.Millisecond))
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn().Set("iface/a", kvtest.Value("up")).Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	sb.Remove("iface/a")
	// The southbound holds the value again as soon as the resync's create
	// call returns, but the transaction's record is appended only when the
	// transaction ends: wait for the record, not for the value (waiting for
	// the value and then reading the history once failed under load).
	periodicCreate := func() bool {
		for _, rec := range s.History() {
			if rec.Kind != scheduler.DownstreamResyncTxn || rec.Description != "periodic" {
				continue
			}
			for _, o := range rec.Executed {
				if o.Key == "iface/a" && o.Kind == scheduler.OpCreate {
					return true
				}
			}
		}
		return false
	}
	deadline := time.Now().Add(5 * time.Second)
	for !periodicCreate() {
		if time.Now().After(deadline) {
			t.Fatal("no periodic downstream resync in the history re-created iface/a")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if v, ok := sb.Get("iface/a"); !ok || v != "up" {
		t.Errorf("after the periodic resync the southbound holds %q (%v)", v, ok)
	}
}

func TestHistoryRetention(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := newScheduler(t, scheduler.WithHistory(5, 0))
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if _, err := s.Txn().Set("iface/a", kvtest.Value(fmt.Sprint("v", i))).Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var seqs []uint64
	for _, r := range s.History() {
		seqs = append(seqs, r.Seq)
	}
	if !cmp.Equal(seqs, []uint64{8, 9, 10, 11, 12}) {
		t.Errorf("retained %v", seqs)
	}
	if _, ok := s.Record(7); ok {
		t.Error("record 7 is still there")
	}
	if r, ok := s.Record(10); !ok || r.Values[0].Key != "iface/a" || !proto.Equal(r.Values[0].Value, kvtest.Value("v9")) {
		t.Errorf("record 10: %v %+v", ok, r)
	}
	if _, err := s.GraphSnapshot(6); err == nil || !strings.Contains(err.Error(), "out of the history's retention (the oldest kept is 8)") {
		t.Errorf("snapshot 6: %v", err)
	}
	if tl := s.Timeline("iface/a"); len(tl) != 5 || tl[0].Seq != 8 || tl[0].Op != scheduler.OpUpdate {
		t.Errorf("timeline %+v", tl)
	}
}

func TestHistoryRetentionByAge(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := newScheduler(t, scheduler.WithHistory(1000, 30*time.Millisecond))
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
		t.Fatal(err)
	}
	commit := func(v string) {
		if _, err := s.Txn().Set("iface/a", kvtest.Value(v)).Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	commit("a")
	commit("b")
	time.Sleep(60 * time.Millisecond)
	commit("c")
	h := s.History()
	if len(h) != 1 || h[0].Seq != 3 {
		t.Errorf("after the age bound, retained %d records (first %d), want only #3", len(h), h[0].Seq)
	}
}

func TestHistoryOff(t *testing.T) {
	t.Parallel()
	s := newScheduler(t, scheduler.WithHistory(0, 0))
	if err := s.Register(harness(t, kvtest.NewSB(), kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn().Set("iface/a", kvtest.Value("x")).Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h := s.History(); len(h) != 0 {
		t.Errorf("history off keeps %d records", len(h))
	}
	if _, err := s.GraphSnapshot(0); err != nil {
		t.Errorf("the current snapshot needs no history: %v", err)
	}
}

// TestHistoryMemoryIsBounded runs 100k transactions with the default
// retention and checks that the heap retained by the scheduler stays under
// a fixed bound: records beyond the retention are released.
func TestHistoryMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("100k transactions")
	}
	sb := kvtest.NewSB()
	const retained = 2000
	s := newScheduler(t, scheduler.WithTxnLog(false), scheduler.WithHistory(retained, 0))
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	base := heap()
	var atRetention uint64
	const total = 100_000
	for i := range total {
		if _, err := s.Txn().Set(fmt.Sprintf("iface/i%d", i%100), kvtest.Value(fmt.Sprint(i))).Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if i == 2*retained {
			atRetention = heap()
		}
		if i%10_000 == 0 {
			sb.TakeCalls() // the harness's own record of calls is not the scheduler's
		}
	}
	sb.TakeCalls()
	end := heap()
	if got := len(s.History()); got != retained {
		t.Fatalf("history holds %d records, want %d", got, retained)
	}
	// A record of a one-value transaction costs well under 2 KB; the bound
	// is what a full history of them may hold, with room for the graph.
	const bound = 8 << 20
	if end-base > bound {
		t.Errorf("retained heap after %d transactions: %d bytes beyond the start, bound %d", total, end-base, bound)
	}
	if end > atRetention+(1<<20) {
		t.Errorf("heap grew from %d (history full) to %d after %d more transactions", atRetention, end, total-2*retained)
	}
	t.Logf("heap: start %d, history full %d, end %d", base, atRetention, end)
}

// TestSnapshotsRebuiltFromHistory checks that the graph as of transaction
// N, rebuilt later from the history, is the graph that was current right
// after N.
func TestSnapshotsRebuiltFromHistory(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := newScheduler(t)
	for _, c := range []kvtest.Config{
		{Name: "iface", KeyTemplate: "iface/{name}", WithMetadata: true},
		{Name: "addr", KeyTemplate: "addr/{iface}/{ip:ipiface}"},
		{Name: "route", KeyTemplate: "route/{name}"},
	} {
		if err := s.Register(harness(t, sb, c)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	steps := []func() error{
		func() error {
			_, err := s.Txn().Set("route/r1", kvtest.Value("dep:iface/eth0 any:addr/eth0/@10.0.0.9")).Commit(ctx)
			return err
		},
		func() error {
			_, err := s.Txn().Set("iface/eth0", kvtest.Value("up derive:addr/eth0/10.0.0.1/24")).Set("iface/eth1", kvtest.Value("up")).Commit(ctx)
			return err
		},
		func() error {
			_, err := s.Notify(ctx, scheduler.Notification{Key: "iface/host", Value: kvtest.Value("up")})
			return err
		},
		func() error {
			_, err := s.Txn().Set("iface/eth0", kvtest.Value("up mtu9000 derive:addr/eth0/10.0.0.1/24")).Delete("iface/eth1").Commit(ctx)
			return err
		},
		func() error {
			sb.Remove("route/r1")
			_, err := s.Txn(scheduler.DownstreamResync()).Commit(ctx)
			return err
		},
		func() error {
			_, err := s.Txn().Set("iface/eth0", kvtest.Value("up recreate:2 derive:addr/eth0/10.0.0.1/24")).Set("route/r2", kvtest.Value("dep:iface/nope")).Commit(ctx)
			return err
		},
		func() error {
			_, err := s.Txn().Delete("iface/eth0").Commit(ctx)
			return err
		},
	}
	var want []*scheduler.GraphSnapshot
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
		snap, err := s.GraphSnapshot(0)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, snap)
	}
	for _, w := range want {
		got, err := s.GraphSnapshot(w.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, got, cmp.Comparer(proto.Equal), cmp.Comparer(func(a, b error) bool { return (a == nil) == (b == nil) })); diff != "" {
			t.Errorf("snapshot %d rebuilt from the history differs (-then +rebuilt):\n%s", w.Seq, diff)
		}
	}
}

// eventRecorder is an Observer that keeps what it is told.
type eventRecorder struct {
	mu   sync.Mutex
	txns []scheduler.TxnKind
	ops  []string
}

func (r *eventRecorder) TxnDone(rec *scheduler.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.txns = append(r.txns, rec.Kind)
}

func (r *eventRecorder) OpDone(desc string, op scheduler.OpKind, took time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := desc + " " + op.String()
	if err != nil {
		s += " error"
	}
	if took <= 0 {
		s += " untimed"
	}
	r.ops = append(r.ops, s)
}

func TestObserverSeesTransactionsAndCalls(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	rec := &eventRecorder{}
	s := newScheduler(t, scheduler.WithObserver(rec))
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sb.Fail("iface/b", kvtest.Failure{Op: "create"})
	_, _ = s.Txn().Set("iface/a", kvtest.Value("up")).Set("iface/b", kvtest.Value("up")).Commit(ctx)
	if _, err := s.Txn(scheduler.DownstreamResync()).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn(scheduler.DryRun()).Set("iface/c", kvtest.Value("up")).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	wantTxns := []scheduler.TxnKind{scheduler.NBTxn, scheduler.DownstreamResyncTxn, scheduler.NBTxn}
	if !cmp.Equal(rec.txns, wantTxns) {
		t.Errorf("transactions %v, want %v", rec.txns, wantTxns)
	}
	// The failed create is read back (a RETRIEVE), then the resync reads
	// the descriptor and creates the value.
	wantOps := []string{"iface CREATE", "iface CREATE error", "iface RETRIEVE", "iface RETRIEVE", "iface CREATE"}
	if !cmp.Equal(rec.ops, wantOps) {
		t.Errorf("calls %q, want %q", rec.ops, wantOps)
	}
}

// TestRememberedValuesAreFoundAndRemoved: after a restart, a southbound
// that reports only what it is asked about cannot tell a stale value of
// ours from a foreign one. Remembered values are asked about: the stale
// one is removed, the intended one untouched, the foreign one left alone.
func TestRememberedValuesAreFoundAndRemoved(t *testing.T) {
	t.Parallel()
	for _, remembered := range []bool{false, true} {
		sb := kvtest.NewSB()
		sb.Put("iface/a", "up")    // ours, still intended
		sb.Put("iface/old", "up")  // ours, intended no more
		sb.Put("iface/eth0", "up") // the host's
		s := newScheduler(t)
		if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
			t.Fatal(err)
		}
		txn := s.Txn(scheduler.FullResync()).Set("iface/a", kvtest.Value("up"))
		if remembered {
			txn.With(scheduler.Remembered(
				scheduler.KeyValue{Key: "iface/a", Value: kvtest.Value("up")},
				scheduler.KeyValue{Key: "iface/old", Value: kvtest.Value("up")},
				scheduler.KeyValue{Key: "iface/gone", Value: kvtest.Value("up")},
			))
		}
		if _, err := txn.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		var calls []string
		for _, c := range sb.TakeCalls() {
			if c.Op != "retrieve" {
				calls = append(calls, c.String())
			}
		}
		var want []string
		if remembered {
			want = []string{"delete iface/old = up"}
		}
		if !cmp.Equal(calls, want) {
			t.Errorf("remembered %v: calls %q, want %q", remembered, calls, want)
		}
		if _, ok := sb.Get("iface/eth0"); !ok {
			t.Errorf("remembered %v: the host's value was removed", remembered)
		}
		if st := s.Status("iface/gone"); st.State != scheduler.NONEXISTENT {
			t.Errorf("remembered %v: a remembered value not found is %v", remembered, st.State)
		}
	}
}

// TestSouthboundReadsThroughRetrieve: Southbound returns what Retrieve
// reports, correlated with the values of ours, and changes nothing.
func TestSouthboundReadsThroughRetrieve(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := newScheduler(t)
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Txn().Set("iface/a", kvtest.Value("up")).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	sb.Put("iface/host", "up")
	sb.TakeCalls()
	items, err := s.Southbound(ctx, "iface")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]kv.Origin{}
	for _, it := range items {
		got[it.Key] = it.Origin
	}
	if want := map[string]kv.Origin{"iface/a": kv.OriginNB, "iface/host": kv.OriginSB}; !cmp.Equal(got, want) {
		t.Errorf("Southbound = %v, want %v", got, want)
	}
	for _, c := range sb.TakeCalls() {
		if c.Op != "retrieve" {
			t.Errorf("Southbound made the call %s", c)
		}
	}
	if st := s.Status("iface/host"); st.State != scheduler.NONEXISTENT {
		t.Errorf("Southbound changed the state of iface/host: %v", st.State)
	}
	if _, err := s.Southbound(ctx, "nope"); err == nil {
		t.Error("Southbound of an unknown descriptor did not fail")
	}
}
