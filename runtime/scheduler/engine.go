package scheduler

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
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
	g   *graph.Graph
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
	held *graph.Node
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
func (r *run) mut(n *graph.Node) {
	if r.prior != nil {
		r.remember(n.Key, n)
	}
	r.g.Touch(n)
	n.Seq = r.seq
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
func (r *run) opFor(n *graph.Node, o Op) {
	r.g.Touch(n)
	o.Flags |= r.flags
	o.State = n.State
	if o.Kind == OpCreate || o.Kind == OpUpdate {
		o.Metadata = n.Metadata // a plan has none: executePlan fills it in
	}
	n.OpSeq = r.seq32
	// The operation that follows a call records it (the call's result:
	// success or failure); no other operation comes in between.
	o.Called, r.called = r.called, false
	if r.adopting != nil && r.adopting[n.Key] {
		// Adopted with other contents than intended: the adoption and
		// what brings the value to its intent read as one operation.
		delete(r.adopting, n.Key)
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
func (r *run) newNode(key, base string) *graph.Node {
	if r.prior != nil {
		r.remember(key, nil)
	}
	n := &graph.Node{NodeFields: graph.NodeFields{Key: key, Base: base, Origin: kv.OriginNB, Desc: r.s.lookup(key)}}
	r.g.AddNode(n)
	return n
}

// setIntent records the intended value of an NB key (nil: delete it).
// It returns the node of key (nil: none), for the caller to reconcile
// without looking it up again (see graph.current).
func (r *run) setIntent(key string, value proto.Message) *graph.Node {
	n := r.g.Node(key)
	if n != nil && n.Base != "" {
		r.keyErr(key, OpNone, ErrDerivedKey)
		return n
	}
	if value == nil && (n == nil || n.Intent == nil) {
		if n != nil && n.Origin == kv.OriginSB && n.Applied != nil {
			r.keyErr(key, OpDelete, ErrObtainedKey)
		}
		return n
	}
	if n == nil {
		n = r.newNode(key, "")
	}
	r.mut(n)
	n.Intent, n.IntentSeq, n.Retries = value, r.seq, 0
	if value != nil && n.Origin == kv.OriginSB {
		n.Origin = kv.OriginNB // an intended value takes an obtained one over
	}
	r.evaluate(n)
	if n.InvalidErr() != nil && !r.reverting {
		r.keyErr(key, OpNone, n.InvalidErr()) // bad input is an error of the commit
	}
	return n
}

// reconcile brings the southbound state of key to its target.
func (r *run) reconcile(key string) { r.reconcileNode(r.g.Node(key)) }

// reconcileNode is reconcile of the key of n, the graph's node of it (nil:
// none), for callers that hold it already.
func (r *run) reconcileNode(n *graph.Node) {
	if r.abort || n == nil || n.Removing || n.Origin == kv.OriginSB {
		return // obtained or discovered values are never touched by us
	}
	key := n.Key
	if n.Desc == nil {
		r.settle(n, false, true) // UNIMPLEMENTED: no call can be made
		return
	}
	if len(r.unsure) != 0 {
		if err := r.unknownOutcome(key); err != nil {
			if n.FailedSeq != r.seq32 {
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
	if n.Base != "" && n.Intent != nil && orphanedFrom(n, b) {
		// Its base is gone or no longer derives it (the value outlived
		// it after a failed delete): nothing intends it any more.
		r.mut(n)
		n.Intent = nil
		n.SetRare(nil, n.ClaimantKeys())
		r.g.SetDeps(n, nil, n.Adeps())
	}
	if r.view != nil && n.Applied == nil {
		// Found by the refresh (a derived value of a base that turned
		// out to exist, say): it is applied, whatever comes next.
		r.adoptFound(n)
		b = r.baseNode(n)
	}
	want, pending := r.targetWith(n, b)
	switch {
	case want == nil && n.Applied == nil:
		if !r.createdInUnit(n, pending) {
			r.settle(n, pending, true)
		}
	case want == nil:
		// Gone for want of what it needs, it may be created with that
		// as a unit (a cycle member whose change needs a re-create).
		if r.remove(n, 0, false) {
			r.createdInUnit(n, pending)
		}
	case n.Applied == nil:
		r.create(n, want, 0)
	default:
		r.change(n, want)
	}
}

// createdInUnit creates n, PENDING and holding nothing, with the other
// members of its dependency cycle when they can be created as a unit (see
// cycleUnit), and reports whether it did.
func (r *run) createdInUnit(n *graph.Node, pending bool) bool {
	if !pending || r.unit[n.Key] != 0 {
		return false
	}
	unit := r.cycleUnit(n)
	if unit != nil {
		r.createUnit(unit)
	}
	return unit != nil
}

// change brings n, applied, to want: nothing, when they are equal; else
// an update, or a re-create when the descriptor cannot update or the
// change needs one. A comparator that panics fails the value, with no call.
func (r *run) change(n *graph.Node, want proto.Message) {
	key := n.Key
	equal, recreate := changeOf(n, want)
	if err := r.panicked(key); err != nil {
		r.mut(n)
		r.fail(n, OpUpdate, err, r.nodeFlags(n), n.Applied, want, true)
		return
	}
	switch {
	case equal:
		if n.Applied != want {
			// Equal for the southbound, but fields left out of the
			// comparison (those that derive values) may have changed.
			r.mut(n)
			n.Applied = want
			r.g.SetDeps(n, n.Deps, r.depsOfValue(n, want))
			r.derive(n)
		}
		r.settle(n, false, true)
	case recreate:
		if !r.remove(n, FlagRecreate, false) {
			return
		}
		if c := r.g.Node(key); c != nil && c.Applied != nil {
			return // created again on the way (with its cycle, as a unit)
		}
		if want, _ = r.target(n); want != nil {
			r.create(n, want, FlagRecreate)
		} else {
			r.reconcile(key) // the delete took away what it needs: decide again
		}
	case len(r.vanished) > 0 && r.vanished[key]:
		for i := r.replayed; i < len(r.replay); i++ { // a group's delete beyond its failure took it: taken in first
			if r.replay[i].key == key {
				r.settleLeftover(i)
			}
		}
	default:
		r.update(n, want)
	}
}

// changeOf tells how n, applied, changes to want: not at all (equal), by
// a re-create (its descriptor cannot update, or the change needs one), or
// else by an update.
func changeOf(n *graph.Node, want proto.Message) (equal, recreate bool) {
	equal = n.Applied == want || n.Desc.Equivalent(n.Key, n.Applied, want)
	return equal, !equal && (!n.Desc.CanUpdate() || n.Desc.NeedsRecreate(n.Key, n.Applied, want))
}

// create creates n with want: its intent, or (revert) what it had before.
func (r *run) create(n *graph.Node, want proto.Message, flags Flags) {
	if r.abort {
		return // the forward pass stopped (a re-create's delete took a failure with it)
	}
	if r.view != nil && r.adoptOnCreate(n) {
		return
	}
	flags |= r.nodeFlags(n)
	if n.State == PENDING {
		flags |= FlagWasPending
	}
	meta, err := r.call(OpCreate, n, nil, want)
	r.mut(n)
	n.LastOp = OpCreate
	if err != nil {
		found, fmeta, known := r.readBack(n, want)
		if found != nil {
			r.takeApplied(n, found, fmeta) // applied in part: it exists
			r.linkFoundDerived(n)
		} else if !known {
			err = r.markUnsure(n, want, err)
		}
		r.fail(n, OpCreate, err, flags, nil, want, known)
		if n.Applied != nil && !r.abort {
			if !r.depsMet(n, n.Adeps()) {
				// Found in a version whose dependencies are gone (it
				// was there already, unknown: the refresh that would
				// have shown it failed): it goes, by another call than
				// the one that failed, and stays FAILED with its error.
				lastErr := n.LastErr()
				if r.remove(n, 0, false) {
					r.mut(n)
					n.SetLastErr(lastErr)
				}
				return
			}
			r.derive(n)
			r.triggerDependents(n.Key, n)
		}
		if n.Applied == nil && known && r.unit[n.Key] == 0 {
			r.dropLeftWithout(n.Key) // (a unit's: see createUnit)
		}
		return
	}
	n.Applied, n.Metadata, n.State = want, meta, CONFIGURED
	n.SetLastErr(nil)
	r.g.SetDeps(n, n.Deps, r.depsOfValue(n, want))
	r.g.SetExisting(n.Key, true)
	r.syncMetadata(n)
	r.opFor(n, Op{Key: n.Key, Kind: OpCreate, Value: want, Flags: flags})
	r.derive(n)
	r.triggerDependents(n.Key, n)
}

func (r *run) update(n *graph.Node, want proto.Message) {
	delete(r.viewFresh, n.Key)
	prev := n.Applied
	flags := r.nodeFlags(n)
	r.dropObsoleteDerived(n, want)
	if r.abort {
		return
	}
	if w, _ := r.target(n); n.Applied == nil || w != want {
		// Removing what the old version derived took away what the new
		// version needs (or the value itself): decide again.
		r.reconcile(n.Key)
		return
	}
	meta, err := r.call(OpUpdate, n, prev, want)
	r.mut(n)
	n.LastOp = OpUpdate
	if err != nil {
		found, fmeta, known := r.readBack(n, want)
		if found == nil && known {
			// Gone (behind our back, or by the failed call): what it
			// derives and needs it go first, as for a value found
			// MISSING; it ends FAILED with nothing applied, and failed
			// from now: what the removal decides again calls nothing on it.
			n.FailedSeq = r.seq32
			r.remove(n, 0, true)
			r.mut(n)
			n.LastOp = OpUpdate
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
	n.Applied, n.Metadata, n.State = want, meta, CONFIGURED
	n.SetLastErr(nil)
	r.g.SetDeps(n, n.Deps, r.depsOfValue(n, want))
	r.syncMetadata(n)
	r.opFor(n, Op{Key: n.Key, Kind: OpUpdate, Value: want, PrevValue: prev, Flags: flags})
	r.derive(n)
}

// keep ends a removal of n that failed: n stays applied (unless a
// read-back found it gone after all) and FAILED (or RETRYING), and what was
// taken away for it comes back. prev is the value the delete was about;
// known says whether the graph knows what the southbound holds now (no
// call was made, or it was read back).
func (r *run) keep(n *graph.Node, flags Flags, err error, prev proto.Message, known bool) {
	n.Removing = false
	n.LastOp = OpDelete
	r.g.SetExisting(n.Key, n.Applied != nil)
	r.fail(n, OpDelete, err, flags, prev, nil, known)
	r.derive(n)
	r.triggerDependents(n.Key, n)
	r.runLater() // what waited for n's removal decides again, with n staying
}

// fail records a failed operation on n (already mut'ed, its applied
// version what the southbound holds as far as known). known says whether
// that is known (no call was made, or the value was read back): a revert
// then restores the value from there, with no blind undo of the call.
func (r *run) fail(n *graph.Node, kind OpKind, err error, flags Flags, prev, value proto.Message, known bool) {
	r.opFor(n, Op{Key: n.Key, Kind: kind, Value: value, PrevValue: prev, Flags: flags, Err: err})
	i := len(r.ops) - 1
	r.keyErr(n.Key, kind, err)
	n.FailedSeq = r.seq32
	if r.opts.revert && !r.reverting {
		// The forward pass stops here; revert decides the states. (A
		// failure with no call may follow, on the way out: its value
		// keeps its error; the revert starts from the first.)
		if r.abort {
			n.SetLastErr(err)
		} else {
			r.abort = true
			r.failedOp = &failedOp{key: n.Key, kind: kind, desc: n.Desc, prev: prev, value: value, meta: n.Metadata, err: err, known: known}
		}
		if r.takingFacts {
			// A call of taking a finding (see takeUnsure) is no change
			// of the transaction: the revert does not restore n, and
			// its failure stands.
			n.State = FAILED
			n.SetLastErr(err)
		}
		r.setOpState(i, FAILED)
		return
	}
	n.SetLastErr(err)
	defer func() { r.setOpState(i, n.State) }()
	policy := r.s.retryPolicy(n, r.opts)
	if policy.enabled() && !r.opts.revert && n.Desc.IsRetriable(err) && int(n.Retries) < policy.MaxAttempts {
		n.State = RETRYING
		r.retry = append(r.retry, n.Key)
		return
	}
	n.State = FAILED
	if n.Retries > 0 && int(n.Retries) >= policy.MaxAttempts {
		n.SetLastErr(&exhausted{attempts: int(n.Retries) + 1, err: err})
	}
}

// settle sets the state of a node that needs no southbound operation, and
// drops nodes that nothing refers to any more. A change to PENDING,
// INVALID or UNIMPLEMENTED is recorded as an operation of kind OpNone,
// unless record is false (an operation was recorded already).
func (r *run) settle(n *graph.Node, pending, record bool) {
	if n.Intent == nil && n.Applied == nil && !n.Removing && (len(r.g.Unsure) == 0 || !r.unsureOf(n.Key)) {
		r.mut(n)
		r.g.SetDeps(n, nil, nil)
		r.g.SetUnimplemented(n.Key, false)
		r.g.DelNode(n)
		n.State = REMOVED
		// Values that derive the key too, refused while n held it,
		// derive it now.
		for _, c := range n.ClaimantKeys() {
			if cn := r.g.Node(c); cn != nil && cn.Exists() {
				r.derive(cn)
			}
		}
		return
	}
	if n.FailedSeq == r.seq32 {
		return // fail() set FAILED or RETRYING
	}
	var (
		st    State
		flags Flags
		err   error
	)
	switch {
	case n.Desc == nil:
		st, flags, err = UNIMPLEMENTED, FlagUnimplemented, ErrUnimplemented
	case n.InvalidErr() != nil:
		st, flags, err = INVALID, FlagInvalid, n.InvalidErr()
	case pending:
		st, flags = PENDING, FlagIsPending
	case n.Applied != nil:
		st = CONFIGURED
	default:
		st = NONEXISTENT
	}
	if n.State == st && n.LastErr() == err {
		return
	}
	r.mut(n)
	wasState := n.State
	n.State = st
	n.SetLastErr(err)
	if flags != 0 && record && wasState != st {
		// INVALID and UNIMPLEMENTED records carry their error, so that
		// the history (timelines, snapshots) keeps it.
		r.opFor(n, Op{Key: n.Key, Kind: OpNone, Value: n.Intent, Flags: flags | r.nodeFlags(n), Err: err})
	}
}

// triggerDependents reconciles the values waiting for key, given n, the
// node of key (nil: unknown), which the dependents' reconciliations find
// without a lookup (see nodeOf).
func (r *run) triggerDependents(key string, n *graph.Node) {
	var buf [8]*graph.Node // on the stack: most values have few dependents
	ds := r.g.DependentNodes(buf[:0], key, true)
	if len(ds) == 0 {
		return
	}
	held := r.held
	r.held = n
	defer func() { r.held = held }()
	for _, d := range ds {
		// An earlier one's reconciliation may have taken d out.
		if d = r.g.Current(d.Key, d, 0); d != nil && d.Applied == nil && d.Intent != nil && d.Origin != kv.OriginSB {
			r.reconcileNode(d)
		}
	}
}

// dropLeftWithout decides again the CONFIGURED values lacking key, whose
// create failed (a veth end whose peer went unseen): they go, as in
// createUnit; a revert changes them on the way.
func (r *run) dropLeftWithout(key string) {
	var buf [8]*graph.Node
	for _, d := range r.g.DependentNodes(buf[:0], key, true) {
		if d = r.g.Current(d.Key, d, 0); d != nil && d.State == CONFIGURED && d.Applied != nil && d.Origin != kv.OriginSB && !r.depsMet(d, d.Adeps()) {
			r.mut(d) // a revert's: it joins what the revert restores
			r.reconcileNode(d)
		}
	}
}

// nodeOf returns the graph's node of key, or nil: r.held, a node that a
// caller up the stack holds, when key is its key and it is still in the
// graph (see graph.current), else a lookup.
func (r *run) nodeOf(key string) *graph.Node {
	if h := r.held; h != nil && h.Key == key && h.State != REMOVED {
		return h
	}
	return r.g.Node(key)
}
