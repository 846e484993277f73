package nb_test

import (
	"context"
	"testing"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestMuxTxnOptions: a sink's Apply, which gives no options, makes its
// transaction with the Mux's (a retry: the failed create is tried again
// and the value ends CONFIGURED); the startup resync gets the startup's;
// a call's own option is taken after the Mux's.
func TestMuxTxnOptions(t *testing.T) {
	sb := kvtest.NewSB()
	s := agent(t, sb)
	retry := scheduler.Retry(scheduler.RetryPolicy{Period: 10 * time.Millisecond, MaxAttempts: 5})
	m := newMux(t, s, nb.WithTxnOptions(retry), nb.WithStartupTxnOptions(retry))
	file := m.Sink("file")
	sb.Fail("iface/s", kvtest.Failure{Op: "create"})
	apply(t, file, true, set("iface/s", "s")) // the startup resync
	waitState(t, s, "iface/s", scheduler.CONFIGURED)

	sb.Fail("iface/a", kvtest.Failure{Op: "create"})
	apply(t, file, false, set("iface/a", "a"))
	waitState(t, s, "iface/a", scheduler.CONFIGURED)

	// The call's Revert, with the Mux's retry: reverted at the failure.
	sb.Fail("iface/b", kvtest.Failure{Op: "create"})
	res, err := m.ApplyWith(context.Background(), "file", nb.Update{Changes: []nb.Change{set("iface/b", "b")}}, scheduler.Revert())
	if err != nil || res == nil || !res.Reverted {
		t.Fatalf("an update with Revert: %+v %v", res, err)
	}
}

// waitState waits for key to reach want, with a generous bound.
func waitState(t *testing.T, s *scheduler.Scheduler, key string, want scheduler.State) {
	t.Helper()
	end := time.Now().Add(30 * time.Second)
	for s.Status(key).State != want {
		if time.Now().After(end) {
			t.Fatalf("%s is %v, not %v, after 30 s", key, s.Status(key).State, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
