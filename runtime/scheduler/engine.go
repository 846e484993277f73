package scheduler

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// run is one pass of the reconcile algorithm over the graph: a simulation
// (sim: no southbound calls, rolled back afterwards, its operations are the
// plan) or an execution. Both run the same code, so the plan is exactly what
// an execution without failures does.
//
// The invariants an execution keeps, whatever fails:
//   - a value exists in the southbound (applied) only while the
//     dependencies of its applied version exist;
//   - a derived value exists only while its base exists;
//   - the graph says what the southbound holds: after a failed call the
//     value is read back (its descriptor's Retrieve, filtered to its key),
//     since the call may have applied in part; a descriptor without
//     Retrieve is taken at its word (a failed call changed nothing).
type run struct {
	// The run's concerns: each a set of methods over the run, and the
	// state that only they keep (see bind).
	removal
	derivation
	resyncPass
	unknowns
	calling
	txnPass

	s   *Scheduler
	g   *graph
	ctx context.Context
	seq uint64
	// seq32 is txn32(seq), the number nodes keep in opSeq and callSeq.
	seq32 uint32
	opts  txnOptions
	sim   bool
	// flags are added to every operation of the run (RETRY, REVERT).
	flags Flags

	ops  []Op
	errs []KeyError
	// abort is set on the first failure of a reverting execution: the
	// forward pass stops, and revert takes over.
	abort bool
	// retry lists the keys that failed with a retriable error.
	retry []string
	// held is a node that a caller up the stack holds (see nodeOf).
	held *node
}

// bind points the run's concerns at it.
func (r *run) bind() {
	r.removal.run, r.derivation.run, r.resyncPass.run = r, r, r
	r.unknowns.run, r.calling.run, r.txnPass.run = r, r, r
}

// mut snapshots n into the journal before a change (simulation), or
// records its prior state (execution of a reverting transaction). A value
// that the revert is first to change (a derived value deleted with its
// base, say) is recorded too: the forward pass left it as it was before
// the transaction, and the revert must put it back.
func (r *run) mut(n *node) {
	if r.prior != nil {
		r.remember(n.key, n)
	}
	r.g.touch(n)
	n.seq = r.seq
}

// grow makes room for one more element, doubling the capacity when full:
// a plan of a large transaction is copied about once while it grows
// (append grows large slices by a quarter, copying them many times).
func grow[T any](s []T) []T {
	if len(s) < cap(s) || cap(s) < 256 {
		return s // room left, or small: append does well
	}
	bigger := make([]T, len(s), 2*cap(s))
	copy(bigger, s)
	return bigger
}

// opFor records an operation on n.
func (r *run) opFor(n *node, o Op) {
	r.g.touch(n)
	o.Flags |= r.flags
	o.State = n.state
	if o.Kind == OpCreate || o.Kind == OpUpdate {
		o.Metadata = n.metadata // a plan has none: executePlan fills it in
	}
	n.opSeq = r.seq32
	// The operation that follows a call records it (the call's result:
	// success or failure); no other operation comes in between.
	o.Called, r.called = r.called, false
	if r.adopting != nil && r.adopting[n.key] {
		// Adopted with other contents than intended: the adoption and
		// what brings the value to its intent read as one operation.
		delete(r.adopting, n.key)
		o.Flags |= FlagAdopted
	}
	r.ops = append(grow(r.ops), o)
}

// setOpState corrects the state of operation i once the value's state
// after it is known.
func (r *run) setOpState(i int, st State) {
	if i >= 0 && i < len(r.ops) {
		r.ops[i].State = st
	}
}

func (r *run) keyErr(key string, kind OpKind, err error) {
	r.errs = append(r.errs, KeyError{Key: key, Op: kind, Err: err})
}

// newNode adds a node for key, resolving its descriptor.
func (r *run) newNode(key, base string) *node {
	if r.prior != nil {
		r.remember(key, nil)
	}
	n := &node{nodeFields: nodeFields{key: key, base: base, origin: kv.OriginNB, desc: r.s.lookup(key)}}
	r.g.addNode(n)
	return n
}

