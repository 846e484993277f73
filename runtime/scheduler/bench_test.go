package scheduler_test

// Benchmarks of workload W (see BENCHMARKS.md at the repository root):
//
//	N interfaces, each deriving one address value; 4N routes, route k
//	depending on interface k mod N; CRUD bodies do nothing but record the
//	call. 6N values in all.
//
// The scheduler runs with its default settings (transaction log on), its log
// formatted by slog's TextHandler into io.Discard. The flag -w.txnlog=false
// turns the transaction log off, for comparison only (never the headline
// numbers).
//
//	go test -run='^$' -bench=WorkloadW -benchtime=1x ./runtime/scheduler

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
	"github.com/kvdescriptor/kvdescriptor/runtime/tracing"
)

var (
	benchTxnLog = flag.Bool("w.txnlog", true, "workload W benchmarks: keep the scheduler's transaction log on (the default setting)")
	benchBatch  = flag.Bool("w.batch", true, "workload W benchmarks: let the scheduler send batches (its handlers apply them); false sets WithBatchSize(1)")
	benchHeap   = flag.String("w.heapprofile", "", "workload W step a: write a heap profile to this file after the first commit, with the scheduler alive (run with -test.memprofilerate=1)")
	benchOwnLog = flag.Bool("w.ownlog", false, "workload W benchmarks: format the log with the scheduler's own handler (NewLogHandler, as the agent does) instead of slog's TextHandler, for comparison")
	benchTrace  = flag.Bool("w.trace", false, "workload W benchmarks: trace with OpenTelemetry (runtime/tracing), every span sampled and exported in batches to an exporter that counts and drops them")
)

// benchSpans counts the spans started by the benchmarks' tracer (-w.trace).
var benchSpans atomic.Int64

// countingExporter drops the spans it is given; spanCounter counts them
// as they start.
type countingExporter struct{}

func (countingExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (countingExporter) Shutdown(context.Context) error                             { return nil }

type spanCounter struct{}

func (spanCounter) OnStart(context.Context, sdktrace.ReadWriteSpan) { benchSpans.Add(1) }
func (spanCounter) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (spanCounter) Shutdown(context.Context) error                  { return nil }
func (spanCounter) ForceFlush(context.Context) error                { return nil }

// benchTracer returns the tracer option of -w.trace: a provider of its own
// per scheduler, shut down (its spans flushed) when the scheduler closes.
func benchTracer() (scheduler.Option, func()) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spanCounter{}), sdktrace.WithBatcher(countingExporter{}))
	return scheduler.WithTracer(tracing.NewTracer(tp.Tracer(tracing.InstrumentationName))), func() { _ = tp.Shutdown(context.Background()) }
}

// wSizes are the values of N of the benchmarks that take several.
var wSizes = []int{1_000, 10_000, 50_000}

// wRoutesPerIface is the number of routes per interface.
const wRoutesPerIface = 4

// recorder is a handler whose CRUD bodies only count the calls. Handlers run
// on the scheduler's worker; the counters are read after Commit returns.
type recorder[V proto.Message] struct {
	creates, updates, deletes, retrieves int
	// alter, when set, changes the southbound's report: Retrieve returns
	// correlate (exactly what exists) with alter applied to each item.
	alter func(i int, it *kv.Item[string, V, struct{}])
}

// Retrieve reports exactly what exists (correlate), altered when asked.
func (r *recorder[V]) Retrieve(_ context.Context, correlate []kv.Item[string, V, struct{}]) ([]kv.Item[string, V, struct{}], error) {
	r.retrieves++
	if r.alter == nil {
		return correlate, nil
	}
	out := make([]kv.Item[string, V, struct{}], len(correlate))
	for i, it := range correlate {
		r.alter(i, &it)
		out[i] = it
	}
	return out, nil
}

func (r *recorder[V]) Create(context.Context, string, V) (struct{}, error) {
	r.creates++
	return struct{}{}, nil
}

func (r *recorder[V]) Update(context.Context, string, V, V, struct{}) (struct{}, error) {
	r.updates++
	return struct{}{}, nil
}

func (r *recorder[V]) Delete(context.Context, string, V, struct{}) error {
	r.deletes++
	return nil
}

