package scheduler

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
)

// A transaction decides its values one at a time, in order. A value it
// creates early may need one that a later change of the same transaction
// removes (a derived value that its base no longer derives, a value
// deleted, or one that needs either): created, it would be deleted again
// with it. So before the pass, the run marks what the transaction's
// changes are known to remove (doomed), and a value that needs one of
// those is not created: it stays PENDING. When the pass ends, what was
// doomed but is still there (its delete failed, say) lets the values
// held back for it be decided again.

// doom marks what the new intent of n, a value the transaction sets or
// deletes, removes: n itself when it is deleted or re-created (its old
// version goes), else the derived values its applied version has and its
// intent no longer derives, or derives by a re-create; with each, what it
// derives and the values of ours that need it.
func (r *removal) doom(n *graph.Node) {
	if n == nil || n.Base != "" || n.Applied == nil || n.Origin == kv.OriginSB || n.Desc == nil {
		return
	}
	if n.Intent == nil || n.InvalidErr() == nil && r.recreated(n, n.Intent) {
		r.doomAll(n)
		return
	}
	if len(n.Derived) == 0 || n.InvalidErr() != nil {
		return
	}
	ds := n.Desc.Derived(n.Key, n.Intent)
	if r.panicked(n.Key) != nil {
		// What it derives is unknown: nothing is marked, and derive
		// reports the panic when it asks again.
		return
	}
	for _, k := range n.Derived {
		i := slices.IndexFunc(ds, func(d kv.Derived) bool { return d.Key == k })
		if dn := r.g.Node(k); i < 0 || dn != nil && dn.Applied != nil && dn.Desc != nil && r.recreated(dn, ds[i].Value) {
			r.doomAll(dn)
		}
	}
}

// recreated reports whether n, applied, changes to want by a re-create. A
// comparator that panicked tells nothing: change fails the value, with no
// call, when it asks again.
func (r *removal) recreated(n *graph.Node, want proto.Message) bool {
	_, recreate := changeOf(n, want)
	return r.panicked(n.Key) == nil && recreate
}

// doomAll marks n, applied, as removed by the transaction, with what it
// derives and the values of ours whose applied version needs it.
func (r *removal) doomAll(n *graph.Node) {
	if n == nil || n.Applied == nil {
		return
	} else if r.doomed == nil {
		r.newDoomed(0)
	}
	if n.DoomMark == r.g.Dooms {
		return // doomed already
	}
	r.doomed, r.doomAdded, n.DoomMark = append(r.doomed, n), r.g.Added, r.g.Dooms
	for _, k := range n.Derived {
		r.doomAll(r.g.Node(k))
	}
	var buf [8]*graph.Node // on the stack: most values have few dependents
	for _, d := range r.g.DependentNodes(buf[:0], n.Key, false) {
		if r.needs(d, n.Key) {
			r.doomAll(d)
		}
	}
}

// needsDoomed reports whether n, not applied, depends on a value that the
// transaction removes and that is still there: n is not created.
func (r *removal) needsDoomed(n *graph.Node) bool {
	if len(r.doomed) == 0 || n.Applied != nil {
		return false
	}
	for i := range n.Deps {
		d := &n.Deps[i]
		if d.IsAnyOf() || !r.isDoomed(d.Key) {
			continue
		}
		if t := r.nodeOf(d.Key); t != nil && t.Exists() {
			return true
		}
	}
	return false
}

// releaseDoomed ends the marks of doom once the pass is over: the values
// held back for a doomed value that is still there are decided again.
func (r *removal) releaseDoomed() {
	doomed := r.doomed
	r.doomed = nil
	var left []string // mostly none: only those are sorted
	for _, n := range doomed {
		if n.DoomMark != r.g.Dooms {
			continue // removed (see remove)
		} else if n.State == REMOVED && r.g.Added != r.doomAdded { // another may have the key
			n = r.g.Node(n.Key)
		}
		if n != nil && n.State != REMOVED && n.Exists() {
			left = append(left, n.Key)
		}
	}
	slices.Sort(left)
	for _, key := range slices.Compact(left) { // a node doomed again after its removal is listed twice
		if n := r.g.Node(key); n != nil && n.Exists() {
			r.triggerDependents(key, n)
		}
	}
}

