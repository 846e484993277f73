package scheduler

import (
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// revert undoes a reverting transaction after its first failure. It undoes
// the failed operation itself (it may have applied in part; an error doing
// so is logged, as the operation may not have applied at all). Then it
// restores every value the forward pass touched: its intended value, and,
// through ordinary operations in dependency order, the version that was
// applied before (so a value FAILED before stays absent, and an INVALID
// value gets back the valid version it kept). The graph thus says exactly
// what the southbound was told even when an undo fails; when none fails,
// the southbound ends as it was before the transaction, and so do the
// values' states.
func (r *run) revert() {
	r.abort, r.reverting = false, true
	r.flags |= FlagRevert
	if f := r.failedOp; f != nil && !f.known {
		// Without a read-back the failed call may have applied in part:
		// call its inverse, blindly.
		r.undoFailed(f)
	}
	keys := r.priorOrder
	for _, k := range keys {
		p := r.prior[k]
		n := r.g.nodes[k]
		if n == nil {
			if !p.existed {
				continue
			}
			n = r.newNode(k, p.base)
		}
		r.mut(n)
		n.intent, n.intentSeq, n.retries, n.failedSeq = p.intent, p.intentSeq, p.retries, 0
		r.evaluate(n)
	}
	// Values still applied (a delete failed) get back what the forward pass
	// removed for them first, while what those need is there; then every
	// value goes back to what it had applied; then what depends on the
	// values that came back.
	restore := func() {
		for _, k := range keys {
			if n := r.g.nodes[k]; n != nil && n.applied != nil && n.origin != kv.OriginSB {
				r.derive(n)
				r.triggerDependents(k)
			}
		}
	}
	restore()
	for _, k := range keys {
		r.reconcile(k)
	}
	restore()
	for _, k := range keys {
		p := r.prior[k]
		if n := r.g.nodes[k]; n != nil && n.failedSeq != r.seq && n.applied == p.applied && p.existed {
			r.mut(n)
			n.state, n.lastErr = p.state, p.lastErr
		}
	}
}

// undoFailed calls the inverse of the failed operation.
func (r *run) undoFailed(f *failedOp) {
	var (
		o    Op
		meta any
		err  error
	)
	// Through doCall: timed for the observer, a panic fails the call.
	switch f.kind {
	case OpCreate:
		o = Op{Key: f.key, Kind: OpDelete, PrevValue: f.value}
		_, err = r.s.doCall(r.ctx, OpDelete, f.desc, f.key, f.value, nil, nil)
	case OpUpdate:
		o = Op{Key: f.key, Kind: OpUpdate, Value: f.prev, PrevValue: f.value}
		meta, err = r.s.doCall(r.ctx, OpUpdate, f.desc, f.key, f.value, f.prev, f.meta)
	default:
		o = Op{Key: f.key, Kind: OpCreate, Value: f.prev}
		meta, err = r.s.doCall(r.ctx, OpCreate, f.desc, f.key, nil, f.prev, nil)
	}
	o.Err = err
	o.Flags = FlagRevert
	r.ops = append(r.ops, o)
	if err != nil {
		r.s.opts.logger.Warn("undo of a failed operation failed; it may not have applied at all",
			"key", f.key, "op", f.kind.String(), "error", err)
		return
	}
	if n := r.g.nodes[f.key]; n != nil && n.applied != nil && f.kind != OpCreate {
		r.mut(n)
		n.metadata = meta
		r.syncMetadata(n)
	}
}
