package scheduler

import (
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
)

// evaluate validates n's intent and indexes its dependencies. n is mut'ed.
func (r *run) evaluate(n *graph.Node) {
	if n.Rare != nil {
		n.SetRare(nil, n.Rare.Claimants)
	}
	if n.Desc == nil {
		r.g.SetUnimplemented(n.Key, n.Intent != nil)
		r.g.SetDeps(n, nil, n.Adeps())
		return
	}
	var deps []kv.Dependency
	if n.Intent != nil {
		invalid := kv.ValidateInput(n.Desc, n.Key, n.Intent)
		if invalid == nil {
			deps = n.Desc.Dependencies(n.Key, n.Intent)
			if err := r.panicked(n.Key); err != nil {
				invalid = err // its dependencies are unknown
			} else if invalid = kv.CheckDependencies(n.Key, deps); invalid == nil {
				invalid = r.checkDerived(n)
			}
		}
		if invalid != nil {
			n.SetRare(invalid, n.ClaimantKeys())
			deps = nil
		}
	}
	r.g.SetDeps(n, deps, n.Adeps())
}

// checkDerived checks the derived values of n's intent and keeps them for
// n's next derive (derivedOf): Derived runs once per value.
func (r *derivation) checkDerived(n *graph.Node) error {
	ds := n.Desc.Derived(n.Key, n.Intent)
	if r.panicked(n.Key) != nil || ds == nil {
		return nil // a panic is left to derive, which calls it again
	} else if err := kv.CheckDerived(n.Key, ds); err != nil {
		return err
	}
	if m := r.memo; m.n != nil && m.n != n { // many bases set at once
		put(&r.memos, m.n, m)
	}
	r.memo = derivedMemo{n, n.Intent, ds}
	return nil
}

type derivedMemo struct {
	n     *graph.Node
	value proto.Message
	ds    []kv.Derived
}

// derivedOf returns what n's applied value derives.
func (r *derivation) derivedOf(n *graph.Node) []kv.Derived {
	m, ok := r.memo, r.memo.n == n
	if ok {
		r.memo = derivedMemo{}
	} else if m, ok = r.memos[n]; ok {
		delete(r.memos, n)
	}
	if ok && m.value == n.Applied {
		return m.ds
	}
	return n.Desc.Derived(n.Key, n.Applied)
}

// depsMet reports whether the dependencies deps of n are satisfied.
func (r *run) depsMet(n *graph.Node, deps []kv.Dependency) bool {
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
		if !t.Exists() && !r.sameUnit(n.Key, d.Key, t) {
			return false
		}
	}
	return true
}

// anyOfSatisfied returns an existing key that satisfies the AnyOf
// dependency, or "": one the run knows to have vanished does not.
func (r *run) anyOfSatisfied(a *kv.AnyOf) string {
	return r.g.AnyOfSatisfied(a, r.vanished)
}

// target returns what n should have applied now, and whether it is held
// back by unmet dependencies.
func (r *run) target(n *graph.Node) (want proto.Message, pending bool) {
	return r.targetWith(n, r.baseNode(n))
}

// baseNode returns the node of n's base, or nil (none, or n is not
// derived).
func (r *run) baseNode(n *graph.Node) *graph.Node {
	if n.Base == "" {
		return nil
	}
	return r.nodeOf(n.Base)
}

// targetWith is target, given b, the node of n's base (see baseNode).
func (r *run) targetWith(n, b *graph.Node) (want proto.Message, pending bool) {
	if n.Base != "" && (!baseHolds(n, b) || len(r.vanished) > 0 && r.vanished[n.Base]) {
		// A derived value exists only while its base exists and derives
		// it: never created before its base (a revert, a dependency
		// that came back), never kept after it. A base that a group
		// deleted beyond its failure is gone, as it is for what depends
		// on it (see vanishedBeyondFailure), until the run takes the
		// delete in.
		return nil, false
	}
	if applied, ok := r.revertTarget(n); ok && n.Desc != nil {
		if n.Base == "" && n.Intent == nil {
			if bk := n.Desc.BaseOf(n.Key); bk != "" {
				if bn := r.nodeOf(bk); bn == nil || !bn.Exists() {
					return nil, false // a leftover whose base is gone: not put back
				}
			}
		}
		return r.priorTarget(n, applied)
	}
	switch {
	case n.Desc == nil:
		return nil, false
	case n.FailedSeq == r.seq32:
		return r.failedTarget(n)
	case n.Intent == nil:
		return nil, false
	case n.InvalidErr() != nil:
		// Keep the last valid version (see doc.go: "Invalid values"),
		// while what it depends on exists.
		if n.Applied != nil && !r.depsMet(n, n.Adeps()) {
			return nil, true
		}
		return n.Applied, false
	case !r.depsMet(n, n.Deps) || r.needsDoomed(n):
		return nil, true
	}
	return n.Intent, false
}

// failedTarget is the target of n, whose call (or undo call) failed in
// this run: what it holds, with no call again (a create made again could
// find what it needs gone since).
func (r *run) failedTarget(n *graph.Node) (proto.Message, bool) {
	if n.Applied != nil && n.LastOp != OpDelete && !r.depsMet(n, n.Adeps()) && !r.unsureOf(n.Key) {
		// Its create or update failed, yet it exists (applied in
		// part) and what it needs is going: it goes first. Its
		// delete is another call than the one that failed. (Not
		// one of unknown outcome: it is not decided on.)
		return nil, false
	}
	return n.Applied, false
}

// baseHolds reports whether b, the base of n, a derived value, exists and
// derives n from the version it has applied.
func baseHolds(n, b *graph.Node) bool {
	return b != nil && b.Exists() && slices.Contains(b.Derived, n.Key)
}

