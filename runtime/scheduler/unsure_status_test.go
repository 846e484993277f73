package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestUnknownOutcomeSaysSo: a call that fails and whose read-back fails
// too leaves a value of unknown outcome, and its error matches
// ErrOutcomeUnknown at once (errors.go, doc.go), in its status and in the
// transaction's error, whatever the call: create, update or delete. It had
// said so only after a second failed read-back.
func TestUnknownOutcomeSaysSo(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"create", "update", "delete"} {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			s := newScheduler(t)
			sb := kvtest.NewSB()
			if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if op != "create" {
				if _, err := s.Txn().Set("iface/a", kvtest.Value("mtu=1")).Commit(ctx); err != nil {
					t.Fatal(err)
				}
			}
			sb.Fail("iface/a", kvtest.Failure{Op: op, Partial: true})
			sb.Fail("iface", kvtest.Failure{Op: "retrieve"})
			txn := s.Txn().Set("iface/a", kvtest.Value("mtu=2"))
			if op == "delete" {
				txn = s.Txn().Delete("iface/a")
			}
			_, err := txn.Commit(ctx)
			if !errors.Is(err, scheduler.ErrOutcomeUnknown) {
				t.Errorf("commit error %v, want one matching ErrOutcomeUnknown", err)
			}
			if st := s.Status("iface/a"); st.State != scheduler.FAILED || !errors.Is(st.LastErr, scheduler.ErrOutcomeUnknown) {
				t.Errorf("status %s, error %v; want FAILED matching ErrOutcomeUnknown", st.State, st.LastErr)
			}
		})
	}
}

// TestRevertUnknownOutcomeNoBlindUndo: a reverting transaction creates a
// value; the create applies in part and fails, and its read-back fails.
// doc.go: the revert reads it back again before it undoes it, and makes
// no blind call on it. When that read-back tells, the value is undone like
// any other (deleted: nothing was there before); when it fails too, the
// value stays FAILED, of unknown outcome, with no call made on it, until
// the read-back before the next transaction, which finds it and removes it
// (nothing intends it). (It had been undone by a blind Delete, which a
// handler without the create's metadata may answer with "not found".)
func TestRevertUnknownOutcomeNoBlindUndo(t *testing.T) {
	t.Parallel()
	for _, rereadFails := range []bool{false, true} {
		t.Run(fmt.Sprintf("reread-fails=%v", rereadFails), func(t *testing.T) {
			t.Parallel()
			s := newScheduler(t)
			sb := kvtest.NewSB()
			if err := s.Register(
				harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"}),
				harness(t, sb, kvtest.Config{Name: "x", KeyTemplate: "x/{name}"}),
			); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			sb.Fail("iface/a", kvtest.Failure{Op: "create", Partial: true, Terminal: true})
			times := 0 // once
			if rereadFails {
				times = 2
			}
			sb.Fail("iface", kvtest.Failure{Op: "retrieve", Times: times})
			res, err := s.Txn(scheduler.Revert()).Set("x/1", kvtest.Value("")).Set("iface/a", kvtest.Value("up")).Commit(ctx)
			if err == nil || !res.Reverted {
				t.Fatalf("commit: %v (reverted %v), want a reverted failure", err, res.Reverted)
			}
			_, held := sb.Get("iface/a")
			st := s.Status("iface/a")
			if !rereadFails {
				if held || st.State != scheduler.NONEXISTENT {
					t.Errorf("iface/a %s (in the southbound: %v) after a revert that read it back, want NONEXISTENT and gone", st.State, held)
				}
				return
			}
			for _, c := range sb.Calls() {
				if c.Key == "iface/a" && c.Op != "create" {
					t.Errorf("the revert called %s on iface/a, of unknown outcome", c)
				}
			}
			if !held {
				t.Fatal("the southbound does not hold iface/a: the scenario did not happen")
			}
			if st.State != scheduler.FAILED || !errors.Is(st.LastErr, scheduler.ErrOutcomeUnknown) {
				t.Errorf("iface/a %s, error %v; want FAILED matching ErrOutcomeUnknown", st.State, st.LastErr)
			}
			if _, err := s.Txn().Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if _, ok := sb.Get("iface/a"); ok {
				t.Error("iface/a, which nothing intends, is still in the southbound after the next transaction read it back")
			}
			if st := s.Status("iface/a"); st.State != scheduler.NONEXISTENT {
				t.Errorf("iface/a %s after the read-back, want NONEXISTENT", st.State)
			}
		})
	}
}