// Batch counts the operations of a batch as calls of their kind.
func (r *recorder[V]) Batch(_ context.Context, kind kv.BatchKind, ops []kv.BatchOp[string, V, struct{}]) {
	switch kind {
	case kv.BatchCreate:
		r.creates += len(ops)
	case kv.BatchUpdate:
		r.updates += len(ops)
	default:
		r.deletes += len(ops)
	}
}

// workload holds the keys and values of workload W for one N, built once
// and shared by the schedulers of a benchmark (values are never mutated).
type workload struct {
	n           int
	ifaceKeys   []string
	ifaceVals   []*wrapperspb.UInt32Value // Value: the interface's index
	addrKeys    []string                  // derived: one per interface
	addrVals    []*wrapperspb.StringValue // the address
	routeKeys   []string
	routeVals   []*wrapperspb.UInt64Value // Value: generation<<32 | interface index
	badIfaceKey string
}

func ipOf(i int) string {
	return "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
}

func buildWorkload(n int) *workload {
	w := &workload{
		n:           n,
		ifaceKeys:   make([]string, n),
		ifaceVals:   make([]*wrapperspb.UInt32Value, n),
		addrKeys:    make([]string, n),
		addrVals:    make([]*wrapperspb.StringValue, n),
		routeKeys:   make([]string, wRoutesPerIface*n),
		routeVals:   make([]*wrapperspb.UInt64Value, wRoutesPerIface*n),
		badIfaceKey: "w/interface/<out-of-range>",
	}
	for i := range n {
		name := "if" + strconv.Itoa(i)
		ip := ipOf(i)
		w.ifaceKeys[i] = "w/interface/" + name
		w.ifaceVals[i] = wrapperspb.UInt32(uint32(i))
		w.addrKeys[i] = "w/address/" + name + "/" + ip
		w.addrVals[i] = wrapperspb.String(ip)
	}
	for k := range w.routeKeys {
		w.routeKeys[k] = "w/route/" + strconv.Itoa(k)
		w.routeVals[k] = wrapperspb.UInt64(uint64(k % n))
	}
	return w
}

// values is the number of values of the workload: interfaces, addresses
// and routes.
func (w *workload) values() int { return (2 + wRoutesPerIface) * w.n }

// routeValue returns a value of route k of generation gen.
func (w *workload) routeValue(k int, gen uint32) *wrapperspb.UInt64Value {
	return wrapperspb.UInt64(uint64(gen)<<32 | uint64(k%w.n))
}

// wDescs are the three descriptors of workload W and their recorders.
type wDescs struct {
	iface *recorder[*wrapperspb.UInt32Value]
	addr  *recorder[*wrapperspb.StringValue]
	route *recorder[*wrapperspb.UInt64Value]
	list  []kv.Descriptor
}

func (d *wDescs) creates() int { return d.iface.creates + d.addr.creates + d.route.creates }
func (d *wDescs) deletes() int { return d.iface.deletes + d.addr.deletes + d.route.deletes }

// newDescs builds the descriptors by hand, with cheap closures: the address
// and the dependency come from a field of the value, by index.
func newDescs(tb testing.TB, w *workload) *wDescs {
	d := &wDescs{
		iface: &recorder[*wrapperspb.UInt32Value]{},
		addr:  &recorder[*wrapperspb.StringValue]{},
		route: &recorder[*wrapperspb.UInt64Value]{},
	}
	iface, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.UInt32Value, struct{}]{
		Name:        "w-interface",
		KeyTemplate: "w/interface/{name}",
		Derived: func(_ string, v *wrapperspb.UInt32Value) []kv.Derived {
			i := int(v.GetValue())
			if i >= len(w.addrKeys) {
				return nil
			}
			return []kv.Derived{{Key: w.addrKeys[i], Value: w.addrVals[i]}}
		},
	}, d.iface)
	if err != nil {
		tb.Fatal(err)
	}
	addr, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, struct{}]{
		Name:        "w-address",
		KeyTemplate: "w/address/{interface}/{ip:ip}",
	}, d.addr)
	if err != nil {
		tb.Fatal(err)
	}
	route, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.UInt64Value, struct{}]{
		Name:        "w-route",
		KeyTemplate: "w/route/{id:uint}",
		Dependencies: func(_ string, v *wrapperspb.UInt64Value) []kv.Dependency {
			i := int(uint32(v.GetValue()))
			key := w.badIfaceKey
			if i < len(w.ifaceKeys) {
				key = w.ifaceKeys[i]
			}
			return []kv.Dependency{{Label: "interface", Key: key}}
		},
	}, d.route)
	if err != nil {
		tb.Fatal(err)
	}
	d.list = []kv.Descriptor{iface, addr, route}
	return d
}

