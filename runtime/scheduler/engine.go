package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

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
	// unit maps the members of the dependency cycles being created as
	// units to the unit's number: dependencies between members of the same
	// unit count as met.
	unit    map[string]int
	unitSeq int
	// later lists values whose removal waits for another removal.
	later []string
	// removals is the stack of the values being removed (n.removing).
	removals []string
	// doomed are the values that the transaction's changes remove, known
	// before the pass: nothing that needs one is created (see doom).
	doomed map[string]bool
	// deriving counts the derive calls in progress; handovers are the
	// derived keys waiting for the outermost one to end (see takeOver).
	deriving  int
	handovers []handover
	// retry lists the keys that failed with a retriable error.
	retry []string
	// calls are the southbound calls a simulation would make, in order;
	// grouped counts the calls of the group the last one is in (0: made
	// alone; see groupCall).
	calls   callList
	grouped int
	// vanished are the keys that calls of a group deleted beyond the
	// failure that ends the plan (see vanishedBeyondFailure): gone from
	// the southbound while the graph, until the run replays or settles
	// those calls, still holds them.
	vanished map[string]bool
	// replay holds the results of the calls made before a failure;
	// replayed counts those used.
	replay   []callResult
	replayed int
	// metaKeys are the keys whose metadata a simulation did not sync.
	metaKeys []string
	// view is the southbound as a resync's refresh found it; viewFresh
	// the values adopted as intended and untouched since, whose derived
	// values without Retrieve are taken to exist; missingDependents the
	// values that need one marked MISSING.
	view              *sbView
	viewFresh         map[string]bool
	missingDependents []string
	// staleTaken are the stale values the first dropStale of a resync
	// took up, for the last one to link to their base; staleDeferred
	// those of them it left to the last one.
	staleTaken, staleDeferred []string
	// leftovers are the stale values of ours that the graph held when a
	// resync began (earlier runs failed to delete them).
	leftovers []string
	// adopting are the values adopted with other contents than intended,
	// whose next operation carries the ADOPTED flag (see opFor).
	adopting map[string]bool
	// called is set by a southbound call, until the operation that
	// records it.
	called bool
	// held is a node that a caller up the stack holds (see nodeOf).
	held *node
	// unsure is what the read-backs before the run found of the values
	// whose outcome was unknown (see unsure.go); unsureGone those of
	// graph.unsure that a simulation deleted (the transaction drops them
	// from graph.unsure when its plan is kept).
	unsure     []unsureFact
	unsureGone []string
}

// priorNode is what a reverting transaction needs to know of a value as
// it was before the transaction.
type priorNode struct {
	existed   bool
	base      string
	intent    proto.Message
	intentSeq uint64
	retries   int32
	applied   proto.Message
	state     State
	lastErr   error
	lastOp    OpKind
}