// removal is the run's removal of values: the cascade over dependents
// and derived values, what keeps a value (still needed, a removal further
// up), and the values a transaction dooms (see doom).
type removal struct {
	*run
	// later lists values whose removal waits for another removal.
	later []string
	// removals is the stack of the values being removed (n.removing);
	// gone, of those found gone (sbGone: known, no call).
	removals, gone []string
	// doomed are the values that the transaction's changes remove, known
	// before the pass: nothing that needs one is created (see doom). A
	// node is doomed while it holds the graph's mark (Dooms), which remove
	// takes off; the list is what releaseDoomed goes over, a node once.
	doomed []*graph.Node
	// doomAdded is the graph's count of added nodes at the last doom.
	doomAdded uint64
}

// isDoomed reports whether key is doomed: its node holds the mark of the
// doom under way (none once releaseDoomed ended it).
func (r *removal) isDoomed(key string) bool {
	if r.doomed == nil {
		return false
	}
	n := r.g.Node(key)
	return n != nil && n.DoomMark == r.g.Dooms
}

// newDoomed starts a doom, for n values, with a mark of its own.
func (r *removal) newDoomed(n int) {
	r.doomed = make([]*graph.Node, 0, max(n, 1))
	if r.g.Dooms++; r.g.Dooms == 0 { // once every 2^32: no old mark may pass for the new
		for _, n := range r.g.All() {
			n.DoomMark = 0
		}
		r.g.Dooms = 1
	}
}

// remove deletes n from the southbound: first its derived values, then the
// values that depend on it (they become PENDING, or change to a version
// that does not need n), then n itself. When something that needs n could
// not be deleted, n is not deleted either: it is FAILED, and what was taken
// away for it is restored. sbGone says the southbound lost n already: no
// Delete is called. It returns whether n is gone.
func (r *removal) remove(n *graph.Node, flags Flags, sbGone bool) bool {
	delete(r.viewFresh, n.Key)
	flags |= r.nodeFlags(n)
	r.mut(n)
	n.Removing = true
	r.g.SetExisting(n.Key, false)
	r.removals = append(r.removals, n.Key)
	defer func() { r.removals = r.removals[:len(r.removals)-1] }()
	if sbGone {
		r.gone = append(r.gone, n.Key)
		defer func() { r.gone = r.gone[:len(r.gone)-1] }()
	}
	if r.view != nil {
		r.takeUnreadDerived(n)
	}
	stuck := r.dropDerivedAll(n)
	if len(stuck) == 0 {
		r.removeDependents(n)
	}
	if r.removalHeld(n, flags, sbGone, stuck) {
		return false
	}
	prev := n.Applied
	// prev nil: removed with its cycle partner (readBackPartners).
	if n.Origin != kv.OriginSB && !sbGone && prev != nil {
		if !r.deleteCall(n, flags, prev) {
			return false
		}
		if r.reverting {
			// A partner that stays (it was there without n before the
			// transaction) may have gone with n: read it back (unread,
			// it stays as the revert found it).
			r.readBackPartners(n, prev, true)
		}
	}
	n.Applied, n.Metadata, n.Removing, n.LastOp = nil, nil, false, OpDelete
	n.SetLastErr(nil)
	n.DoomMark = 0 // removed: a version created again is not doomed
	if r.view != nil {
		if it := r.view.get(n.Key); it != nil {
			it.used = true // gone: the refresh's item of it is not adopted again
		}
	}
	r.known(n.Key)
	r.g.SetDeps(n, n.Deps, nil)
	r.syncMetadata(n)
	defer r.runLater()
	if sbGone && n.Origin != kv.OriginSB {
		return true // one of ours, lost: the caller creates it again
	}
	_, pending := r.target(n)
	if pending && flags&FlagRecreate == 0 {
		flags |= FlagIsPending
	}
	if n.Origin == kv.OriginSB {
		flags |= FlagObtained
	}
	r.opFor(n, Op{Key: n.Key, Kind: OpDelete, PrevValue: prev, Flags: flags})
	if flags&FlagRecreate == 0 {
		r.settle(n, pending, false)
		r.setOpState(len(r.ops)-1, n.State)
	} else {
		r.setOpState(len(r.ops)-1, NONEXISTENT) // created again right after
	}
	return true
}

