package scheduler_test

import (
	"context"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestSeqAfter: a scheduler given the last number of a previous one
// numbers its transactions after it; a dry run still takes no number.
func TestSeqAfter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const last = 1 << 40
	s := newScheduler(t, scheduler.WithSeqAfter(last))
	if err := s.Register(harness(t, kvtest.NewSB(), kvtest.Config{Name: "x", KeyTemplate: "x/{name}"})); err != nil {
		t.Fatal(err)
	}
	dry, err := s.Txn().With(scheduler.DryRun()).Set("x/a", wrapperspb.String("0")).Commit(ctx)
	if err != nil || dry.Seq != 0 {
		t.Errorf("dry run: seq %d, error %v; want 0 and none", dry.Seq, err)
	}
	var seqs []uint64
	for _, v := range []string{"1", "2"} {
		res, err := s.Txn().Set("x/a", wrapperspb.String(v)).Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, res.Seq)
	}
	if seqs[0] <= last || seqs[1] != seqs[0]+1 {
		t.Errorf("seqs %v, want consecutive numbers after %d", seqs, last)
	}
	for _, rec := range s.History() {
		if rec.Seq <= last {
			t.Errorf("history record %d (%s) is not after %d", rec.Seq, rec.Kind, last)
		}
	}
	if st := s.Status("x/a"); st.State != scheduler.CONFIGURED {
		t.Errorf("x/a %s", st.State)
	}
}
