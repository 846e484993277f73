package scheduler

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/guard"
)

// executor is the scheduler's running of transactions: plan, execution,
// retries, the refresh and correlation of a resync, the transaction log.
type executor struct {
	*Scheduler

	// retryPolicies are the retry policies of transactions, by sequence
	// number, for the values they set (see retryPolicy).
	retryPolicies map[uint64]RetryPolicy
	// txn is the state of the running transaction (one at a time), kept
	// for a takeover.
	txn txnState
	// plan is the run that plans the running transaction, and planOps
	// the buffer its operations go to; both are reused (see newPlan).
	plan    run
	planOps []Op
	// driftBk are the repair histories of drifted values (repairAllowed),
	// dropped once they no longer count (driftForgot: when last looked).
	driftBk     map[string]*driftBackoff
	driftForgot time.Time
	// sweep are the slices of the periodic drift check's pass still to
	// check; driftStep the interval between two, in nanoseconds.
	sweep     [][]string
	driftStep atomic.Int64
	// txnSpan is the running transaction's span (WithTracer), ended by
	// endJob; txnRetries the number of keys whose retries it scheduled.
	txnSpan    Span
	txnRetries int
	// blind are the descriptors whose Retrieve failed in the last refresh
	// that asked them: what the graph holds nothing of may be there (after
	// a restart, everything of theirs may be), but for the keys read back
	// alone since (the inner map: the transaction before the read, see
	// readKey).
	blind map[kv.Descriptor]map[string]uint64
	// seen are the descriptors a refresh has read: the graph knows what
	// they hold since (what it holds nothing of is absent), whatever a
	// later refresh that fails (see unreadDerived).
	seen map[kv.Descriptor]bool
	// unsettled are read-back facts that a reverted transaction took and
	// did not settle, for the next retry transaction (see settleLater).
	unsettled []unsureFact
}

// runTxn plans and executes one transaction and returns its result; the
// caller holds s.mu.
//
// The plan is the algorithm run with no southbound calls (recording the
// calls it would make) on the graph with its journal open. Since the
// algorithm is deterministic, the execution makes exactly those calls as
// long as they succeed: they are made in order and, when all succeed, the
// planned graph is kept as it is. On the first failure the graph is rolled
// back and the algorithm runs again for real, replaying the results of the
// calls already made instead of making them twice, and takes over from the
// failure (PENDING dependents, retries, revert).
//
// When a call of the plan is given up on (see calls.go), runTxn returns
// nil with j.taken set: another goroutine has taken the
// transaction over (finishTxn).
func (s *executor) runTxn(j *job) *Result {
	seq := s.seq + 1
	j.seq.Store(seq)
	room := &resultRoom{Result: Result{Seq: seq, Kind: j.kind, Description: j.opts.description, DryRun: j.opts.dryRun, Start: time.Now()}}
	res := &room.Result
	if j.opts.dryRun {
		res.Seq = 0 // a dry run changes nothing and takes no number
	}
	// Calls get their own context (see callCtx), which takes only the
	// values of the job's: the job's cancellation bounds the caller's
	// wait, never the transaction.
	ctx := s.startTxnSpan(j, seq) // j.ctx, with the span when traced

	// A refresh reads the southbound before anything is planned. What it
	// finds is kept even by a dry run: it is a fact, not a change.
	var view *sbView
	var refreshErrs []KeyError
	if j.kind == FullResyncTxn || j.kind == DownstreamResyncTxn {
		view, refreshErrs = s.tracedRefresh(ctx, j)
	}

	if !j.opts.dryRun {
		s.rememberRetryPolicy(seq, j.opts.retry)
	}
	s.panics.Drain() // what readers' calls recovered: not this transaction's
	if graph.Txn32(seq) == 1 {
		s.g.ClearMarks() // once every 2^32-1 transactions
	}
	// The plan is the scheduler's own run, reused with its buffers (one
	// transaction runs at a time; see newPlan).
	unsure := s.readBackUnsure(ctx, j.opts.dryRun, view)
	if j.kind == RetryTxn && len(s.unsettled) > 0 {
		unsure, s.unsettled = append(unsure, s.unsettled...), nil
	}
	plan, scratch := s.newPlan(ctx, seq, j, view)
	plan.unsure = unsure
	s.g.Reserve(len(j.items))
	s.g.Begin()
	tracedPlan(plan, j)
	if scratch {
		// Planned into the reused buffer: the operations (the caller's)
		// get an array just their size, or the result's room for one.
		ops := room.op[:0]
		if len(plan.ops) > len(room.op) {
			ops = make([]Op, 0, len(plan.ops))
		}
		plan.ops = append(ops, plan.ops...)
		clear(s.planOps[:min(len(plan.ops), cap(s.planOps))])
	}
	res.Planned = plan.ops
	if s.opts.txnLog {
		s.logOps(res, res.Planned, true)
	}
	if j.opts.dryRun {
		defer s.releasePlan(plan)
		conclude(res, plan, j, refreshErrs) // on the planned graph
		s.g.Rollback()
		if view != nil {
			s.syncMetadataMaps(view)
		}
		return res
	}

	s.seq = seq
	st := &s.txn
	*st = txnState{j: j, res: res, plan: plan, view: view, unsure: unsure, refreshErrs: refreshErrs, ctx: ctx, seq: seq}
	results, ok, taken := s.executePlan(st)
	if taken != nil {
		j.taken = taken
		return nil
	}
	return s.finishTxn(st, results, ok)
}

