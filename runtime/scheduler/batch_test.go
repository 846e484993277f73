package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// batchMode is one way of executing: one call at a time, batches, or
// concurrent calls.
type batchMode struct {
	name string
	cfg  func(*kvtest.Config)
	opts []scheduler.Option
}

var batchModes = []batchMode{
	{"serial", func(*kvtest.Config) {}, nil},
	{"batch", func(c *kvtest.Config) { c.Batch = true }, nil},
	{"batch-of-3", func(c *kvtest.Config) { c.Batch = true }, []scheduler.Option{scheduler.WithBatchSize(3)}},
	{"concurrent", func(c *kvtest.Config) { c.Concurrent = 4 }, nil},
	{"off", func(c *kvtest.Config) { c.Batch = true }, []scheduler.Option{scheduler.WithBatchSize(1)}},
}

// modeScheduler returns a scheduler over a new southbound with the
// descriptors iface (one call at a time) and route and addr (grouped as
// the mode says).
func modeScheduler(t *testing.T, m batchMode, opts ...scheduler.Option) (*scheduler.Scheduler, *kvtest.SB) {
	t.Helper()
	sb := kvtest.NewSB()
	s := newScheduler(t, append(slices.Clone(m.opts), opts...)...)
	for _, name := range []string{"iface", "route", "addr"} {
		c := kvtest.Config{Name: name, KeyTemplate: name + "/{name}", WithMetadata: true}
		if name != "iface" {
			m.cfg(&c)
		}
		if err := s.Register(harness(t, sb, c)); err != nil {
			t.Fatal(err)
		}
	}
	return s, sb
}

// opsText renders operations with their state and error, in order.
func opsText(ops []scheduler.Op) []string {
	out := make([]string, 0, len(ops))
	for _, o := range ops {
		s := fmt.Sprintf("%s %s %s called=%v", o.Kind, o.Key, o.State, o.Called)
		if o.Err != nil {
			s += " ! " + o.Err.Error()
		}
		out = append(out, s)
	}
	return out
}

