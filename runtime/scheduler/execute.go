package scheduler

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// txnOutput is a transaction's result.
type txnOutput struct {
	*Result
}

// runTxn plans and executes one transaction; the caller holds s.mu.
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
// When a call of the plan is given up on (see calls.go), runTxn returns an
// empty output with j.taken set: another goroutine has taken the
// transaction over (finishTxn).
func (s *Scheduler) runTxn(j *job) txnOutput {
	seq := s.seq + 1
	j.seq.Store(seq)
	res := &Result{Seq: seq, Kind: j.kind, Description: j.opts.description, DryRun: j.opts.dryRun, Start: time.Now()}
	if j.opts.dryRun {
		res.Seq = 0 // a dry run changes nothing and takes no number
	}
	// Calls get their own context (see callCtx), which takes only the
	// values of the job's: the job's cancellation bounds the caller's
	// wait, never the transaction.
	ctx := j.ctx

	// A refresh reads the southbound before anything is planned. What it
	// finds is kept even by a dry run: it is a fact, not a change.
	var view *sbView
	var refreshErrs []KeyError
	if j.kind == FullResyncTxn || j.kind == DownstreamResyncTxn {
		view, refreshErrs = s.refresh(ctx, j)
	}

	if !j.opts.dryRun {
		s.rememberRetryPolicy(seq, j.opts.retry)
	}
	s.panics.drain() // what readers' calls recovered: not this transaction's
	if txn32(seq) == 1 {
		s.g.clearMarks() // once every 2^32-1 transactions
	}
	// The plan is the scheduler's own run, reused with its buffers (one
	// transaction runs at a time; see newPlan).
	unsure := s.readBackUnsure(ctx, j.opts.dryRun, view)
	plan, scratch := s.newPlan(ctx, seq, j, view)
	plan.unsure = unsure
	s.g.reserve(len(j.items))
	s.g.begin()
	plan.apply(j)
	if scratch {
		// Planned into the reused buffer: the plan's operations get an
		// array of their own, just their size (they go to the caller).
		ops := make([]Op, len(plan.ops))
		copy(ops, plan.ops)
		clear(s.planOps[:min(len(ops), cap(s.planOps))])
		plan.ops = ops
	}
	res.Planned = plan.ops
	if s.opts.txnLog {
		s.logOps(res, res.Planned, true)
	}
	if j.opts.dryRun {
		defer s.releasePlan(plan)
		plan.reportUnimplemented(j)
		s.g.rollback(nil)
		if view != nil {
			s.syncMetadataMaps(view)
		}
		if s.panics.n.Load() > 0 {
			plan.reportPanics()
		}
		res.Errors = append(refreshErrs, plan.errs...)
		res.End = time.Now()
		if len(res.Errors) > 0 {
			res.Err = &TxnError{Errors: res.Errors}
		}
		return txnOutput{Result: res}
	}

	s.seq = seq
	st := &s.txn
	*st = txnState{j: j, res: res, plan: plan, view: view, unsure: unsure, refreshErrs: refreshErrs, ctx: ctx, seq: seq}
	results, ok, taken := s.executePlan(st)
	if taken != nil {
		j.taken = taken
		return txnOutput{}
	}
	return s.finishTxn(st, results, ok)
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
func (s *Scheduler) newPlan(ctx context.Context, seq uint64, j *job, view *sbView) (plan *run, scratch bool) {
	plan = &s.plan
	if plan.s != nil {
		// Not released (the transaction before ended in a panic): cleared
		// here. A released run is clear already but for its calls.
		*plan = run{calls: plan.calls}
	}
	calls := plan.calls
	plan.s, plan.g, plan.ctx, plan.seq, plan.seq32 = s, s.g, ctx, seq, txn32(seq)
	plan.opts, plan.sim, plan.view = j.opts, true, view
	// Sized for the usual small transaction (a value, and one derived or
	// dependent value per item). A large one starts at a quarter more than
	// its items (the buffers are cleared memory, and the operations are
	// kept by the Result): one that derives more grows once or twice. The
	// calls grow in chunks (see callList).
	n := len(j.items) + len(j.retry)
	size := 2*n + 2
	if size <= planScratchMax {
		calls.start(planScratchMax)
		if s.planOps == nil {
			s.planOps = make([]Op, 0, planScratchMax)
		}
		plan.calls = calls
		plan.ops = s.planOps
		return plan, true
	}
	size = n + n/4 + 2
	calls.start(size)
	plan.calls = calls
	plan.ops = make([]Op, 0, size)
	return plan, false
}

// releasePlan keeps the plan's first chunk of calls for the next
// transaction, emptied, unless it grew large; the run lets go of
// everything else.
func (s *Scheduler) releasePlan(plan *run) {
	calls := plan.calls
	calls.reset()
	*plan = run{calls: calls}
}

// callList holds the calls of a plan in chunks of callChunk, so that a
// plan that grows large copies nothing and leaves no outgrown arrays to
// the collector; the first chunk grows as a slice up to callChunk. A
// group of calls (see groupCall) never spans two chunks: it is one slice.
type callList struct {
	chunks [][]plannedCall
	n      int
	// size is the number of calls the plan was sized for (see start).
	size int
}

// callChunk is the number of calls of a chunk (about 400 kB): four
// batches of the default size.
const callChunk = 4096

// start makes the list ready for a plan of about size calls.
func (l *callList) start(size int) {
	if l.n > 0 {
		l.reset()
	}
	l.size = size
	if len(l.chunks) == 0 {
		l.chunks = append(l.chunks, make([]plannedCall, 0, min(max(size, planScratchMax), callChunk)))
	} else if size > cap(l.chunks[0]) {
		l.chunks[0] = make([]plannedCall, 0, min(size, callChunk))
	}
}

func (l *callList) len() int              { return l.n }
func (l *callList) at(i int) *plannedCall { return &l.chunks[i/callChunk][i%callChunk] }

// add appends c, and returns it.
func (l *callList) add(c plannedCall) *plannedCall {
	k := l.n / callChunk
	if k == len(l.chunks) {
		// Sized for what the plan was expected to hold beyond the chunks
		// before, or small when it holds more than expected (it doubles).
		size := l.size - l.n
		if size <= 0 {
			size = planScratchMax
		}
		l.chunks = append(l.chunks, make([]plannedCall, 0, min(size, callChunk)))
	}
	ch := &l.chunks[k]
	if len(*ch) == cap(*ch) {
		// The first chunk, started small: it doubles, up to callChunk.
		bigger := make([]plannedCall, len(*ch), min(max(2*cap(*ch), 8), callChunk))
		copy(bigger, *ch)
		*ch = bigger
	}
	*ch = append(*ch, c)
	l.n++
	return &(*ch)[len(*ch)-1]
}

// firstOfChunk reports whether call i starts a chunk.
func firstOfChunk(i int) bool { return i%callChunk == 0 }

// group returns the calls [i, end), which are in one chunk.
func (l *callList) group(i, end int) []plannedCall {
	o := i % callChunk
	return l.chunks[i/callChunk][o : o+end-i]
}

// reset empties the list, keeping its first chunk unless it grew beyond
// planScratchMax.
func (l *callList) reset() {
	if len(l.chunks) == 0 {
		return
	}
	first := l.chunks[0]
	clear(l.chunks)
	if cap(first) > planScratchMax {
		l.chunks, l.n = l.chunks[:0], 0
		return
	}
	clear(first)
	l.chunks, l.n = append(l.chunks[:0], first[:0]), 0
}

// finishTxn ends a transaction whose plan was executed: all its calls
// succeeded (ok), or results replays those made up to the one that failed.
func (s *Scheduler) finishTxn(st *txnState, results []callResult, ok bool) txnOutput {
	j, res, plan, view, refreshErrs, ctx, seq := st.j, st.res, st.plan, st.view, st.refreshErrs, st.ctx, st.seq
	unsure := st.unsure
	*st = txnState{}
	defer s.releasePlan(plan)
	final := plan
	if ok {
		s.g.commit()
		for _, k := range plan.unsureGone {
			delete(s.g.unsure, k)
		}
		res.Executed = plan.ops
	} else {
		// A call failed: back to the graph before the transaction, and run
		// the algorithm for real from the start, replaying what was done.
		s.g.rollback(nil)
		s.panics.drain() // the run again recovers what the plan did
		exec := &run{s: s, g: s.g, ctx: ctx, seq: seq, seq32: plan.seq32, opts: j.opts, replay: results, view: view, unsure: unsure}
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
		}
		res.Executed = exec.ops
		final = exec
	}
	if s.panics.n.Load() > 0 {
		final.reportPanics()
	}
	final.reportUnimplemented(j)
	res.Errors = final.errs
	if len(refreshErrs) > 0 {
		res.Errors = append(refreshErrs, final.errs...)
	}
	if len(final.retry) > 0 {
		s.retryLater(final.retry, j.opts)
	}
	res.End = time.Now()
	if len(res.Errors) > 0 {
		res.Err = &TxnError{Seq: seq, Errors: res.Errors, Reverted: res.Reverted}
	}
	if s.opts.txnLog {
		s.logOps(res, res.Executed, false)
	}
	return txnOutput{Result: res}
}