// resultRoom is a Result with room for the operation of the usual
// single-value plan: one allocation.
type resultRoom struct {
	Result
	op [1]Op
}

// planScratchMax bounds the capacity of the buffers that plans reuse:
// a larger transaction's plan allocates its own, and after one that grew
// a buffer beyond it, the buffer is dropped rather than kept.
const planScratchMax = 64

// newPlan returns the run that plans job j: the scheduler's own, reset,
// with its buffers of calls and operations kept from the transaction
// before (nothing of a plan outlives its transaction but its operations).
// scratch says that the operations go to the reused buffer, from which
// the caller copies them out after planning.
func (s *executor) newPlan(ctx context.Context, seq uint64, j *job, view *sbView) (plan *run, scratch bool) {
	plan = &s.plan
	if plan.s != nil {
		// Not released (the transaction before ended in a panic): cleared
		// here. A released run is clear already but for its calls.
		*plan = run{calling: calling{calls: plan.calls}}
	}
	calls := plan.calls
	plan.s, plan.g, plan.ctx, plan.seq, plan.seq32 = s.Scheduler, s.g, ctx, seq, graph.Txn32(seq)
	plan.opts, plan.sim, plan.view = j.opts, true, view
	plan.bind()
	// Sized for the usual small transaction (a value, and one derived or
	// dependent value per item). A large one starts at a quarter more than
	// its items (the buffers are cleared memory, and the operations are
	// kept by the Result): one that derives more grows once or twice. The
	// calls grow in chunks (see callList).
	n := len(j.items) + len(j.retry)
	size := 2*n + 2
	if size <= planScratchMax {
		calls.Start(planScratchMax, planScratchMax)
		if s.planOps == nil {
			s.planOps = make([]Op, 0, planScratchMax)
		}
		plan.calls = calls
		plan.ops = s.planOps
		return plan, true
	}
	size = n + n/4 + 2
	calls.Start(size, planScratchMax)
	plan.calls = calls
	plan.ops = make([]Op, 0, size)
	return plan, false
}

// releasePlan keeps the plan's first chunk of calls for the next
// transaction, emptied, unless it grew large; the run lets go of
// everything else.
func (s *executor) releasePlan(plan *run) {
	calls := plan.calls
	calls.Reset()
	*plan = run{calling: calling{calls: calls}}
}

// finishTxn ends a transaction whose plan was executed: all its calls
// succeeded (ok), or results replays those made up to the one that failed.
func (s *executor) finishTxn(st *txnState, results []callResult, ok bool) *Result {
	j, res, plan, view, refreshErrs, ctx, seq := st.j, st.res, st.plan, st.view, st.refreshErrs, st.ctx, st.seq
	unsure := st.unsure
	*st = txnState{}
	defer s.releasePlan(plan)
	final := plan
	if ok {
		s.g.Commit()
		for _, k := range plan.unsureGone {
			delete(s.g.Unsure, k)
		}
		res.Executed = plan.ops
	} else {
		// A call failed: back to the graph before the transaction, and run
		// the algorithm for real from the start, replaying what was done.
		s.g.Rollback()
		s.panics.Drain() // the run again recovers what the plan did
		exec := &run{s: s.Scheduler, g: s.g, ctx: ctx, seq: seq, seq32: plan.seq32, opts: j.opts,
			calling: calling{replay: results}, resyncPass: resyncPass{view: view}, unknowns: unknowns{unsure: unsure}}
		exec.bind()
		exec.vanished = vanishedBeyondFailure(results)
		exec.ops = make([]Op, 0, len(plan.ops)+8)
		if j.opts.revert {
			exec.prior = map[string]priorNode{}
		}
		exec.apply(j)
		exec.settleLeftovers()
		if exec.abort {
			exec.revert()
			res.Reverted = true
			s.settleLater(exec.unsure, j.opts)
		}
		res.Executed = exec.ops
		final = exec
	}
	if len(final.retry) > 0 {
		s.retryLater(final.retry, j.opts)
	}
	conclude(res, final, j, refreshErrs)
	if s.opts.txnLog {
		s.logOps(res, res.Executed, false)
	}
	return res
}

