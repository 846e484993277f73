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
		if r.memos == nil {
			r.memos = map[*node]derivedMemo{}
		}
		r.memos[m.n] = m
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
	if r.reverting && n.desc != nil {
		if p, ok := r.prior[n.key]; ok {
			return r.priorTarget(n, p.applied)
		}
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

// orphaned reports whether n, a derived value, has lost its base: the base
// is no longer in the graph, or no longer lists n among its derived values.
func (r *run) orphaned(n *node) bool { return orphanedFrom(n, r.g.node(n.base)) }

// orphanedFrom is orphaned, given b, the node of n's base.
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
