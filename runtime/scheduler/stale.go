package scheduler

import (
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
)

// dropStale deletes what the refresh found of ours (claimed by its
// descriptor, or applied by us before) that nothing intends any more:
// neither a value in the graph, nor a key that an intended value derives. A
// stale value that a stale base derives is linked to it first (see
// linkStale), so that it is deleted before its base, and its base stays
// when it cannot be.
//
// The first pass (early) takes every stale value into the graph, so that a
// removal in the reconciliation that follows finds it among the dependents
// of what it removes, and deletes those that no other value found needs;
// the others (staleDeferred) wait for the last pass, once what needs them
// has been decided.
func (r *resyncPass) dropStale(early bool) {
	stale := r.staleFound(early)
	if len(stale) == 0 && len(r.staleTaken) == 0 {
		return // the usual resync: what was found is known
	}
	var unread map[string]proto.Message
	if early {
		stale, unread = r.staleIntended(stale)
	}
	// Early, only what no other value found needs; late, what no value
	// found and left undecided (its base could not be read, say) needs.
	neededBy := r.neededBy(stale, early)
	r.neededByKept(stale, neededBy)
	slices.Sort(stale)
	added, taken := r.takeStale(stale, unread, early)
	r.linkStale(added)
	if early {
		for _, n := range added {
			r.staleTaken = append(r.staleTaken, n.Key)
			r.doomAll(n) // it goes (one deferred, last): nothing is created on it
		}
	}
	// The base of a value kept is kept too.
	for changed := true; changed; {
		changed = false
		for _, n := range taken {
			if neededBy[n.Key] != "" && n.Base != "" && neededBy[n.Base] == "" && r.view.get(n.Base) != nil {
				neededBy[n.Base], changed = n.Key, true
			}
		}
		if changed {
			r.neededByKept(stale, neededBy)
		}
	}
	for _, n := range added {
		r.opFor(n, Op{Key: n.Key, Kind: OpNone, Value: n.Applied, Flags: FlagStale | r.nodeFlags(n)})
	}
	for _, n := range taken {
		r.decideStale(n, neededBy[n.Key], early)
	}
}

// staleFound returns the keys of the values of ours that the refresh found
// and nothing intends; the last pass adds those the first one deferred.
func (r *resyncPass) staleFound(early bool) []string {
	var stale []string
	for i := range r.view.items {
		if it := &r.view.items[i]; it.origin == kv.OriginNB && !it.used {
			stale = append(stale, it.key)
		}
	}
	if !early {
		for _, k := range r.staleDeferred {
			if n := r.g.Node(k); n != nil && n.Applied != nil && n.Intent == nil && n.Origin == kv.OriginNB && !n.Removing {
				stale = append(stale, k)
			}
		}
	}
	return stale
}

// staleIntended is the first pass's treatment of the stale values that an
// intended value derives, and of the derived values of stale bases that
// the refresh could not read: it returns the stale keys left to decide,
// and the unread values (taken up as found) among them.
func (r *resyncPass) staleIntended(stale []string) ([]string, map[string]proto.Message) {
	// What the intended values derive is adopted by the reconciliation,
	// not deleted first. One whose base exists is linked to it now
	// (adoptDerived), as if the base had been found with it: a re-create
	// of the base then deletes it first instead of pulling the base from
	// under it.
	intended := r.intendedDerived()
	var bases, derived []string
	stale = slices.DeleteFunc(stale, func(k string) bool {
		b := intended[k]
		if b != "" {
			bases = append(bases, b)
			derived = append(derived, k)
		}
		return b != ""
	})
	slices.Sort(bases)
	for _, b := range slices.Compact(bases) {
		if n := r.g.Node(b); n != nil && n.Applied != nil && n.Origin == kv.OriginNB && !n.Removing {
			r.adoptDerived(n)
		}
	}
	r.takeUnclaimedDerived(derived, intended)
	// The found version of a stale base says what it derives: those
	// values whose descriptor the refresh could not read are taken up
	// with it, as found, so that they go before it (a Delete of one that
	// turns out absent fails like any call: the base stays, FAILED, for
	// the next resync).
	unread := r.unreadDerived(stale, intended)
	return append(stale, slices.Sorted(maps.Keys(unread))...), unread
}

