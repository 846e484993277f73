package metrics_test

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/kvdescriptor/kvdescriptor/runtime/metrics"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func newMetrics(t *testing.T, opts ...metrics.Option) (*metrics.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

// family returns the gathered family of a metric (nil when absent).
func family(t *testing.T, g prometheus.Gatherer, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

// labelString renders a metric's labels as name=value,... sorted, leaving
// out the names in skip.
func labelString(m *dto.Metric, skip ...string) string {
	var parts []string
	for _, l := range m.GetLabel() {
		if !slices.Contains(skip, l.GetName()) {
			parts = append(parts, l.GetName()+"="+l.GetValue())
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// counters returns the non-zero series of a counter or gauge by labels,
// and the number of series.
func counters(t *testing.T, g prometheus.Gatherer, name string) (map[string]float64, int) {
	t.Helper()
	mf := family(t, g, name)
	if mf == nil {
		return nil, 0
	}
	out := map[string]float64{}
	for _, m := range mf.GetMetric() {
		v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
		if v != 0 {
			out[labelString(m)] = v
		}
	}
	return out, len(mf.GetMetric())
}

// histograms returns sample count and sum of each series of a histogram.
func histograms(t *testing.T, g prometheus.Gatherer, name string) map[string][2]float64 {
	t.Helper()
	mf := family(t, g, name)
	if mf == nil {
		return nil
	}
	out := map[string][2]float64{}
	for _, m := range mf.GetMetric() {
		h := m.GetHistogram()
		if h.GetSampleCount() != 0 {
			out[labelString(m)] = [2]float64{float64(h.GetSampleCount()), h.GetSampleSum()}
		}
	}
	return out
}

func TestTransactionOutcomes(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	start := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	fail := scheduler.KeyError{Key: "a", Op: scheduler.OpCreate, Err: errors.New("boom")}
	records := []*scheduler.Record{
		{Kind: scheduler.NBTxn, Start: start, End: start.Add(2 * time.Millisecond)},
		{Kind: scheduler.NBTxn, Start: start, End: start.Add(3 * time.Millisecond)},
		{Kind: scheduler.NBTxn, Errors: []scheduler.KeyError{fail}, Start: start, End: start.Add(5 * time.Millisecond)},
		{Kind: scheduler.NBTxn, Errors: []scheduler.KeyError{fail}, Reverted: true, Start: start, End: start.Add(time.Second)},
		{Kind: scheduler.NBTxn, DryRun: true, Start: start, End: start.Add(time.Millisecond)},
		{Kind: scheduler.SBNotification, Start: start, End: start},
		{Kind: scheduler.RetryTxn, Errors: []scheduler.KeyError{fail}, Start: start, End: start.Add(time.Millisecond)},
		{Kind: scheduler.DownstreamResyncTxn, Start: start, End: start.Add(40 * time.Millisecond)},
		// A record whose end is before its start counts as zero seconds.
		{Kind: scheduler.FullResyncTxn, Start: start, End: start.Add(-time.Second)},
		{Kind: scheduler.TxnKind(200), Start: start, End: start.Add(time.Millisecond)},
		nil, // ignored
	}
	for _, rec := range records {
		m.TxnDone(rec)
	}
	got, n := counters(t, reg, "kvdescriptor_scheduler_transactions_total")
	want := map[string]float64{
		"kind=nb,outcome=ok":                2,
		"kind=nb,outcome=error":             1,
		"kind=nb,outcome=reverted":          1,
		"kind=nb,outcome=dry_run":           1,
		"kind=sb_notification,outcome=ok":   1,
		"kind=retry,outcome=error":          1,
		"kind=downstream_resync,outcome=ok": 1,
		"kind=full_resync,outcome=ok":       1,
		"kind=unknown,outcome=ok":           1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transactions_total (-want +got):\n%s", diff)
	}
	// Every known kind and outcome is there from the start (8 x 4), plus
	// the unknown kind.
	if n != 8*4+1 {
		t.Errorf("transactions_total has %d series, want %d", n, 8*4+1)
	}
	durations := histograms(t, reg, "kvdescriptor_scheduler_transaction_duration_seconds")
	wantDur := map[string][2]float64{
		"kind=nb":                {5, 0.002 + 0.003 + 0.005 + 1 + 0.001},
		"kind=sb_notification":   {1, 0},
		"kind=retry":             {1, 0.001},
		"kind=downstream_resync": {1, 0.040},
		"kind=full_resync":       {1, 0},
		"kind=unknown":           {1, 0.001},
	}
	if diff := cmp.Diff(wantDur, durations, cmp.Comparer(func(a, b [2]float64) bool {
		return a[0] == b[0] && abs(a[1]-b[1]) < 1e-9
	})); diff != "" {
		t.Errorf("transaction_duration_seconds {count, sum} (-want +got):\n%s", diff)
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func TestRetries(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	m.TxnDone(&scheduler.Record{Kind: scheduler.RetryTxn, Executed: []scheduler.Op{
		{Key: "a", Kind: scheduler.OpCreate, Flags: scheduler.FlagRetry},
		{Key: "a/d", Kind: scheduler.OpCreate, Flags: scheduler.FlagRetry | scheduler.FlagDerived},
		{Key: "b", Kind: scheduler.OpNone, Flags: scheduler.FlagRetry | scheduler.FlagIsPending}, // no call
		{Key: "c", Kind: scheduler.OpUpdate},                                                     // not a retry
	}})
	m.TxnDone(&scheduler.Record{Kind: scheduler.RetryTxn, Executed: []scheduler.Op{
		{Key: "a", Kind: scheduler.OpDelete, Flags: scheduler.FlagRetry | scheduler.FlagRevert},
	}})
	if got := single(t, reg, "kvdescriptor_scheduler_retries_total"); got != 3 {
		t.Errorf("retries_total = %v, want 3", got)
	}
}

func TestOperations(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	boom := errors.New("boom")
	m.OpDone("iface", scheduler.OpCreate, 20*time.Microsecond, nil)
	m.OpDone("iface", scheduler.OpCreate, 30*time.Microsecond, boom)
	m.OpDone("iface", scheduler.OpCreate, 50*time.Microsecond, nil)
	m.OpDone("iface", scheduler.OpDelete, time.Millisecond, nil)
	m.OpDone("route", scheduler.OpUpdate, 2*time.Second, boom)
	m.OpDone("route", scheduler.OpRetrieve, 5*time.Millisecond, nil)
	m.OpDone("route", scheduler.OpRetrieve, -time.Millisecond, nil) // a clock step: zero

	got, _ := counters(t, reg, "kvdescriptor_scheduler_operations_total")
	want := map[string]float64{
		"descriptor=iface,op=create,result=ok":    2,
		"descriptor=iface,op=create,result=error": 1,
		"descriptor=iface,op=delete,result=ok":    1,
		"descriptor=route,op=update,result=error": 1,
		"descriptor=route,op=retrieve,result=ok":  2,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("operations_total (-want +got):\n%s", diff)
	}
	// The histogram's buckets, exactly, for one series.
	const exposition = `
# HELP kvdescriptor_scheduler_operation_duration_seconds Duration of southbound calls by descriptor and operation.
# TYPE kvdescriptor_scheduler_operation_duration_seconds histogram
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="1e-05"} 0
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="2.5e-05"} 0
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="5e-05"} 0
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="0.0001"} 0
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="0.00025"} 0
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="0.0005"} 0
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="0.001"} 0
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="0.0025"} 0
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="0.005"} 0
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="0.01"} 0
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="0.025"} 0
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="0.05"} 0
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="0.1"} 0
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="0.25"} 0
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="0.5"} 0
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="1"} 0
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="2.5"} 1
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="5"} 1
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="10"} 1
kvdescriptor_scheduler_operation_duration_seconds_bucket{descriptor="route",op="update",le="+Inf"} 1
kvdescriptor_scheduler_operation_duration_seconds_sum{descriptor="route",op="update"} 2
kvdescriptor_scheduler_operation_duration_seconds_count{descriptor="route",op="update"} 1
`
	only := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mf := family(t, reg, "kvdescriptor_scheduler_operation_duration_seconds")
		mf.Metric = slices.DeleteFunc(mf.Metric, func(m *dto.Metric) bool {
			return labelString(m) != "descriptor=route,op=update"
		})
		return []*dto.MetricFamily{mf}, nil
	})
	if err := testutil.GatherAndCompare(only, strings.NewReader(exposition)); err != nil {
		t.Error(err)
	}
	durations := histograms(t, reg, "kvdescriptor_scheduler_operation_duration_seconds")
	wantDur := map[string][2]float64{
		"descriptor=iface,op=create":   {3, 100e-6},
		"descriptor=iface,op=delete":   {1, 1e-3},
		"descriptor=route,op=update":   {1, 2},
		"descriptor=route,op=retrieve": {2, 5e-3},
	}
	if diff := cmp.Diff(wantDur, durations, cmp.Comparer(func(a, b [2]float64) bool {
		return a[0] == b[0] && abs(a[1]-b[1]) < 1e-9
	})); diff != "" {
		t.Errorf("operation_duration_seconds {count, sum} (-want +got):\n%s", diff)
	}
}

func TestOperationsConcurrent(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	const workers, calls = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				m.OpDone(fmt.Sprintf("d%d", i%3), scheduler.OpCreate, time.Microsecond, nil)
				if w == 0 && i%100 == 0 {
					m.TxnDone(&scheduler.Record{Kind: scheduler.NBTxn})
				}
			}
		}()
	}
	wg.Wait()
	got, _ := counters(t, reg, "kvdescriptor_scheduler_operations_total")
	var total float64
	for _, v := range got {
		total += v
	}
	if total != workers*calls || len(got) != 3 {
		t.Errorf("operations_total: %v series summing to %v, want 3 summing to %d", got, total, workers*calls)
	}
	txns, _ := counters(t, reg, "kvdescriptor_scheduler_transactions_total")
	if txns["kind=nb,outcome=ok"] != calls/100 {
		t.Errorf("transactions_total = %v, want nb ok = %d", txns, calls/100)
	}
}

// fakeSource is a Source with settable figures.
type fakeSource struct {
	mu     sync.Mutex
	queue  int
	counts map[scheduler.State]int
}

func (f *fakeSource) QueueLen() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queue
}