// conclude ends res, the result of job j that run r decided: its errors
// (the refresh's first, then the run's, the panics recovered and the
// values no descriptor handles among them), its end and its error.
func conclude(res *Result, r *run, j *job, refreshErrs []KeyError) {
	if r.s.panics.N.Load() > 0 {
		r.reportPanics()
	}
	r.reportUnimplemented(j)
	res.Errors = r.errs
	if len(refreshErrs) > 0 {
		res.Errors = append(refreshErrs, r.errs...)
	}
	res.End = time.Now()
	if len(res.Errors) > 0 {
		res.Err = &TxnError{Seq: res.Seq, Errors: res.Errors, Reverted: res.Reverted}
	}
}

// executePlan makes the calls of the plan in order, keeping the metadata
// maps in sync, and reports whether all succeeded; when one failed, results
// holds the outcome of every call made, for the replay. A plan that stopped
// itself (a reverting transaction refused something while planning) is not
// executed.
//
// The calls are made on this goroutine (see callInline); taken is the call
// given up on when another goroutine has taken the transaction over: then
// nothing else may be touched.
func (s *executor) executePlan(st *txnState) (results []callResult, ok bool, taken *callCtx) {
	plan, ctx := st.plan, st.ctx
	if plan.abort {
		return nil, false, nil
	}
	// The metadata a call returned is kept in its planned operation, so the
	// results are built only after a failure; a call with no operation to
	// hold its metadata (none yet: a safeguard) has it kept here.
	var unheld map[int]any
	for i := 0; i < plan.calls.Len(); i++ {
		if end := groupEnd(plan, i); end > i+1 {
			ops, failed, taken := s.execGroup(st, i, end, &unheld)
			if taken != nil {
				return nil, false, taken
			}
			if failed >= 0 {
				// The group's calls that succeeded had their metadata
				// recorded (recordMeta).
				results = plan.resultsBefore(end, 0, unheld)
				for k := range ops {
					if r := &results[i+k]; ops[k].Err != nil {
						r.err, r.meta = ops[k].Err, nil
					}
				}
			}
			clear(ops)
			s.batchOps = ops[:0] // for the next group
			if failed >= 0 {
				return results, false, nil
			}
			i = end - 1
			continue
		}
		c := plan.calls.At(i)
		// The plan ran with no metadata: the planned graph gets what the
		// calls return, and a later call on the same value reads it there.
		n := c.node(s.g)
		meta := c.meta
		if !c.first && n != nil {
			meta = n.Metadata
		}
		m, taken, err := s.callInline(st, i, ctx, c.kind, c.desc, c.key, c.prev, c.value, meta)
		if taken != nil {
			return nil, false, taken
		}
		if err != nil {
			return plan.resultsUpTo(i, m, err, unheld), false, nil
		}
		st.recordMeta(i, c, n, m, &unheld)
	}
	// Values that changed with no call (obtained ones, say): sync their
	// metadata maps with the planned graph.
	for _, key := range plan.metaKeys {
		if n := s.g.Node(key); n != nil {
			guard.SyncMetadata(n.Desc, key, n.Applied != nil, n.Metadata)
		} else {
			guard.SyncMetadata(s.lookup(key), key, false, nil)
		}
	}
	return results, true, nil
}

// recordMeta keeps the metadata m that call i of the plan (c, on node n)
// returned: in its planned operation (or unheld, when none holds it), in
// the planned graph and in the descriptor's metadata map.
func (st *txnState) recordMeta(i int, c *plannedCall, n *graph.Node, m any, unheld *map[int]any) {
	switch {
	case c.kind == OpDelete:
		m = nil
	case c.holdsMeta(st.plan.ops):
		st.plan.ops[int(c.op)].Metadata = m
	default:
		put(unheld, i, m)
		st.unheld = *unheld
	}
	if n != nil {
		n.Metadata = m
	}
	guard.SyncMetadata(c.desc, c.key, c.kind != OpDelete, m)
}

// resultsUpTo returns the results of the calls of the plan up to call
// last, which returned (m, err); unheld has the metadata of the calls
// whose operation does not hold it.
func (r *calling) resultsUpTo(last int, m any, err error, unheld map[int]any) []callResult {
	results := r.resultsBefore(last, 1, unheld)
	c := r.calls.At(last)
	return append(results, callResult{kind: c.kind, key: c.key, value: c.value, meta: m, err: err})
}