// statusText renders every status, sorted by key.
func statusText(s *scheduler.Scheduler) []string {
	var out []string
	for _, st := range s.Statuses("") {
		line := fmt.Sprintf("%s %s %s", st.Key, st.State, kvtest.Text(st.Applied))
		if st.Base != "" || len(st.Derived) > 0 || st.Origin != kv.OriginNB {
			line += fmt.Sprintf(" base=%s derived=%v origin=%v intended=%v", st.Base, st.Derived, st.Origin, st.Intended)
		}
		if st.LastErr != nil {
			line += " ! " + st.LastErr.Error()
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

// TestBatchExecution: independent operations of a descriptor that batches
// go in batches of bounded size, in the plan's order; the plan, the
// executed operations and the statuses are those of one call at a time;
// the record counts the batches.
func TestBatchExecution(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	run := func(m batchMode) (*scheduler.Result, *scheduler.Scheduler, *kvtest.SB) {
		s, sb := modeScheduler(t, m)
		txn := s.Txn().Set("iface/a", kvtest.Value("up"))
		for i := range 7 {
			txn.Set(fmt.Sprintf("route/r%d", i), kvtest.Value("dep:iface/a"))
		}
		res, err := txn.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return res, s, sb
	}
	serialRes, serial, _ := run(batchModes[0])
	res, s, sb := run(batchModes[1])
	if got, want := opsText(res.Executed), opsText(serialRes.Executed); !slices.Equal(got, want) {
		t.Errorf("executed with batches:\n%s\nwant as one call at a time:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got, want := statusText(s), statusText(serial); !slices.Equal(got, want) {
		t.Errorf("statuses with batches %q, want %q", got, want)
	}
	if got := sb.Batches(); !slices.Equal(got, []int{7}) {
		t.Errorf("batches %v, want [7]", got)
	}
	if res.Batches != 1 || res.BatchedOps != 7 {
		t.Errorf("Result counts %d batches of %d operations, want 1 of 7", res.Batches, res.BatchedOps)
	}
	if rec, ok := s.Record(res.Seq); !ok || rec.Batches != 1 || rec.BatchedOps != 7 {
		t.Errorf("record counts %d batches of %d operations, want 1 of 7", rec.Batches, rec.BatchedOps)
	}
	// Metadata comes back to each value.
	for i := range 7 {
		if st := s.Status(fmt.Sprintf("route/r%d", i)); st.Metadata == nil || st.Metadata.(int) == 0 {
			t.Errorf("route/r%d has no metadata: %v", i, st.Metadata)
		}
	}

	// Bounded size: batches of 3.
	_, _, sb3 := run(batchModes[2])
	if got := sb3.Batches(); !slices.Equal(got, []int{3, 3}) {
		t.Errorf("batches of at most 3: %v, want [3 3] (the last route alone, one call)", got)
	}
	// Off: no batch at all.
	offRes, _, sbOff := run(batchModes[4])
	if got := sbOff.Batches(); len(got) != 0 || offRes.Batches != 0 {
		t.Errorf("WithBatchSize(1) made batches %v (%d)", got, offRes.Batches)
	}

	// Deletes go in a batch too (the interface stays).
	txn := s.Txn()
	for i := range 7 {
		txn.Delete(fmt.Sprintf("route/r%d", i))
	}
	if res, err := txn.Commit(ctx); err != nil || res.Batches != 1 {
		t.Fatalf("delete: %v, %d batches", err, res.Batches)
	}
	if got := sb.Batches(); !slices.Equal(got, []int{7, 7}) {
		t.Errorf("batches after the deletes %v, want [7 7]", got)
	}
	if got := sb.Values(); len(got) != 1 {
		t.Errorf("southbound after the deletes %v, want iface/a alone", got)
	}
}

// TestBatchKeepsDependentsApart: values that depend on each other, or
// derive from each other, never share a batch.
func TestBatchKeepsDependentsApart(t *testing.T) {
	t.Parallel()
	s, sb := modeScheduler(t, batchModes[1])
	_, err := s.Txn().
		Set("route/a", kvtest.Value("x")).
		Set("route/b", kvtest.Value("dep:route/a")).
		Set("route/c", kvtest.Value("dep:route/b")).
		Set("route/d", kvtest.Value("any:route/c")).
		Set("route/e", kvtest.Value("derive:route/e1[y]")).
		Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Whatever the grouping, in the order of the calls each value comes
	// after what it depends on, and no batch holds two related values.
	var order []string
	for _, c := range sb.Calls() {
		order = append(order, c.Key)
	}
	for _, pair := range [][2]string{{"route/a", "route/b"}, {"route/b", "route/c"}, {"route/c", "route/d"}, {"route/e", "route/e1"}} {
		if slices.Index(order, pair[0]) > slices.Index(order, pair[1]) {
			t.Errorf("%s created after %s: %v", pair[0], pair[1], order)
		}
	}
	if len(sb.Batches()) == 0 {
		t.Errorf("no batch: c and e are independent")
	}
	for _, batch := range sb.BatchKeys() {
		for _, pair := range [][2]string{{"route/a", "route/b"}, {"route/b", "route/c"}, {"route/c", "route/d"}, {"route/e", "route/e1"}} {
			if slices.Contains(batch, pair[0]) && slices.Contains(batch, pair[1]) {
				t.Errorf("batch %v holds %s and %s, which depend on each other", batch, pair[0], pair[1])
			}
		}
	}
	if got := statusText(s); len(got) != 6 || strings.Count(strings.Join(got, "\n"), "CONFIGURED") != 6 {
		t.Errorf("statuses %q, want six CONFIGURED", got)
	}
}

// TestBatchFailuresAlone: a value that fails in a batch fails alone, with
// its own error and retry, as it would in a call of its own; a reverting
// transaction makes its calls one at a time.
func TestBatchFailuresAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type outcome struct {
		executed, statuses []string
		sb                 map[string]string
		errs               []string
	}
	run := func(m batchMode, revert bool) (outcome, *kvtest.SB) {
		s, sb := modeScheduler(t, m)
		sb.Fail("route/r2", kvtest.Failure{Op: "create", Terminal: true, Err: errors.New("refused")})
		sb.Fail("route/r4", kvtest.Failure{Op: "create", Partial: true}) // applied, then an error
		sb.Fail("route/r5", kvtest.Failure{Op: "create"})                // retriable, once
		opts := []scheduler.TxnOption{scheduler.Retry(scheduler.RetryPolicy{MaxAttempts: 3, Period: time.Millisecond})}
		if revert {
			opts = []scheduler.TxnOption{scheduler.Revert()}
		}
		txn := s.Txn(opts...).Set("iface/a", kvtest.Value("up"))
		for i := range 7 {
			txn.Set(fmt.Sprintf("route/r%d", i), kvtest.Value("dep:iface/a"))
		}
		res, _ := txn.Commit(ctx)
		var errs []string
		for _, e := range res.Errors {
			errs = append(errs, e.Key+": "+e.Err.Error())
		}
		if !revert {
			// Let the retry of r5 run.
			deadline := time.Now().Add(5 * time.Second)
			for s.Status("route/r5").State != scheduler.CONFIGURED && time.Now().Before(deadline) {
				time.Sleep(2 * time.Millisecond)
			}
		}
		return outcome{opsText(res.Executed), statusText(s), sb.Values(), errs}, sb
	}
	for _, revert := range []bool{false, true} {
		want, _ := run(batchModes[0], revert)
		for _, m := range batchModes[1:] {
			got, sb := run(m, revert)
			if !slices.Equal(got.executed, want.executed) {
				t.Errorf("%s revert=%v: executed\n%s\nwant\n%s", m.name, revert, strings.Join(got.executed, "\n"), strings.Join(want.executed, "\n"))
			}
			if !slices.Equal(got.statuses, want.statuses) {
				t.Errorf("%s revert=%v: statuses\n%s\nwant\n%s", m.name, revert, strings.Join(got.statuses, "\n"), strings.Join(want.statuses, "\n"))
			}
			if !maps.Equal(got.sb, want.sb) {
				t.Errorf("%s revert=%v: southbound %v, want %v", m.name, revert, got.sb, want.sb)
			}
			if !slices.Equal(got.errs, want.errs) {
				t.Errorf("%s revert=%v: errors %q, want %q", m.name, revert, got.errs, want.errs)
			}
			if revert && len(sb.Batches()) != 0 {
				t.Errorf("%s: a reverting transaction made batches %v", m.name, sb.Batches())
			}
		}
		if !revert && !slices.ContainsFunc(want.statuses, func(s string) bool { return strings.HasPrefix(s, "route/r2 FAILED") }) {
			t.Errorf("route/r2 is not FAILED: %q", want.statuses)
		}
	}
}

// TestBatchDifferential runs the same random transactions, with the same
// planned failures (whole and partial, retriable and not), through every
// mode, and requires the same southbound, statuses and executed
// operations after each one.
func TestBatchDifferential(t *testing.T) {
	t.Parallel()
	steps := 150
	if testing.Short() {
		steps = 60
	}
	for seed := range uint64(batchSeeds()) {
		rng := rand.New(rand.NewPCG(seed, 0xba7c))
		type step struct {
			items  map[string]string // "" deletes
			fail   map[string]kvtest.Failure
			revert bool
			resync bool
		}
		var plan []step
		for range steps {
			st := step{items: map[string]string{}, fail: map[string]kvtest.Failure{}, revert: rng.IntN(5) == 0, resync: rng.IntN(12) == 0}
			for range 1 + rng.IntN(25) {
				var key, val string
				switch rng.IntN(3) {
				case 0:
					key = fmt.Sprintf("iface/i%d", rng.IntN(4))
					val = []string{"up", "down", "up recreate:x", ""}[rng.IntN(4)]
				case 1:
					key = fmt.Sprintf("route/r%d", rng.IntN(40))
					val = []string{fmt.Sprintf("dep:iface/i%d", rng.IntN(4)), fmt.Sprintf("dep:iface/i%d m2", rng.IntN(4)), fmt.Sprintf("dep:route/r%d", rng.IntN(40)), ""}[rng.IntN(4)]
				default:
					// Each base derives a key of its own: two bases that
					// derive one key are a conflict, whose winner depends
					// on the order of events.
					a := rng.IntN(20)
					key = fmt.Sprintf("addr/a%d", a)
					val = []string{fmt.Sprintf("any:iface/ derive:addr/a%d.x[dep:iface/i%d]", a, rng.IntN(4)), "plain", "recreate:y plain", ""}[rng.IntN(4)]
				}
				st.items[key] = val
				if val != "" && rng.IntN(8) == 0 {
					st.fail[key] = kvtest.Failure{Op: []string{"create", "update", "delete"}[rng.IntN(3)], Partial: rng.IntN(2) == 0, Terminal: rng.IntN(2) == 0}
				}
			}
			plan = append(plan, st)
		}
		type world struct {
			s  *scheduler.Scheduler
			sb *kvtest.SB
		}
		var worlds []world
		for _, m := range batchModes {
			s, sb := modeScheduler(t, m)
			worlds = append(worlds, world{s, sb})
		}
		for i, st := range plan {
			var ref []string
			for w, wd := range worlds {
				for _, k := range slices.Sorted(maps.Keys(st.fail)) {
					wd.sb.Fail(k, st.fail[k])
				}
				var opts []scheduler.TxnOption
				if st.revert {
					opts = append(opts, scheduler.Revert())
				}
				if st.resync {
					opts = append(opts, scheduler.FullResync())
				}
				txn := wd.s.Txn(opts...)
				for _, k := range slices.Sorted(maps.Keys(st.items)) {
					if v := st.items[k]; v != "" {
						txn.Set(k, kvtest.Value(v))
					} else {
						txn.Delete(k)
					}
				}
				res, _ := txn.Commit(context.Background())
				// A failure planned for a call the step did not make is
				// dropped: batches make calls that one call at a time
				// would not (see settleLeftovers), which must not use up
				// the failures of later steps.
				wd.sb.ClearFailures()
				// The operations are the same as long as nothing fails;
				// after a failure in a batch, what the batch applied
				// beyond it may take operations of its own to settle
				// (see settleLeftovers), but the outcome is the same.
				var got []string
				if res.Err == nil {
					got = append(opsText(res.Executed), "--")
				}
				got = append(got, statusText(wd.s)...)
				got = append(got, "--")
				for _, k := range slices.Sorted(maps.Keys(wd.sb.Values())) {
					v, _ := wd.sb.Get(k)
					got = append(got, k+"="+v)
				}
				if w == 0 {
					ref = got
					continue
				}
				if !slices.Equal(got, ref) && !sameButRefreshed(got, ref) {
					t.Fatalf("seed %d step %d (items %v, failures %v, revert %v, resync %v): mode %s differs from serial:\n%s\nserial:\n%s",
						seed, i, st.items, st.fail, st.revert, st.resync, batchModes[w].name, strings.Join(got, "\n"), strings.Join(ref, "\n"))
				}
			}
		}
		var batched int
		for _, wd := range worlds[1:4] {
			batched += len(wd.sb.Batches())
		}
		if worlds[3].sb != nil && batched == 0 {
			t.Errorf("seed %d: no batch was ever made", seed)
		}
	}
}

// gate is a handler that counts the calls in flight and can block them.
type gate struct {
	inFlight, most atomic.Int32
	hold           chan struct{} // calls wait here until closed
	mu             sync.Mutex
	created        []string
	panicOn        string
}

func (g *gate) Create(ctx context.Context, key string, _ *wrapperspb.StringValue) (int, error) {
	n := g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	for {
		m := g.most.Load()
		if n <= m || g.most.CompareAndSwap(m, n) {
			break
		}
	}
	if key == g.panicOn {
		panic("boom in " + key)
	}
	select {
	case <-g.hold:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	g.mu.Lock()
	g.created = append(g.created, key)
	g.mu.Unlock()
	return 1, nil
}

func (g *gate) Delete(context.Context, string, *wrapperspb.StringValue, int) error { return nil }

type concurrentGate struct{ *gate }

func (concurrentGate) ConcurrentCalls() int { return 4 }

type batchGate struct{ *gate }

func (g batchGate) Batch(ctx context.Context, kind kv.BatchKind, ops []kv.BatchOp[string, *wrapperspb.StringValue, int]) {
	for i := range ops {
		if ops[i].Key == g.panicOn {
			panic("boom in the batch")
		}
	}
	select {
	case <-g.hold:
	case <-ctx.Done():
		for i := range ops {
			ops[i].Err = ctx.Err()
		}
	}
}

// TestConcurrentCalls: a Concurrent descriptor's independent calls run at
// once, up to its bound.
func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	g := &gate{hold: make(chan struct{})}
	d, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, int]{Name: "slow", KeyTemplate: "slow/{name}"}, kv.Handler[string, *wrapperspb.StringValue, int](concurrentGate{g}))
	if err != nil {
		t.Fatal(err)
	}
	s := newScheduler(t)
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	done := make(chan *scheduler.Result, 1)
	go func() {
		txn := s.Txn()
		for i := range 10 {
			txn.Set(fmt.Sprintf("slow/v%d", i), kvtest.Value("x"))
		}
		res, _ := txn.Commit(context.Background())
		done <- res
	}()
	deadline := time.Now().Add(5 * time.Second)
	for g.inFlight.Load() < 4 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := g.inFlight.Load(); n != 4 {
		t.Fatalf("%d calls in flight, want 4", n)
	}
	close(g.hold)
	res := <-done
	if res.Err != nil || len(g.created) != 10 || g.most.Load() != 4 || res.Batches != 1 || res.BatchedOps != 10 {
		t.Errorf("err %v, created %d, at most %d at once, %d groups of %d; want nil, 10, 4, 1 of 10", res.Err, len(g.created), g.most.Load(), res.Batches, res.BatchedOps)
	}
	// Off: one at a time.
	g2 := &gate{hold: make(chan struct{})}
	close(g2.hold)
	d2, _ := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, int]{Name: "slow", KeyTemplate: "slow/{name}"}, kv.Handler[string, *wrapperspb.StringValue, int](concurrentGate{g2}))
	s2 := newScheduler(t, scheduler.WithConcurrentCalls(false))
	if err := s2.Register(d2); err != nil {
		t.Fatal(err)
	}
	txn := s2.Txn()
	for i := range 10 {
		txn.Set(fmt.Sprintf("slow/v%d", i), kvtest.Value("x"))
	}
	if res, err := txn.Commit(context.Background()); err != nil || g2.most.Load() != 1 || res.Batches != 0 {
		t.Errorf("WithConcurrentCalls(false): err %v, at most %d at once, %d groups; want one at a time", err, g2.most.Load(), res.Batches)
	}
}

