package scheduler

import (
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
)

// txnPass is the run's passes over a job: applying its items or
// notifications, and reverting a failed reverting transaction.
type txnPass struct {
	*run
	// reverting is set while a failed reverting transaction is undone.
	reverting bool
	// reachOut is set for the last pass of a revert: an undo step refused
	// because a value outside the transaction still needs the value it
	// removes may move that value out of the way (see revert).
	reachOut bool
	// undoOp is the index of the blind undo of the failed operation in
	// ops (-1: none); see setUndoState.
	undoOp int
	// failedOp is the operation whose failure aborted the forward pass.
	failedOp *failedOp
	// prior holds the values as they were before a reverting transaction,
	// recorded when the forward pass first changes them.
	prior      map[string]priorNode
	priorOrder []string
}

// revert undoes a reverting transaction after its first failure (see
// doc.go, which states the promise). The failed operation was read back
// when its descriptor can Retrieve (again here when that failed, see
// rereadFailed): its value is then restored like any other; without
// Retrieve, the inverse of the failed call is made blindly first (an
// error doing so is logged: it may not have applied at all). Then every
// value the forward pass touched, or the revert changes first (see mut),
// gets back its intended value and, through ordinary operations in
// dependency order, the version it had applied before, with its state,
// error and last operation of then; steps refused as still needed are
// tried again in rounds (retryRefused). The graph says what the
// southbound holds even when an undo call fails.
func (r *txnPass) revert() {
	r.abort, r.reverting, r.undoOp = false, true, -1
	opsFrom, errsFrom := len(r.ops), len(r.errs)
	r.flags |= FlagRevert
	unsure := ""
	if f := r.failedOp; f != nil && !f.known {
		if n := r.g.Node(f.key); n != nil && r.canReadBack(n) {
			// Its read-back failed: read back again, no blind call.
			if f.known = r.rereadFailed(n, f); !f.known {
				unsure = f.key
			}
		} else {
			// Without a read-back the failed call may have applied in
			// part: call its inverse, blindly.
			r.undoFailed(f)
		}
	}
	for _, k := range r.priorOrder {
		p := r.prior[k]
		n := r.g.Node(k)
		if n == nil {
			if !p.existed {
				continue
			}
			n = r.newNode(k, p.Base)
		}
		r.mut(n)
		n.Intent, n.IntentSeq, n.Retries, n.FailedSeq = p.Intent, p.IntentSeq, p.Retries, 0
		if k == unsure || r.unsureOf(k) {
			n.FailedSeq = r.seq32 // of unknown outcome: no call on it (priorTarget)
		}
		r.evaluate(n)
	}
	// Values still applied (a delete failed) get back what the forward pass
	// removed for them first, while what those need is there; then every
	// value goes back to what it had applied; then what depends on the
	// values that came back. The keys the revert itself is first to
	// change join r.priorOrder (see mut): they are restored as well.
	restore := func() {
		for _, k := range r.priorOrder {
			if n := r.g.Node(k); n != nil && n.Applied != nil && n.Origin != kv.OriginSB {
				r.derive(n)
				r.triggerDependents(k, nil)
			} else if n != nil && n.Applied == nil && r.prior[k].Applied != nil {
				r.reconcile(k) // deleted on the way (say, with what it needs, re-created back): back too
			}
		}
	}
	restore()
	for i := 0; i < len(r.priorOrder); i++ {
		r.reconcile(r.priorOrder[i])
	}
	restore()
	r.retryRefused(r.priorOrder)
	if slices.ContainsFunc(r.priorOrder, func(k string) bool { return r.refused(r.g.Node(k)) }) {
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
	r.tidyRefusals(opsFrom, errsFrom)
	defer r.setUndoState()
	defer r.keepUnsureUndo()
	r.restoreStates()
}

// restoreStates gives each value of the revert back its state and error
// of before the transaction, when it has its version of then back.
func (r *txnPass) restoreStates() {
	for _, k := range r.priorOrder {
		// Back to the version it had applied, and not left by a failed
		// call: its state and error of then, and the operation the
		// error is about (a leftover whose delete failed, put back by
		// the revert, stays a failed DELETE).
		p := r.prior[k]
		n := r.g.Node(k)
		if n == nil && p.existed && p.Applied == nil && p.LastErr() != nil {
			// It held nothing and nothing intended it (its delete
			// failed after removing it, say): the graph kept it only
			// for its failure, which the revert dropped with it. It
			// comes back as it was.
			n = r.newNode(k, p.Base)
			r.mut(n)
			n.Intent, n.IntentSeq, n.Retries = p.Intent, p.IntentSeq, p.Retries
			r.evaluate(n) // its dependencies indexed: what it needs may not go first
		}
		same := n != nil && (n.Applied == p.Applied || n.Applied != nil && p.Applied != nil && n.Desc.Equivalent(k, n.Applied, p.Applied))
		if n != nil && n.FailedSeq != r.seq32 && !same && n.Applied != nil && p.Applied != nil && n.State == CONFIGURED {
			r.mut(n) // kept by priorTarget: its version of then needs what is missing
			n.State = FAILED
			n.SetLastErr(fmt.Errorf("not reverted: its version of before needs %s, which is missing", r.unmet(n, p.Applied)))
		}
		if same && n.FailedSeq != r.seq32 && p.existed {
			r.mut(n)
			n.State, n.LastOp = p.State, p.LastOp
			err := p.LastErr()
			if _, unsure := r.g.Unsure[k]; !unsure && !errors.Is(err, ErrStillNeeded) {
				err = outcomeKnown(err) // known since (a call on it succeeded), revert or not
			}
			n.SetLastErr(err)
			if proto.Equal(n.Intent, p.Intent) { // re-derived on the way: a RETRYING value's retry is of then
				n.IntentSeq, n.Retries = p.IntentSeq, p.Retries
			} else if p.State == RETRYING {
				r.retry = append(r.retry, k) // its retry of then is of another intent: one of now comes
			}
		}
	}
}

// undoFailed calls the inverse of the failed operation.
func (r *txnPass) undoFailed(f *failedOp) {
	o, callMeta := Op{Key: f.key, Kind: OpCreate, Value: f.prev}, any(nil) // a delete's inverse
	switch f.kind {
	case OpCreate:
		o = Op{Key: f.key, Kind: OpDelete, PrevValue: f.value}
	case OpUpdate:
		o, callMeta = Op{Key: f.key, Kind: OpUpdate, Value: f.prev, PrevValue: f.value}, f.meta
	}
	// Through doCall: timed for the observer, a panic fails the call.
	meta, err := r.s.doCall(r.ctx, o.Kind, f.desc, f.key, o.PrevValue, o.Value, callMeta)
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
	if n := r.g.Node(f.key); n != nil && n.Applied != nil && f.kind != OpCreate {
		r.mut(n)
		n.Metadata = meta
		r.syncMetadata(n)
	}
}

// retryRefused tries again, in rounds, the undo steps that were refused
// with no call because another value still needed the value (its removal
// waits for what needs it to move back: the old satisfier of an AnyOf
// dependency, say, restored later in the same revert). Rounds go on while
// one makes progress (see tidyRefusals for what the transaction records).
func (r *txnPass) retryRefused(keys []string) {
	refused := r.refused
	for range keys {
		var again []string
		for _, k := range keys {
			if refused(r.g.Node(k)) {
				again = append(again, k)
			}
		}
		progress := false
		for _, k := range again {
			n := r.g.Node(k)
			if !refused(n) {
				progress = true // resolved by an earlier one of this round (gone, say)
				continue
			}
			before := n.Applied
			r.mut(n)
			n.FailedSeq = 0
			n.SetLastErr(nil)
			r.reconcile(k)
			if n = r.g.Node(k); n == nil || n.Applied != before || !refused(n) {
				progress = true
			}
		}
		if !progress {
			break
		}
	}
}

// tidyRefusals keeps, of the refusals the revert recorded (still needed,
// no call) from ops[opsFrom:] and errs[errsFrom:], the last of each key
// that ends refused, and none of one that does not: a step tried again
// until it went, or that another's try resolved, did not fail.
func (r *txnPass) tidyRefusals(opsFrom, errsFrom int) {
	stays := func(key string) bool { return r.refused(r.g.Node(key)) }
	r.ops = lastRefusals(r.ops, opsFrom, stays, func(o Op) (string, bool) { return o.Key, !o.Called && errors.Is(o.Err, ErrStillNeeded) })
	r.errs = lastRefusals(r.errs, errsFrom, stays, func(e KeyError) (string, bool) { return e.Key, errors.Is(e.Err, ErrStillNeeded) })
}

// lastRefusals filters xs[from:] in place: of the refusals (refusal
// names their key) it keeps each key's last, when the key stays refused.
func lastRefusals[T any](xs []T, from int, stays func(string) bool, refusal func(T) (string, bool)) []T {
	last := map[string]int{}
	for i := from; i < len(xs); i++ {
		if k, ok := refusal(xs[i]); ok {
			last[k] = i
		}
	}
	out := xs[:from]
	for i := from; i < len(xs); i++ {
		if k, ok := refusal(xs[i]); !ok || last[k] == i && stays(k) {
			out = append(out, xs[i])
		}
	}
	clear(xs[len(out):])
	return out
}

// refused reports whether n's undo step was refused with no call, as
// still needed. One of unknown outcome is not: no call is made on it
// (revert), whatever error it carries.
func (r *txnPass) refused(n *graph.Node) bool {
	return n != nil && n.FailedSeq == r.seq32 && errors.Is(n.LastErr(), ErrStillNeeded) && !r.unsureOf(n.Key)
}

// rereadFailed reads back n, whose failed call f and its read-back failed:
// a revert makes no blind call on it (doc.go). It returns whether n is
// known now: the graph then holds what the southbound does (a delete
// found gone reads back its cycle partners), to restore like any other.
func (r *txnPass) rereadFailed(n *graph.Node, f *failedOp) bool {
	found, meta, known := r.readBack(n, r.g.Unsure[f.key])
	if !known {
		return false
	}
	r.mut(n)
	if found == nil && n.Applied != nil {
		r.remove(n, 0, true) // gone: what needs it and what it derives go first
	}
	r.takeApplied(n, found, meta)
	if found != nil {
		r.linkFoundDerived(n)
	} else if f.kind != OpCreate {
		r.readBackPartners(n, f.prev, false) // gone: a cycle partner may be too
	}
	return true
}

// keepUnsureUndo keeps the value of the failed operation FAILED, with its
// error, when it is still of unknown outcome (see rereadFailed) until the
// read-back before the next transaction. Without this, a value the
// transaction had created ended with no status at all.
func (r *txnPass) keepUnsureUndo() {
	for _, k := range r.priorOrder { // others made unknown (a partner's read-back failed)
		if n := r.g.Node(k); n != nil && (r.failedOp == nil || k != r.failedOp.key) && r.unsureOf(k) {
			r.mut(n)
			n.State = FAILED
			if !errors.Is(n.LastErr(), ErrOutcomeUnknown) { // (settled on the way: PENDING, say)
				n.SetLastErr(fmt.Errorf("%s: %w (its read-back as a partner failed)", k, ErrOutcomeUnknown))
			}
		}
	}
	f := r.failedOp
	if f == nil || r.g.Unsure[f.key] == nil {
		return
	}
	if _, again := f.err.(*unknownAgain); f.known && !again {
		return // (one failed with no call, still of unknown outcome, says so)
	}
	n := r.g.Node(f.key)
	if n == nil {
		n = r.newNode(f.key, r.prior[f.key].Base)
	}
	r.mut(n)
	n.State, n.LastOp, n.FailedSeq = FAILED, f.kind, r.seq32
	n.SetLastErr(f.err)
}

// setUndoState sets the state of the blind undo of the failed operation to
// the state its value ends the revert in.
func (r *txnPass) setUndoState() {
	if r.undoOp < 0 || r.undoOp >= len(r.ops) {
		return
	}
	o := &r.ops[r.undoOp]
	if n := r.g.Node(o.Key); n != nil {
		o.State = n.State
	} else {
		o.State = REMOVED
	}
}

// priorNode is a value as it was before a reverting transaction (existed
// false: there was none). The revert reads its base, intent, intentSeq,
// retries, applied, state, lastErr and lastOp.
type priorNode struct {
	existed bool
	graph.NodeFields
}

type failedOp struct {
	key         string
	kind        OpKind
	desc        kv.Descriptor
	prev, value proto.Message
	meta        any
	err         error
	// known: what the southbound holds after the failure is known (read
	// back, or no call was made), so the revert needs no blind undo.
	known bool
}

// remember records the state of key before the forward pass of a
// reverting transaction changed it (n nil: the key did not exist).
func (r *txnPass) remember(key string, n *graph.Node) {
	if _, seen := r.prior[key]; seen {
		return
	}
	p := priorNode{}
	if n != nil {
		p = priorNode{true, n.NodeFields}
	}
	r.prior[key] = p
	r.priorOrder = append(r.priorOrder, key)
}

// priorTarget is the target of a value while a revert restores what was
// applied before the transaction: that value, once what it needs exists
// and is to stay (not one the transaction created, which the revert
// deletes). One that holds it still, without something it needs that was
// not there before the transaction either (absent, or of unknown
// outcome), stays as it is: it was there without it; so does one the
// transaction updated, which an update back would leave without it
// (restoreStates fails it).
func (r *txnPass) priorTarget(n *graph.Node, want proto.Message) (proto.Message, bool) {
	if want == nil {
		return nil, false
	} else if n.FailedSeq == r.seq32 {
		return r.failedTarget(n) // an undo call of n failed: not again
	}
	deps := n.Deps
	if want != n.Intent || n.InvalidErr() != nil {
		deps = n.Desc.Dependencies(n.Key, want)
	}
	if r.depsMet(n, deps) && (n.Applied != nil || !slices.ContainsFunc(deps, func(d kv.Dependency) bool {
		p, touched := r.prior[d.Key]
		return !d.IsAnyOf() && touched && p.Applied == nil // created by the transaction: it goes
	})) {
		return want, false
	}
	if n.Applied != nil && !slices.ContainsFunc(deps, func(d kv.Dependency) bool {
		if d.IsAnyOf() { // one that satisfied it, the transaction changed (known: not a finding's)
			return slices.ContainsFunc(r.priorOrder, func(k string) bool {
				p := r.prior[k]
				return p.Applied != nil && d.AnyOf.Accepts(k) && !r.unsureOf(k) && (p.Base == "" || !r.unsureOf(p.Base))
			})
		}
		if t := r.g.Node(d.Key); t != nil && t.Exists() {
			return false // met
		}
		p, touched := r.prior[d.Key]
		return touched && p.Applied != nil // there before the transaction
	}) {
		if _, recreate := changeOf(n, want); want != n.Applied && !recreate {
			return n.Applied, false
		}
		return want, false
	}
	return nil, true
}

// unmet names the first dependency of value that no existing value meets.
func (r *txnPass) unmet(n *graph.Node, value proto.Message) string {
	for _, d := range r.depsOfValue(n, value) {
		if !r.depsMet(n, []kv.Dependency{d}) {
			return d.String()
		}
	}
	return "a dependency"
}