// countingHandler forwards to slog's TextHandler and counts the records, so
// that a benchmark can check that the transaction log was written.
type countingHandler struct {
	slog.Handler
	records *atomic.Int64
}

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	h.records.Add(1)
	return h.Handler.Handle(ctx, r)
}

func (h countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return countingHandler{h.Handler.WithAttrs(as), h.records}
}

func (h countingHandler) WithGroup(name string) slog.Handler {
	return countingHandler{h.Handler.WithGroup(name), h.records}
}

// wSched is a scheduler with the descriptors of workload W registered.
type wSched struct {
	s       *scheduler.Scheduler
	d       *wDescs
	w       *workload
	records *atomic.Int64 // log records written
	txns    int64         // transactions committed through commit
	// stopTracing flushes and stops the tracer of -w.trace.
	stopTracing func()
}

// newSched creates a scheduler with the default settings (transaction log
// on), its log formatted into io.Discard.
func newSched(tb testing.TB, w *workload, extra ...scheduler.Option) *wSched {
	records := &atomic.Int64{}
	var h slog.Handler = slog.NewTextHandler(io.Discard, nil)
	if *benchOwnLog {
		h = scheduler.NewLogHandler(io.Discard, slog.LevelInfo)
	}
	opts := []scheduler.Option{scheduler.WithLogger(slog.New(countingHandler{h, records}))}
	opts = append(opts, extra...)
	if !*benchTxnLog {
		opts = append(opts, scheduler.WithTxnLog(false))
	}
	if !*benchBatch {
		opts = append(opts, scheduler.WithBatchSize(1))
	}
	var stopTracing func()
	if *benchTrace {
		var o scheduler.Option
		o, stopTracing = benchTracer()
		opts = append(opts, o)
	}
	s, err := scheduler.New(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	d := newDescs(tb, w)
	if err := s.Register(d.list...); err != nil {
		tb.Fatal(err)
	}
	return &wSched{s: s, d: d, w: w, records: records, stopTracing: stopTracing}
}

func (ws *wSched) close(tb testing.TB) {
	if err := ws.s.Close(context.Background()); err != nil {
		tb.Fatal(err)
	}
	if ws.stopTracing != nil {
		ws.stopTracing()
	}
}

// commit commits txn and fails on a transaction error.
func (ws *wSched) commit(tb testing.TB, txn *scheduler.Txn) {
	ws.txns++
	if _, err := txn.Commit(context.Background()); err != nil {
		tb.Fatal(err)
	}
}

// checkLog checks that every transaction wrote its plan and its execution
// to the log (when the transaction log is on).
func (ws *wSched) checkLog(tb testing.TB) {
	if got, want := ws.records.Load(), 2*ws.txns; *benchTxnLog && got < want {
		tb.Fatalf("transaction log: %d records for %d transactions, want at least %d", got, ws.txns, want)
	}
}

func (ws *wSched) setIfaces(txn *scheduler.Txn) {
	for i, k := range ws.w.ifaceKeys {
		txn.Set(k, ws.w.ifaceVals[i])
	}
}

func (ws *wSched) setRoutes(txn *scheduler.Txn) {
	for k, key := range ws.w.routeKeys {
		txn.Set(key, ws.w.routeVals[k])
	}
}

// createAll commits one transaction with every interface and route.
func (ws *wSched) createAll(tb testing.TB) {
	txn := ws.s.Txn(scheduler.Description("workload W: create all"))
	ws.setIfaces(txn)
	ws.setRoutes(txn)
	ws.commit(tb, txn)
}

// checkAll checks that every value of the workload is CONFIGURED and that
// each was created once (creates counts creations since the scheduler
// started).
func (ws *wSched) checkAll(tb testing.TB, creates int) {
	tb.Helper()
	if got, want := ws.d.creates(), creates; got != want {
		tb.Fatalf("create calls: got %d, want %d", got, want)
	}
	sts := ws.s.Statuses("w/")
	if len(sts) != ws.w.values() {
		tb.Fatalf("statuses: got %d values, want %d", len(sts), ws.w.values())
	}
	for _, st := range sts {
		if st.State != scheduler.CONFIGURED {
			tb.Fatalf("%s: state %v, want CONFIGURED (err %v)", st.Key, st.State, st.LastErr)
		}
	}
	ws.checkLog(tb)
}

// writeHeapProfile writes the heap profile to path (see -w.heapprofile).
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkWorkloadW runs the steps of workload W:
//
//	a: one transaction creating everything;
//	b: single-value transactions, each updating one route;
//	c: delete one interface (its routes become PENDING), then re-create it;
//	e: on a fresh scheduler, all routes in one transaction (all PENDING),
//	   then all interfaces in the next.
//
//	d: downstream resync with nothing changed (Retrieve returns exactly
//	   what exists); and a full resync with all values where 1% of the
//	   routes differ in the southbound;
//	h: the heap retained by the history after 10k single-value
//	   transactions.
func BenchmarkWorkloadW(b *testing.B) {
	for _, n := range wSizes {
		b.Run(fmt.Sprintf("a-create-all/N=%d", n), func(b *testing.B) { benchCreateAll(b, n) })
	}
	for _, n := range wSizes {
		var f *wSched // set up once for the calibration run and the timed run
		b.Run(fmt.Sprintf("b-update-route/N=%d", n), func(b *testing.B) {
			if f == nil {
				f = setupAll(b, n)
			}
			benchUpdateRoute(b, f)
		})
		if f != nil {
			f.close(b)
		}
	}
	for _, n := range wSizes {
		var f *wSched
		b.Run(fmt.Sprintf("c-iface-delete-recreate/N=%d", n), func(b *testing.B) {
			if f == nil {
				f = setupAll(b, n)
			}
			benchIfaceDeleteRecreate(b, f)
		})
		if f != nil {
			f.close(b)
		}
	}
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("e-routes-then-ifaces/N=%d", n), func(b *testing.B) { benchRoutesThenIfaces(b, n) })
	}
	for _, n := range []int{10_000, 50_000} {
		var f *wSched
		b.Run(fmt.Sprintf("d-downstream-resync/N=%d", n), func(b *testing.B) {
			if f == nil {
				f = setupAll(b, n)
			}
			benchDownstreamResync(b, f)
		})
		if f != nil {
			f.close(b)
		}
	}
	{
		var f *wSched
		b.Run("d-full-resync-1pct/N=10000", func(b *testing.B) {
			if f == nil {
				f = setupAll(b, 10_000)
			}
			benchFullResync(b, f)
		})
		if f != nil {
			f.close(b)
		}
	}
	b.Run("h-history-heap/N=10000", func(b *testing.B) { benchHistoryHeap(b, 10_000) })
}