// TestBatchFaults: a batch that panics fails each of its values, a batch
// that outlives the call timeout fails each with the timeout, naming the
// group, and the scheduler goes on.
func TestBatchFaults(t *testing.T) {
	t.Parallel()
	for _, handler := range []string{"batch", "concurrent"} {
		t.Run(handler, func(t *testing.T) {
			t.Parallel()
			g := &gate{hold: make(chan struct{}), panicOn: "slow/v3"}
			var h kv.Handler[string, *wrapperspb.StringValue, int] = batchGate{g}
			if handler == "concurrent" {
				h = concurrentGate{g}
			}
			d, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, int]{Name: "slow", KeyTemplate: "slow/{name}"}, h)
			if err != nil {
				t.Fatal(err)
			}
			s := newScheduler(t, scheduler.WithCallTimeout(150*time.Millisecond))
			if err := s.Register(d); err != nil {
				t.Fatal(err)
			}
			close(g.hold)
			txn := s.Txn()
			for i := range 6 {
				txn.Set(fmt.Sprintf("slow/v%d", i), kvtest.Value("x"))
			}
			res, _ := txn.Commit(context.Background())
			failed := 0
			for _, st := range s.Statuses("slow/") {
				if st.State == scheduler.FAILED {
					failed++
					if !strings.Contains(st.LastErr.Error(), "panicked") {
						t.Errorf("%s: %v; want the panic", st.Key, st.LastErr)
					}
				}
			}
			want := 1 // concurrent calls: the panicking call alone
			if handler == "batch" {
				want = 6 // a panic fails every operation of the batch
			}
			if failed != want {
				t.Errorf("%d FAILED after a panic, want %d (errors %v)", failed, want, res.Errors)
			}

			// A batch that blocks past the timeout.
			g.panicOn = ""
			g.hold = make(chan struct{})
			txn = s.Txn()
			for i := range 4 {
				txn.Set(fmt.Sprintf("slow/w%d", i), kvtest.Value("x"))
			}
			start := time.Now()
			res, _ = txn.Commit(context.Background())
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("a blocked batch held the transaction %v", took)
			}
			var timedOut int
			for _, e := range res.Errors {
				var cte *scheduler.CallTimeoutError
				if errors.As(e.Err, &cte) {
					timedOut++
					if handler == "batch" && !strings.Contains(cte.Error(), "3 more in one batch") {
						t.Errorf("timeout error %q does not name the batch", cte.Error())
					}
				}
			}
			if timedOut < 1 {
				t.Errorf("errors %v; want call timeouts", res.Errors)
			}
			close(g.hold)
			// The scheduler goes on.
			if _, err := s.Txn().Set("slow/z", kvtest.Value("x")).Commit(context.Background()); err != nil {
				t.Errorf("after the timeout: %v", err)
			}
		})
	}
}