// setIntent records the intended value of an NB key (nil: delete it).
// It returns the node of key (nil: none), for the caller to reconcile
// without looking it up again (see graph.current).
func (r *run) setIntent(key string, value proto.Message) *node {
	n := r.g.node(key)
	if n != nil && n.base != "" {
		r.keyErr(key, OpNone, ErrDerivedKey)
		return n
	}
	if value == nil && (n == nil || n.intent == nil) {
		if n != nil && n.origin == kv.OriginSB && n.applied != nil {
			r.keyErr(key, OpDelete, ErrObtainedKey)
		}
		return n
	}
	if n == nil {
		n = r.newNode(key, "")
	}
	r.mut(n)
	n.intent, n.intentSeq, n.retries = value, r.seq, 0
	if value != nil && n.origin == kv.OriginSB {
		n.origin = kv.OriginNB // an intended value takes an obtained one over
	}
	r.evaluate(n)
	if n.invalidErr() != nil && !r.reverting {
		r.keyErr(key, OpNone, n.invalidErr()) // bad input is an error of the commit
	}
	return n
}

// reconcile brings the southbound state of key to its target.
func (r *run) reconcile(key string) {
	if r.abort {
		return
	}
	r.reconcileNode(r.g.node(key))
}

// reconcileNode is reconcile of the key of n, the graph's node of it (nil:
// none), for callers that hold it already.
func (r *run) reconcileNode(n *node) {
	if r.abort || n == nil || n.removing || n.origin == kv.OriginSB {
		return // obtained or discovered values are never touched by us
	}
	key := n.key
	if n.desc == nil {
		r.settle(n, false) // UNIMPLEMENTED: no call can be made
		return
	}
	if len(r.unsure) != 0 {
		if err := r.unknownOutcome(key); err != nil {
			if n.failedSeq != r.seq32 {
				r.failUnknown(n, err)
			}
			return
		}
	}
	if r.reverting {
		if _, touched := r.prior[key]; !touched {
			return // a revert restores what the transaction changed, nothing else
		}
	}
	// The base is looked up once: what follows changes n only (a
	// resync's adoption aside).
	b := r.baseNode(n)
	if n.base != "" && n.intent != nil && orphanedFrom(n, b) {
		// Its base is gone or no longer derives it (the value outlived
		// it after a failed delete): nothing intends it any more.
		r.mut(n)
		n.intent = nil
		n.setRare(nil, n.claimantKeys())
		r.g.setDeps(n, nil, n.adeps())
	}
	if r.view != nil && n.applied == nil {
		// Found by the refresh (a derived value of a base that turned
		// out to exist, say): it is applied, whatever comes next.
		r.adoptFound(n)
		b = r.baseNode(n)
	}
	want, pending := r.targetWith(n, b)
	switch {
	case want == nil && n.applied == nil:
		if pending && r.unit[n.key] == 0 {
			if unit := r.cycleUnit(n); unit != nil {
				r.createUnit(unit)
				return
			}
		}
		r.settle(n, pending)
	case want == nil:
		r.remove(n, 0, false)
	case n.applied == nil:
		r.create(n, want, 0)
	default:
		r.change(n, want)
	}
}

// change brings n, applied, to want: nothing, when they are equal; else
// an update, or a re-create when the descriptor cannot update or the
// change needs one. A comparator that panics fails the value, with no call.
func (r *run) change(n *node, want proto.Message) {
	key := n.key
	equal := n.applied == want || n.desc.Equivalent(key, n.applied, want)
	recreate := !equal && (!n.desc.CanUpdate() || n.desc.NeedsRecreate(key, n.applied, want))
	if err := r.panicked(key); err != nil {
		r.mut(n)
		r.fail(n, OpUpdate, err, r.nodeFlags(n), n.applied, want, true)
		return
	}
	switch {
	case equal:
		if n.applied != want {
			// Equal for the southbound, but fields left out of the
			// comparison (those that derive values) may have changed.
			r.mut(n)
			n.applied = want
			r.g.setDeps(n, n.deps, r.depsOfValue(n, want))
			r.derive(n)
		}
		r.settle(n, false)
	case recreate:
		if !r.remove(n, FlagRecreate, false) {
			return
		}
		if want, _ = r.target(n); want != nil {
			r.create(n, want, FlagRecreate)
		} else {
			r.reconcile(key) // the delete took away what it needs: decide again
		}
	default:
		r.update(n, want)
	}
}

