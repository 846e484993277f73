package scheduler

import (
	"errors"
	"fmt"
	"slices"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// revert undoes a reverting transaction after its first failure (see
// doc.go, which states the promise). The failed operation was read back
// when its descriptor can Retrieve: its value is then restored like any
// other; without a read-back, the inverse of the failed call is made
// blindly first (an error doing so is logged: it may not have applied at
// all). Then every value the forward pass touched, or the revert changes
// first (see mut), gets back its intended value and, through ordinary
// operations in dependency order, the version it had applied before, with
// its state, error and last operation of then; steps refused as still needed are tried
// again in rounds (retryRefused). The graph says what the southbound holds
// even when an undo call fails.
func (r *run) revert() {
	r.abort, r.reverting, r.undoOp = false, true, -1
	r.flags |= FlagRevert
	if f := r.failedOp; f != nil && !f.known {
		// Without a read-back the failed call may have applied in part:
		// call its inverse, blindly.
		r.undoFailed(f)
	}
	keys := r.priorOrder
	for _, k := range keys {
		p := r.prior[k]
		n := r.g.node(k)
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
	// values that came back. The keys the revert itself is first to
	// change join r.priorOrder (see mut): they are restored as well.
	restore := func() {
		for _, k := range r.priorOrder {
			if n := r.g.node(k); n != nil && n.applied != nil && n.origin != kv.OriginSB {
				r.derive(n)
				r.triggerDependents(k)
			}
		}
	}
	restore()
	for i := 0; i < len(r.priorOrder); i++ {
		r.reconcile(r.priorOrder[i])
	}
	restore()
	r.retryRefused(r.priorOrder)
	if slices.ContainsFunc(r.priorOrder, func(k string) bool { return r.refused(r.g.node(k)) }) {
		// Still refused: a value outside the transaction needs what an
		// undo step removes, and no round moved it to another
		// satisfier (it is not the revert's to move). As a last resort
		// it goes first, like a dependent in any removal, and comes
		// back as it was once what it needs is back: a value the
		// revert changes on the way.
		r.reachOut = true
		from := len(r.priorOrder)
		r.retryRefused(slices.Clone(r.priorOrder))
		r.reachOut = false
		for i := from; i < len(r.priorOrder); i++ {
			r.reconcile(r.priorOrder[i])
		}
		restore()
	}
	defer r.setUndoState()
	defer r.keepUnsureUndo()
	for _, k := range r.priorOrder {
		// Back to the version it had applied, and not left by a failed
		// call: its state and error of then, and the operation the
		// error is about (a leftover whose delete failed, put back by
		// the revert, stays a failed DELETE).
		p := r.prior[k]
		n := r.g.node(k)
		if n == nil && p.existed && p.applied == nil && p.lastErr != nil {
			// It held nothing and nothing intended it (its delete
			// failed after removing it, say): the graph kept it only
			// for its failure, which the revert dropped with it. It
			// comes back as it was.
			n = r.newNode(k, p.base)
			r.mut(n)
			n.intent, n.intentSeq, n.retries = p.intent, p.intentSeq, p.retries
		}
		if n != nil && n.failedSeq != r.seq32 && n.applied == p.applied && p.existed {
			r.mut(n)
			n.state, n.lastErr, n.lastOp = p.state, p.lastErr, p.lastOp
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
	o.Err, o.Flags, o.Called = err, FlagRevert, true
	if o.Kind != OpDelete {
		o.Metadata = meta
	}
	r.undoOp = len(r.ops) // its State is the value's once the revert ends
	r.ops = append(r.ops, o)
	if err != nil {
		r.s.opts.logger.Warn("undo of a failed operation failed; it may not have applied at all",
			"key", f.key, "op", f.kind.String(), "error", err)
		return
	}
	r.known(f.key) // its inverse applied: the southbound is as before
	if n := r.g.node(f.key); n != nil && n.applied == nil && f.kind == OpDelete && f.prev != nil {
		// A delete of unknown outcome left the graph holding nothing:
		// the create put its version back.
		r.mut(n)
		r.takeApplied(n, f.prev, meta)
		r.derive(n)
		r.triggerDependents(n.key)
		return
	}
	if n := r.g.node(f.key); n != nil && n.applied != nil && f.kind != OpCreate {
		r.mut(n)
		n.metadata = meta
		r.syncMetadata(n)
	}
}

// retryRefused tries again, in rounds, the undo steps that were refused
// with no call because another value still needed the value (its removal
// waits for what needs it to move back: the old satisfier of an AnyOf
// dependency, say, restored later in the same revert). Rounds go on while
// one makes progress; a refusal that a later round resolved is dropped
// from the transaction's operations and errors, since nothing failed.
func (r *run) retryRefused(keys []string) {
	refused := r.refused
	var resolved []string
	for range keys {
		var again []string
		for _, k := range keys {
			if refused(r.g.node(k)) {
				again = append(again, k)
			}
		}
		progress := false
		for _, k := range again {
			n := r.g.node(k)
			if !refused(n) {
				// Resolved by an earlier one of this round (gone,
				// say).
				progress = true
				resolved = append(resolved, k)
				continue
			}
			before := n.applied
			r.mut(n)
			n.failedSeq, n.lastErr = 0, nil
			r.reconcile(k)
			if n = r.g.node(k); n == nil || n.applied != before || !refused(n) {
				progress = true
				resolved = append(resolved, k)
			}
		}
		if !progress {
			break
		}
	}
	if len(resolved) == 0 {
		return
	}
	drop := func(key string, err error) bool {
		return err != nil && errors.Is(err, ErrStillNeeded) && slices.Contains(resolved, key) && !refused(r.g.node(key))
	}
	r.ops = slices.DeleteFunc(r.ops, func(o Op) bool { return drop(o.Key, o.Err) })
	r.errs = slices.DeleteFunc(r.errs, func(e KeyError) bool { return drop(e.Key, e.Err) })
}

// refused reports whether n's undo step was refused with no call, as
// still needed.
func (r *run) refused(n *node) bool {
	return n != nil && n.failedSeq == r.seq32 && errors.Is(n.lastErr, ErrStillNeeded)
}

// keepUnsureUndo keeps the value of the failed operation when its blind
// undo failed too and its outcome is unknown (the failed call's read-back
// failed): the southbound may hold it, in whatever version, until the
// read-back before the next transaction tells. doc.go: "When an undo call
// fails, the value is FAILED", and a value whose outcome is unknown is not
// decided on (ErrOutcomeUnknown). Without this, a value the transaction
// had created (nothing before it) ended with no status at all.
func (r *run) keepUnsureUndo() {
	f := r.failedOp
	if f == nil || r.undoOp < 0 || r.undoOp >= len(r.ops) || r.ops[r.undoOp].Err == nil || !r.unsureOf(f.key) {
		return
	}
	n := r.g.node(f.key)
	if n == nil {
		n = r.newNode(f.key, r.prior[f.key].base)
	}
	r.mut(n)
	n.state, n.lastOp, n.failedSeq = FAILED, r.ops[r.undoOp].Kind, r.seq32
	n.lastErr = fmt.Errorf("undo: %w (%w: its read-back failed)", r.ops[r.undoOp].Err, ErrOutcomeUnknown)
}

// setUndoState sets the state of the blind undo of the failed operation to
// the state its value ends the revert in.
func (r *run) setUndoState() {
	if r.undoOp < 0 || r.undoOp >= len(r.ops) {
		return
	}
	o := &r.ops[r.undoOp]
	if n := r.g.node(o.Key); n != nil {
		o.State = n.state
	} else {
		o.State = REMOVED
	}
}
