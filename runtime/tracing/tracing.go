package tracing

import (
	"context"
	"log/slog"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// NewTracer returns the scheduler.Tracer that opens the scheduler's spans
// with t (scheduler.WithTracer).
func NewTracer(t trace.Tracer) scheduler.Tracer { return otelTracer{t} }

type otelTracer struct{ t trace.Tracer }

var _ scheduler.Tracer = otelTracer{}

func (o otelTracer) Start(ctx context.Context, name string, attrs ...slog.Attr) (context.Context, scheduler.Span) {
	kind := trace.SpanKindInternal
	if name == scheduler.SpanCall || name == scheduler.SpanBatch {
		kind = trace.SpanKindClient // a call leaves the process, for most southbounds
	}
	ctx, span := o.t.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(otelAttrs(attrs)...))
	return ctx, otelSpan{span}
}

type otelSpan struct{ s trace.Span }

func (o otelSpan) End(err error, attrs ...slog.Attr) {
	if len(attrs) > 0 {
		o.s.SetAttributes(otelAttrs(attrs)...)
	}
	if err != nil {
		o.s.RecordError(err)
		o.s.SetStatus(codes.Error, err.Error())
	}
	o.s.End()
}

func (o otelSpan) Into(ctx context.Context) context.Context { return trace.ContextWithSpan(ctx, o.s) }

// otelAttrs converts the scheduler's attributes (strings, integers and
// booleans) to OpenTelemetry's; another kind is written as its text.
func otelAttrs(attrs []slog.Attr) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(attrs))
	for _, a := range attrs {
		v := a.Value.Resolve()
		switch v.Kind() {
		case slog.KindString:
			out = append(out, attribute.String(a.Key, v.String()))
		case slog.KindInt64:
			out = append(out, attribute.Int64(a.Key, v.Int64()))
		case slog.KindUint64:
			out = append(out, attribute.Int64(a.Key, int64(v.Uint64())))
		case slog.KindBool:
			out = append(out, attribute.Bool(a.Key, v.Bool()))
		case slog.KindFloat64:
			out = append(out, attribute.Float64(a.Key, v.Float64()))
		default:
			out = append(out, attribute.String(a.Key, v.String()))
		}
	}
	return out
}

// Propagator reads and writes the trace context of a request in W3C Trace
// Context headers (traceparent, tracestate).
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Extract wraps h so that each request's context carries the span context
// its traceparent header names (W3C Trace Context): the transactions a
// request commits are then children of the client's span. A request
// without one, or with a malformed one, is served as it is. Over gRPC and
// Connect the header is the call's metadata of that name.
func Extract(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("traceparent") != "" {
			r = r.WithContext(Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
		}
		h.ServeHTTP(w, r)
	})
}

// Inject writes the span context of ctx, if it carries one, into header as
// a traceparent (and tracestate): a client's request then continues its
// trace on the agent.
func Inject(ctx context.Context, header http.Header) {
	Propagator.Inject(ctx, propagation.HeaderCarrier(header))
}