// benchDownstreamResync is step d: ns/op is one downstream resync of the
// configured workload, the southbound reporting exactly what exists.
func benchDownstreamResync(b *testing.B, ws *wSched) {
	b.ReportAllocs()
	ctx := context.Background()
	creates, deletes, updates := ws.d.creates(), ws.d.deletes(), ws.d.route.updates
	runtime.GC()
	b.ResetTimer()
	for range b.N {
		res, err := ws.s.Txn(scheduler.DownstreamResync()).Commit(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Executed) != 0 {
			b.Fatalf("a resync with nothing changed executed %d operations, e.g. %s", len(res.Executed), scheduler.FormatOps(res.Executed[:1]))
		}
	}
	b.StopTimer()
	ws.txns += int64(b.N)
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/resync")
	if ws.d.creates() != creates || ws.d.deletes() != deletes || ws.d.route.updates != updates {
		b.Fatal("a resync with nothing changed made calls")
	}
	if ws.d.route.retrieves < b.N {
		b.Fatalf("%d route retrieves for %d resyncs", ws.d.route.retrieves, b.N)
	}
	ws.checkLog(b)
}

// benchFullResync is the other half of step d: ns/op is one full resync
// with every value of the workload, while the southbound reports 1% of the
// routes with another value (each resync updates them back).
func benchFullResync(b *testing.B, ws *wSched) {
	b.ReportAllocs()
	w := ws.w
	ws.d.route.alter = func(i int, it *kv.Item[string, *wrapperspb.UInt64Value, struct{}]) {
		if i%100 == 0 {
			it.Value = wrapperspb.UInt64(it.Value.GetValue() + 1<<40)
		}
	}
	defer func() { ws.d.route.alter = nil }()
	differ := (len(w.routeKeys) + 99) / 100
	updates, creates := ws.d.route.updates, ws.d.creates()
	runtime.GC()
	b.ResetTimer()
	for range b.N {
		txn := ws.s.Txn(scheduler.FullResync(), scheduler.Description("workload W: full resync"))
		ws.setIfaces(txn)
		ws.setRoutes(txn)
		ws.commit(b, txn)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/resync")
	if got := ws.d.route.updates - updates; got != differ*b.N {
		b.Fatalf("route updates: got %d, want %d (1%% of %d routes per resync)", got, differ*b.N, len(w.routeKeys))
	}
	if ws.d.creates() != creates {
		b.Fatal("a full resync over an up-to-date southbound created values")
	}
	ws.checkLog(b)
}

// benchHistoryHeap reports the heap the history retains after 10k
// single-value transactions (route updates) on the configured workload, at
// its default retention: the heap of a scheduler with the default history
// less that of one with the history off, after the same transactions.
func benchHistoryHeap(b *testing.B, n int) {
	const txns = 10_000
	retained := func(opts ...scheduler.Option) (uint64, int) {
		ws := setupAll(b, n, opts...)
		defer ws.close(b)
		w := ws.w
		vals := make([]*wrapperspb.UInt64Value, txns)
		for i := range vals {
			vals[i] = w.routeValue(i%len(w.routeKeys), uint32(i/len(w.routeKeys)+1))
		}
		for i := range txns {
			if _, err := ws.s.Txn().Set(w.routeKeys[i%len(w.routeKeys)], vals[i]).Commit(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		h := heapAlloc()
		records := len(ws.s.History())
		runtime.KeepAlive(vals)
		return h, records
	}
	for range b.N {
		withHistory, records := retained()
		without, none := retained(scheduler.WithHistory(0, 0))
		if records != txns || none != 0 {
			b.Fatalf("history records: %d with the default retention, %d with it off; want %d and 0", records, none, txns)
		}
		b.ReportMetric(float64(int64(withHistory)-int64(without))/txns, "B-history/txn")
		b.ReportMetric(float64(int64(withHistory)-int64(without))/(1<<20), "MiB-history")
	}
}

// setupAll builds a scheduler holding the whole workload, CONFIGURED.
func setupAll(b *testing.B, n int, extra ...scheduler.Option) *wSched {
	w := buildWorkload(n)
	ws := newSched(b, w, extra...)
	ws.createAll(b)
	ws.checkAll(b, w.values())
	runtime.GC()
	return ws
}

// benchCreateAll is step a: ns/op is one transaction creating all 6N
// values on a fresh scheduler (building the transaction included).
func benchCreateAll(b *testing.B, n int) {
	b.ReportAllocs()
	before := heapAlloc()
	w := buildWorkload(n)
	afterValues := heapAlloc()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		ws := newSched(b, w)
		b.StartTimer()

		ws.createAll(b)

		b.StopTimer()
		if i == 0 {
			afterCommit := heapAlloc()
			if *benchHeap != "" {
				writeHeapProfile(b, *benchHeap)
			}
			runtime.KeepAlive(ws)
			b.ReportMetric(float64(int64(afterCommit)-int64(afterValues))/float64(w.values()), "B-retained/value")
			b.ReportMetric(float64(afterValues-before)/float64(w.values()), "B-values/value")
			ws.checkAll(b, w.values())
		}
		ws.close(b)
		runtime.GC()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(w.values())*float64(b.N)/b.Elapsed().Seconds(), "values/s")
	runtime.KeepAlive(w)
}

// benchUpdateRoute is step b: ns/op is one transaction updating one route
// of the configured workload.
func benchUpdateRoute(b *testing.B, ws *wSched) {
	b.ReportAllocs()
	w := ws.w
	routes := len(w.routeKeys)
	updates := ws.d.route.updates
	// Update number u (counted over the runs on this scheduler) sets route
	// u mod 4N to generation u/4N + 1, so every transaction changes its
	// route. The values are built before the timer starts.
	vals := make([]*wrapperspb.UInt64Value, b.N)
	for i := range vals {
		u := updates + i
		vals[i] = w.routeValue(u%routes, uint32(u/routes+1))
	}
	k0 := updates % routes
	ctx := context.Background()
	runtime.GC()
	spans0 := benchSpans.Load()
	b.ResetTimer()
	for i := range b.N {
		k := (k0 + i) % routes
		if _, err := ws.s.Txn().Set(w.routeKeys[k], vals[i]).Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if *benchTrace {
		b.ReportMetric(float64(benchSpans.Load()-spans0)/float64(b.N), "spans/txn")
	}
	ws.txns += int64(b.N)
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/txn")

	if got := ws.d.route.updates - updates; got != b.N {
		b.Fatalf("route update calls: got %d, want %d", got, b.N)
	}
	if ws.d.creates() != w.values() || ws.d.deletes() != 0 {
		b.Fatalf("creates %d, deletes %d: want %d, 0", ws.d.creates(), ws.d.deletes(), w.values())
	}
	last := (k0 + b.N - 1) % routes
	st := ws.s.Status(w.routeKeys[last])
	if st.State != scheduler.CONFIGURED || !proto.Equal(st.Applied, vals[b.N-1]) {
		b.Fatalf("%s: %v applied %v, want CONFIGURED %v", st.Key, st.State, st.Applied, vals[b.N-1])
	}
	ws.checkLog(b)
}

// benchIfaceDeleteRecreate is step c: each op is two transactions, one
// deleting an interface (its address is deleted, its 4 routes become
// PENDING), one re-creating it (address and routes are created again).
// Reported: µs/txn (the mean of the two) and each kind separately.
func benchIfaceDeleteRecreate(b *testing.B, ws *wSched) {
	b.ReportAllocs()
	w := ws.w
	ctx := context.Background()
	creates, deletes := ws.d.creates(), ws.d.deletes()
	i0 := (deletes / (2 + wRoutesPerIface)) % w.n
	var tDel, tCre time.Duration
	runtime.GC()
	b.ResetTimer()
	for i := range b.N {
		j := (i0 + i) % w.n
		t0 := time.Now()
		if _, err := ws.s.Txn().Delete(w.ifaceKeys[j]).Commit(ctx); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		tDel += t1.Sub(t0)
		if i == 0 {
			b.StopTimer()
			checkDeleted(b, ws, j)
			b.StartTimer()
			t1 = time.Now()
		}
		if _, err := ws.s.Txn().Set(w.ifaceKeys[j], w.ifaceVals[j]).Commit(ctx); err != nil {
			b.Fatal(err)
		}
		tCre += time.Since(t1)
	}
	b.StopTimer()
	ws.txns += 2 * int64(b.N)
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(2*b.N), "µs/txn")
	b.ReportMetric(float64(tDel.Microseconds())/float64(b.N), "µs/delete-txn")
	b.ReportMetric(float64(tCre.Microseconds())/float64(b.N), "µs/recreate-txn")

	per := 2 + wRoutesPerIface // interface, address, routes
	if got := ws.d.deletes() - deletes; got != per*b.N {
		b.Fatalf("delete calls: got %d, want %d", got, per*b.N)
	}
	if got := ws.d.creates() - creates; got != per*b.N {
		b.Fatalf("create calls: got %d, want %d", got, per*b.N)
	}
	j := (i0 + b.N - 1) % w.n
	for k := j; k < len(w.routeKeys); k += w.n {
		if st := ws.s.Status(w.routeKeys[k]); st.State != scheduler.CONFIGURED {
			b.Fatalf("%s: %v after the interface came back, want CONFIGURED", st.Key, st.State)
		}
	}
	ws.checkLog(b)
}

// checkDeleted checks the state after interface j was deleted.
func checkDeleted(b *testing.B, ws *wSched, j int) {
	w := ws.w
	if st := ws.s.Status(w.ifaceKeys[j]); st.State != scheduler.NONEXISTENT {
		b.Fatalf("%s: %v after delete, want NONEXISTENT", st.Key, st.State)
	}
	if st := ws.s.Status(w.addrKeys[j]); st.State != scheduler.NONEXISTENT {
		b.Fatalf("%s: %v after deleting its interface, want NONEXISTENT", st.Key, st.State)
	}
	pending := 0
	for k := j; k < len(w.routeKeys); k += w.n {
		if st := ws.s.Status(w.routeKeys[k]); st.State != scheduler.PENDING {
			b.Fatalf("%s: %v after deleting its interface, want PENDING", st.Key, st.State)
		}
		pending++
	}
	if pending != wRoutesPerIface {
		b.Fatalf("%d routes pending, want %d", pending, wRoutesPerIface)
	}
}

// benchRoutesThenIfaces is step e: on a fresh scheduler, one transaction
// with all routes (they stay PENDING), then one with all interfaces (which
// creates them, their addresses, and every route). ns/op is both together.
func benchRoutesThenIfaces(b *testing.B, n int) {
	b.ReportAllocs()
	w := buildWorkload(n)
	var tRoutes, tIfaces time.Duration
	runtime.GC()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		ws := newSched(b, w)
		b.StartTimer()

		t0 := time.Now()
		txn := ws.s.Txn(scheduler.Description("workload W: all routes"))
		ws.setRoutes(txn)
		ws.commit(b, txn)
		t1 := time.Now()
		tRoutes += t1.Sub(t0)
		if i == 0 {
			b.StopTimer()
			if c := ws.d.creates(); c != 0 {
				b.Fatalf("%d create calls before any interface exists", c)
			}
			sts := ws.s.Statuses("w/route/")
			if len(sts) != len(w.routeKeys) {
				b.Fatalf("%d routes, want %d", len(sts), len(w.routeKeys))
			}
			for _, st := range sts {
				if st.State != scheduler.PENDING {
					b.Fatalf("%s: %v without its interface, want PENDING", st.Key, st.State)
				}
			}
			b.StartTimer()
			t1 = time.Now()
		}
		txn = ws.s.Txn(scheduler.Description("workload W: all interfaces"))
		ws.setIfaces(txn)
		ws.commit(b, txn)
		tIfaces += time.Since(t1)

		b.StopTimer()
		if i == 0 {
			ws.checkAll(b, w.values())
		}
		ws.close(b)
		runtime.GC()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(tRoutes.Microseconds())/1e3/float64(b.N), "ms-routes-txn")
	b.ReportMetric(float64(tIfaces.Microseconds())/1e3/float64(b.N), "ms-ifaces-txn")
	runtime.KeepAlive(w)
}

// BenchmarkCommitsWithReaders measures what readers cost the engine: 10,000
// single-value transactions (interfaces of workload W, each deriving an
// address) on a fresh scheduler, first alone, then with 4 goroutines reading
// in a loop: statuses by prefix, the history, a graph snapshot of a past
// transaction, and a timeline. It reports both times and their ratio
// (x-with-readers), and the reads done. Readers read the published view
// and never take the engine's lock, so what is left is their share of the
// CPU (4 busy readers and the worker on GOMAXPROCS cores).
//
//	go test -run='^$' -bench=CommitsWithReaders -benchtime=1x ./runtime/scheduler
var readerPause = flag.Duration("readers.pause", 0, "BenchmarkCommitsWithReaders: each reader's pause between reads (0: none)")

func BenchmarkCommitsWithReaders(b *testing.B) {
	const txns = 10_000
	w := buildWorkload(txns)
	run := func(readers int) (time.Duration, int64) {
		ws := newSched(b, w)
		defer ws.close(b)
		stop := make(chan struct{})
		var reads atomic.Int64
		var wg sync.WaitGroup
		for r := range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					switch r % 4 {
					case 0:
						ws.s.Statuses("w/interface/if1")
					case 1:
						ws.s.History()
					case 2:
						if rs := ws.s.History(); len(rs) > 1 {
							if _, err := ws.s.GraphSnapshot(rs[len(rs)/2].Seq); err != nil {
								b.Error(err)
								return
							}
						}
					case 3:
						ws.s.Timeline(w.ifaceKeys[i%txns])
					}
					reads.Add(1)
					if *readerPause > 0 {
						time.Sleep(*readerPause)
					}
				}
			}()
		}
		t0 := time.Now()
		for i := range txns {
			ws.commit(b, ws.s.Txn().Set(w.ifaceKeys[i], w.ifaceVals[i]))
		}
		took := time.Since(t0)
		close(stop)
		wg.Wait()
		if st := ws.s.Status(w.addrKeys[txns-1]); st.State != scheduler.CONFIGURED {
			b.Fatalf("%s: %v, want CONFIGURED", st.Key, st.State)
		}
		return took, reads.Load()
	}
	var alone, with time.Duration
	var reads int64
	for range b.N {
		a, _ := run(0)
		wr, n := run(4)
		alone, with, reads = alone+a, with+wr, reads+n
	}
	b.ReportMetric(float64(alone.Milliseconds())/float64(b.N), "ms-alone")
	b.ReportMetric(float64(with.Milliseconds())/float64(b.N), "ms-with-readers")
	b.ReportMetric(float64(with)/float64(alone), "x-with-readers")
	b.ReportMetric(float64(reads)/with.Seconds(), "reads/s")
}

