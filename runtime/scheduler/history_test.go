package scheduler_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"weak"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestHistoryKeepsWhatCommitReturned: the history keeps its records in a
// compact form; read back, each is the Result of its transaction, with
// the operations' previous values, metadata and errors, and the input
// values with their metadata.
func TestHistoryKeepsWhatCommitReturned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newScheduler(t)
	sb := kvtest.NewSB()
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "x", KeyTemplate: "x/{name}", WithMetadata: true})); err != nil {
		t.Fatal(err)
	}
	var results []*scheduler.Result
	commit := func(txn *scheduler.Txn) {
		res, _ := txn.Commit(ctx)
		results = append(results, res)
	}
	commit(s.Txn().Set("x/a", wrapperspb.String("1")).Set("x/b", wrapperspb.String("1")))
	commit(s.Txn().Set("x/a", wrapperspb.String("2"))) // an update: PrevValue and metadata
	sb.Fail("x/b", kvtest.Failure{Op: "delete"})
	commit(s.Txn().Delete("x/b")) // an error
	res, err := s.Notify(ctx, scheduler.Notification{Key: "x/c", Value: wrapperspb.String("sb"), Metadata: 7})
	if err != nil {
		t.Fatal(err)
	}
	results = append(results, res)

	hist := s.History()
	if len(hist) != len(results) {
		t.Fatalf("%d records for %d transactions", len(hist), len(results))
	}
	sawPrev, sawMeta, sawErr := false, false, false
	for i, rec := range hist {
		r := results[i]
		if rec.Seq != r.Seq {
			t.Fatalf("record %d is transaction %d, want %d", i, rec.Seq, r.Seq)
		}
		opts := []cmp.Option{protocmp.Transform(), cmpopts.EquateErrors(), cmpopts.EquateEmpty()}
		if diff := cmp.Diff(r.Planned, rec.Planned, opts...); diff != "" {
			t.Errorf("transaction %d: planned operations (-result +history):\n%s", r.Seq, diff)
		}
		if diff := cmp.Diff(r.Executed, rec.Executed, opts...); diff != "" {
			t.Errorf("transaction %d: executed operations (-result +history):\n%s", r.Seq, diff)
		}
		if byRecord, ok := s.Record(r.Seq); !ok || !cmp.Equal(rec, byRecord, opts...) {
			t.Errorf("Record(%d) differs from History()", r.Seq)
		}
		for _, o := range rec.Executed {
			sawPrev = sawPrev || o.PrevValue != nil
			sawMeta = sawMeta || o.Metadata != nil
			sawErr = sawErr || o.Err != nil
		}
	}
	if !sawPrev || !sawMeta || !sawErr {
		t.Errorf("the records hold a previous value %v, metadata %v, an error %v; want all", sawPrev, sawMeta, sawErr)
	}
	last := hist[len(hist)-1]
	if len(last.Values) != 1 || last.Values[0].Metadata != 7 {
		t.Errorf("the notification's record has values %v, want x/c with metadata 7", last.Values)
	}
	if first := hist[0]; len(first.Values) != 2 || first.Values[1].Key != "x/b" {
		t.Errorf("the first record has values %v, want x/a and x/b", first.Values)
	}
}

// TestHistoryLetsDroppedRecordsGo: a large transaction dropped from the
// history is let go at once (its values with it), not kept until many
// more records are dropped.
func TestHistoryLetsDroppedRecordsGo(t *testing.T) {
	s := newScheduler(t, scheduler.WithHistory(4, 0))
	sb := kvtest.NewSB()
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "x", KeyTemplate: "x/{name}"})); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	probe := kvtest.Value("probe")
	gone := weak.Make(probe)
	txn := s.Txn().Set("x/probe", probe)
	for i := range 2000 {
		txn.Set(fmt.Sprintf("x/v%d", i), kvtest.Value("v"))
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	probe = nil
	txn = s.Txn().Delete("x/probe")
	for i := range 2000 {
		txn.Delete(fmt.Sprintf("x/v%d", i))
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	txn = nil
	for i := range 4 { // the two large records drop out
		if _, err := s.Txn().Set("x/small", kvtest.Value(fmt.Sprint(i))).Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.History()); n != 4 {
		t.Fatalf("%d records, want 4", n)
	}
	runtime.GC()
	if gone.Value() != nil {
		t.Error("a value of a transaction dropped from the history is still held")
	}
}
