package scheduler

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// txnOutput is a transaction's result and the statuses to deliver to
// watchers once the graph lock is released.
type txnOutput struct {
	*Result
	statuses []Status
}

// runTxn plans and executes one transaction; the caller holds s.mu.
func (s *Scheduler) runTxn(j *job) txnOutput {
	seq := s.seq + 1
	res := &Result{Seq: seq, Kind: j.kind, Description: j.opts.description, DryRun: j.opts.dryRun, Start: time.Now()}
	if j.opts.dryRun {
		res.Seq = 0 // a dry run changes nothing and takes no number
	}
	ctx := context.WithoutCancel(j.ctx)

	// Plan: the same algorithm with no southbound calls, rolled back.
	plan := &run{s: s, g: s.g, ctx: ctx, seq: seq, opts: j.opts, sim: true}
	s.g.begin()
	plan.apply(j)
	s.g.rollback(nil)
	res.Planned = plan.ops
	if s.opts.txnLog {
		s.logOps(res, res.Planned, true)
	}
	if j.opts.dryRun {
		res.Errors = plan.errs
		res.End = time.Now()
		if len(res.Errors) > 0 {
			res.Err = &TxnError{Errors: res.Errors}
		}
		return txnOutput{Result: res}
	}

	// Execute: no journal; a failed reverting transaction is undone by
	// running the algorithm on the intents from before it.
	s.seq = seq
	exec := &run{s: s, g: s.g, ctx: ctx, seq: seq, opts: j.opts}
	if s.watchers.active() {
		exec.touched = map[string]struct{}{}
	}
	if j.opts.revert {
		exec.prior = map[string]priorNode{}
	}
	exec.apply(j)
	if exec.abort {
		exec.revert()
		res.Reverted = true
	}
	res.Executed, res.Errors = exec.ops, exec.errs
	if len(exec.retry) > 0 {
		s.retryLater(exec.retry, j.opts)
	}
	res.End = time.Now()
	if len(res.Errors) > 0 {
		res.Err = &TxnError{Seq: seq, Errors: res.Errors, Reverted: res.Reverted}
	}
	if s.opts.txnLog {
		s.logOps(res, res.Executed, false)
	}
	out := txnOutput{Result: res}
	if exec.touched != nil {
		out.statuses = make([]Status, 0, len(exec.touched))
		for k := range exec.touched {
			st := s.statusLocked(k, true)
			if st.State == NONEXISTENT {
				st.State = REMOVED
			}
			out.statuses = append(out.statuses, st)
		}
		slices.SortFunc(out.statuses, func(a, b Status) int { return strings.Compare(a.Key, b.Key) })
	}
	return out
}

// apply runs the job's changes through the algorithm.
func (r *run) apply(j *job) {
	switch j.kind {
	case NBTxn:
		for _, it := range j.items {
			r.setIntent(it.key, it.value)
		}
		for _, it := range j.items {
			r.reconcileTop(it.key)
		}
	case SBNotification:
		for _, it := range j.items {
			r.notify(it)
		}
	case RetryTxn:
		r.flags = FlagRetry
		for _, it := range j.retry {
			n := r.g.nodes[it.key]
			if n == nil || n.intentSeq != it.intentSeq || n.state != RETRYING {
				continue // superseded by a newer value, or resolved meanwhile
			}
			r.mut(n)
			n.retries++
			r.reconcile(it.key)
		}
	case RegistrationTxn:
		for _, it := range j.items {
			if n := r.g.nodes[it.key]; n != nil && (n.desc == nil || isMisfit(n.desc)) {
				r.mut(n)
				n.desc = r.s.lookup(it.key)
				r.g.setUnimplemented(n.key, false)
				r.evaluate(n)
			}
		}
		for _, it := range j.items {
			r.reconcile(it.key)
		}
	}
	// Values whose removal waited for removals that never completed (they
	// waited for each other) decide again, now that nothing is being
	// removed: each is deleted, or fails with ErrStillNeeded, instead of
	// staying out of line with its target unnoticed.
	r.runLater()
}

// reconcileTop reconciles a key of the transaction and records a NOOP when
// its value needed nothing.
func (r *run) reconcileTop(key string) {
	r.reconcile(key)
	if n := r.g.nodes[key]; n != nil && n.base == "" && n.opSeq != r.seq && n.intent != nil && n.state == CONFIGURED {
		r.opFor(n, Op{Key: key, Kind: OpNone, Value: n.intent, Flags: FlagNoop})
	}
}

// notify applies one southbound notification.
func (r *run) notify(it txnItem) {
	n := r.g.nodes[it.key]
	if n != nil && n.base != "" {
		r.keyErr(it.key, OpNone, ErrDerivedKey)
		return
	}
	if it.value != nil {
		if n != nil && n.intent != nil {
			// One of ours, seen in the southbound: trust what it says it
			// holds, then bring it to the intended value.
			r.mut(n)
			fresh := n.applied == nil
			n.applied, n.metadata = it.value, it.metadata
			if n.desc != nil {
				r.g.setDeps(n, n.deps, n.desc.Dependencies(n.key, it.value))
			}
			r.g.setExisting(n.key, true)
			r.syncMetadata(n)
			if fresh {
				r.derive(n)
				r.triggerDependents(n.key)
			}
			r.reconcile(n.key)
			return
		}
		if n == nil {
			n = r.newNode(it.key, "")
		}
		r.observe(n, it.value, it.metadata, OBTAINED)
		return
	}
	if n == nil || n.applied == nil {
		return
	}
	if n.origin == kv.OriginSB {
		r.remove(n, FlagObtained, true)
		return
	}
	// One of ours vanished behind our back: remove what depends on it,
	// then create it again.
	if r.remove(n, 0, true) {
		r.reconcile(n.key)
	}
}

// retryLater schedules retries of keys that failed with retriable errors,
// grouped by their delay.
func (s *Scheduler) retryLater(keys []string, opts txnOptions) {
	groups := map[time.Duration][]retryItem{}
	for _, k := range keys {
		n := s.g.nodes[k]
		if n == nil || n.state != RETRYING {
			continue
		}
		d := opts.retry.delay(n.retries + 1)
		groups[d] = append(groups[d], retryItem{key: k, intentSeq: n.intentSeq})
	}
	for d, items := range groups {
		s.scheduleRetry(items, opts, d)
	}
}