type failedOp struct {
	key         string
	kind        OpKind
	desc        kv.Descriptor
	prev, value proto.Message
	meta        any
	// known: what the southbound holds after the failure is known (read
	// back, or no call was made), so the revert needs no blind undo.
	known bool
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

// remember records the state of key before the forward pass of a
// reverting transaction changed it (n nil: the key did not exist).
func (r *run) remember(key string, n *node) {
	if _, seen := r.prior[key]; seen {
		return
	}
	p := priorNode{}
	if n != nil {
		p = priorNode{existed: true, base: n.base, intent: n.intent, intentSeq: n.intentSeq, retries: n.retries,
			applied: n.applied, state: n.state, lastErr: n.lastErr, lastOp: n.lastOp}
	}
	r.prior[key] = p
	r.priorOrder = append(r.priorOrder, key)
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
	if n.invalid != nil && !r.reverting {
		r.keyErr(key, OpNone, n.invalid) // bad input is an error of the commit
	}
	return n
}

// evaluate validates n's intent and indexes its dependencies. n is mut'ed.
func (r *run) evaluate(n *node) {
	n.invalid = nil
	if n.desc == nil {
		r.g.setUnimplemented(n.key, n.intent != nil)
		r.g.setDeps(n, nil, n.adeps)
		return
	}
	var deps []kv.Dependency
	if n.intent != nil {
		if n.invalid = n.desc.Validate(n.key, n.intent); n.invalid == nil {
			deps = n.desc.Dependencies(n.key, n.intent)
			if err := r.panicked(n.key); err != nil {
				n.invalid, deps = err, nil // its dependencies are unknown
			}
		}
	}
	r.g.setDeps(n, deps, n.adeps)
}

// depsMet reports whether the dependencies deps of n are satisfied.
func (r *run) depsMet(n *node, deps []kv.Dependency) bool {
	for i := range deps {
		d := &deps[i]
		if d.IsAnyOf() {
			if r.anyOfSatisfied(&d.AnyOf) == "" {
				return false
			}
			continue
		}
		t := r.nodeOf(d.Key)
		if t == nil || len(r.vanished) > 0 && r.vanished[d.Key] {
			return false
		}
		if !t.exists() && !r.sameUnit(n.key, d.Key, t) {
			return false
		}
	}
	return true
}

// anyOfSatisfied returns an existing key that satisfies the AnyOf
// dependency, or "": one the run knows to have vanished does not.
func (r *run) anyOfSatisfied(a *kv.AnyOf) string {
	if len(r.vanished) == 0 {
		return r.g.anyOfSatisfied(a)
	}
	return anyOfInExcept(r.g.existing, a, r.vanished)
}

// target returns what n should have applied now, and whether it is held
// back by unmet dependencies.
func (r *run) target(n *node) (want proto.Message, pending bool) {
	return r.targetWith(n, r.baseNode(n))
}

// baseNode returns the node of n's base, or nil (none, or n is not
// derived).
func (r *run) baseNode(n *node) *node {
	if n.base == "" {
		return nil
	}
	return r.nodeOf(n.base)
}

// targetWith is target, given b, the node of n's base (see baseNode).
func (r *run) targetWith(n, b *node) (want proto.Message, pending bool) {
	if n.base != "" && (!baseHolds(n, b) || len(r.vanished) > 0 && r.vanished[n.base]) {
		// A derived value exists only while its base exists and derives
		// it: never created before its base (a revert, a dependency
		// that came back), never kept after it. A base that a group
		// deleted beyond its failure is gone, as it is for what depends
		// on it (see vanishedBeyondFailure), until the run takes the
		// delete in.
		return nil, false
	}
	if r.reverting && n.desc != nil {
		if p, ok := r.prior[n.key]; ok {
			return r.priorTarget(n, p.applied)
		}
	}
	switch {
	case n.desc == nil:
		return nil, false
	case n.failedSeq == r.seq32:
		if n.applied != nil && n.lastOp != OpDelete && !r.depsMet(n, n.adeps) {
			// Its create or update failed, yet it exists (applied in
			// part) and what it needs is going: it goes first. Its
			// delete is another call than the one that failed.
			return nil, false
		}
		return n.applied, false // failed once in this transaction: not again
	case n.intent == nil:
		return nil, false
	case n.invalid != nil:
		// Keep the last valid version (see doc.go: "Invalid values"),
		// while what it depends on exists.
		if n.applied != nil && !r.depsMet(n, n.adeps) {
			return nil, true
		}
		return n.applied, false
	case !r.depsMet(n, n.deps) || r.needsDoomed(n):
		return nil, true
	}
	return n.intent, false
}

// baseHolds reports whether b, the base of n, a derived value, exists and
// derives n from the version it has applied.
func baseHolds(n, b *node) bool {
	return b != nil && b.exists() && slices.Contains(b.derived, n.key)
}

// orphaned reports whether n, a derived value, has lost its base: the base
// is no longer in the graph, or no longer lists n among its derived values.
func (r *run) orphaned(n *node) bool { return orphanedFrom(n, r.g.node(n.base)) }

// orphanedFrom is orphaned, given b, the node of n's base.
func orphanedFrom(n, b *node) bool {
	return b == nil || !slices.Contains(b.derived, n.key)
}

// priorTarget is the target of a value while a revert restores what was
// applied before the transaction: that value, once what it needs exists.
func (r *run) priorTarget(n *node, want proto.Message) (proto.Message, bool) {
	switch {
	case want == nil:
		return nil, false
	case n.failedSeq == r.seq32:
		// An undo call of n failed: not again, as in target (a create
		// made again could find what it needs gone since).
		if n.applied != nil && n.lastOp != OpDelete && !r.depsMet(n, n.adeps) {
			return nil, false
		}
		return n.applied, false
	case want == n.intent && n.invalid == nil:
		if !r.depsMet(n, n.deps) {
			return nil, true
		}
	case !r.depsMet(n, n.desc.Dependencies(n.key, want)):
		return nil, true
	}
	return want, false
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
		n.intent, n.invalid = nil, nil
		r.g.setDeps(n, nil, n.adeps)
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

// call performs one southbound operation. A simulation performs none and
// records it in the plan's calls; an execution after a failed call first
// replays the results of the calls the plan made already.
func (r *run) call(kind OpKind, n *node, prev, value proto.Message) (meta any, err error) {
	r.called = true
	if r.sim {
		c := r.calls.add(plannedCall{kind: kind, key: n.key, desc: n.desc, n: n, prev: prev, value: value,
			meta: n.metadata, first: n.callSeq != r.seq32, op: int32(len(r.ops))})
		r.groupCall(c, n, kind, value)
		// Not journaled on purpose: a stale mark after a rollback only
		// ever carries an older transaction's number.
		n.callSeq = r.seq32
		return nil, nil
	}
	if r.replayed < len(r.replay) {
		if c := r.takeReplay(kind, n.key); c != nil {
			return c.meta, c.err
		}
	}
	return r.s.doCall(r.ctx, kind, n.desc, n.key, prev, value, n.metadata)
}

func (r *run) nodeFlags(n *node) Flags {
	var f Flags
	if n.base != "" {
		f |= FlagDerived
	}
	if r.unit[n.key] != 0 {
		f |= FlagCycle
	}
	return f
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
			if !r.depsMet(n, n.adeps) {
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

// depsOfValue returns the dependencies of value, a version of n.
func (r *run) depsOfValue(n *node, value proto.Message) []kv.Dependency {
	if value == n.intent && n.invalid == nil {
		return n.deps
	}
	if n.desc == nil {
		return nil // UNIMPLEMENTED: no descriptor tells
	}
	return n.desc.Dependencies(n.key, value)
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

// remove deletes n from the southbound: first its derived values, then the
// values that depend on it (they become PENDING, or change to a version
// that does not need n), then n itself. When something that needs n could
// not be deleted, n is not deleted either: it is FAILED, and what was taken
// away for it is restored. sbGone says the southbound lost n already: no
// Delete is called. It returns whether n is gone.
func (r *run) remove(n *node, flags Flags, sbGone bool) bool {
	delete(r.viewFresh, n.key)
	flags |= r.nodeFlags(n)
	r.mut(n)
	n.removing = true
	r.g.setExisting(n.key, false)
	r.removals = append(r.removals, n.key)
	defer func() { r.removals = r.removals[:len(r.removals)-1] }()
	if r.view != nil {
		r.takeUnreadDerived(n)
	}
	stuck := r.dropDerivedAll(n)
	if len(stuck) == 0 {
		r.removeDependents(n)
	}
	if r.abort {
		n.removing = false
		if sbGone {
			// The southbound lost n whatever the cascade did: the
			// revert that follows starts from there.
			r.takeApplied(n, nil, nil)
		} else {
			r.g.setExisting(n.key, true)
		}
		return false
	}
	if flags&FlagRecreate == 0 && !sbGone && n.intent != nil {
		if want, _ := r.target(n); want != nil {
			// The cascade brought back the reason for n to exist: a
			// base whose update or delete failed derives n again, or a
			// dependency came back. n stays; what was taken away for
			// it comes back, and n goes to its target. (Without an
			// intent n goes whatever its target: a revert targets
			// what was applied before, even for a derived value its
			// base no longer derives.)
			n.removing = false
			r.g.setExisting(n.key, true)
			r.derive(n)
			r.triggerDependentsOf(n.key, n)
			r.reconcile(n.key)
			return false
		}
	}
	if !sbGone && r.neededByRemoval(n) {
		// A value being removed further up still needs n: n goes once
		// that removal is done.
		n.removing = false
		r.g.setExisting(n.key, true)
		r.later = append(r.later, n.key)
		return false
	}
	if len(r.g.unsure) != 0 && !sbGone {
		if k := r.unsureBlocker(n); k != "" {
			r.keep(n, flags, fmt.Errorf("not deleted, %w: %s may need it (%w)", ErrStillNeeded, k, ErrOutcomeUnknown), n.applied, true)
			return false
		}
	}
	if blocker := r.blocker(n, stuck); blocker != "" && !sbGone {
		if slices.Contains(r.later, blocker) {
			// What still needs n waits for a removal further up (see
			// neededByRemoval): n waits with it, and is decided again
			// once that removal is done.
			n.removing = false
			r.g.setExisting(n.key, true)
			r.later = append(r.later, n.key)
			return false
		}
		r.keep(n, flags, fmt.Errorf("not deleted, %w: %s could not be deleted first", ErrStillNeeded, blocker), n.applied, true)
		return false
	}
	prev := n.applied
	if n.origin != kv.OriginSB && !sbGone {
		if _, err := r.call(OpDelete, n, prev, nil); err != nil {
			found, fmeta, known := r.readBack(n, prev)
			if known {
				r.takeApplied(n, found, fmeta) // nil: deleted after all
			} else if r.canReadBack(n) {
				// Of unknown outcome: it may be gone or still there.
				// Like a create of unknown outcome, the graph holds
				// nothing (what needs it is not created on it) and it
				// may hold prev (what prev needs is not deleted: see
				// unsureBlocker), until a read-back tells.
				r.takeApplied(n, nil, nil)
				err = r.markUnsure(n, prev, err)
			}
			r.keep(n, flags, err, prev, known)
			return false
		}
	}
	n.applied, n.metadata, n.removing, n.lastErr, n.lastOp = nil, nil, false, nil, OpDelete
	r.known(n.key)
	r.g.setDeps(n, n.deps, nil)
	r.syncMetadata(n)
	defer r.runLater()
	if sbGone && n.origin != kv.OriginSB {
		return true // one of ours, lost: the caller creates it again
	}
	_, pending := r.target(n)
	if pending && flags&FlagRecreate == 0 {
		flags |= FlagIsPending
	}
	if n.origin == kv.OriginSB {
		flags |= FlagObtained
	}
	r.opFor(n, Op{Key: n.key, Kind: OpDelete, PrevValue: prev, Flags: flags})
	if flags&FlagRecreate == 0 {
		r.settleQuiet(n, pending)
		r.setOpState(len(r.ops)-1, n.state)
	} else {
		r.setOpState(len(r.ops)-1, NONEXISTENT) // created again right after
	}
	return true
}

// removeDependents reconciles the values that depend on n, which is being
// removed: each is deleted or moves to a version that does not need n.
// The members of a dependency cycle with n (a veth peer) go last, and only
// when every other dependent has gone: when one cannot, n stays, and so
// must its partners (a veth end is never left without its peer).
func (r *run) removeDependents(n *node) {
	var partners []string
	for _, k := range r.g.dependentsOf(n.key) {
		d := r.g.node(k)
		if d == nil || d.applied == nil || d.removing {
			continue
		}
		if r.reverting && r.livedWithout(d, n) {
			continue
		}
		if r.leadsTo(n, k) {
			partners = append(partners, k)
			continue
		}
		if r.reachOut {
			if _, touched := r.prior[k]; !touched && r.needs(d, n.key) {
				r.mut(d) // changed by the revert on the way: restored too
			}
		}
		r.reconcile(k)
		if d = r.g.node(k); d != nil && !d.removing && r.needs(d, n.key) {
			return // n cannot go: it stays, with everything else that needs it
		}
	}
	for _, k := range partners {
		if d := r.g.node(k); d != nil && d.applied != nil && !d.removing {
			r.reconcile(k)
		}
	}
}

// blocker returns a value that still needs n (a derived value that could
// not be deleted, or a dependent whose applied version needs n), or "".
func (r *run) blocker(n *node, stuck []string) string {
	if len(stuck) > 0 {
		return stuck[0]
	}
	for _, k := range r.g.dependentsOf(n.key) {
		if d := r.g.node(k); d != nil && !d.removing && r.needs(d, n.key) && !(r.reverting && r.livedWithout(d, n)) {
			return k
		}
	}
	return ""
}

// livedWithout reports, while a revert runs, whether d held the version it
// holds before the transaction, which names n as a dependency, when n did
// not exist and a call of the transaction created it: d was there without
// n (a veth end whose delete failed, left without its peer), and the revert
// deletes n without touching d, as it was. (An AnyOf dependency may have
// been met by another value then: it does not count. The failed call may
// have found n there already, unknown: it does not count either, unless
// d's own failed delete is why it was there without n, which doc.go names
// as the case: "a value that was there without something it needs (its
// delete had failed) stays as it was when the revert deletes what the
// transaction created for it".)
func (r *run) livedWithout(d, n *node) bool {
	pn, ok := r.prior[n.key]
	if !ok || pn.applied != nil {
		return false
	}
	state, lastOp, lastErr := d.state, d.lastOp, d.lastErr
	if pd, ok := r.prior[d.key]; ok {
		if pd.applied != d.applied {
			return false
		}
		state, lastOp, lastErr = pd.state, pd.lastOp, pd.lastErr
	}
	// Its delete call failed (one refused as still needed kept what it
	// needs: it never was without it).
	failedDelete := (state == FAILED || state == RETRYING) && lastOp == OpDelete && !errors.Is(lastErr, ErrStillNeeded)
	if r.failedOp != nil && r.failedOp.key == n.key && !failedDelete {
		return false
	}
	return slices.ContainsFunc(d.adeps, func(dep kv.Dependency) bool { return !dep.IsAnyOf() && dep.Key == n.key })
}

// neededByRemoval reports whether a value being removed (further up the
// stack, still in the southbound) needs n, and n is not on a dependency
// cycle with it (members of a cycle cannot wait for each other).
func (r *run) neededByRemoval(n *node) bool {
	for _, k := range r.g.dependentsOf(n.key) {
		if d := r.g.node(k); d != nil && d.removing && r.needs(d, n.key) && !r.leadsTo(n, k) {
			return true
		}
	}
	return false
}

// leadsTo reports whether the applied version of from needs key, directly
// or through other applied values: whether it could not stay without key.
// A derived value needs its base; an AnyOf dependency needs key when every
// applied value it accepts (in the index of existing keys, or among the
// values being removed, which are out of that index) needs key or is key.
// The search gives up (false) after maxCycle steps.
func (r *run) leadsTo(from *node, key string) bool {
	budget := r.s.opts.maxCycle
	onPath := map[string]bool{}
	var needs func(n *node) bool
	// through reports whether the applied value at k is key or needs it.
	through := func(k string) bool {
		if k == key {
			return true
		}
		t := r.g.node(k)
		return t != nil && t.applied != nil && needs(t)
	}
	needs = func(n *node) bool {
		if budget--; budget < 0 || onPath[n.key] {
			return false
		}
		onPath[n.key] = true
		defer delete(onPath, n.key)
		if n.base != "" && through(n.base) {
			return true
		}
		for i := range n.adeps {
			d := &n.adeps[i]
			if !d.IsAnyOf() {
				if through(d.Key) {
					return true
				}
				continue
			}
			all, any := true, false
			r.eachSatisfier(&d.AnyOf, func(k string) bool {
				any = true
				all = through(k)
				return all
			})
			if any && all {
				return true
			}
		}
		return false
	}
	return needs(from)
}

// eachSatisfier calls f with each applied value that the AnyOf dependency
// accepts: those being removed (out of the index of existing keys), then
// the existing ones, until f returns false.
func (r *run) eachSatisfier(a *kv.AnyOf, f func(key string) bool) {
	for _, k := range r.removals {
		if t := r.g.node(k); t != nil && t.removing && a.Accepts(k) && !f(k) {
			return
		}
	}
	more := true
	for _, p := range a.Prefixes {
		r.g.existing.AscendGreaterOrEqual(p, func(k string) bool {
			if !strings.HasPrefix(k, p) {
				return false
			}
			if a.Match == nil || a.Match(k) {
				more = f(k)
			}
			return more
		})
		if !more {
			return
		}
	}
}

// needs reports whether the applied version of d, one of ours, depends on
// key: plainly, or through an AnyOf that no other applied value satisfies.
// A value being removed further up still counts: it is in the southbound
// until its removal, which waits for what needs it, completes.
func (r *run) needs(d *node, key string) bool {
	if d.applied == nil || d.origin == kv.OriginSB {
		return false
	}
	for i := range d.adeps {
		dep := &d.adeps[i]
		if !dep.IsAnyOf() {
			if dep.Key == key {
				return true
			}
			continue
		}
		if !dep.AnyOf.Accepts(key) {
			continue
		}
		other := false
		r.eachSatisfier(&dep.AnyOf, func(k string) bool {
			other = k != key
			return !other
		})
		if !other {
			return true
		}
	}
	return false
}

// runLater reconciles the values whose removal waited for one that has
// just completed (or failed).
func (r *run) runLater() {
	if len(r.later) == 0 {
		return
	}
	later := r.later
	r.later = nil
	for _, k := range later {
		r.reconcile(k)
	}
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
		r.failedOp = &failedOp{key: n.key, kind: kind, desc: n.desc, prev: prev, value: value, meta: n.metadata, known: known}
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
	case n.invalid != nil:
		st, flags, err = INVALID, FlagInvalid, n.invalid
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

// observe records a value present in the southbound that we did not create
// (OBTAINED, or DISCOVERED for its derived values).
func (r *run) observe(n *node, value proto.Message, meta any, st State) {
	if n.origin == kv.OriginSB && n.state == st && n.applied != nil && proto.Equal(n.applied, value) && metaEqual(n.metadata, meta) {
		// Seen again as it was: nothing to record (its derived values
		// are re-derived, and record only what changed).
		r.derive(n)
		return
	}
	r.mut(n)
	fresh := n.applied == nil
	n.origin, n.applied, n.metadata, n.state, n.lastErr = kv.OriginSB, value, meta, st, nil
	if n.base == "" {
		n.intent = nil
	}
	r.g.setDeps(n, nil, nil) // not ours: nothing to order
	r.g.setExisting(n.key, true)
	r.syncMetadata(n)
	r.opFor(n, Op{Key: n.key, Kind: OpNone, Value: value, Flags: FlagObtained | r.nodeFlags(n)})
	r.derive(n)
	if fresh {
		r.triggerDependentsOf(n.key, n)
	}
}

func (r *run) syncMetadata(n *node) {
	if n.desc == nil || !n.desc.WithMetadata() {
		return
	}
	if r.sim {
		r.metaKeys = append(r.metaKeys, n.key) // synced if the plan is kept
		return
	}
	if n.applied != nil {
		setMetadata(n.desc, n.label(), n.metadata)
	} else {
		deleteMetadata(n.desc, n.label())
	}
}
