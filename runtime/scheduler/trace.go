package scheduler

import (
	"context"
	"log/slog"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// Tracer opens the spans of the scheduler's work (WithTracer): one per
// transaction, a child of the span its Commit's context carries, and
// under it the plan, the refresh of a resync, each southbound call or
// batch, and each read-back after a failed call. A retry is a transaction
// of its own whose span is a child of the transaction that scheduled it.
//
// The scheduler links no tracing library: a program implements Tracer
// over its own (runtime/tracing does with OpenTelemetry). Without one
// (the default), tracing costs a nil check where a span would start.
//
// Start and the Span's methods are called on the goroutine running the
// transaction, or on the one making a call: they must be quick and must
// not call the scheduler.
type Tracer interface {
	// Start opens a span named name with attrs, a child of the span ctx
	// carries (a root when it carries none), and returns ctx with the new
	// span in it; the context a southbound call's handler gets carries
	// the call's span.
	Start(ctx context.Context, name string, attrs ...slog.Attr) (context.Context, Span)
}

// Span is a span Tracer.Start opened.
type Span interface {
	// End adds attrs and ends the span; err, when not nil, is recorded
	// as its error (and the span's status says it failed).
	End(err error, attrs ...slog.Attr)
	// Into returns ctx carrying the span, as the parent of the spans
	// started from it later (a retry's transaction). Called before End
	// or after.
	Into(ctx context.Context) context.Context
}

// WithTracer traces transactions and southbound calls through t (default
// none). See Tracer for the spans and their names, and the Attr*
// constants for their attributes.
func WithTracer(t Tracer) Option { return func(o *options) { o.tracer = t } }

// The names of the spans the scheduler opens.
const (
	// SpanTxn is a transaction: its kind, sequence number, description,
	// source, values, and at its end its operations, errors and outcome.
	SpanTxn = "kvdescriptor.txn"
	// SpanPlan is the planning of a transaction (no southbound calls).
	SpanPlan = "kvdescriptor.plan"
	// SpanRefresh is the refresh of a resync: the Retrieve of every
	// descriptor that can, each a SpanCall under it.
	SpanRefresh = "kvdescriptor.refresh"
	// SpanCall is one southbound call: Create, Update, Delete or Retrieve.
	SpanCall = "kvdescriptor.call"
	// SpanBatch is a batch, or a group of concurrent calls, of one
	// descriptor (AttrBatchOps operations, from AttrKey on).
	SpanBatch = "kvdescriptor.batch"
	// SpanReadBack is the read-back of a value after a failed call: what
	// the southbound holds for its key (a SpanCall of Retrieve under it).
	SpanReadBack = "kvdescriptor.readback"
)

// The attributes of the spans.
const (
	AttrTxnKind     = "kvdescriptor.txn.kind" // TxnKind.String(): "NB transaction", "retry", ...
	AttrTxnSeq      = "kvdescriptor.txn.seq"  // sequence number (0: a dry run)
	AttrTxnDesc     = "kvdescriptor.txn.description"
	AttrTxnSource   = "kvdescriptor.txn.source"  // the northbound source (Source), when known
	AttrTxnValues   = "kvdescriptor.txn.values"  // values set or deleted (retried keys, for a retry)
	AttrTxnDryRun   = "kvdescriptor.txn.dry_run" // a dry run
	AttrTxnPlanned  = "kvdescriptor.txn.planned" // operations planned
	AttrTxnExecuted = "kvdescriptor.txn.executed"
	AttrTxnErrors   = "kvdescriptor.txn.errors" // per-key errors
	AttrTxnRetries  = "kvdescriptor.txn.retries_scheduled"
	AttrTxnOutcome  = "kvdescriptor.txn.outcome" // "ok", "failed" or "reverted"
	AttrPlanOps     = "kvdescriptor.plan.ops"
	AttrDescriptor  = "kvdescriptor.descriptor"
	AttrOp          = "kvdescriptor.op" // OpKind.String(): CREATE, UPDATE, DELETE, RETRIEVE
	AttrKey         = "kvdescriptor.key"
	AttrBatchOps    = "kvdescriptor.batch.ops"
	AttrBatchFailed = "kvdescriptor.batch.failed"
	AttrFound       = "kvdescriptor.readback.found" // the read-back found a value
)

// Source names the northbound source whose update the transaction applies
// (nb.Mux passes it), for its trace; it changes nothing else.
func Source(name string) TxnOption {
	return func(o *txnOptions) { o.withRare(func(r *txnRare) { r.source = name }) }
}

// startTxnSpan opens the span of job j's transaction (number seq), kept
// in s.txnSpan until endJob ends it, and returns the context its work
// runs with (j.ctx without a tracer).
func (s *executor) startTxnSpan(j *job, seq uint64) context.Context {
	if s.opts.tracer == nil {
		return j.ctx
	}
	if j.opts.dryRun {
		seq = 0
	}
	attrs := []slog.Attr{
		slog.String(AttrTxnKind, j.kind.String()),
		slog.Uint64(AttrTxnSeq, seq),
		slog.Int(AttrTxnValues, len(j.items)+len(j.retry)),
	}
	if j.opts.description != "" {
		attrs = append(attrs, slog.String(AttrTxnDesc, j.opts.description))
	}
	if src := j.opts.rareOr().source; src != "" {
		attrs = append(attrs, slog.String(AttrTxnSource, src))
	}
	if j.opts.dryRun {
		attrs = append(attrs, slog.Bool(AttrTxnDryRun, true))
	}
	ctx, span := s.opts.tracer.Start(j.ctx, SpanTxn, attrs...)
	s.txnSpan, s.txnRetries = span, 0
	return ctx
}

// endTxnSpan ends the span of the transaction that ran (s.txnSpan, set)
// with its result.
func (s *executor) endTxnSpan(res *Result) {
	outcome := "ok"
	switch {
	case res.Reverted:
		outcome = "reverted"
	case res.Err != nil:
		outcome = "failed"
	}
	s.txnSpan.End(res.Err, slog.Int(AttrTxnPlanned, len(res.Planned)), slog.Int(AttrTxnExecuted, len(res.Executed)),
		slog.Int(AttrTxnErrors, len(res.Errors)), slog.Int(AttrTxnRetries, s.txnRetries), slog.String(AttrTxnOutcome, outcome))
	s.txnSpan, s.txnRetries = nil, 0
}

// traceCall opens the span of call c (of a batch when c.group > 0): the
// handler's context carries it. The tracer is set.
func (s *caller) traceCall(c *callCtx) {
	attrs := []slog.Attr{slog.String(AttrDescriptor, c.name()), slog.String(AttrOp, c.op.String()), slog.String(AttrKey, c.key)}
	name := SpanCall
	if c.group > 0 {
		name = SpanBatch
		attrs = append(attrs, slog.Int(AttrBatchOps, c.group))
	}
	c.Parent, c.span = s.opts.tracer.Start(c.Parent, name, attrs...)
}

// endCallSpan ends the span of call c, if it has one, with err.
func endCallSpan(c *callCtx, err error, attrs ...slog.Attr) {
	if c.span != nil {
		c.span.End(err, attrs...)
		c.span = nil
	}
}

// tracedPlan applies job j in plan, in a span of its own when traced.
func tracedPlan(plan *run, j *job) {
	if plan.s.opts.tracer == nil {
		plan.apply(j)
		return
	}
	_, span := plan.s.opts.tracer.Start(plan.ctx, SpanPlan)
	plan.apply(j)
	span.End(nil, slog.Int(AttrPlanOps, len(plan.ops)))
}

// tracedRefresh is the refresh of a resync, in a span of its own.
func (s *executor) tracedRefresh(ctx context.Context, j *job) (*sbView, []KeyError) {
	if s.opts.tracer == nil {
		return s.refresh(ctx, j)
	}
	ctx, span := s.opts.tracer.Start(ctx, SpanRefresh)
	view, errs := s.refresh(ctx, j)
	span.End(nil, slog.Int(AttrTxnErrors, len(errs)))
	return view, errs
}

// endGroupSpan ends the span of the batch or group cc with its operations'
// outcomes: the number that failed, and the first failure as its error.
func endGroupSpan(cc *callCtx, ops []kv.BatchOp[string, proto.Message, any]) {
	var first error
	failed := 0
	for k := range ops {
		if ops[k].Err != nil {
			if first == nil {
				first = ops[k].Err
			}
			failed++
		}
	}
	endCallSpan(cc, first, slog.Int(AttrBatchFailed, failed))
}