// takeStale takes the stale values into the graph as found: added are
// those new to it, taken those that dropStale decides on (the added, and
// late, those the first pass deferred).
func (r *resyncPass) takeStale(stale []string, unread map[string]proto.Message, early bool) (added, taken []*graph.Node) {
	for _, key := range stale {
		value, meta := unread[key], any(nil)
		it := r.view.get(key)
		if it != nil {
			value, meta = it.value, it.meta
		}
		n := r.g.Node(key)
		if n != nil && (n.Applied != nil || n.Intent != nil) {
			if !early && n.Intent == nil && slices.Contains(r.staleDeferred, key) {
				taken = append(taken, n) // deferred by the first pass
			}
			continue // handled by the reconciliation
		}
		if n == nil {
			n = r.newNode(key, "")
		}
		if it != nil {
			it.used = true // decided: deleted, never adopted again in this run
		}
		r.mut(n)
		if n.Base != "" && orphanedFrom(n, r.g.Node(n.Base)) {
			n.Base = "" // a node left of a derived value: linked again below
		}
		n.Origin = kv.OriginNB
		r.takeApplied(n, value, meta)
		added = append(added, n)
		taken = append(taken, n)
	}
	return added, taken
}

// decideStale deletes a stale value taken up, or keeps it when neededBy (a
// value found and not decided that needs it) is set.
func (r *resyncPass) decideStale(n *graph.Node, neededBy string, early bool) {
	switch {
	case n.Base != "" && (r.g.Node(n.Base) == nil || r.g.Node(n.Base).Intent == nil):
		// Goes with its base, stale too (or gone already, with it).
	case neededBy != "" && early:
		r.staleDeferred = append(r.staleDeferred, n.Key) // decided last
	case neededBy != "":
		// Kept, and says why: deleting it would pull it from under a value
		// the scheduler could not decide on. A later resync decides again.
		r.mut(n)
		r.fail(n, OpDelete, fmt.Errorf("not deleted, %w: %s, found in the southbound and not decided, needs it",
			ErrStillNeeded, neededBy), r.nodeFlags(n)|FlagStale, n.Applied, nil, true)
	default:
		r.reconcile(n.Key) // its derived values go with it
	}
}

// takeUnclaimedDerived takes into the graph, as found, the values of ours
// that the refresh found and that an intended value derives (derived, with
// their bases in intended), whose base the graph does not hold applied
// (its descriptor could not be read, say): until the base's create derives
// them (and takes them as found), what they need must not go from under
// them, so a removal must find them among its dependents. The last pass
// of dropStale deletes those that no value derived in the end.
func (r *resyncPass) takeUnclaimedDerived(derived []string, intended map[string]string) {
	slices.Sort(derived)
	for _, key := range derived {
		it := r.view.get(key)
		if it == nil || it.used {
			continue
		}
		if b := r.g.Node(intended[key]); b != nil && b.Applied != nil && !b.Removing {
			continue // linked to it by adoptDerived
		}
		n := r.g.Node(key)
		if n != nil && (n.Applied != nil || n.Intent != nil) {
			continue
		}
		if n == nil {
			if r.s.lookup(key) == nil {
				continue
			}
			n = r.newNode(key, "")
		} else if n.Desc == nil {
			continue
		}
		it.used = true // taken: never adopted again in this run
		r.mut(n)
		n.Origin = kv.OriginNB
		r.takeApplied(n, it.value, it.meta)
		// Decided, and linked to its base when the base stays, by the
		// last pass.
		r.staleDeferred = append(r.staleDeferred, key)
		r.staleTaken = append(r.staleTaken, key)
	}
}

// unreadDerived returns the values that the found versions of the stale
// values in stale derive, through any number of levels (bounded by
// maxCycle), whose descriptor the refresh did not read (its Retrieve
// failed, or it has none), each as its base's found version derives it.
// Left out: keys the graph or the view knows, those that the intended
// values derive, and those of a descriptor an earlier refresh read (the
// graph holding nothing of one, it is absent).
func (r *resyncPass) unreadDerived(stale []string, intended map[string]string) map[string]proto.Message {
	var out map[string]proto.Message
	unread := func(_, k string, v proto.Message, dd kv.Descriptor) bool {
		if dd == nil || r.view.refreshed[dd] || r.s.seen[dd] || out[k] != nil || r.view.get(k) != nil || r.g.Node(k) != nil || intended[k] != "" {
			return false
		}
		put(&out, k, v)
		return true
	}
	for _, key := range stale {
		n := r.g.Node(key)
		if it := r.view.get(key); it != nil && (n == nil || n.Applied == nil && n.Intent == nil) {
			walkDerived(r.s, r.s.lookup(key), key, it.value, unread)
		}
	}
	return out
}