// BenchmarkStatusDuringLargeTxn measures how long a status read takes while
// a transaction of 100,000 values runs (planning, calls and publishing): a
// reader calls Status in a loop from the transaction's start to its end.
// It reports the slowest read (max-µs), the 99th and 99.9th percentiles,
// and the reads done during the transaction. A read takes no lock; what
// the slowest ones measure is the goroutine being descheduled (two
// cores: the reader, the committer and the garbage collector).
//
//	go test -run='^$' -bench=StatusDuringLargeTxn -benchtime=1x ./runtime/scheduler
func BenchmarkStatusDuringLargeTxn(b *testing.B) {
	w := buildWorkload(100_000 / wRoutesPerIface)
	var lat []time.Duration
	for range b.N {
		ws := newSched(b, w)
		ws.commit(b, ws.s.Txn().Set(w.ifaceKeys[0], w.ifaceVals[0]))
		done := make(chan struct{})
		go func() {
			defer close(done)
			txn := ws.s.Txn()
			ws.setRoutes(txn)
			ws.commit(b, txn)
		}()
		for {
			select {
			case <-done:
			default:
				t0 := time.Now()
				ws.s.Status(w.routeKeys[0])
				lat = append(lat, time.Since(t0))
				continue
			}
			break
		}
		if st := ws.s.Status(w.routeKeys[0]); st.State != scheduler.CONFIGURED {
			b.Fatalf("%s: %v, want CONFIGURED", st.Key, st.State)
		}
		ws.close(b)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)-1].Nanoseconds())/1e3, "max-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(lat[len(lat)*999/1000].Nanoseconds())/1e3, "p99.9-µs")
	b.ReportMetric(float64(len(lat))/float64(b.N), "reads/txn")
}

