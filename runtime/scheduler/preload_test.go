package scheduler_test

import (
	"context"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestPreloadedHistory: a scheduler started with the history of an earlier
// one (its records, numbers after them) answers History, Record, Timeline
// and GraphSnapshot for the earlier transactions as that one did; records
// at or after its first number are left out.
func TestPreloadedHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb := kvtest.NewSB()
	first := newScheduler(t)
	if err := first.Register(harness(t, sb, kvtest.Config{Name: "x", KeyTemplate: "x/{name}"})); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1", "2", "3"} {
		if _, err := first.Txn(scheduler.Description("set "+v)).Set("x/a", wrapperspb.String(v)).Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	before := first.History()
	last := before[len(before)-1].Seq
	timeline := first.Timeline("x/a")
	snap, err := first.GraphSnapshot(before[1].Seq)
	if err != nil {
		t.Fatal(err)
	}
	bogus := scheduler.Record{Seq: last + 20, Description: "from the future"}

	second := newScheduler(t, scheduler.WithSeqAfter(last+10), scheduler.WithPreloadedHistory(append(before, bogus)))
	if err := second.Register(harness(t, sb, kvtest.Config{Name: "x", KeyTemplate: "x/{name}"})); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Txn(scheduler.FullResync(), scheduler.Description("startup")).Set("x/a", wrapperspb.String("3")).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	after := second.History()
	if len(after) != len(before)+1 {
		for _, r := range after {
			t.Logf("#%d %v %q", r.Seq, r.Kind, r.Description)
		}
		t.Fatalf("%d records after the restart, want the %d before and the startup's", len(after), len(before))
	}
	for i, rec := range before {
		if after[i].Seq != rec.Seq || after[i].Description != rec.Description {
			t.Errorf("record %d: #%d %q, want #%d %q", i, after[i].Seq, after[i].Description, rec.Seq, rec.Description)
		}
		if got, ok := second.Record(rec.Seq); !ok || got.Description != rec.Description {
			t.Errorf("Record(%d): %v %q", rec.Seq, ok, got.Description)
		}
	}
	if after[len(after)-1].Seq <= last+10 {
		t.Errorf("the startup is #%d, not after %d", after[len(after)-1].Seq, last+10)
	}
	got := second.Timeline("x/a")
	if len(got) < len(timeline) {
		t.Fatalf("timeline after the restart: %d entries, want at least %d", len(got), len(timeline))
	}
	for i, e := range timeline {
		if got[i].Seq != e.Seq || got[i].Op != e.Op || got[i].Value.(*wrapperspb.StringValue).GetValue() != e.Value.(*wrapperspb.StringValue).GetValue() {
			t.Errorf("timeline %d: #%d %v %v, want #%d %v %v", i, got[i].Seq, got[i].Op, got[i].Value, e.Seq, e.Op, e.Value)
		}
	}
	snap2, err := second.GraphSnapshot(before[1].Seq)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap2.Nodes) != 1 || len(snap.Nodes) != 1 || snap2.Nodes[0].Value.(*wrapperspb.StringValue).GetValue() != "2" {
		t.Errorf("graph as of #%d after the restart: %+v, before: %+v", before[1].Seq, snap2.Nodes, snap.Nodes)
	}
}