// sameButRefreshed reports whether the outcome got of a mode that groups
// calls is the outcome ref of one call at a time, but for values that ref
// has FAILED with an error of an earlier call, holding their intended
// value, and got has CONFIGURED with that value. A batch that fails
// part-way has applied the operations after the failure, which one call at
// a time never makes; when such an operation deleted a value that is still
// wanted, the run brings it back (see settleLeftovers), and its status then
// tells of that successful call rather than of the earlier failure. The
// southbound is the same either way.
func sameButRefreshed(got, ref []string) bool {
	if len(got) != len(ref) {
		return false
	}
	for i := range got {
		if got[i] == ref[i] {
			continue
		}
		key, rest, _ := strings.Cut(ref[i], " FAILED ")
		applied, _, failed := strings.Cut(rest, " ! ")
		if !failed || strings.Contains(key, " ") || got[i] != key+" CONFIGURED "+applied {
			return false
		}
	}
	return true
}

// batchSeeds is the number of seeds of TestBatchDifferential: 3, or
// KVD_BATCH_SEEDS for a longer run.
func batchSeeds() int {
	if n, err := strconv.Atoi(os.Getenv("KVD_BATCH_SEEDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// TestBatchLogged: the transaction log reads the same with batches and
// without (a batch is an execution detail, counted in the record).
func TestBatchLogged(t *testing.T) {
	t.Parallel()
	logOf := func(batch bool) string {
		var buf syncBuffer
		sb := kvtest.NewSB()
		opts := []scheduler.Option{scheduler.WithLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey || a.Key == "took" {
					return slog.Attr{}
				}
				return a
			},
		})))}
		if !batch {
			opts = append(opts, scheduler.WithBatchSize(1))
		}
		s := newScheduler(t, opts...)
		if err := s.Register(harness(t, sb, kvtest.Config{Name: "route", KeyTemplate: "route/{name}", Batch: true})); err != nil {
			t.Fatal(err)
		}
		txn := s.Txn()
		for i := range 4 {
			txn.Set(fmt.Sprintf("route/r%d", i), kvtest.Value("x"))
		}
		res, err := txn.Commit(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 1, false: 0}[batch]; res.Batches != want {
			t.Errorf("batch %v: the record counts %d batches, want %d", batch, res.Batches, want)
		}
		return buf.String()
	}
	with, without := logOf(true), logOf(false)
	if !strings.Contains(with, "executed-as-planned") || !strings.Contains(with, "CREATE route/r3") {
		t.Errorf("the log lacks the plan or the execution:\n%s", with)
	}
	if with != without {
		t.Errorf("the log with batches differs from the log without:\n%s\nwithout:\n%s", with, without)
	}
}

