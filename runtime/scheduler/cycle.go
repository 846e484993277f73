package scheduler

import (
	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

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
	if r.unit == nil {
		r.unit = map[string]int{}
	}
	for _, k := range unit {
		r.unit[k] = r.unitSeq
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