// resultsBefore returns the results of the calls of the plan before call
// end (all made and successful), with room for more.
func (r *calling) resultsBefore(end, more int, unheld map[int]any) []callResult {
	results := make([]callResult, 0, end+more)
	for i := range end {
		c := r.calls.At(i)
		res := callResult{kind: c.kind, key: c.key, value: c.value}
		switch {
		case c.kind == OpDelete:
			// Delete returns no metadata.
		case c.holdsMeta(r.ops):
			res.meta = r.ops[c.op].Metadata
		default:
			res.meta = unheld[i]
		}
		results = append(results, res)
	}
	return results
}

// callHandler makes one southbound call of c (on key: one of a group's
// keys); a panicking handler fails the call instead of the scheduler.
func callHandler(c *callCtx, key string, prev, value proto.Message, meta any) (m any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = kv.NonRetriable(fmt.Errorf("handler of %s panicked: %v", c.name(), p))
		}
	}()
	switch c.op {
	case OpCreate:
		return c.desc.Create(c, key, value)
	case OpUpdate:
		return c.desc.Update(c, key, prev, value, meta)
	default:
		return nil, c.desc.Delete(c, key, prev, meta)
	}
}

// retryLater schedules retries of keys that failed with retriable errors,
// grouped by their policy and delay; the retries' spans are children of
// the running transaction's.
func (s *executor) retryLater(keys []string, opts txnOptions) {
	type group struct {
		policy RetryPolicy
		delay  time.Duration
	}
	groups := map[group][]retryItem{}
	var order []group
	for _, k := range keys {
		n := s.g.Node(k)
		if n == nil || n.State != RETRYING {
			continue
		}
		p := s.retryPolicy(n, opts)
		g := group{p, p.delay(int(n.Retries) + 1)}
		if groups[g] == nil {
			order = append(order, g)
		}
		groups[g] = append(groups[g], retryItem{key: k, intentSeq: n.IntentSeq})
	}
	ctx := context.Background()
	if s.txnSpan != nil {
		ctx = s.txnSpan.Into(ctx)
		for _, g := range order {
			s.txnRetries += len(groups[g])
		}
	}
	for _, g := range order { // ctx carries the span of the transaction
		o, items := opts, groups[g]
		o.retry, o.revert = g.policy, false // best-effort: a reverted retry would take its own retry with it
		s.after(g.delay, func() { _ = s.enqueue(&job{kind: RetryTxn, ctx: ctx, opts: o, retry: items}) })
	}
}

// settleLater queues, as a retry transaction of its own, the settling of
// the facts that the read-backs before a transaction found, which a
// reverted transaction never reaches (settleUnsure comes last in a run),
// and which its revert does not undo: a value found gone and still
// wanted, PENDING, is created again, one found brings what it derives and
// what waited for it (PENDING, or restored so by the revert): none is left
// PENDING with what it needs there. A FAILED one is not retried, but goes
// when found without what its version needs (see settleUnsure).
func (s *executor) settleLater(facts []unsureFact, opts txnOptions) {
	queued := len(s.unsettled) > 0
	for _, f := range facts {
		if f.err == nil {
			f.taken = true
			s.unsettled = append(s.unsettled, f)
		}
	}
	if queued || len(s.unsettled) == 0 {
		return
	}
	ctx := context.Background()
	if s.txnSpan != nil {
		ctx = s.txnSpan.Into(ctx)
	}
	opts.revert, opts.retry = false, RetryPolicy{}
	_ = s.enqueue(&job{kind: RetryTxn, ctx: ctx, opts: opts})
}

// retryPolicy returns the retry policy of n: that of the running
// transaction when it has one, else that of the transaction that set the
// value's intent (its base's, for a derived value). A value keeps being
// retried as its own transaction asked, whichever transaction made the
// call that failed (a notification that unblocked it, say).
func (s *executor) retryPolicy(n *graph.Node, opts txnOptions) RetryPolicy {
	if opts.retry.enabled() {
		return opts.retry
	}
	for i := 0; n != nil && n.Base != "" && i < s.opts.maxCycle; i++ {
		n = s.g.Node(n.Base)
	}
	if n == nil {
		return RetryPolicy{}
	}
	return s.retryPolicies[n.IntentSeq]
}

// rememberRetryPolicy keeps the retry policy of transaction seq for the
// values it sets, and forgets those no value refers to any more.
func (s *executor) rememberRetryPolicy(seq uint64, p RetryPolicy) {
	if !p.enabled() {
		return
	}
	put(&s.retryPolicies, seq, p)
	if len(s.retryPolicies) < 256 {
		return
	}
	used := map[uint64]bool{seq: true}
	for _, n := range s.g.All() {
		used[n.IntentSeq] = true
	}
	for k := range s.retryPolicies {
		if !used[k] {
			delete(s.retryPolicies, k)
		}
	}
}