// TestNotifyUnimplementedIntended: a notification of a key that is
// intended but that no descriptor handles does not break the scheduler
// (it has no descriptor to tell its dependencies).
func TestNotifyUnimplementedIntended(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := harnessScheduler(t, "iface")
	if _, err := s.Txn().Set("x/a", kvtest.Value("v")).Commit(ctx); err == nil {
		t.Fatal("a key nobody handles committed without an error")
	}
	if _, err := s.Notify(ctx, scheduler.Notification{Key: "x/a", Value: kvtest.Value("w")}); err != nil && strings.Contains(err.Error(), "panic") {
		t.Fatalf("notify: %v", err)
	}
	if st := s.Status("x/a"); st.State != scheduler.UNIMPLEMENTED {
		t.Errorf("x/a is %v, want UNIMPLEMENTED", st.State)
	}
	if _, err := s.Txn().Set("iface/a", kvtest.Value("up")).Commit(ctx); err != nil {
		t.Errorf("after the notification: %v", err)
	}
}

// TestBatchAcrossChunks: a plan of more calls than one chunk of its call
// list holds (see callList) makes the same calls and reaches the same
// outcome with batches as one call at a time, with failures on both sides
// of a chunk's end (the run after the first failure makes its calls one at
// a time); no batch spans two chunks or exceeds the batch size.
func TestBatchAcrossChunks(t *testing.T) {
	t.Parallel()
	const n = 10_000
	fail := []int{4094, 4095, 4096, 8191, 8193}
	run := func(m batchMode) ([]string, *kvtest.SB) {
		s, sb := modeScheduler(t, m)
		for _, i := range fail {
			sb.Fail(fmt.Sprintf("route/r%05d", i), kvtest.Failure{Op: "create", Partial: i%2 == 0})
		}
		txn := s.Txn()
		for i := range n {
			txn.Set(fmt.Sprintf("route/r%05d", i), kvtest.Value("x"))
		}
		res, err := txn.Commit(context.Background())
		if err == nil {
			t.Fatalf("%s: no error, want %d failures", m.name, len(fail))
		}
		out := append(opsText(res.Executed), "--")
		out = append(out, statusText(s)...)
		for _, k := range slices.Sorted(maps.Keys(sb.Values())) {
			v, _ := sb.Get(k)
			out = append(out, k+"="+v)
		}
		return out, sb
	}
	want, _ := run(batchModes[0])
	for _, m := range batchModes[1:3] {
		got, sb := run(m)
		if !slices.Equal(got, want) {
			t.Errorf("%s differs from serial in %d of %d lines", m.name, len(got)-countEqual(got, want), len(want))
		}
		done := 0
		for _, keys := range sb.BatchKeys() {
			if len(keys) > 1000 {
				t.Errorf("%s: a batch of %d", m.name, len(keys))
			}
			first, last := keys[0], keys[len(keys)-1]
			var a, b int
			fmt.Sscanf(first, "route/r%d", &a)
			fmt.Sscanf(last, "route/r%d", &b)
			if a/4096 != b/4096 {
				t.Errorf("%s: a batch from %s to %s spans two chunks", m.name, first, last)
			}
			done += len(keys)
		}
		if done < fail[0] {
			t.Errorf("%s: %d operations in batches, want at least the %d before the first failure", m.name, done, fail[0])
		}
	}
}

