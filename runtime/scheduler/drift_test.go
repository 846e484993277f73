package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// driftSetup makes a scheduler with one harness descriptor "a" (policy
// p) holding a/x = "mtu:1500" and a/y = "dep:a/x", both CONFIGURED.
func driftSetup(t *testing.T, p kv.DriftPolicy, opts ...scheduler.Option) (*scheduler.Scheduler, *kvtest.SB) {
	t.Helper()
	sb := kvtest.NewSB()
	s := newScheduler(t, opts...)
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "a", KeyTemplate: "a/{name}", DriftPolicy: p})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn().Set("a/x", kvtest.Value("mtu:1500")).Set("a/y", kvtest.Value("dep:a/x")).Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	sb.TakeCalls()
	return s, sb
}

func checkDrift(t *testing.T, s *scheduler.Scheduler, keys ...string) *scheduler.Result {
	t.Helper()
	res, err := s.CheckDrift(context.Background(), scheduler.DriftCheck{Keys: keys})
	if err != nil {
		t.Fatalf("CheckDrift: %v", err)
	}
	return res
}

func hasFlag(ops []scheduler.Op, key string, f scheduler.Flags) bool {
	for _, op := range ops {
		if op.Key == key && op.Flags&f == f {
			return true
		}
	}
	return false
}

func TestDriftRepairChanged(t *testing.T) {
	t.Parallel()
	s, sb := driftSetup(t, kv.DriftRepair)
	if res := checkDrift(t, s, "a/x", "a/y"); res.Seq != 0 || len(sb.TakeCalls()) != 1 {
		t.Fatalf("a check with no drift recorded a transaction (seq %d) or made calls other than a retrieve", res.Seq)
	}
	sb.Put("a/x", "mtu:1400")
	res := checkDrift(t, s, "a/x")
	if res.Seq == 0 || res.Kind != scheduler.DriftCheckTxn || !hasFlag(res.Executed, "a/x", scheduler.FlagDrifted) {
		t.Fatalf("the drift was not recorded:\n%s", scheduler.FormatOps(res.Executed))
	}
	if v, _ := sb.Get("a/x"); v != "mtu:1500" {
		t.Errorf("not repaired: the southbound holds %q", v)
	}
	if st := s.Status("a/x"); st.State != scheduler.CONFIGURED || st.Drift != nil {
		t.Errorf("after the repair: %v, drift %v", st.State, st.Drift)
	}
}

func TestDriftRepairMissing(t *testing.T) {
	t.Parallel()
	s, sb := driftSetup(t, kv.DriftRepair)
	sb.Remove("a/x")
	res := checkDrift(t, s, "a/x")
	if !hasFlag(res.Executed, "a/x", scheduler.FlagDrifted|scheduler.FlagMissing) {
		t.Fatalf("not flagged DRIFTED MISSING:\n%s", scheduler.FormatOps(res.Executed))
	}
	if v, ok := sb.Get("a/x"); !ok || v != "mtu:1500" {
		t.Errorf("not created again: %q %v", v, ok)
	}
	if st := s.Status("a/x"); st.State != scheduler.CONFIGURED {
		t.Errorf("a/x: %v", st.State)
	}
	if st := s.Status("a/y"); st.State != scheduler.CONFIGURED {
		t.Errorf("a/y, which needs a/x: %v", st.State)
	}
}

func TestDriftReport(t *testing.T) {
	t.Parallel()
	s, sb := driftSetup(t, kv.DriftReport)
	sb.Put("a/x", "mtu:1400")
	checkDrift(t, s, "a/x")
	if v, _ := sb.Get("a/x"); v != "mtu:1400" {
		t.Errorf("report changed the southbound: %q", v)
	}
	st := s.Status("a/x")
	if st.State != scheduler.DRIFTED || st.Drift == nil || st.Drift.Policy != kv.DriftReport || len(st.Drift.Diff) != 1 ||
		st.Drift.Diff[0].Path != "value" || st.Drift.Diff[0].Want != `"mtu:1500"` || st.Drift.Diff[0].Found != `"mtu:1400"` {
		t.Fatalf("status: %v %+v", st.State, st.Drift)
	}
	if !errors.Is(st.LastErr, scheduler.ErrDrifted) {
		t.Errorf("LastErr %v is not ErrDrifted", st.LastErr)
	}
	// Reported once: a second check of the same drift records nothing.
	if res := checkDrift(t, s, "a/x"); res.Seq != 0 {
		t.Errorf("the same drift recorded again:\n%s", scheduler.FormatOps(res.Executed))
	}
	// Put back by someone: CONFIGURED again, with no call.
	sb.Put("a/x", "mtu:1500")
	sb.TakeCalls()
	checkDrift(t, s, "a/x")
	if st := s.Status("a/x"); st.State != scheduler.CONFIGURED || st.Drift != nil {
		t.Errorf("put back: %v %v", st.State, st.Drift)
	}
	for _, c := range sb.TakeCalls() {
		if c.Op != "retrieve" {
			t.Errorf("call %v", c)
		}
	}
	// Gone: MISSING, not created again.
	sb.Remove("a/x")
	checkDrift(t, s, "a/x")
	if _, ok := sb.Get("a/x"); ok {
		t.Error("report created the value again")
	}
	if st := s.Status("a/x"); st.State != scheduler.MISSING || st.Drift == nil || !st.Drift.Missing {
		t.Errorf("gone: %v %+v", st.State, st.Drift)
	}
	// A downstream resync repairs it, as before.
	if _, err := s.Txn(scheduler.DownstreamResync()).Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := s.Status("a/x"); st.State != scheduler.CONFIGURED {
		t.Errorf("after a downstream resync: %v", st.State)
	}
}