// plannedCall is a southbound call that the plan makes.
type plannedCall struct {
	key  string
	desc kv.Descriptor
	// n is the node the call was planned on: the graph's node of key at
	// execution too, unless it was taken out later in the plan (see
	// graph.current).
	n           *node
	prev, value proto.Message
	// meta is the value's metadata when the plan made the call: right for
	// the first call on a value in the transaction (later ones get what
	// the call before returned).
	meta any
	// op is the index in the plan of the operation that records the call
	// (it follows the call): its metadata is filled in on execution.
	op    int32
	kind  OpKind
	first bool
	// joins is set when the call is made together with the call before
	// it, in one batch or group of concurrent calls (see batch.go).
	joins bool
}

// node returns the graph's node of the call's key once the plan ran.
func (c *plannedCall) node(g *graph) *node {
	if c.n.state != REMOVED {
		return c.n
	}
	return g.node(c.key)
}

// callResult is the outcome of a call, replayed after a failure.
type callResult struct {
	kind OpKind
	key  string
	// value is the value created or updated to (a call of a group only:
	// see settleLeftovers).
	value proto.Message
	meta  any
	err   error
	// used is set once the run replayed it.
	used bool
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
func (s *Scheduler) executePlan(st *txnState) (results []callResult, ok bool, taken *callCtx) {
	plan, ctx := st.plan, st.ctx
	if plan.abort {
		return nil, false, nil
	}
	// The metadata a call returned is kept in its planned operation, so the
	// results are built only after a failure; a call with no operation to
	// hold its metadata (none yet: a safeguard) has it kept here.
	var unheld map[int]any
	for i := 0; i < plan.calls.len(); i++ {
		if end := groupEnd(plan, i); end > i+1 {
			ops, failed, taken := s.execGroup(st, i, end, &unheld)
			if taken != nil {
				return nil, false, taken
			}
			if failed >= 0 {
				results = plan.resultsBefore(i, len(ops), unheld)
				for k := range ops {
					c := plan.calls.at(i + k)
					r := callResult{kind: c.kind, key: c.key, value: c.value, err: ops[k].Err}
					if r.err == nil {
						r.meta = ops[k].Metadata
						if c.kind == OpDelete {
							r.meta = nil
						}
					}
					results = append(results, r)
				}
				s.releaseBatchOps(ops)
				return results, false, nil
			}
			s.releaseBatchOps(ops)
			i = end - 1
			continue
		}
		c := plan.calls.at(i)
		// The plan ran with no metadata: the planned graph gets what the
		// calls return, and a later call on the same value reads it there.
		n := c.node(s.g)
		meta := c.meta
		if !c.first && n != nil {
			meta = n.metadata
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
		d := s.lookup(key)
		n := s.g.node(key)
		if n != nil {
			d = n.desc
		}
		switch {
		case d == nil || !d.WithMetadata():
		case n != nil && n.applied != nil:
			setMetadata(d, d.Label(key), n.metadata)
		default:
			deleteMetadata(d, d.Label(key))
		}
	}
	return results, true, nil
}

// recordMeta keeps the metadata m that call i of the plan (c, on node n)
// returned: in its planned operation (or unheld, when none holds it), in
// the planned graph and in the descriptor's metadata map.
func (st *txnState) recordMeta(i int, c *plannedCall, n *node, m any, unheld *map[int]any) {
	switch {
	case c.kind == OpDelete:
		m = nil
	case c.holdsMeta(st.plan.ops):
		st.plan.ops[int(c.op)].Metadata = m
	default:
		if *unheld == nil {
			*unheld = map[int]any{}
			st.unheld = *unheld
		}
		(*unheld)[i] = m
	}
	if n != nil {
		n.metadata = m
	}
	if c.desc.WithMetadata() {
		if c.kind == OpDelete {
			deleteMetadata(c.desc, c.desc.Label(c.key))
		} else {
			setMetadata(c.desc, c.desc.Label(c.key), m)
		}
	}
}

// holdsMeta reports whether the operation c.op of ops records the call c,
// and so holds the metadata it returned.
func (c *plannedCall) holdsMeta(ops []Op) bool {
	return int(c.op) < len(ops) && ops[c.op].Key == c.key
}

// resultsUpTo returns the results of the calls of the plan up to call
// last, which returned (m, err); unheld has the metadata of the calls
// whose operation does not hold it.
func (r *run) resultsUpTo(last int, m any, err error, unheld map[int]any) []callResult {
	results := r.resultsBefore(last, 1, unheld)
	c := r.calls.at(last)
	return append(results, callResult{kind: c.kind, key: c.key, meta: m, err: err})
}

// resultsBefore returns the results of the calls of the plan before call
// end (all made and successful), with room for more.
func (r *run) resultsBefore(end, more int, unheld map[int]any) []callResult {
	results := make([]callResult, 0, end+more)
	for i := range end {
		c := r.calls.at(i)
		res := callResult{kind: c.kind, key: c.key}
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

// callHandler makes one southbound call; a panicking handler fails the
// call instead of the scheduler.
func callHandler(ctx context.Context, kind OpKind, d kv.Descriptor, key string, prev, value proto.Message, meta any) (m any, err error) {
	defer func() {
		if p := recover(); p != nil {
			name := "<nil>"
			if d != nil {
				name = d.Name()
			}
			err = kv.NonRetriable(fmt.Errorf("handler of %s panicked: %v", name, p))
		}
	}()
	switch kind {
	case OpCreate:
		return d.Create(ctx, key, value)
	case OpUpdate:
		return d.Update(ctx, key, prev, value, meta)
	default:
		return nil, d.Delete(ctx, key, prev, meta)
	}
}

// apply runs the job's changes through the algorithm.
func (r *run) apply(j *job) {
	r.takeUnsure()
	switch j.kind {
	case NBTxn:
		// The items' nodes, kept from setIntent to reconcileTop (see
		// graph.current).
		nodes := make([]*node, len(j.items))
		added := r.g.added
		for i, it := range j.items {
			nodes[i] = r.setIntent(it.Key, it.Value)
		}
		for _, n := range nodes {
			r.doom(n)
		}
		for i, it := range j.items {
			r.reconcileTop(it.Key, r.g.current(it.Key, nodes[i], added))
		}
	case SBNotification:
		for _, it := range j.items {
			r.notify(it)
		}
	case RetryTxn:
		r.flags = FlagRetry
		for _, it := range j.retry {
			n := r.g.node(it.key)
			if n == nil || n.intentSeq != it.intentSeq || n.state != RETRYING {
				continue // superseded by a newer value, or resolved meanwhile
			}
			r.mut(n)
			n.retries++
			r.reconcile(it.key)
		}
	case FullResyncTxn, UpstreamResyncTxn, DownstreamResyncTxn:
		r.resync(j)
	case RegistrationTxn:
		for _, it := range j.items {
			if n := r.g.node(it.Key); n != nil && (n.desc == nil || isMisfit(n.desc)) {
				r.mut(n)
				n.desc = r.s.lookup(it.Key)
				r.g.setUnimplemented(n.key, false)
				r.evaluate(n)
			}
		}
		for _, it := range j.items {
			r.reconcile(it.Key)
		}
	}
	r.releaseDoomed()
	// Values whose removal waited for removals that never completed (they
	// waited for each other) decide again, now that nothing is being
	// removed: each is deleted, or fails with ErrStillNeeded, instead of
	// staying out of line with its target unnoticed.
	r.settleUnsure()
	r.runLater()
	r.reportAdopted()
}

// reportUnimplemented makes the values the transaction set that no
// descriptor handles errors of their keys (ErrUnimplemented), and logs
// them. The values stay recorded, UNIMPLEMENTED, so that a descriptor
// registered later applies them.
func (r *run) reportUnimplemented(j *job) {
	if len(r.g.unimplemented) == 0 {
		return
	}
	switch j.kind {
	case NBTxn, FullResyncTxn, UpstreamResyncTxn:
	default:
		return
	}
	for _, it := range j.items {
		if it.Value == nil {
			continue
		}
		if n := r.g.node(it.Key); n != nil && n.state == UNIMPLEMENTED {
			r.keyErr(it.Key, OpNone, ErrUnimplemented)
			r.s.opts.logger.Warn("no descriptor handles the key; the value waits, UNIMPLEMENTED, for one", "key", it.Key, "seq", r.seq)
		}
	}
}

// reconcileTop reconciles a key of the transaction, whose node is n (nil:
// none), and records a NOOP when its value needed nothing.
func (r *run) reconcileTop(key string, n *node) {
	added := r.g.added
	r.reconcileNode(n)
	if n = r.g.current(key, n, added); n != nil && n.base == "" && n.opSeq != r.seq32 && n.intent != nil && n.state == CONFIGURED {
		r.opFor(n, Op{Key: key, Kind: OpNone, Value: n.intent, Flags: FlagNoop})
	}
}

// notify applies one southbound notification.
func (r *run) notify(it KeyValue) {
	n := r.g.node(it.Key)
	if n != nil && n.base != "" {
		r.keyErr(it.Key, OpNone, ErrDerivedKey)
		return
	}
	if it.Value != nil && n == nil && r.s.lookup(it.Key) == nil {
		// No descriptor handles the key: nothing could ever create,
		// compare or delete it. A plugin's watcher reports its own keys.
		r.keyErr(it.Key, OpNone, fmt.Errorf("notification: %w", ErrUnimplemented))
		return
	}
	if it.Value != nil && (n == nil || n.intent == nil) {
		if m, ok := r.s.lookup(it.Key).(*misfit); ok {
			// Under a descriptor's prefix but outside its key space: no
			// descriptor could read it back or delete it either. The
			// notification is refused, naming the key and the template.
			r.keyErr(it.Key, OpNone, fmt.Errorf("notification: %w", m.Validate(it.Key, it.Value)))
			return
		}
	}
	if it.Value != nil {
		d := r.s.lookup(it.Key)
		if n != nil && n.desc != nil {
			d = n.desc
		}
		if err := checkType(d, it.Value); err != nil {
			r.keyErr(it.Key, OpNone, fmt.Errorf("notification: %w", err))
			return
		}
	}
	if it.Value != nil {
		if n != nil && n.intent != nil {
			// One of ours, seen in the southbound: trust what it says it
			// holds, then bring it to the intended value.
			r.learn(n, it.Value, it.Metadata)
			return
		}
		if n == nil {
			n = r.newNode(it.Key, "")
		}
		r.observe(n, it.Value, it.Metadata, OBTAINED)
		return
	}
	if n == nil {
		return
	}
	r.learn(n, nil, nil)
}

// retryLater schedules retries of keys that failed with retriable errors,
// grouped by their policy and delay.
func (s *Scheduler) retryLater(keys []string, opts txnOptions) {
	type group struct {
		policy RetryPolicy
		delay  time.Duration
	}
	groups := map[group][]retryItem{}
	var order []group
	for _, k := range keys {
		n := s.g.node(k)
		if n == nil || n.state != RETRYING {
			continue
		}
		p := s.retryPolicy(n, opts)
		g := group{p, p.delay(int(n.retries) + 1)}
		if groups[g] == nil {
			order = append(order, g)
		}
		groups[g] = append(groups[g], retryItem{key: k, intentSeq: n.intentSeq})
	}
	for _, g := range order {
		o := opts
		o.retry = g.policy
		s.scheduleRetry(groups[g], o, g.delay)
	}
}

// retryPolicy returns the retry policy of n: that of the running
// transaction when it has one, else that of the transaction that set the
// value's intent (its base's, for a derived value). A value keeps being
// retried as its own transaction asked, whichever transaction made the
// call that failed (a notification that unblocked it, say).
func (s *Scheduler) retryPolicy(n *node, opts txnOptions) RetryPolicy {
	if opts.retry.enabled() {
		return opts.retry
	}
	for i := 0; n != nil && n.base != "" && i < s.opts.maxCycle; i++ {
		n = s.g.node(n.base)
	}
	if n == nil {
		return RetryPolicy{}
	}
	return s.retryPolicies[n.intentSeq]
}

// rememberRetryPolicy keeps the retry policy of transaction seq for the
// values it sets, and forgets those no value refers to any more.
func (s *Scheduler) rememberRetryPolicy(seq uint64, p RetryPolicy) {
	if !p.enabled() {
		return
	}
	if s.retryPolicies == nil {
		s.retryPolicies = map[uint64]RetryPolicy{}
	}
	s.retryPolicies[seq] = p
	if len(s.retryPolicies) < 256 {
		return
	}
	used := map[uint64]bool{seq: true}
	for _, n := range s.g.all() {
		used[n.intentSeq] = true
	}
	for k := range s.retryPolicies {
		if !used[k] {
			delete(s.retryPolicies, k)
		}
	}
}

// checkType returns an error when value is not a message of d's value
// type (or is a nil message): it names the expected and the given type.
func checkType(d kv.Descriptor, value proto.Message) error {
	m := value.ProtoReflect()
	if !m.IsValid() {
		return fmt.Errorf("%w: a nil %T message (a value that is gone is reported with no value)", kv.ErrWrongType, value)
	}
	if d == nil || d.ValueType() == nil {
		return nil
	}
	want, got := d.ValueType().Descriptor().FullName(), m.Descriptor().FullName()
	if want != got {
		return fmt.Errorf("%w: descriptor %s takes %s, got %s", kv.ErrWrongType, d.Name(), want, got)
	}
	return nil
}