// countEqual counts the lines equal at the same index in a and b.
func countEqual(a, b []string) int {
	c := 0
	for i := range min(len(a), len(b)) {
		if a[i] == b[i] {
			c++
		}
	}
	return c
}

// TestBatchLeftoverOfUnknownOutcome: a batch fails in its first operation,
// the run after the failure does not make the second again (the re-create
// that needed it stops at the first), and the second had failed too, after
// applying (a delete that removed the route, then erred), and its
// read-back fails: the route may not stay CONFIGURED while the southbound
// lacks it. It fails with its call's error, and a resync repairs it.
func TestBatchLeftoverOfUnknownOutcome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, sb := modeScheduler(t, batchModes[1])
	txn := s.Txn().Set("iface/a", kvtest.Value("up recreate:x"))
	for _, r := range []string{"route/r1", "route/r2"} {
		txn.Set(r, kvtest.Value("dep:iface/a"))
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	sb.Fail("route/r1", kvtest.Failure{Op: "delete"})
	sb.Fail("route/r2", kvtest.Failure{Op: "delete", Partial: true, Terminal: true})
	sb.Fail("route", kvtest.Failure{Op: "retrieve", Times: -1})
	if _, err := s.Txn().Set("iface/a", kvtest.Value("up recreate:y")).Commit(ctx); err == nil {
		t.Fatal("the re-create succeeded, want the failures planned")
	}
	if got := len(sb.Batches()); got == 0 {
		t.Fatal("no batch was made: the test does not test what it says")
	}
	if _, ok := sb.Get("route/r2"); ok {
		t.Fatal("route/r2 is in the southbound: the partial delete did not apply")
	}
	st := s.Status("route/r2")
	if st.State == scheduler.CONFIGURED || st.LastErr == nil {
		t.Errorf("route/r2 is %v (error %v) while the southbound lacks it, want FAILED with its delete's error", st.State, st.LastErr)
	}
	sb.ClearFailures()
	if _, err := s.Txn(scheduler.FullResync()).Set("iface/a", kvtest.Value("up recreate:y")).
		Set("route/r1", kvtest.Value("dep:iface/a")).Set("route/r2", kvtest.Value("dep:iface/a")).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"iface/a", "route/r1", "route/r2"} {
		if st := s.Status(k); st.State != scheduler.CONFIGURED {
			t.Errorf("after the resync, %s is %v (%v)", k, st.State, st.LastErr)
		}
		if _, ok := sb.Get(k); !ok {
			t.Errorf("after the resync, %s is not in the southbound", k)
		}
	}
}