// orphanedFrom reports whether n, a derived value, has lost b, its base:
// gone from the graph, or no longer listing n among its derived values.
func orphanedFrom(n, b *graph.Node) bool { return b == nil || !slices.Contains(b.Derived, n.Key) }

func (r *run) nodeFlags(n *graph.Node) Flags {
	var f Flags
	if n.Base != "" {
		f |= FlagDerived
	}
	if r.unit[n.Key] != 0 {
		f |= FlagCycle
	}
	return f
}

// depsOfValue returns the dependencies of value, a version of n.
func (r *run) depsOfValue(n *graph.Node, value proto.Message) []kv.Dependency {
	if value == n.Intent && n.InvalidErr() == nil {
		return n.Deps
	}
	if n.Desc == nil {
		return nil // UNIMPLEMENTED: no descriptor tells
	}
	return n.Desc.Dependencies(n.Key, value)
}

// creatable reports whether t could be created in this run if its
// dependencies were met.
func (r *derivation) creatable(t *graph.Node) bool {
	if t.Desc == nil || t.Removing || t.FailedSeq == r.seq32 || t.Origin == kv.OriginSB || t.Applied != nil {
		return false
	}
	if want, ok := r.revertTarget(t); ok {
		return want != nil // a revert creates what was applied before
	}
	return t.Intent != nil && t.InvalidErr() == nil
}

// revertTarget returns, while a revert runs, the version t had applied
// before the transaction, and whether the revert decides t by it.
func (r *derivation) revertTarget(t *graph.Node) (proto.Message, bool) {
	if !r.reverting {
		return nil, false
	}
	p, ok := r.prior[t.Key]
	return p.Applied, ok
}

// unitDeps returns the dependencies of the version of n that a unit would
// create: what it had applied before, while a revert runs; else its intent.
func (r *derivation) unitDeps(n *graph.Node) []kv.Dependency {
	if want, ok := r.revertTarget(n); ok && want != nil && (want != n.Intent || n.InvalidErr() != nil) {
		return n.Desc.Dependencies(n.Key, want)
	}
	return n.Deps
}

// sameUnit reports whether dependency key (node t) of value key counts as
// met because both are members of the cycle being created as a unit.
func (r *derivation) sameUnit(key, dep string, t *graph.Node) bool {
	u := r.unit[key]
	return u != 0 && r.unit[dep] == u && t.FailedSeq != r.seq32
}

// cycleUnit returns the members of the dependency cycle through start that
// can be created as a unit: the strongly connected component of start in
// the graph of unmet dependencies between creatable values, when every
// unmet dependency of every member is another member. Otherwise nil: a
// plain chain is not a cycle, and its values are created one by one as
// their dependencies appear.
func (r *derivation) cycleUnit(start *graph.Node) []string {
	// Fast path: the usual PENDING value waits for something that does
	// not exist at all.
	promising := false
	startDeps := r.unitDeps(start)
	for i := range startDeps {
		d := &startDeps[i]
		if t := r.g.Node(d.Key); !d.IsAnyOf() && t != nil && r.creatable(t) {
			promising = true
			break
		}
	}
	if !promising {
		return nil
	}
	// Explore the unmet plain dependencies between creatable values.
	edges := map[string][]string{}
	var order []string
	var visit func(n *graph.Node)
	visit = func(n *graph.Node) {
		edges[n.Key] = []string{}
		deps := r.unitDeps(n)
		for i := range deps {
			d := &deps[i]
			t := r.g.Node(d.Key)
			if d.IsAnyOf() || t == nil || !r.creatable(t) {
				continue
			}
			edges[n.Key] = append(edges[n.Key], t.Key)
			if _, seen := edges[t.Key]; !seen && len(edges) < r.s.opts.maxCycle {
				visit(t)
			}
		}
		order = append(order, n.Key)
	}
	visit(start)
	unit, back := componentOf(start.Key, edges, order)
	if len(unit) < 2 {
		return nil
	}
	for _, k := range unit {
		n := r.g.Node(k)
		if r.needsDoomed(n) {
			return nil // not created: nor are the others (else deleted again)
		}
		deps := r.unitDeps(n)
		for i := range deps {
			d := &deps[i]
			if d.IsAnyOf() {
				if r.anyOfSatisfied(&d.AnyOf) == "" {
					return nil
				}
				continue
			}
			if t := r.g.Node(d.Key); t != nil && t.Exists() {
				continue
			}
			if !back[d.Key] {
				return nil // the cycle waits for something outside it
			}
		}
	}
	return unit
}

// componentOf returns the strongly connected component of start in the
// explored graph (edges, visited in order): the values that lead back to
// it, in order, and as a set.
func componentOf(start string, edges map[string][]string, order []string) (unit []string, back map[string]bool) {
	// The component of start: the explored values that lead back to it.
	back = map[string]bool{start: true}
	for changed := true; changed; {
		changed = false
		for k, outs := range edges {
			if back[k] {
				continue
			}
			for _, o := range outs {
				if back[o] {
					back[k], changed = true, true
					break
				}
			}
		}
	}
	for _, k := range order {
		if back[k] {
			unit = append(unit, k)
		}
	}
	return unit, back
}

// createUnit creates the members of a dependency cycle together.
func (r *derivation) createUnit(unit []string) {
	r.unitSeq++
	for _, k := range unit {
		put(&r.unit, k, r.unitSeq)
	}
	for _, k := range unit {
		r.reconcile(k)
	}
	for _, k := range unit {
		delete(r.unit, k)
	}
	// A member that failed leaves the others without a dependency: delete
	// those again, so that no existing value lacks what it needs.
	for _, k := range unit {
		if n := r.g.Node(k); n != nil && n.Applied != nil && !r.depsMet(n, n.Adeps()) {
			r.reconcile(k)
		}
	}
}