// removalHeld decides whether n, whose removal has begun, stays for now:
// the transaction aborts, the cascade brought its reason to exist back, or
// a value still needs it (held with an error, or until a removal further
// up is done). It returns true when n stays.
func (r *removal) removalHeld(n *graph.Node, flags Flags, sbGone bool, stuck []string) bool {
	if r.abort {
		n.Removing = false
		if sbGone {
			// The southbound lost n whatever the cascade did: the
			// revert that follows starts from there.
			r.takeApplied(n, nil, nil)
		} else {
			r.g.SetExisting(n.Key, true)
		}
		return true
	}
	if flags&FlagRecreate == 0 && !sbGone && n.Intent != nil {
		if want, _ := r.target(n); want != nil {
			// The cascade brought back the reason for n to exist: a
			// base whose update or delete failed derives n again, or a
			// dependency came back. n stays; what was taken away for
			// it comes back, and n goes to its target. (Without an
			// intent n goes whatever its target: a revert targets
			// what was applied before, even for a derived value its
			// base no longer derives.)
			n.Removing = false
			r.g.SetExisting(n.Key, true)
			r.derive(n)
			r.triggerDependents(n.Key, n)
			r.reconcile(n.Key)
			return true
		}
	}
	waitLater := func() bool {
		n.Removing = false
		r.g.SetExisting(n.Key, true)
		r.later = append(r.later, n.Key)
		return true
	}
	if !sbGone && r.neededByRemoval(n) {
		// A value being removed further up still needs n: n goes once
		// that removal is done.
		return waitLater()
	}
	if len(r.g.Unsure) != 0 && !sbGone {
		if k := r.unsureBlocker(n); k != "" {
			r.keep(n, flags, fmt.Errorf("not deleted, %w: %s may need it (%w)", ErrStillNeeded, k, ErrOutcomeUnknown), n.Applied, true)
			return true
		}
	}
	if blocker := r.blocker(n, stuck); blocker != "" && !sbGone {
		if slices.Contains(r.later, blocker) {
			// What still needs n waits for a removal further up (see
			// neededByRemoval): n waits with it, and is decided again
			// once that removal is done.
			return waitLater()
		}
		r.keep(n, flags, fmt.Errorf("not deleted, %w: %s could not be deleted first", ErrStillNeeded, blocker), n.Applied, true)
		return true
	}
	return false
}

