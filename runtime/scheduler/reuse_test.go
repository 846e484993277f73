package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// recordKeeper is an observer that keeps the records it is given.
type recordKeeper struct{ recs []*scheduler.Record }

func (o *recordKeeper) TxnDone(rec *scheduler.Record)                         { o.recs = append(o.recs, rec) }
func (o *recordKeeper) OpDone(string, scheduler.OpKind, time.Duration, error) {}

// opSummary is what a test compares of an operation.
type opSummary struct {
	Key   string
	Kind  scheduler.OpKind
	Value string
}

func summarize(ops []scheduler.Op) []opSummary {
	out := make([]opSummary, len(ops))
	for i, op := range ops {
		out[i] = opSummary{Key: op.Key, Kind: op.Kind, Value: op.Value.(*wrapperspb.StringValue).GetValue()}
	}
	return out
}

func valuesOf(kvs []scheduler.KeyValue) map[string]string {
	out := map[string]string{}
	for _, it := range kvs {
		out[it.Key] = it.Value.(*wrapperspb.StringValue).GetValue()
	}
	return out
}

// The scheduler reuses its plan, its buffers and its job from one inline
// transaction to the next, and an inline job takes the Txn's items without
// a copy: what a commit hands out (the Result, the observer's record, the
// history) must stay as it was when later transactions run and when the
// Txn changes after its commit.
func TestResultsOutliveReusedBuffers(t *testing.T) {
	t.Parallel()
	obs := &recordKeeper{}
	s := newScheduler(t, scheduler.WithObserver(obs))
	d, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, struct{}]{Name: "str", KeyPrefix: "str/"}, &recorder[*wrapperspb.StringValue]{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	txn := s.Txn().Set("str/a", wrapperspb.String("a1")).Set("str/b", wrapperspb.String("b1"))
	first, err := txn.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []opSummary{{"str/a", scheduler.OpCreate, "a1"}, {"str/b", scheduler.OpCreate, "b1"}}
	wantValues := map[string]string{"str/a": "a1", "str/b": "b1"}

	// The same Txn changed and committed again, then other transactions
	// of other sizes (plans that fill the reused buffers further).
	txn.Set("str/a", wrapperspb.String("a2")).Delete("str/b")
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	big := s.Txn()
	for _, k := range []string{"c", "d", "e", "f", "g"} {
		big.Set("str/"+k, wrapperspb.String(k+"1"))
	}
	if _, err := big.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn().Set("str/a", wrapperspb.String("a3")).Commit(ctx); err != nil {
		t.Fatal(err)
	}

	if diff := cmp.Diff(want, summarize(first.Planned)); diff != "" {
		t.Errorf("first Result.Planned changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, summarize(first.Executed)); diff != "" {
		t.Errorf("first Result.Executed changed (-want +got):\n%s", diff)
	}
	if len(obs.recs) < 1 {
		t.Fatal("the observer got no record")
	}
	rec := obs.recs[len(obs.recs)-4] // the first commit's (registration ran none)
	if rec.Seq != first.Seq {
		t.Fatalf("observer record #%d, want #%d", rec.Seq, first.Seq)
	}
	if diff := cmp.Diff(wantValues, valuesOf(rec.Values)); diff != "" {
		t.Errorf("the observer's record of the first commit changed its values (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, summarize(rec.Executed)); diff != "" {
		t.Errorf("the observer's record of the first commit changed its operations (-want +got):\n%s", diff)
	}
	hist, ok := s.Record(first.Seq)
	if !ok {
		t.Fatalf("no history record #%d", first.Seq)
	}
	if diff := cmp.Diff(wantValues, valuesOf(hist.Values)); diff != "" {
		t.Errorf("the history of the first commit changed its values (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, summarize(hist.Planned)); diff != "" {
		t.Errorf("the history of the first commit changed its plan (-want +got):\n%s", diff)
	}
}

// ctxKeeper is a handler that keeps the context of every call, and calls
// Done on those of keys ending in "done" while the call runs.
type ctxKeeper struct {
	ctxs []context.Context
	live []error // Err of each context during its call
	prev []error // Err of the call before's context during each call
}

func (h *ctxKeeper) Create(ctx context.Context, key string, _ *wrapperspb.StringValue) (struct{}, error) {
	if strings.HasSuffix(key, "done") {
		select {
		case <-ctx.Done():
			return struct{}{}, errors.New("context ended during the call")
		default:
		}
	}
	if n := len(h.ctxs); n > 0 {
		h.prev = append(h.prev, h.ctxs[n-1].Err())
	}
	h.ctxs = append(h.ctxs, ctx)
	h.live = append(h.live, ctx.Err())
	return struct{}{}, nil
}

func (h *ctxKeeper) Delete(context.Context, string, *wrapperspb.StringValue, struct{}) error {
	return nil
}

// A handler that keeps its call's context finds it ended once the call
// has returned, and ended for good: later calls (whose contexts may come
// from the same slab) never revive it, nor change its deadline.
func TestCallContextStaysEndedAfterTheCall(t *testing.T) {
	t.Parallel()
	s := newScheduler(t, scheduler.WithCallTimeout(time.Hour))
	h := &ctxKeeper{}
	d, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, struct{}]{Name: "keep", KeyPrefix: "keep/"}, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const calls = 100 // several slabs
	deadlines := make([]time.Time, 0, calls)
	for i := range calls {
		key := fmt.Sprintf("keep/%d", i)
		if i%3 == 0 {
			key += "/done"
		}
		before := time.Now()
		if _, err := s.Txn().Set(key, wrapperspb.String("v")).Commit(ctx); err != nil {
			t.Fatal(err)
		}
		c := h.ctxs[i]
		if h.live[i] != nil {
			t.Fatalf("call %d: Err during the call = %v, want nil", i, h.live[i])
		}
		if i > 0 && !errors.Is(h.prev[i-1], context.Canceled) {
			t.Fatalf("call %d: the context of call %d was revived: its Err = %v, want context.Canceled", i, i-1, h.prev[i-1])
		}
		dl, ok := c.Deadline()
		if !ok || dl.Before(before.Add(time.Hour)) || dl.After(time.Now().Add(time.Hour)) {
			t.Fatalf("call %d: deadline %v (%v), want an hour after the call started", i, dl, ok)
		}
		deadlines = append(deadlines, dl)
	}
	for i, c := range h.ctxs {
		if !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("call %d: Err after the call = %v, want context.Canceled", i, c.Err())
		}
		select {
		case <-c.Done():
		default:
			t.Errorf("call %d: Done not closed after the call", i)
		}
		if dl, _ := c.Deadline(); !dl.Equal(deadlines[i]) {
			t.Errorf("call %d: deadline changed from %v to %v", i, deadlines[i], dl)
		}
	}
}