// BenchmarkGraphSnapshot measures GraphSnapshot on workload W at N=2,000
// (2,000 interfaces, their derived addresses and the routes, created one
// interface a transaction and the routes in one): the graph now (now)
// and as of the transaction halfway through the history (past), which
// rewinds every value changed since from the records.
//
//	go test -run='^$' -bench=GraphSnapshot -benchmem ./runtime/scheduler
func BenchmarkGraphSnapshot(b *testing.B) {
	const n = 2_000
	w := buildWorkload(n)
	ws := newSched(b, w)
	defer ws.close(b)
	for i := range n {
		ws.commit(b, ws.s.Txn().Set(w.ifaceKeys[i], w.ifaceVals[i]))
	}
	txn := ws.s.Txn()
	ws.setRoutes(txn)
	ws.commit(b, txn)
	rs := ws.s.History()
	for _, c := range []struct {
		name string
		seq  uint64
	}{{"now", 0}, {"past", rs[len(rs)/2].Seq}} {
		b.Run(c.name, func(b *testing.B) {
			var nodes int
			for range b.N {
				snap, err := ws.s.GraphSnapshot(c.seq)
				if err != nil {
					b.Fatal(err)
				}
				nodes = len(snap.Nodes)
			}
			b.ReportMetric(float64(nodes), "nodes")
		})
	}
}