// deafGate is a concurrent handler whose calls ignore their context:
// those of keys under "slow/a" wait for release, the others for releaseB.
// It records each call's key and context.
type deafGate struct {
	release, releaseB chan struct{}
	mu                sync.Mutex
	keys              []string
	ctxs              []context.Context
}

func (g *deafGate) Create(ctx context.Context, key string, _ *wrapperspb.StringValue) (int, error) {
	g.mu.Lock()
	g.keys = append(g.keys, key)
	g.ctxs = append(g.ctxs, ctx)
	g.mu.Unlock()
	if strings.HasPrefix(key, "slow/a") {
		<-g.release
	} else {
		<-g.releaseB
	}
	return 1, nil
}

func (g *deafGate) Delete(context.Context, string, *wrapperspb.StringValue, int) error { return nil }

func (*deafGate) ConcurrentCalls() int { return 2 }

func (g *deafGate) calls() ([]string, []context.Context) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.keys), slices.Clone(g.ctxs)
}

// TestGivenUpGroupStartsNoMoreCalls: once a concurrent group is given up on
// at its deadline, its workers start none of its calls that had not
// started (doc.go: "A group of concurrent calls given up on starts none
// of its calls it had not started"). The next transaction plans into the
// storage the given-up one used: a late worker must neither call a handler
// for a transaction that has moved on nor read, and call, what the next
// one plans.
func TestGivenUpGroupStartsNoMoreCalls(t *testing.T) {
	t.Parallel()
	g := &deafGate{release: make(chan struct{}), releaseB: make(chan struct{})}
	d, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, int]{Name: "slow", KeyTemplate: "slow/{name}"}, kv.Handler[string, *wrapperspb.StringValue, int](g))
	if err != nil {
		t.Fatal(err)
	}
	s := newScheduler(t, scheduler.WithCallTimeout(100*time.Millisecond))
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	txn := s.Txn()
	for i := range 6 {
		txn.Set(fmt.Sprintf("slow/a%d", i), kvtest.Value("x"))
	}
	if res, _ := txn.Commit(context.Background()); res == nil || !errors.As(res.Err, new(*scheduler.CallTimeoutError)) {
		t.Fatalf("first transaction: %v; want the group given up on", res)
	}
	keys, ctxs := g.calls()
	if len(keys) == 0 || len(keys) > 2 {
		t.Fatalf("calls before the give-up: %v, want those the two workers hold", keys)
	}
	given, before := ctxs[0], len(keys)
	txn = s.Txn()
	for i := range 6 {
		txn.Set(fmt.Sprintf("slow/b%d", i), kvtest.Value("y"))
	}
	done := txn.CommitAsync(context.Background())
	// The next group is in flight (a call held); the first group's
	// workers go on now.
	deadline := time.Now().Add(30 * time.Second)
	for len(keys) <= before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
		keys, _ = g.calls()
	}
	close(g.release)
	time.Sleep(50 * time.Millisecond) // a late worker, if any, starts a call now
	close(g.releaseB)
	<-done
	keys, ctxs = g.calls()
	for i := before; i < len(keys); i++ {
		if ctxs[i] == given {
			t.Errorf("call %d (%s) was started by the group given up on, after it was given up on; calls %v", i, keys[i], keys)
		}
	}
}
