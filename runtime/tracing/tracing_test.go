package tracing_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
	"github.com/kvdescriptor/kvdescriptor/runtime/tracing"
)

// spans indexes the ended spans of a recorder.
type spans struct {
	t   *testing.T
	all []sdktrace.ReadOnlySpan
}

func ended(t *testing.T, rec *tracetest.SpanRecorder) spans {
	return spans{t: t, all: rec.Ended()}
}

// attr returns the attribute key of s as text ("" when it has none).
func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

// find returns the spans named name whose attributes have the values of
// want (key=value), under parent when parent is valid.
func (sp spans) find(name string, parent trace.SpanContext, want ...string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
next:
	for _, s := range sp.all {
		if s.Name() != name || (parent.IsValid() && s.Parent().SpanID() != parent.SpanID()) {
			continue
		}
		for _, w := range want {
			k, v, _ := strings.Cut(w, "=")
			if attr(s, k) != v {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

// one returns the one span find finds, failing the test otherwise.
func (sp spans) one(name string, parent trace.SpanContext, want ...string) sdktrace.ReadOnlySpan {
	sp.t.Helper()
	got := sp.find(name, parent, want...)
	if len(got) != 1 {
		sp.t.Fatalf("%d spans %s %v under %s, want 1; the spans:\n%s", len(got), name, want, parent.SpanID(), sp)
	}
	return got[0]
}

func (sp spans) String() string {
	var b strings.Builder
	for _, s := range sp.all {
		fmt.Fprintf(&b, "  %s %s (parent %s) %v %v\n", s.Name(), s.SpanContext().SpanID(), s.Parent().SpanID(), s.Attributes(), s.Status())
	}
	return b.String()
}

// hasException reports whether s recorded an error whose message holds text.
func hasException(s sdktrace.ReadOnlySpan, text string) bool {
	for _, e := range s.Events() {
		if e.Name != "exception" {
			continue
		}
		for _, a := range e.Attributes {
			if a.Key == attribute.Key("exception.message") && strings.Contains(a.Value.AsString(), text) {
				return true
			}
		}
	}
	return false
}

func newTraced(t *testing.T, opts ...scheduler.Option) (*scheduler.Scheduler, *sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s, err := scheduler.New(append([]scheduler.Option{
		scheduler.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		scheduler.WithTracer(tracing.NewTracer(tp.Tracer(tracing.InstrumentationName))),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s, tp, rec
}

// TestTxnTree: a commit made in a client's span is one trace with it: the
// transaction's span a child of the client's (kind, source, counts and
// outcome), the plan and each call under the transaction, the failed
// call's error recorded, the read-back after it with its Retrieve, and the
// retry a transaction whose span is a child of the first.
func TestTxnTree(t *testing.T) {
	t.Parallel()
	s, tp, rec := newTraced(t)
	sb := kvtest.NewSB()
	d, err := sb.Descriptor(kvtest.Config{Name: "x", KeyPrefix: "x/"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	sb.Fail("x/b", kvtest.Failure{Op: "create", Err: errors.New("link busy")})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctx, client := tp.Tracer("client").Start(ctx, "client commit")
	res, err := s.Txn(scheduler.Retry(scheduler.RetryPolicy{MaxAttempts: 3, Period: time.Millisecond}), scheduler.Source("test")).
		Set("x/a", kvtest.Value("a")).Set("x/b", kvtest.Value("b")).CommitAndWait(ctx)
	client.End()
	if err != nil {
		t.Fatalf("CommitAndWait: %v (%v)", err, res)
	}
	if got := sb.Values(); got["x/b"] != "b" {
		t.Fatalf("x/b not created by the retry: %v", got)
	}

	sp := ended(t, rec)
	cc := client.SpanContext()
	txn := sp.one(scheduler.SpanTxn, cc,
		scheduler.AttrTxnKind+"=NB transaction", scheduler.AttrTxnSource+"=test", scheduler.AttrTxnValues+"=2",
		scheduler.AttrTxnOutcome+"=failed", scheduler.AttrTxnRetries+"=1", scheduler.AttrTxnErrors+"=1")
	if txn.SpanContext().TraceID() != cc.TraceID() {
		t.Errorf("the transaction is in trace %s, the client's is %s", txn.SpanContext().TraceID(), cc.TraceID())
	}
	if attr(txn, scheduler.AttrTxnSeq) == "0" || attr(txn, scheduler.AttrTxnPlanned) != "2" || txn.Status().Code != codes.Error {
		t.Errorf("transaction span: seq %s, planned %s, status %v", attr(txn, scheduler.AttrTxnSeq), attr(txn, scheduler.AttrTxnPlanned), txn.Status())
	}
	tc := txn.SpanContext()
	if plan := sp.one(scheduler.SpanPlan, tc); attr(plan, scheduler.AttrPlanOps) != "2" {
		t.Errorf("plan span: %v", plan.Attributes())
	}
	okCall := sp.one(scheduler.SpanCall, tc, scheduler.AttrKey+"=x/a", scheduler.AttrOp+"=CREATE", scheduler.AttrDescriptor+"=x")
	if okCall.Status().Code == codes.Error || okCall.SpanKind() != trace.SpanKindClient {
		t.Errorf("create x/a: status %v, kind %v", okCall.Status(), okCall.SpanKind())
	}
	failed := sp.one(scheduler.SpanCall, tc, scheduler.AttrKey+"=x/b", scheduler.AttrOp+"=CREATE")
	if failed.Status().Code != codes.Error || !hasException(failed, "link busy") {
		t.Errorf("create x/b: status %v, events %v; want the error recorded", failed.Status(), failed.Events())
	}
	rb := sp.one(scheduler.SpanReadBack, tc, scheduler.AttrKey+"=x/b", scheduler.AttrFound+"=false")
	sp.one(scheduler.SpanCall, rb.SpanContext(), scheduler.AttrOp+"=RETRIEVE", scheduler.AttrKey+"=x/b")

	retry := sp.one(scheduler.SpanTxn, tc, scheduler.AttrTxnKind+"=retry", scheduler.AttrTxnOutcome+"=ok", scheduler.AttrTxnValues+"=1")
	if retry.SpanContext().TraceID() != cc.TraceID() || retry.Status().Code == codes.Error {
		t.Errorf("retry span: trace %s, status %v", retry.SpanContext().TraceID(), retry.Status())
	}
	sp.one(scheduler.SpanCall, retry.SpanContext(), scheduler.AttrKey+"=x/b", scheduler.AttrOp+"=CREATE")
}

// TestBatchSpan: a batch is one span with its size, the number of its
// operations that failed and the first failure as its error; a resync's
// refresh has a span with the Retrieve under it.
func TestBatchSpan(t *testing.T) {
	t.Parallel()
	s, _, rec := newTraced(t)
	sb := kvtest.NewSB()
	d, err := sb.Descriptor(kvtest.Config{Name: "y", KeyPrefix: "y/", Batch: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	sb.Fail("y/2", kvtest.Failure{Op: "create", Err: errors.New("no room"), Terminal: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.Txn().Set("y/1", kvtest.Value("1")).Set("y/2", kvtest.Value("2")).Set("y/3", kvtest.Value("3")).Commit(ctx); err == nil {
		t.Fatal("the commit did not fail")
	}
	if _, err := s.Txn(scheduler.DownstreamResync()).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	sp := ended(t, rec)
	txn := sp.one(scheduler.SpanTxn, trace.SpanContext{}, scheduler.AttrTxnKind+"=NB transaction")
	if txn.Parent().IsValid() {
		t.Errorf("a commit with no span in its context has a parent: %v", txn.Parent())
	}
	b := sp.one(scheduler.SpanBatch, txn.SpanContext(), scheduler.AttrBatchOps+"=3", scheduler.AttrBatchFailed+"=1", scheduler.AttrOp+"=CREATE")
	if b.Status().Code != codes.Error || !hasException(b, "no room") {
		t.Errorf("batch: status %v, events %v", b.Status(), b.Events())
	}
	resync := sp.one(scheduler.SpanTxn, trace.SpanContext{}, scheduler.AttrTxnKind+"=downstream resync")
	refresh := sp.one(scheduler.SpanRefresh, resync.SpanContext())
	sp.one(scheduler.SpanCall, refresh.SpanContext(), scheduler.AttrOp+"=RETRIEVE", scheduler.AttrDescriptor+"=y")
}

// TestExtract: a request's traceparent becomes its context's span
// context; a request without one, or with a malformed one, has none.
func TestExtract(t *testing.T) {
	t.Parallel()
	var got trace.SpanContext
	h := tracing.Extract(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got = trace.SpanContextFromContext(r.Context())
	}))
	for _, tc := range []struct {
		name, header string
		valid        bool
	}{
		{name: "sampled", header: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", valid: true},
		{name: "none"},
		{name: "malformed", header: "00-xyz-b7ad6b7169203331-01"},
	} {
		got = trace.SpanContext{}
		r := httptest.NewRequest(http.MethodPost, "/v1/commit", nil)
		if tc.header != "" {
			r.Header.Set("traceparent", tc.header)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if got.IsValid() != tc.valid {
			t.Errorf("%s: span context %v, valid %v, want %v", tc.name, got, got.IsValid(), tc.valid)
		}
		if tc.valid && (got.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || !got.IsRemote() || !got.IsSampled()) {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
}

// ctxHandler records the span context its Create is called with.
type ctxHandler struct{ got chan trace.SpanContext }

func (h ctxHandler) Create(ctx context.Context, _ string, _ *wrapperspb.StringValue) (struct{}, error) {
	h.got <- trace.SpanContextFromContext(ctx)
	return struct{}{}, nil
}

func (h ctxHandler) Delete(context.Context, string, *wrapperspb.StringValue, struct{}) error {
	return nil
}

// TestHandlerContextCarriesCallSpan: a handler's context carries its
// call's span, so a southbound client that traces continues the trace;
// without a tracer it carries none, even when Commit's context has one.
func TestHandlerContextCarriesCallSpan(t *testing.T) {
	t.Parallel()
	for _, traced := range []bool{true, false} {
		h := ctxHandler{got: make(chan trace.SpanContext, 1)}
		d, err := kv.NewDescriptor[string, *wrapperspb.StringValue, struct{}](kv.Spec[string, *wrapperspb.StringValue, struct{}]{Name: "z", KeyPrefix: "z/"}, h)
		if err != nil {
			t.Fatal(err)
		}
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		opts := []scheduler.Option{scheduler.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
		if traced {
			opts = append(opts, scheduler.WithTracer(tracing.NewTracer(tp.Tracer(tracing.InstrumentationName))))
		}
		s, err := scheduler.New(opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Register(d); err != nil {
			t.Fatal(err)
		}
		ctx, client := tp.Tracer("client").Start(context.Background(), "client")
		if _, err := s.Txn().Set("z/1", wrapperspb.String("1")).Commit(ctx); err != nil {
			t.Fatal(err)
		}
		client.End()
		_ = s.Close(context.Background())
		got := <-h.got
		if !traced {
			// The commit's context values reach the handler: the client's
			// span, and no span of the scheduler's.
			if got.SpanID() != client.SpanContext().SpanID() || len(rec.Ended()) != 1 {
				t.Errorf("no tracer: the handler's span context %v (client %v), %d spans ended", got, client.SpanContext(), len(rec.Ended()))
			}
			continue
		}
		sp := ended(t, rec)
		call := sp.one(scheduler.SpanCall, trace.SpanContext{}, scheduler.AttrKey+"=z/1")
		if got.SpanID() != call.SpanContext().SpanID() {
			t.Errorf("the handler's span %s, the call's %s", got.SpanID(), call.SpanContext().SpanID())
		}
	}
}
