package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/metrics"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestWithScheduler drives a real scheduler over the in-memory southbound
// through every outcome and checks the exact figures.
func TestWithScheduler(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := scheduler.New(scheduler.WithLogger(quiet), scheduler.WithObserver(m))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if err := m.Attach(s); err != nil {
		t.Fatal(err)
	}
	sb := kvtest.NewSB()
	iface, err := sb.Descriptor(kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})
	if err != nil {
		t.Fatal(err)
	}
	route, err := sb.Descriptor(kvtest.Config{Name: "route", KeyPrefix: "route/"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(iface, route); err != nil {
		t.Fatal(err)
	}
	v := kvtest.Value

	// 1. ok: one create, and a route PENDING on a missing interface.
	mustCommit(ctx, t, s.Txn().Set("iface/eth0", v("mtu=1500")).Set("route/r1", v("dep:iface/eth9")), false)
	// 2. error: a terminal failure of a create.
	sb.Fail("iface/eth1", kvtest.Failure{Op: "create", Terminal: true})
	mustCommit(ctx, t, s.Txn().Set("iface/eth1", v("x")), true)
	// 3. reverted: the second create fails, the first is undone.
	sb.Fail("route/r3", kvtest.Failure{Op: "create", Terminal: true})
	mustCommit(ctx, t, s.Txn(scheduler.Revert()).Set("route/r2", v("dep:iface/eth0")).Set("route/r3", v("dep:iface/eth0")), true)
	// 4. dry run: planned, nothing called.
	mustCommit(ctx, t, s.Txn(scheduler.DryRun()).Set("iface/eth5", v("y")), false)
	// 5. a retriable failure, repaired by one retry transaction.
	sb.Fail("iface/eth2", kvtest.Failure{Op: "create"})
	res, err := s.Txn(scheduler.Retry(scheduler.RetryPolicy{Period: time.Millisecond, MaxAttempts: 3})).
		Set("iface/eth2", v("z")).CommitAndWait(ctx)
	if err != nil {
		t.Fatalf("CommitAndWait of a repaired value: %v", err)
	}
	if len(res.Errors) != 1 {
		t.Fatalf("the retried transaction reported %v, want its one failure", res.Errors)
	}
	// 6. a notification: an OBTAINED value.
	if _, err := s.Notify(ctx, scheduler.Notification{Key: "iface/lo", Value: v("loopback")}); err != nil {
		t.Fatal(err)
	}
	// 7. a downstream resync: one Retrieve per descriptor, and the
	// FAILED eth1 created again. Transactions
	// run in order, so once it returns, the retry transaction of 5 has
	// been observed too.
	mustCommit(ctx, t, s.Txn(scheduler.DownstreamResync()), false)

	txns, _ := counters(t, reg, "kvdescriptor_scheduler_transactions_total")
	wantTxns := map[string]float64{
		"kind=nb,outcome=ok":                1,
		"kind=nb,outcome=error":             2, // 2 and the first attempt of 5
		"kind=nb,outcome=reverted":          1,
		"kind=nb,outcome=dry_run":           1,
		"kind=retry,outcome=ok":             1,
		"kind=sb_notification,outcome=ok":   1,
		"kind=downstream_resync,outcome=ok": 1,
	}
	if diff := cmp.Diff(wantTxns, txns); diff != "" {
		t.Errorf("transactions_total (-want +got):\n%s", diff)
	}
	var wantDurCounts = map[string]float64{"kind=nb": 5, "kind=retry": 1, "kind=sb_notification": 1, "kind=downstream_resync": 1}
	gotDurCounts := map[string]float64{}
	for labels, cs := range histograms(t, reg, "kvdescriptor_scheduler_transaction_duration_seconds") {
		gotDurCounts[labels] = cs[0]
		if cs[1] <= 0 {
			t.Errorf("transaction_duration_seconds{%s}: sum %v, want > 0", labels, cs[1])
		}
	}
	if diff := cmp.Diff(wantDurCounts, gotDurCounts); diff != "" {
		t.Errorf("transaction_duration_seconds counts (-want +got):\n%s", diff)
	}

	// Every call the southbound saw is counted, by descriptor, op and
	// result (the harness records a Retrieve under the descriptor's name;
	// a Delete of what is not there succeeds, by the descriptor contract).
	wantOps := map[string]float64{}
	for _, c := range sb.Calls() {
		desc := c.Key
		if c.Op != "retrieve" {
			desc, _, _ = strings.Cut(c.Key, "/")
		}
		result := "ok"
		if c.Err != nil && (c.Op != "delete" || !errors.Is(c.Err, kv.ErrNotFound)) {
			result = "error"
		}
		wantOps["descriptor="+desc+",op="+c.Op+",result="+result]++
	}
	// The calls are those of the scenario.
	if diff := cmp.Diff(map[string]float64{
		"descriptor=iface,op=create,result=ok":    3, // eth0, eth2 retried, eth1 repaired by the resync
		"descriptor=iface,op=create,result=error": 2, // eth1, eth2's first attempt
		"descriptor=route,op=create,result=ok":    1, // r2
		"descriptor=route,op=create,result=error": 1, // r3
		"descriptor=route,op=delete,result=ok":    1, // r2 reverted (r3, read back, was not applied: no undo)
		// Each failed create is read back (eth1, eth2's first attempt, r3),
		// and the resync reads each descriptor once.
		"descriptor=iface,op=retrieve,result=ok": 3,
		"descriptor=route,op=retrieve,result=ok": 2,
	}, wantOps); diff != "" {
		t.Errorf("southbound calls (-want +got):\n%s\ncalls: %v", diff, sb.Calls())
	}
	ops, _ := counters(t, reg, "kvdescriptor_scheduler_operations_total")
	// The read-backs after failed calls are calls like the others.
	if diff := cmp.Diff(wantOps, ops); diff != "" {
		t.Errorf("operations_total against the southbound's calls (-want +got):\n%s", diff)
	}
	if got := single(t, reg, "kvdescriptor_scheduler_retries_total"); got != 1 {
		t.Errorf("retries_total = %v, want 1", got)
	}

	// Values per state at scrape time equal the scheduler's, and are
	// what the scenario left.
	values, n := counters(t, reg, "kvdescriptor_scheduler_values")
	wantValues := map[string]float64{
		"state=CONFIGURED": 3, // eth0, eth1 (repaired by the resync), eth2
		"state=PENDING":    1, // r1
		"state=OBTAINED":   1, // lo
	}
	if diff := cmp.Diff(wantValues, values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	fromScheduler := map[string]float64{}
	for st, c := range s.StateCounts() {
		if c != 0 {
			fromScheduler["state="+st.String()] = float64(c)
		}
	}
	if diff := cmp.Diff(fromScheduler, values); diff != "" {
		t.Errorf("values against StateCounts (-scheduler +metrics):\n%s", diff)
	}
	if n != 12 {
		t.Errorf("values has %d series, want one per state (12)", n)
	}
	if got := single(t, reg, "kvdescriptor_scheduler_queue_length"); got != 0 {
		t.Errorf("queue_length = %v after every transaction returned", got)
	}
}

func mustCommit(ctx context.Context, t *testing.T, txn *scheduler.Txn, wantErr bool) {
	t.Helper()
	_, err := txn.Commit(ctx)
	if (err != nil) != wantErr {
		t.Fatalf("Commit: %v, want error: %v", err, wantErr)
	}
}

// single reads the value of a gathered counter or gauge with one series.
func single(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mf := family(t, g, name)
	if mf == nil || len(mf.GetMetric()) != 1 {
		t.Fatalf("%s: want exactly one series, got %v", name, mf)
	}
	return mf.GetMetric()[0].GetCounter().GetValue() + mf.GetMetric()[0].GetGauge().GetValue()
}

// TestBatches: each batch is one observation of batch_operations (its
// size), and each of its operations is counted by operations_total.
func TestBatches(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := scheduler.New(scheduler.WithLogger(quiet), scheduler.WithObserver(m))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	sb := kvtest.NewSB()
	route, err := sb.Descriptor(kvtest.Config{Name: "route", KeyPrefix: "route/", Batch: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(route); err != nil {
		t.Fatal(err)
	}
	txn := s.Txn()
	for i := range 5 {
		txn.Set(fmt.Sprintf("route/r%d", i), kvtest.Value("x"))
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := histograms(t, reg, "kvdescriptor_scheduler_batch_operations")
	if cs := got["descriptor=route,op=create"]; cs[0] != 1 || cs[1] != 5 {
		t.Errorf("batch_operations{route,create}: count %v, sum %v; want one batch of 5 (all: %v)", cs[0], cs[1], got)
	}
	ops, _ := counters(t, reg, "kvdescriptor_scheduler_operations_total")
	if n := ops["descriptor=route,op=create,result=ok"]; n != 5 {
		t.Errorf("operations_total{route,create,ok} = %v, want 5", n)
	}
}

// TestDriftMetrics: a drift check that repairs a changed value and finds a
// reported one gone counts both drifts, by kind and policy, and the
// repair's call.
func TestDriftMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := scheduler.New(scheduler.WithLogger(quiet), scheduler.WithObserver(m))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	sb := kvtest.NewSB()
	fix, _ := sb.Descriptor(kvtest.Config{Name: "fix", KeyTemplate: "fix/{name}"})
	rep, _ := sb.Descriptor(kvtest.Config{Name: "rep", KeyTemplate: "rep/{name}", DriftPolicy: kv.DriftReport})
	if err := s.Register(fix, rep); err != nil {
		t.Fatal(err)
	}
	mustCommit(ctx, t, s.Txn().Set("fix/a", kvtest.Value("x")).Set("rep/b", kvtest.Value("y")), false)
	sb.Put("fix/a", "z")
	sb.Remove("rep/b")
	if _, err := s.CheckDrift(ctx, scheduler.DriftCheck{Descriptors: []string{"fix", "rep"}}); err != nil {
		t.Fatal(err)
	}
	got, _ := counters(t, reg, "kvdescriptor_scheduler_drift_total")
	if got["kind=changed,policy=repair"] != 1 || got["kind=missing,policy=report"] != 1 || got["kind=missing,policy=repair"] != 0 {
		t.Errorf("drift_total: %v", got)
	}
	if n := single(t, reg, "kvdescriptor_scheduler_drift_repairs_total"); n != 1 {
		t.Errorf("drift_repairs_total = %v, want 1", n)
	}
}
