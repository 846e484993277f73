package scheduler

import (
	"maps"
	"slices"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
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
// deletes, removes: n itself when it is deleted, else the derived values
// its applied version has and its intent no longer derives; with each,
// what it derives and the values of ours that need it.
func (part *removal) doom(n *node) {
	r := part.run
	if n == nil || n.base != "" || n.applied == nil || n.origin == kv.OriginSB || n.desc == nil {
		return
	}
	if n.intent == nil {
		r.doomAll(n)
		return
	}
	if len(n.derived) == 0 || n.invalid != nil {
		return
	}
	ds := n.desc.Derived(n.key, n.intent)
	if r.panicked(n.key) != nil {
		// What it derives is unknown: nothing is marked, and derive
		// reports the panic when it asks again.
		return
	}
	for _, k := range n.derived {
		if !slices.ContainsFunc(ds, func(d kv.Derived) bool { return d.Key == k }) {
			r.doomAll(r.g.node(k))
		}
	}
}

// doomAll marks n, applied, as removed by the transaction, with what it
// derives and the values of ours whose applied version needs it.
func (part *removal) doomAll(n *node) {
	r := part.run
	if n == nil || n.applied == nil || r.doomed[n.key] {
		return
	}
	if r.doomed == nil {
		r.doomed = map[string]bool{}
	}
	r.doomed[n.key] = true
	for _, k := range n.derived {
		r.doomAll(r.g.node(k))
	}
	for _, d := range r.g.dependentNodes(n.key) {
		if r.needs(d, n.key) {
			r.doomAll(d)
		}
	}
}

// needsDoomed reports whether n, not applied, depends on a value that the
// transaction removes and that is still there: n is not created.
func (part *removal) needsDoomed(n *node) bool {
	r := part.run
	if len(r.doomed) == 0 || n.applied != nil {
		return false
	}
	for i := range n.deps {
		d := &n.deps[i]
		if d.IsAnyOf() || !r.doomed[d.Key] {
			continue
		}
		if t := r.nodeOf(d.Key); t != nil && t.exists() {
			return true
		}
	}
	return false
}

// releaseDoomed ends the marks of doom once the pass is over: the values
// held back for a doomed value that is still there are decided again.
func (part *removal) releaseDoomed() {
	r := part.run
	if len(r.doomed) == 0 {
		return
	}
	doomed := r.doomed
	r.doomed = nil
	for _, key := range slices.Sorted(maps.Keys(doomed)) {
		if n := r.g.node(key); n != nil && n.exists() {
			r.triggerDependentsOf(key, n)
		}
	}
}
