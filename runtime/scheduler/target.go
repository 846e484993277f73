package scheduler

import (
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// evaluate validates n's intent and indexes its dependencies. n is mut'ed.
func (r *run) evaluate(n *node) {
	if n.rare != nil {
		n.setRare(nil, n.rare.claimants)
	}
	if n.desc == nil {
		r.g.setUnimplemented(n.key, n.intent != nil)
		r.g.setDeps(n, nil, n.adeps())
		return
	}
	var deps []kv.Dependency
	if n.intent != nil {
		invalid := kv.ValidateInput(n.desc, n.key, n.intent)
		if invalid == nil {
			deps = n.desc.Dependencies(n.key, n.intent)
			if err := r.panicked(n.key); err != nil {
				invalid = err // its dependencies are unknown
			} else if invalid = kv.CheckDependencies(n.key, deps); invalid == nil {
				invalid = r.checkDerived(n)
			}
		}
		if invalid != nil {
			n.setRare(invalid, n.claimantKeys())
			deps = nil
		}
	}
	r.g.setDeps(n, deps, n.adeps())
}

// checkDerived checks the derived values of n's intent and keeps them for
// n's next derive (derivedOf): Derived runs once per value.
func (r *derivation) checkDerived(n *node) error {
	ds := n.desc.Derived(n.key, n.intent)
	if r.panicked(n.key) != nil || ds == nil {
		return nil // a panic is left to derive, which calls it again
	} else if err := kv.CheckDerived(n.key, ds); err != nil {
		return err
	}
	if m := r.memo; m.n != nil && m.n != n { // many bases set at once
		put(&r.memos, m.n, m)
	}
	r.memo = derivedMemo{n, n.intent, ds}
	return nil
}

type derivedMemo struct {
	n     *node
	value proto.Message
	ds    []kv.Derived
}

// derivedOf returns what n's applied value derives.
func (r *derivation) derivedOf(n *node) []kv.Derived {
	m, ok := r.memo, r.memo.n == n
	if ok {
		r.memo = derivedMemo{}
	} else if m, ok = r.memos[n]; ok {
		delete(r.memos, n)
	}
	if ok && m.value == n.applied {
		return m.ds
	}
	return n.desc.Derived(n.key, n.applied)
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
	if applied, ok := r.revertTarget(n); ok && n.desc != nil {
		return r.priorTarget(n, applied)
	}
	switch {
	case n.desc == nil:
		return nil, false
	case n.failedSeq == r.seq32:
		if n.applied != nil && n.lastOp != OpDelete && !r.depsMet(n, n.adeps()) {
			// Its create or update failed, yet it exists (applied in
			// part) and what it needs is going: it goes first. Its
			// delete is another call than the one that failed.
			return nil, false
		}
		return n.applied, false // failed once in this transaction: not again
	case n.intent == nil:
		return nil, false
	case n.invalidErr() != nil:
		// Keep the last valid version (see doc.go: "Invalid values"),
		// while what it depends on exists.
		if n.applied != nil && !r.depsMet(n, n.adeps()) {
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
func baseHolds(n, b *node) bool { return b != nil && b.exists() && slices.Contains(b.derived, n.key) }

// orphanedFrom reports whether n, a derived value, has lost b, its base:
// gone from the graph, or no longer listing n among its derived values.
func orphanedFrom(n, b *node) bool { return b == nil || !slices.Contains(b.derived, n.key) }

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

// depsOfValue returns the dependencies of value, a version of n.
func (r *run) depsOfValue(n *node, value proto.Message) []kv.Dependency {
	if value == n.intent && n.invalidErr() == nil {
		return n.deps
	}
	if n.desc == nil {
		return nil // UNIMPLEMENTED: no descriptor tells
	}
	return n.desc.Dependencies(n.key, value)
}

// creatable reports whether t could be created in this run if its
// dependencies were met.
func (r *derivation) creatable(t *node) bool {
	if t.desc == nil || t.removing || t.failedSeq == r.seq32 || t.origin == kv.OriginSB || t.applied != nil {
		return false
	}
	if want, ok := r.revertTarget(t); ok {
		return want != nil // a revert creates what was applied before
	}
	return t.intent != nil && t.invalidErr() == nil
}

// revertTarget returns, while a revert runs, the version t had applied
// before the transaction, and whether the revert decides t by it.
func (r *derivation) revertTarget(t *node) (proto.Message, bool) {
	if !r.reverting {
		return nil, false
	}
	p, ok := r.prior[t.key]
	return p.applied, ok
}

// unitDeps returns the dependencies of the version of n that a unit would
// create: what it had applied before, while a revert runs; else its intent.
func (r *derivation) unitDeps(n *node) []kv.Dependency {
	if want, ok := r.revertTarget(n); ok && want != nil && (want != n.intent || n.invalidErr() != nil) {
		return n.desc.Dependencies(n.key, want)
	}
	return n.deps
}

// sameUnit reports whether dependency key (node t) of value key counts as
// met because both are members of the cycle being created as a unit.
func (r *derivation) sameUnit(key, dep string, t *node) bool {
	u := r.unit[key]
	return u != 0 && r.unit[dep] == u && t.failedSeq != r.seq32
}

// cycleUnit returns the members of the dependency cycle through start that
// can be created as a unit: the strongly connected component of start in
// the graph of unmet dependencies between creatable values, when every
// unmet dependency of every member is another member. Otherwise nil: a
// plain chain is not a cycle, and its values are created one by one as
// their dependencies appear.
func (r *derivation) cycleUnit(start *node) []string {
	// Fast path: the usual PENDING value waits for something that does
	// not exist at all.
	promising := false
	startDeps := r.unitDeps(start)
	for i := range startDeps {
		d := &startDeps[i]
		if t := r.g.node(d.Key); !d.IsAnyOf() && t != nil && r.creatable(t) {
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
	var visit func(n *node)
	visit = func(n *node) {
		edges[n.key] = []string{}
		deps := r.unitDeps(n)
		for i := range deps {
			d := &deps[i]
			t := r.g.node(d.Key)
			if d.IsAnyOf() || t == nil || !r.creatable(t) {
				continue
			}
			edges[n.key] = append(edges[n.key], t.key)
			if _, seen := edges[t.key]; !seen && len(edges) < r.s.opts.maxCycle {
				visit(t)
			}
		}
		order = append(order, n.key)
	}
	visit(start)
	unit, back := componentOf(start.key, edges, order)
	if len(unit) < 2 {
		return nil
	}
	for _, k := range unit {
		n := r.g.node(k)
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
			if t := r.g.node(d.Key); t != nil && t.exists() {
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
		if n := r.g.node(k); n != nil && n.applied != nil && !r.depsMet(n, n.adeps()) {
			r.reconcile(k)
		}
	}
}
