// Package tracing traces a scheduler's transactions with OpenTelemetry:
// it implements scheduler.Tracer over an OpenTelemetry tracer (NewTracer),
// reads the W3C trace context of API requests (Extract) and exports the
// spans to an OTLP/HTTP receiver (Start).
//
// The scheduler itself links no tracing library; with no tracer (the
// default) it makes no span and pays a nil check. Given one:
//
//	p, err := tracing.Start(tracing.Config{Endpoint: "http://127.0.0.1:4318", SampleRatio: 1, ServiceName: "agent"})
//	...
//	defer p.Shutdown(ctx)
//	s, err := scheduler.New(scheduler.WithTracer(tracing.NewTracer(p.Tracer(tracing.InstrumentationName))))
//
// # What it promises
//
//   - One span per transaction (scheduler.SpanTxn), a child of the span
//     that the context given to Commit carries: through an API server
//     wrapped by Extract, the client's span named by the request's
//     traceparent header; through nb.Mux, the same context, so a client's
//     commit and the agent's southbound calls form one trace.
//   - Under it: the plan (SpanPlan), the refresh of a resync
//     (SpanRefresh), each southbound call (SpanCall, of kind client) or
//     batch (SpanBatch), and each read-back after a failed call
//     (SpanReadBack, its Retrieve a SpanCall under it). A retry is a
//     transaction of its own (kind "retry") whose span is a child of the
//     transaction that scheduled it.
//   - A failed call's span records the error (an exception event) and has
//     status Error; a batch's records its first failure and the number
//     that failed. The transaction's span has status Error when any key
//     failed, and says its outcome: ok, failed or reverted.
//   - Attributes are the scheduler's Attr* names: keys, descriptors,
//     operations, counts; never a value. A key may name a thing (an
//     interface's name): mind that before sending traces off the machine.
//   - Export is in batches in the background: a receiver that is slow or
//     down never blocks a transaction (spans are dropped beyond the
//     queue, and OpenTelemetry logs the export errors).
package tracing