// create creates n with want: its intent, or (revert) what it had before.
func (r *run) create(n *node, want proto.Message, flags Flags) {
	if r.view != nil && r.adoptOnCreate(n) {
		return
	}
	flags |= r.nodeFlags(n)
	if n.state == PENDING {
		flags |= FlagWasPending
	}
	meta, err := r.call(OpCreate, n, nil, want)
	r.mut(n)
	n.lastOp = OpCreate
	if err != nil {
		found, fmeta, known := r.readBack(n, want)
		if found != nil {
			r.takeApplied(n, found, fmeta) // applied in part: it exists
			r.linkFoundDerived(n)
		} else if !known {
			err = r.markUnsure(n, want, err)
		}
		r.fail(n, OpCreate, err, flags, nil, want, known)
		if n.applied != nil && !r.abort {
			if !r.depsMet(n, n.adeps()) {
				// Found in a version whose dependencies are gone (it
				// was there already, unknown: the refresh that would
				// have shown it failed): it goes, by another call than
				// the one that failed, and stays FAILED with its error.
				lastErr := n.lastErr
				if r.remove(n, 0, false) {
					r.mut(n)
					n.lastErr = lastErr
				}
				return
			}
			r.derive(n)
			r.triggerDependentsOf(n.key, n)
		}
		return
	}
	n.applied, n.metadata, n.lastErr, n.state = want, meta, nil, CONFIGURED
	r.g.setDeps(n, n.deps, r.depsOfValue(n, want))
	r.g.setExisting(n.key, true)
	r.syncMetadata(n)
	r.opFor(n, Op{Key: n.key, Kind: OpCreate, Value: want, Flags: flags})
	r.derive(n)
	r.triggerDependentsOf(n.key, n)
}

func (r *run) update(n *node, want proto.Message) {
	delete(r.viewFresh, n.key)
	prev := n.applied
	flags := r.nodeFlags(n)
	r.dropObsoleteDerived(n, want)
	if r.abort {
		return
	}
	if w, _ := r.target(n); n.applied == nil || w != want {
		// Removing what the old version derived took away what the new
		// version needs (or the value itself): decide again.
		r.reconcile(n.key)
		return
	}
	meta, err := r.call(OpUpdate, n, prev, want)
	r.mut(n)
	n.lastOp = OpUpdate
	if err != nil {
		found, fmeta, known := r.readBack(n, want)
		if found == nil && known {
			// Gone (removed behind our back, or by the failed call):
			// what it derives and what needs it go first, as for a
			// value found MISSING, and it ends FAILED with nothing
			// applied.
			r.remove(n, 0, true)
			r.mut(n)
			n.lastOp = OpUpdate
			r.fail(n, OpUpdate, err, flags, prev, want, true)
			return
		}
		if known {
			r.takeApplied(n, found, fmeta) // what it holds: old, new or between
		} else {
			err = r.markUnsure(n, want, err)
		}
		r.fail(n, OpUpdate, err, flags, prev, want, known)
		r.derive(n) // bring derived values in line with what is applied
		return
	}
	n.applied, n.metadata, n.lastErr, n.state = want, meta, nil, CONFIGURED
	r.g.setDeps(n, n.deps, r.depsOfValue(n, want))
	r.syncMetadata(n)
	r.opFor(n, Op{Key: n.key, Kind: OpUpdate, Value: want, PrevValue: prev, Flags: flags})
	r.derive(n)
}

// keep ends a removal of n that failed: n stays applied (unless a
// read-back found it gone after all) and FAILED (or RETRYING), and what was
// taken away for it comes back. prev is the value the delete was about;
// known says whether the graph knows what the southbound holds now (no
// call was made, or it was read back).
func (r *run) keep(n *node, flags Flags, err error, prev proto.Message, known bool) {
	n.removing = false
	n.lastOp = OpDelete
	r.g.setExisting(n.key, n.applied != nil)
	r.fail(n, OpDelete, err, flags, prev, nil, known)
	r.derive(n)
	r.triggerDependentsOf(n.key, n)
	r.runLater() // what waited for n's removal decides again, with n staying
}