func (f *fakeSource) StateCounts() map[scheduler.State]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[scheduler.State]int{}
	for k, v := range f.counts {
		out[k] = v
	}
	return out
}

func TestAttach(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	src := &fakeSource{queue: 3, counts: map[scheduler.State]int{scheduler.CONFIGURED: 5, scheduler.PENDING: 2}}
	if err := m.Attach(src); err != nil {
		t.Fatal(err)
	}
	const exposition = `
# HELP kvdescriptor_scheduler_queue_length Transactions and notifications waiting to run.
# TYPE kvdescriptor_scheduler_queue_length gauge
kvdescriptor_scheduler_queue_length %d
# HELP kvdescriptor_scheduler_values Values known to the scheduler, by state.
# TYPE kvdescriptor_scheduler_values gauge
kvdescriptor_scheduler_values{state="CONFIGURED"} %d
kvdescriptor_scheduler_values{state="DISCOVERED"} 0
kvdescriptor_scheduler_values{state="DRIFTED"} 0
kvdescriptor_scheduler_values{state="FAILED"} %d
kvdescriptor_scheduler_values{state="INVALID"} 0
kvdescriptor_scheduler_values{state="MISSING"} 0
kvdescriptor_scheduler_values{state="NONEXISTENT"} 0
kvdescriptor_scheduler_values{state="OBTAINED"} 0
kvdescriptor_scheduler_values{state="PENDING"} %d
kvdescriptor_scheduler_values{state="REMOVED"} 0
kvdescriptor_scheduler_values{state="RETRYING"} 0
kvdescriptor_scheduler_values{state="UNIMPLEMENTED"} 0
`
	names := []string{"kvdescriptor_scheduler_queue_length", "kvdescriptor_scheduler_values"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(exposition, 3, 5, 0, 2)), names...); err != nil {
		t.Error(err)
	}
	// Read at scrape time: a change shows at the next scrape.
	src.mu.Lock()
	src.queue = 0
	src.counts = map[scheduler.State]int{scheduler.CONFIGURED: 6, scheduler.FAILED: 1}
	src.mu.Unlock()
	if err := testutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(exposition, 0, 6, 1, 0)), names...); err != nil {
		t.Error(err)
	}

	if err := m.Attach(&fakeSource{}); !errors.Is(err, metrics.ErrAttached) {
		t.Errorf("second Attach: %v, want ErrAttached", err)
	}
	if !m.Detach() {
		t.Error("Detach reported nothing attached")
	}
	for _, name := range names {
		if mf := family(t, reg, name); mf != nil {
			t.Errorf("after Detach the registry still has %s", name)
		}
	}
	if m.Detach() {
		t.Error("a second Detach reported a source")
	}
	if err := m.Attach(src); err != nil {
		t.Errorf("Attach after Detach: %v", err)
	}
	if err := m.Attach(nil); err == nil {
		t.Error("Attach(nil) succeeded")
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
	first, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	// A second Metrics in the same registry without labels to tell them
	// apart is refused, and leaves the registry as it was.
	if _, err := metrics.New(reg); err == nil || !strings.Contains(err.Error(), "metrics: register") {
		t.Errorf("second New on one registry: %v, want a registration error", err)
	}
	first.OpDone("d", scheduler.OpCreate, 0, nil)
	if got, _ := counters(t, reg, "kvdescriptor_scheduler_operations_total"); got["descriptor=d,op=create,result=ok"] != 1 {
		t.Errorf("the first Metrics stopped working after a failed New: %v", got)
	}

	tests := []struct {
		name string
		opts []metrics.Option
		want string
	}{
		{"no buckets", []metrics.Option{metrics.WithOperationBuckets()}, "no operation duration buckets"},
		{"unsorted buckets", []metrics.Option{metrics.WithTransactionBuckets(1, 0.5)}, "transaction duration buckets [1 0.5] are not strictly increasing"},
		{"equal buckets", []metrics.Option{metrics.WithOperationBuckets(1, 1)}, "not strictly increasing"},
		{"label clash", []metrics.Option{metrics.WithConstLabels(prometheus.Labels{"state": "x"})}, `constant label "state"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := metrics.New(prometheus.NewRegistry(), tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestConstLabelsTellSchedulersApart(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	a, err := metrics.New(reg, metrics.WithConstLabels(prometheus.Labels{"instance": "a"}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := metrics.New(reg, metrics.WithConstLabels(prometheus.Labels{"instance": "b"}),
		metrics.WithOperationBuckets(0.001, 0.01))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Attach(&fakeSource{queue: 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.Attach(&fakeSource{queue: 2}); err != nil {
		t.Fatal(err)
	}
	a.OpDone("d", scheduler.OpCreate, time.Millisecond, nil)
	b.OpDone("d", scheduler.OpCreate, time.Millisecond, errors.New("x"))
	b.OpDone("d", scheduler.OpCreate, time.Millisecond, errors.New("x"))
	got, _ := counters(t, reg, "kvdescriptor_scheduler_operations_total")
	want := map[string]float64{
		"descriptor=d,instance=a,op=create,result=ok":    1,
		"descriptor=d,instance=b,op=create,result=error": 2,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("operations_total (-want +got):\n%s", diff)
	}
	queues, _ := counters(t, reg, "kvdescriptor_scheduler_queue_length")
	if diff := cmp.Diff(map[string]float64{"instance=a": 1, "instance=b": 2}, queues); diff != "" {
		t.Errorf("queue_length (-want +got):\n%s", diff)
	}
	mf := family(t, reg, "kvdescriptor_scheduler_operation_duration_seconds")
	for _, m := range mf.GetMetric() {
		wantBuckets := len([]float64{10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5, 5, 10})
		if labelString(m, "descriptor", "op") == "instance=b" {
			wantBuckets = 2
		}
		if n := len(m.GetHistogram().GetBucket()); n != wantBuckets {
			t.Errorf("%s: %d buckets, want %d", labelString(m), n, wantBuckets)
		}
	}
}

// TestLowCardinality checks that no metric has a label beyond the fixed
// set, whatever keys and errors the scheduler reports.
func TestLowCardinality(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	if err := m.Attach(&fakeSource{counts: map[scheduler.State]int{scheduler.FAILED: 1}}); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		key := fmt.Sprintf("iface/eth%d", i)
		m.OpDone("iface", scheduler.OpCreate, time.Microsecond, fmt.Errorf("create %s: failed", key))
		m.TxnDone(&scheduler.Record{Seq: uint64(i + 1), Kind: scheduler.NBTxn, Description: key,
			Errors:   []scheduler.KeyError{{Key: key, Op: scheduler.OpCreate, Err: errors.New("failed")}},
			Executed: []scheduler.Op{{Key: key, Kind: scheduler.OpCreate, Flags: scheduler.FlagRetry}}})
	}
	allowed := []string{"kind", "outcome", "descriptor", "op", "result", "state", "le", "policy"}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := 0
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "kvdescriptor_scheduler_") {
			t.Errorf("metric %s is not named kvdescriptor_scheduler_*", mf.GetName())
		}
		for _, m := range mf.GetMetric() {
			series++
			for _, l := range m.GetLabel() {
				if !slices.Contains(allowed, l.GetName()) {
					t.Errorf("%s has label %s=%q", mf.GetName(), l.GetName(), l.GetValue())
				}
			}
		}
	}
	// 32 transaction counters, 8 transaction histograms, 1 operation
	// counter with an error result (the ok one exists at zero), 1
	// operation histogram, retries, queue, 12 states, 6 drift counters
	// (2 kinds, 3 policies) and the drift repairs.
	if want := 32 + 8 + 2 + 1 + 1 + 1 + 12 + 6 + 1; series != want {
		t.Errorf("%d series after 50 keys, want %d", series, want)
	}
}
