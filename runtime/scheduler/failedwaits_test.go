package scheduler_test

import (
	"context"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestFailedValueWaitsForItsGoneDependency: a value whose create failed
// holds nothing; when what it needs goes away, it waits for it again
// (PENDING) rather than staying FAILED with the error of a create that
// the going made fail. Seen on a kernel: a route found gone by a drift
// check (its interface being deleted by another program) failed to be
// re-created, and stayed FAILED after the interface was gone.
func TestFailedValueWaitsForItsGoneDependency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, sb := harnessScheduler(t, "iface", "route")
	if _, err := s.Notify(ctx, scheduler.Notification{Key: "iface/x", Value: kvtest.Value("up")}); err != nil {
		t.Fatal(err)
	}
	sb.Fail("route/r", kvtest.Failure{Op: "create", Terminal: true})
	if _, err := s.Txn().Set("route/r", kvtest.Value("dep:iface/x")).Commit(ctx); err == nil {
		t.Fatal("the create did not fail")
	}
	if st := s.Status("route/r"); st.State != scheduler.FAILED {
		t.Fatalf("route/r: %s, want FAILED", st.State)
	}
	if _, err := s.Notify(ctx, scheduler.Notification{Key: "iface/x"}); err != nil {
		t.Fatal(err)
	}
	if st := s.Status("route/r"); st.State != scheduler.PENDING {
		t.Errorf("route/r after iface/x went: %s (%v), want PENDING", st.State, st.LastErr)
	}
	if _, ok := sb.Values()["route/r"]; ok {
		t.Error("route/r is in the southbound")
	}
}