// fail records a failed operation on n (already mut'ed, its applied
// version what the southbound holds as far as known). known says whether
// that is known (no call was made, or the value was read back): a revert
// then restores the value from there, with no blind undo of the call.
func (r *run) fail(n *node, kind OpKind, err error, flags Flags, prev, value proto.Message, known bool) {
	r.opFor(n, Op{Key: n.key, Kind: kind, Value: value, PrevValue: prev, Flags: flags, Err: err})
	i := len(r.ops) - 1
	r.keyErr(n.key, kind, err)
	n.failedSeq = r.seq32
	if r.opts.revert && !r.reverting {
		// The forward pass stops here; revert decides the states.
		r.abort = true
		r.failedOp = &failedOp{key: n.key, kind: kind, desc: n.desc, prev: prev, value: value, meta: n.metadata, err: err, known: known}
		r.setOpState(i, FAILED)
		return
	}
	n.lastErr = err
	defer func() { r.setOpState(i, n.state) }()
	policy := r.s.retryPolicy(n, r.opts)
	if policy.enabled() && !r.opts.revert && n.desc.IsRetriable(err) && int(n.retries) < policy.MaxAttempts {
		n.state = RETRYING
		r.retry = append(r.retry, n.key)
		return
	}
	n.state = FAILED
	if n.retries > 0 && int(n.retries) >= policy.MaxAttempts {
		n.lastErr = fmt.Errorf("%w after %d attempts: %w", ErrRetriesExhausted, n.retries+1, err)
	}
}

// settle sets the state of a node that needs no southbound operation, and
// drops nodes that nothing refers to any more. A change to PENDING,
// INVALID or UNIMPLEMENTED is recorded as an operation of kind OpNone.
func (r *run) settle(n *node, pending bool) { r.settleState(n, pending, true) }

// settleQuiet is settle after an operation that was recorded already.
func (r *run) settleQuiet(n *node, pending bool) { r.settleState(n, pending, false) }

func (r *run) settleState(n *node, pending, record bool) {
	if n.intent == nil && n.applied == nil && !n.removing && (len(r.g.unsure) == 0 || !r.unsureOf(n.key)) {
		r.mut(n)
		r.g.setDeps(n, nil, nil)
		r.g.setUnimplemented(n.key, false)
		r.g.delNode(n)
		n.state = REMOVED
		// Values that derive the key too, refused while n held it,
		// derive it now.
		for _, c := range n.claimantKeys() {
			if cn := r.g.node(c); cn != nil && cn.exists() {
				r.derive(cn)
			}
		}
		return
	}
	if n.failedSeq == r.seq32 {
		return // fail() set FAILED or RETRYING
	}
	var (
		st    State
		flags Flags
		err   error
	)
	switch {
	case n.desc == nil:
		st, flags, err = UNIMPLEMENTED, FlagUnimplemented, ErrUnimplemented
	case n.invalidErr() != nil:
		st, flags, err = INVALID, FlagInvalid, n.invalidErr()
	case pending:
		st, flags = PENDING, FlagIsPending
	case n.applied != nil:
		st = CONFIGURED
	default:
		st = NONEXISTENT
	}
	if n.state == st && n.lastErr == err {
		return
	}
	r.mut(n)
	wasState := n.state
	n.state, n.lastErr = st, err
	if flags != 0 && record && wasState != st {
		// INVALID and UNIMPLEMENTED records carry their error, so that
		// the history (timelines, snapshots) keeps it.
		r.opFor(n, Op{Key: n.key, Kind: OpNone, Value: n.intent, Flags: flags | r.nodeFlags(n), Err: err})
	}
}

// triggerDependents reconciles the values waiting for key.
func (r *run) triggerDependents(key string) { r.triggerDependentsOf(key, nil) }

// triggerDependentsOf is triggerDependents, given n, the node of key (nil:
// unknown), which the dependents' reconciliations find without a lookup
// (see nodeOf).
func (r *run) triggerDependentsOf(key string, n *node) {
	ds := r.g.dependentNodes(key)
	if len(ds) == 0 {
		return
	}
	held := r.held
	r.held = n
	defer func() { r.held = held }()
	for _, d := range ds {
		// An earlier one's reconciliation may have taken d out.
		if d = r.g.current(d.key, d, 0); d != nil && d.applied == nil && d.intent != nil && d.origin != kv.OriginSB {
			r.reconcileNode(d)
		}
	}
}

// nodeOf returns the graph's node of key, or nil: r.held, a node that a
// caller up the stack holds, when key is its key and it is still in the
// graph (see graph.current), else a lookup.
func (r *run) nodeOf(key string) *node {
	if h := r.held; h != nil && h.key == key && h.state != REMOVED {
		return h
	}
	return r.g.node(key)
}
