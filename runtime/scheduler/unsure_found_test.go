package scheduler_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestUnknownOutcomeFoundIsKnown: a create or an update fails and its
// read-back fails (a value of unknown outcome, its error matching
// ErrOutcomeUnknown). doc.go: the next transaction reads it back and
// takes what it finds first, as a fact a revert starts from. Found with
// what the call was about, it is CONFIGURED with no error and no call,
// whatever that transaction does (a failed reverting one had restored
// the old error); found without it (the call changed nothing), its
// failure stands without ErrOutcomeUnknown until a call brings it to its
// intent. The read-back is made by the next plain, retry, dry-run then
// plain, reverting (succeeding or failing) or resync transaction.
func TestUnknownOutcomeFoundIsKnown(t *testing.T) {
	t.Parallel()
	hows := []string{"txn", "fails", "revert", "revert-fails", "dry-run", "retry", "downstream", "full", "upstream"}
	modes := []string{"plain", "batch", "concurrent", "noupdate", "unapplied"}
	for _, op := range []string{"create", "update"} {
		for _, how := range hows {
			for _, mode := range modes {
				t.Run(op+"/"+how+"/"+mode, func(t *testing.T) {
					t.Parallel()
					testUnknownOutcomeFound(t, op, how, mode)
				})
			}
		}
	}
}

func testUnknownOutcomeFound(t *testing.T, op, how, mode string) {
	s := newScheduler(t, scheduler.WithBatchSize(8))
	sb := kvtest.NewSB()
	c := kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}", Batch: mode == "batch", NoUpdate: mode == "noupdate"}
	if mode == "concurrent" {
		c.Concurrent = 4
	}
	if err := s.Register(harness(t, sb, c), harness(t, sb, kvtest.Config{Name: "x", KeyTemplate: "x/{name}"})); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if op == "update" {
		if _, err := s.Txn().Set("iface/a", kvtest.Value("mtu=1")).Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	failOp := op
	if mode == "noupdate" {
		failOp = "create" // of the re-create
	}
	sb.Fail("iface/a", kvtest.Failure{Op: failOp, Partial: mode != "unapplied", Terminal: how != "retry"})
	sb.Fail("iface", kvtest.Failure{Op: "retrieve"})
	var opts []scheduler.TxnOption
	if how == "retry" {
		opts = append(opts, scheduler.Retry(scheduler.RetryPolicy{Period: time.Millisecond, MaxAttempts: 3}))
	}
	if _, err := s.Txn(opts...).Set("iface/a", kvtest.Value("mtu=2")).Commit(ctx); !errors.Is(err, scheduler.ErrOutcomeUnknown) {
		t.Fatalf("commit error %v, want one matching ErrOutcomeUnknown", err)
	}
	calls := len(sb.Calls())
	var err error
	switch how {
	case "txn", "fails", "revert", "revert-fails":
		if how == "fails" || how == "revert-fails" {
			sb.Fail("x/1", kvtest.Failure{Op: "create", Terminal: true})
		}
		var opts []scheduler.TxnOption
		if how == "revert" || how == "revert-fails" {
			opts = append(opts, scheduler.Revert())
		}
		_, err = s.Txn(opts...).Set("x/1", kvtest.Value("")).Commit(ctx)
		if how == "fails" || how == "revert-fails" {
			if err == nil {
				t.Error("commit: no error, want x/1's")
			}
			err = nil
		}
	case "dry-run":
		if _, err = s.Txn(scheduler.DryRun()).Set("x/1", kvtest.Value("")).Commit(ctx); err == nil {
			_, err = s.Txn().Set("x/1", kvtest.Value("")).Commit(ctx)
		}
	case "retry":
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if s.Status("iface/a").State != scheduler.RETRYING {
				break
			}
		}
	case "downstream":
		_, err = s.Txn(scheduler.DownstreamResync()).Commit(ctx)
	case "full":
		_, err = s.Txn(scheduler.FullResync()).Set("iface/a", kvtest.Value("mtu=2")).Commit(ctx)
	case "upstream":
		_, err = s.Txn(scheduler.UpstreamResync()).Set("iface/a", kvtest.Value("mtu=2")).Commit(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	st := s.Status("iface/a")
	if mode == "unapplied" && how == "revert-fails" {
		// Its call, made again, is undone: its failure of before stands.
		if st.State != scheduler.FAILED || st.LastErr == nil || errors.Is(st.LastErr, scheduler.ErrOutcomeUnknown) {
			t.Errorf("status %s, error %v; want FAILED with the call's error, not ErrOutcomeUnknown", st.State, st.LastErr)
		}
	} else if st.State != scheduler.CONFIGURED || st.LastErr != nil {
		t.Errorf("status %s, error %v; want CONFIGURED with no error", st.State, st.LastErr)
	}
	for _, c := range sb.Calls()[calls:] {
		if c.Key == "iface/a" && mode != "unapplied" && how != "full" {
			t.Errorf("call %v on a value found as wanted", c)
		}
	}
}