// takeUnreadDerived takes up, before n is removed in a resync, the values
// that its applied version (the version found, for a value adopted in
// this run) derives, whose descriptor the refresh did not read and that
// the graph does not know: the found version of a base says what it has,
// so they are taken to exist, derived from n, and go before it (see
// unreadDerived for the stale values).
func (r *resyncPass) takeUnreadDerived(n *graph.Node) {
	if n.Desc == nil || n.Applied == nil || n.Origin != kv.OriginNB {
		return
	}
	for _, dv := range n.Desc.Derived(n.Key, n.Applied) {
		dd := r.s.lookup(dv.Key)
		if dv.Key == "" || dv.Value == nil || dd == nil || r.view.refreshed[dd] || r.s.seen[dd] || r.g.Node(dv.Key) != nil {
			continue
		}
		r.takeStaleDerived(n, dv.Key, dv.Value, nil)
	}
}

// linkStale links the stale values just taken up (added), those an
// earlier pass of the run took up that are still there (their delete
// failed), and the leftovers of earlier runs that the refresh found again,
// to a stale base among them: the base that derives them from the version
// found, or the one their descriptor's BaseOf names (a southbound may
// report a base without the field that derives). A base is then deleted
// only after what it derives, and stays when that cannot go.
func (r *resyncPass) linkStale(added []*graph.Node) {
	pool := make(map[string]*graph.Node, len(added)+len(r.leftovers)+len(r.staleTaken))
	for _, n := range added {
		pool[n.Key] = n
	}
	for _, k := range r.leftovers {
		if n := r.g.Node(k); r.leftover(n) {
			pool[k] = n
		}
	}
	for _, k := range r.staleTaken {
		if n := r.g.Node(k); n != nil && pool[k] == nil && n.Applied != nil && n.Intent == nil && n.Origin == kv.OriginNB && !n.Removing {
			pool[k] = n
		}
	}
	if len(pool) == 0 {
		return
	}
	keys := slices.Sorted(maps.Keys(pool))
	for _, k := range keys {
		n := pool[k]
		for _, d := range n.Desc.Derived(n.Key, n.Applied) {
			if dn := pool[d.Key]; dn != nil {
				r.linkDerived(dn, n)
			}
		}
	}
	for _, k := range keys {
		if pool[k].Base == "" {
			r.linkToBase(pool[k]) // among them, or one that stays
		}
	}
}

// linkDerived makes dn, a stale value with no base (or one naming n that
// n, held with nothing applied, did not list), a derived value of n: a
// removal, update or re-create of n then deletes it first.
func (r *resyncPass) linkDerived(dn, n *graph.Node) {
	if dn != n && (dn.Base == "" || dn.Base == n.Key) && n.Base != dn.Key {
		r.linkBase(dn, n)
	}
}

// linkBase makes n the base of dn, which n's applied version does not
// derive (dn was found in the southbound): n goes only after dn.
func (r *derivation) linkBase(dn, n *graph.Node) {
	r.mut(dn)
	dn.Base = n.Key
	if !slices.Contains(n.Derived, dn.Key) {
		r.mut(n)
		n.Derived = append(slices.Clone(n.Derived), dn.Key)
	}
}

// newDerived adds a node for key, derived from n.
func (r *derivation) newDerived(n *graph.Node, key string) *graph.Node {
	r.mut(n)
	n.Derived = append(slices.Clone(n.Derived), key)
	return r.newNode(key, n.Key)
}

// takeStaleDerived takes up key, which the southbound holds as value (with
// meta) and which n derives, as a stale value derived from n: it goes
// before n.
func (r *resyncPass) takeStaleDerived(n *graph.Node, key string, value proto.Message, meta any) {
	dn := r.newDerived(n, key)
	r.takeApplied(dn, value, meta)
	r.opFor(dn, Op{Key: key, Kind: OpNone, Value: value, Flags: FlagStale | r.nodeFlags(dn)})
}