// deleteCall makes the Delete call of n, whose applied value is prev, and
// on failure reads n back; it returns whether the Delete succeeded.
func (r *removal) deleteCall(n *graph.Node, flags Flags, prev proto.Message) bool {
	if _, err := r.call(OpDelete, n, prev, nil); err != nil {
		found, fmeta, known := r.readBack(n, prev)
		if known {
			r.takeApplied(n, found, fmeta) // nil: deleted after all
			if found == nil {
				r.readBackPartners(n, prev, false)
			}
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
	return true
}

// removeDependents reconciles the values that depend on n, which is being
// removed: each is deleted or moves to a version that does not need n.
// The members of a dependency cycle with n (a veth peer) go last, and only
// when every other dependent has gone: when one cannot, n stays, and so
// must its partners (a veth end is never left without its peer).
func (r *removal) removeDependents(n *graph.Node) {
	var partners []string
	var buf [8]*graph.Node // on the stack: most values have few dependents
	for _, d := range r.g.DependentNodes(buf[:0], n.Key, true) {
		k := d.Key
		if d = r.g.Current(k, d, 0); d != nil && d.Applied == nil && !d.Removing && !r.reverting && (d.State == FAILED || d.State == RETRYING) {
			// It holds nothing and failed (a create that n's going
			// made fail, say): it waits for n again, PENDING.
			r.reconcileNode(d)
			continue
		}
		if r.leftAlone(d, n) {
			continue
		}
		if r.leadsTo(n, k) {
			partners = append(partners, k)
			continue
		}
		if r.reachOut {
			if _, touched := r.prior[k]; !touched && r.needs(d, n.Key) {
				r.mut(d) // changed by the revert on the way: restored too
			}
		}
		r.reconcileNode(d)
		if d = r.g.Current(k, d, 0); d != nil && !d.Removing && r.needs(d, n.Key) {
			return // n cannot go: it stays, with everything else that needs it
		}
	}
	for _, k := range partners {
		if d := r.g.Node(k); d != nil && d.Applied != nil && !d.Removing {
			r.reconcile(k)
		}
	}
}

// leftAlone reports whether removeDependents leaves d, a dependent of n,
// as it is: it holds nothing, is being removed, or is of unknown outcome
// (not decided on: n stays, see unsureBlocker); a finding being taken
// removes only what its applied version needs (one whose intent needs n
// decides at the end of the run: settleUnsure); a revert leaves a value
// that was there without n (livedWithout).
func (r *removal) leftAlone(d, n *graph.Node) bool {
	switch {
	case d == nil || d.Applied == nil || d.Removing || r.unsureOf(d.Key):
		return true
	case r.takingFacts && (!r.needs(d, n.Key) && !r.leadsTo(n, d.Key) || r.foundGone(d.Key)):
		return true // (one found gone too goes by its own finding)
	}
	return r.reverting && r.livedWithout(d, n)
}

// blocker returns a value that still needs n (a derived value that could
// not be deleted, or a dependent whose applied version needs n), or "".
func (r *removal) blocker(n *graph.Node, stuck []string) string {
	if len(stuck) > 0 {
		return stuck[0]
	}
	var buf [8]*graph.Node // on the stack: most values have few dependents
	for _, d := range r.g.DependentNodes(buf[:0], n.Key, true) {
		if d = r.g.Current(d.Key, d, 0); d != nil && !d.Removing && r.needs(d, n.Key) && !(r.reverting && r.livedWithout(d, n)) {
			return d.Key
		}
	}
	return ""
}

// livedWithout reports, while a revert runs, whether d held the version it
// holds before the transaction, which names n as a dependency, when n did not
// exist and a call of the transaction created it: d was there without n (a veth
// end whose delete failed, left without its peer), and the revert deletes n
// without touching d, as it was. (An AnyOf dependency may have been met by
// another value then: it does not count. A failed create may have found n there
// already, unknown: it does not count either, unless a failure (d's delete or
// create, n's delete) is why it was there without n, which doc.go names: "a
// value that was there without something it needs (its delete had failed, or
// its create applied in part, or a delete of what it needs removed that and
// failed) stays as it was when the revert deletes what the transaction created
// for it"; and not when n's descriptor is blind, its Retrieve failed, and n was
// not read back since: the graph's "n absent" is no knowledge then.)
func (r *removal) livedWithout(d, n *graph.Node) bool {
	pn, ok := r.prior[n.Key]
	if !ok || pn.Applied != nil {
		return false
	}
	state, lastOp := d.State, d.LastOp
	if pd, ok := r.prior[d.Key]; ok {
		if pd.Applied != d.Applied {
			return false
		}
		state, lastOp = pd.State, pd.LastOp
	}
	// Its delete failed or was refused (what needs it is not n, which
	// was not there), its create applied in part, or n's delete failed
	// and took n with it (d failed with no call: its read-back failed).
	failed := state == FAILED || state == RETRYING
	leftWithout := failed && lastOp != OpUpdate
	if f := r.failedOp; f != nil && f.key == n.Key && f.kind == OpCreate && (!leftWithout || r.s.blindTo(n)) {
		return false
	}
	return slices.ContainsFunc(d.Adeps(), func(dep kv.Dependency) bool { return !dep.IsAnyOf() && dep.Key == n.Key })
}

// neededByRemoval reports whether a value being removed (further up the
// stack, still in the southbound) needs n, and n is not on a dependency
// cycle with it (members of a cycle cannot wait for each other).
func (r *removal) neededByRemoval(n *graph.Node) bool {
	var buf [8]*graph.Node // on the stack: most values have few dependents
	for _, d := range r.g.DependentNodes(buf[:0], n.Key, false) {
		if d = r.g.Current(d.Key, d, 0); d != nil && d.Removing && r.needs(d, n.Key) && !r.leadsTo(n, d.Key) {
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
func (r *removal) leadsTo(from *graph.Node, key string) bool {
	budget := r.s.opts.maxCycle
	onPath := map[string]bool{}
	var needs func(n *graph.Node) bool
	// through reports whether the applied value at k is key or needs it.
	through := func(k string) bool {
		if k == key {
			return true
		}
		t := r.g.Node(k)
		return t != nil && t.Applied != nil && needs(t)
	}
	needs = func(n *graph.Node) bool {
		if budget--; budget < 0 || onPath[n.Key] {
			return false
		}
		onPath[n.Key] = true
		defer delete(onPath, n.Key)
		if n.Base != "" && through(n.Base) {
			return true
		}
		for i := range n.Adeps() {
			d := &n.Adeps()[i]
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
func (r *removal) eachSatisfier(a *kv.AnyOf, f func(key string) bool) {
	for _, k := range r.removals {
		if t := r.g.Node(k); t != nil && t.Removing && a.Accepts(k) && !f(k) {
			return
		}
	}
	more := true
	r.g.Cover(a)
	for _, p := range a.Prefixes {
		r.g.Existing.AscendGreaterOrEqual(p, func(k string) bool {
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
func (r *removal) needs(d *graph.Node, key string) bool {
	if d.Applied == nil || d.Origin == kv.OriginSB {
		return false
	}
	for i := range d.Adeps() {
		dep := &d.Adeps()[i]
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
func (r *removal) runLater() {
	later := r.later
	r.later = nil
	for _, k := range later {
		r.reconcile(k)
	}
}
