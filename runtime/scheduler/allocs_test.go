//go:build !race

// The race detector changes what allocates: this file is left out of
// -race builds.

package scheduler_test

import (
	"context"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestCommitAllocations bounds the allocations of a transaction that
// updates one value (workload W's step b), with the default settings: the
// transaction log on (slog's TextHandler) and the history on. Issue 28
// took them from 14 to 7 (one of them is the test descriptor's list of
// dependencies).
func TestCommitAllocations(t *testing.T) {
	w := buildWorkload(100)
	ws := newSched(t, w)
	defer ws.close(t)
	ws.createAll(t)
	const runs = 200
	vals := make([]*wrapperspb.UInt64Value, runs+1)
	for i := range vals {
		vals[i] = w.routeValue(i, 1)
	}
	ctx, i := context.Background(), 0
	allocs := testing.AllocsPerRun(runs, func() {
		if _, err := ws.s.Txn().Set(w.routeKeys[i], vals[i]).Commit(ctx); err != nil {
			t.Fatal(err)
		}
		i++
	})
	t.Logf("%.1f allocations per transaction", allocs)
	// 7: an updated route over the same interface keeps its node's
	// dependency lists (graph.SetDeps), with no list of its applied value.
	if allocs > 7 {
		t.Errorf("a one-value transaction allocates %.1f times, want at most 7", allocs)
	}
	ws.txns += runs + 1
	ws.checkLog(t)
}