// linkFoundDerived makes the values that n derives in the version a
// read-back found (the graph did not know it: its refresh failed) n's
// derived values where the southbound holds them: stale nodes with no
// base, values the resync's refresh found that have no node yet, and
// leftovers whose descriptor names n as their base. A removal or
// re-create of n then deletes them first.
func (r *resyncPass) linkFoundDerived(n *graph.Node) {
	if n.Desc == nil || n.Applied == nil || n.Origin != kv.OriginNB {
		return
	}
	for _, d := range n.Desc.Derived(n.Key, n.Applied) {
		dn := r.g.Node(d.Key)
		switch {
		case dn == nil:
			if r.view == nil {
				continue
			}
			it := r.view.get(d.Key)
			dd := r.s.lookup(d.Key)
			if it == nil || it.used || it.value == nil || dd == nil || it.origin != kv.OriginNB {
				continue
			}
			it.used = true
			r.takeStaleDerived(n, d.Key, it.value, it.meta)
		case unlinked(dn, n):
			r.linkDerived(dn, n)
		}
	}
	// And the leftovers whose descriptor names n as their base (BaseOf),
	// or that name it already, though n's version does not derive them (a
	// rare scan: n was of unknown outcome, or its create failed).
	var left []string
	for key, dn := range r.g.All() {
		if unlinked(dn, n) && (dn.Base == n.Key || dn.Origin == kv.OriginNB && dn.Desc.BaseOf(key) == n.Key) {
			left = append(left, key)
		}
	}
	slices.Sort(left)
	for _, key := range left {
		r.linkToBase(r.g.Node(key))
	}
}

// unlinked reports whether dn, a value found that nothing intends, may be
// made a derived value of n: it has no base, or names n, which held
// nothing when dn was found and so does not list it.
func unlinked(dn, n *graph.Node) bool {
	return dn != n && dn.Desc != nil && dn.Applied != nil && !dn.Removing && dn.Intent == nil && (dn.Base == "" || dn.Base == n.Key)
}

// linkToBase makes n, found in the southbound, a derived value of its base
// (n.Base, else the one its descriptor's BaseOf names) when the graph holds
// that base applied, of ours and staying, and the base's version does not
// derive n (a revert or an update moved it on, or the southbound reported
// the base without the field that derives): an update, re-create or
// removal of the base then deletes n first.
func (r *derivation) linkToBase(n *graph.Node) {
	b := n.Base
	if b == "" {
		b = n.Desc.BaseOf(n.Key)
	}
	bn := r.g.Node(b)
	if b == "" || bn == nil || bn == n || bn.Base == n.Key || bn.Desc == nil || bn.Applied == nil || bn.Origin != kv.OriginNB ||
		bn.Removing || slices.Contains(bn.Derived, n.Key) {
		return
	}
	r.linkBase(n, bn)
}

// leftover reports whether n is a value of ours that nothing intends nor
// derives and that the southbound holds (as far as known): its delete
// failed.
func (r *resyncPass) leftover(n *graph.Node) bool {
	return n != nil && n.Desc != nil && n.Applied != nil && n.Intent == nil && n.Base == "" && n.Origin == kv.OriginNB && !n.Removing
}

// neededBy maps each key of stale that another value the refresh found
// depends on (plainly, or as a possible satisfier of an AnyOf dependency)
// to one such value. Early, every value found counts but the stale ones
// (they may need each other); late, only those still undecided (neither
// known to the graph nor adopted).
func (r *resyncPass) neededBy(stale []string, early bool) map[string]string {
	isStale := setOf(stale, itself)
	needed := map[string]string{}
	for i := range r.view.items {
		it := &r.view.items[i]
		if isStale[it.key] || !early && (it.used || r.g.Node(it.key) != nil) {
			continue
		}
		eachNeeded(r.s.lookup(it.key), it.key, it.value, stale, false, func(t string) {
			if isStale[t] && needed[t] == "" {
				needed[t] = it.key
			}
		})
	}
	return needed
}

// neededByKept extends neededBy to what the stale values it keeps need in
// turn, among stale: their dependencies and their base. Deleting one would
// pull it from under a value that stays.
func (r *resyncPass) neededByKept(stale []string, neededBy map[string]string) {
	if len(neededBy) == 0 {
		return
	}
	isStale := setOf(stale, itself)
	work := slices.Sorted(maps.Keys(neededBy))
	for len(work) > 0 {
		k := work[len(work)-1]
		work = work[:len(work)-1]
		if it := r.view.get(k); it != nil {
			eachNeeded(r.s.lookup(k), k, it.value, stale, true, func(t string) {
				if isStale[t] && neededBy[t] == "" {
					neededBy[t] = k
					work = append(work, t)
				}
			})
		}
	}
}

// eachNeeded calls f with what key, found as value, needs by its
// descriptor d: its base (with base), each plain dependency, and each key
// of stale that an AnyOf dependency accepts.
func eachNeeded(d kv.Descriptor, key string, value proto.Message, stale []string, base bool, f func(string)) {
	if d == nil {
		return
	} else if base {
		f(d.BaseOf(key))
	}
	for _, dep := range d.Dependencies(key, value) {
		if !dep.IsAnyOf() {
			f(dep.Key)
			continue
		}
		for _, t := range stale {
			if dep.AnyOf.Accepts(t) {
				f(t)
			}
		}
	}
}
