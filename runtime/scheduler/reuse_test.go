package scheduler_test

import (
	"context"
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
	d, err := kv.NewDescriptor(kv.Spec[*wrapperspb.StringValue, struct{}]{Name: "str", KeyPrefix: "str/"}, &recorder[*wrapperspb.StringValue]{})
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