func TestDriftAdopt(t *testing.T) {
	t.Parallel()
	s, sb := driftSetup(t, kv.DriftAdopt)
	sb.Put("a/x", "mtu:1400")
	res := checkDrift(t, s, "a/x")
	if !hasFlag(res.Executed, "a/x", scheduler.FlagDrifted|scheduler.FlagAdopted) {
		t.Fatalf("not flagged DRIFTED ADOPTED:\n%s", scheduler.FormatOps(res.Executed))
	}
	st := s.Status("a/x")
	if st.State != scheduler.CONFIGURED || kvtest.Text(st.Value) != "mtu:1400" || kvtest.Text(st.Applied) != "mtu:1400" {
		t.Errorf("adopted: %v intended %q applied %q", st.State, kvtest.Text(st.Value), kvtest.Text(st.Applied))
	}
	for _, c := range sb.TakeCalls() {
		if c.Op != "retrieve" {
			t.Errorf("adopt made a call: %v", c)
		}
	}
}

func TestDriftPolicyOverride(t *testing.T) {
	t.Parallel()
	s, sb := driftSetup(t, kv.DriftRepair, scheduler.WithDriftPolicy(func(key, desc string) (kv.DriftPolicy, bool) {
		return kv.DriftReport, key == "a/x" && desc == "a"
	}))
	sb.Put("a/x", "mtu:1400")
	checkDrift(t, s, "a/x")
	if st := s.Status("a/x"); st.State != scheduler.DRIFTED {
		t.Errorf("overridden to report: %v", st.State)
	}
}

func TestDriftCheckUnknownDescriptor(t *testing.T) {
	t.Parallel()
	s, _ := driftSetup(t, kv.DriftRepair)
	_, err := s.CheckDrift(context.Background(), scheduler.DriftCheck{Descriptors: []string{"nope"}})
	if err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("err = %v", err)
	}
}

// TestDriftRepairsBackOff: a value that something reverts every 100 ms,
// checked every 10 ms, is repaired a bounded number of times: the
// repairs back off exponentially, and the status says so.
func TestDriftRepairsBackOff(t *testing.T) {
	t.Parallel()
	s, sb := driftSetup(t, kv.DriftRepair, scheduler.WithDriftBackoff(100*time.Millisecond, 10*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				sb.Put("a/x", "mtu:1400")
			}
		}
	}()
	const window = 2 * time.Second
	start := time.Now()
	backedOff := false
	for time.Since(start) < window {
		checkDrift(t, s, "a/x")
		if d := s.Status("a/x").Drift; d != nil && !d.BackoffUntil.IsZero() {
			backedOff = true
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	repairs := 0
	for _, c := range sb.Calls() {
		if c.Key == "a/x" && c.Op != "retrieve" {
			repairs++
		}
	}
	// Unbounded, about one repair per revert (20); with the backoff,
	// repairs at 0, 0.1, 0.2, 0.4, 0.8, 1.6 s at most.
	if repairs < 2 || repairs > 8 {
		t.Errorf("%d repairs in %s of reverts every 100 ms: want 2..8", repairs, window)
	}
	if !backedOff {
		t.Error("the status never said that repairs back off")
	}
}

// TestPeriodicDriftCheck: with WithDriftCheck, a value removed behind our
// back is found and created again with no check asked for.
func TestPeriodicDriftCheck(t *testing.T) {
	t.Parallel()
	_, sb := driftSetup(t, kv.DriftRepair, scheduler.WithDriftCheck(100*time.Millisecond, 1))
	sb.Remove("a/y")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if v, ok := sb.Get("a/y"); ok && v == "dep:a/x" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the periodic check did not create a/y again")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPeriodicDriftCheckQuiet: over a southbound that holds what was
// applied (values with metadata), the periodic check reads and records
// nothing: no transaction, whatever the number of passes.
func TestPeriodicDriftCheckQuiet(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := newScheduler(t, scheduler.WithDriftCheck(20*time.Millisecond, 1))
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "a", KeyTemplate: "a/{name}", WithMetadata: true})); err != nil {
		t.Fatal(err)
	}
	res, err := s.Txn().Set("a/x", kvtest.Value("mtu:1500")).Set("a/y", kvtest.Value("dep:a/x")).Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		reads := 0
		for _, c := range sb.Calls() {
			if c.Op == "retrieve" {
				reads++
			}
		}
		if reads >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d reads of the periodic check in 20s", reads)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if h := s.History(); len(h) != 1 || h[0].Seq != res.Seq {
		t.Errorf("the periodic check recorded transactions: %d records", len(h))
	}
}
