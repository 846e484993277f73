package scheduler

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
)

// derivation is the run's handling of derived values and of dependency
// cycles created as units (see cycleUnit).
type derivation struct {
	*run
	// unit maps the members of the dependency cycles being created as
	// units to the unit's number: dependencies between members of the same
	// unit count as met.
	unit    map[string]int
	unitSeq int
	// deriving counts the derive calls in progress; handovers are the
	// derived keys waiting for the outermost one to end (see takeOver).
	deriving  int
	handovers []handover
	// memo and memos keep what evaluate's check computed (checkDerived).
	memo  derivedMemo
	memos map[*graph.Node]derivedMemo
}

// derive brings the derived values of n in line with its applied value:
// values no longer derived are deleted first, then the derived ones are set
// and reconciled. A derived value whose deletion failed stays in n.derived,
// so that it is deleted later and never outlives its base unnoticed.
func (r *derivation) derive(n *graph.Node) {
	if n.Desc == nil {
		return
	}
	r.deriving++
	defer func() {
		if r.deriving--; r.deriving == 0 {
			r.takeOver()
		}
	}()
	var ds []kv.Derived
	if n.Applied != nil && !n.Removing {
		ds = r.derivedOf(n)
		if err := r.panicked(n.Key); err != nil {
			// What it derives is unknown: the derived values stay as
			// they are, and the panic is an error of the key.
			r.keyErr(n.Key, OpNone, err)
			return
		}
	}
	// What n derives, with the node of each key as looked up here (see
	// current).
	wants := make([]derivedWant, 0, len(ds))
	added := r.g.Added
	for _, d := range ds {
		if d.Key == "" || d.Value == nil || slices.ContainsFunc(wants, func(w derivedWant) bool { return w.key == d.Key }) {
			continue
		}
		dn := r.g.Node(d.Key)
		if dn != nil && dn.Base != n.Key {
			if r.unheld(dn) {
				r.mut(dn)
				dn.Base = n.Key
				wants = append(wants, derivedWant{d.Key, d.Value, dn})
				continue
			}
			if dn.Base != "" && r.root(dn.Base) == r.root(n.Key) {
				// Another value derived from the same base holds the
				// key; it may give it up when the derivation in progress
				// reaches it (a key that moves between the levels or
				// branches of one base's derived values).
				r.handovers = append(r.handovers, handover{base: n.Key, key: d.Key, value: d.Value})
			} else {
				r.conflict(n, dn)
			}
			continue
		}
		wants = append(wants, derivedWant{d.Key, d.Value, dn})
	}
	var stuck []string
	// A copy (on the stack, for a few): dropping one may change n.Derived
	// on the way (its removal re-derives n, say).
	var buf [8]string
	had := append(buf[:0], n.Derived...)
	for i := len(had) - 1; i >= 0; i-- {
		k := had[i]
		if !slices.ContainsFunc(wants, func(w derivedWant) bool { return w.key == k }) && !r.dropDerived(k) {
			stuck = append(stuck, k)
		}
	}
	if !sameDerived(n.Derived, wants, stuck) {
		all := make([]string, 0, len(wants)+len(stuck))
		for _, w := range wants {
			all = append(all, w.key)
		}
		r.mut(n)
		n.Derived = append(all, stuck...)
	}
	for _, w := range wants {
		if !n.Exists() {
			// Reconciling a derived value removed n itself (n depends on
			// a value it derives, and the new version of that one cannot
			// exist): its removal dropped what it derives, and nothing
			// more may be derived from a base that is gone.
			return
		}
		r.deriveOne(n, w.key, w.value, r.g.Current(w.key, w.node, added))
	}
}

// unheld reports whether a base that derives the key of dn, a node of no
// base or another, takes it: a stale value of ours, still there after its
// delete failed, whose base was unknown then (deleted before the base,
// adopted if equal); or a node of no base that holds nothing (a failed
// delete's status; of unknown outcome, it is linked, not decided on).
func (r *derivation) unheld(dn *graph.Node) bool {
	return r.leftover(dn) || dn.Base == "" && dn.Applied == nil && dn.Intent == nil
}

// derivedWant is a value that a base derives, and the node of its key
// when derive looked it up (nil: none).
type derivedWant struct {
	key   string
	value proto.Message
	node  *graph.Node
}

// sameDerived reports whether list is the keys of wants followed by stuck.
func sameDerived(list []string, wants []derivedWant, stuck []string) bool {
	if len(list) != len(wants)+len(stuck) {
		return false
	}
	for i, w := range wants {
		if list[i] != w.key {
			return false
		}
	}
	return slices.Equal(list[len(wants):], stuck)
}

// handover is a key that base derives while another value derived from the
// same base still holds it.
type handover struct {
	base, key string
	value     proto.Message
}

// takeOver gives the keys of r.handovers to the bases that derive them,
// once the outermost derive is done: the values that held them have been
// brought in line with their new versions by then. A key still held is a
// configuration error: two values derive it.
func (r *derivation) takeOver() {
	for len(r.handovers) > 0 && !r.abort {
		hs := r.handovers
		r.handovers = nil
		for _, h := range hs {
			n := r.g.Node(h.base)
			if n == nil || !n.Exists() || !slices.ContainsFunc(n.Desc.Derived(n.Key, n.Applied), func(d kv.Derived) bool {
				return d.Key == h.key && proto.Equal(d.Value, h.value)
			}) {
				continue // n is gone or changed since: its own derive decided
			}
			dn := r.g.Node(h.key)
			switch {
			case dn != nil && dn.Base == n.Key:
				continue // taken over already
			case dn != nil:
				r.conflict(n, dn)
				continue
			}
			r.deriving++
			r.deriveOne(n, h.key, h.value, r.newDerived(n, h.key))
			r.deriving--
		}
	}
	r.handovers = nil
}

// conflict reports that n derives the key of dn, a value of another base
// (or of the NB), and records n as a claimant of dn: when dn goes, n
// derives the key (see settleState).
func (r *derivation) conflict(n, dn *graph.Node) {
	r.keyErr(dn.Key, OpNone, fmt.Errorf("derived from %s, but the key is already used by another value", n.Key))
	if !slices.Contains(dn.ClaimantKeys(), n.Key) {
		r.mut(dn)
		keys := append(slices.Clone(dn.ClaimantKeys()), n.Key)
		dn.SetRare(dn.InvalidErr(), keys)
	}
}

// root returns the key of the value that key is derived from, through any
// number of derived values (key itself for a value that is not derived).
func (r *derivation) root(key string) string {
	for i := 0; i < r.s.opts.maxCycle; i++ {
		n := r.g.Node(key)
		if n == nil || n.Base == "" {
			return key
		}
		key = n.Base
	}
	return key
}

// deriveOne sets the derived value k of n to value and reconciles it; dn
// is the graph's node of k (nil: none).
func (r *derivation) deriveOne(n *graph.Node, k string, value proto.Message, dn *graph.Node) {
	if dn == nil {
		dn = r.newNode(k, n.Key)
	}
	if dn.Intent == nil || !proto.Equal(dn.Intent, value) {
		r.mut(dn)
		dn.Intent, dn.IntentSeq = value, r.seq
		r.evaluate(dn)
		if dn.InvalidErr() != nil && !r.reverting {
			// Bad input in the base's value: an error of the commit,
			// like an invalid value set directly.
			r.keyErr(dn.Key, OpNone, dn.InvalidErr())
		}
	}
	if n.Origin == kv.OriginSB {
		r.observe(dn, dn.Intent, nil, DISCOVERED)
	} else {
		held := r.held
		r.held = n // the base, which dn's reconciliation looks at
		r.reconcileNode(dn)
		r.held = held
	}
}

// dropObsoleteDerived deletes, before n is updated to want, the derived
// values that want no longer derives.
func (r *derivation) dropObsoleteDerived(n *graph.Node, want proto.Message) {
	if len(n.Derived) == 0 {
		return
	}
	keep := setOf(n.Desc.Derived(n.Key, want), func(d *kv.Derived) string { return d.Key })
	var kept []string
	for _, k := range n.Derived {
		if keep[k] {
			kept = append(kept, k)
		}
	}
	if len(kept) == len(n.Derived) {
		return
	}
	old := n.Derived
	r.mut(n)
	n.Derived = kept
	failedSeq := n.FailedSeq
	for i := len(old) - 1; i >= 0; i-- {
		k := old[i]
		if keep[k] {
			continue
		}
		gone := r.dropDerived(k)
		if n.FailedSeq != failedSeq {
			// The removal cascade of k failed n (a delete of n that k's
			// removal needed): n keeps its applied version, whose
			// derived values derive() restored. Nothing is obsolete.
			return
		}
		if !gone {
			n.Derived = append(n.Derived, k)
		}
	}
}

// dropDerivedAll deletes all derived values of n, which is being removed,
// and returns those that could not be deleted.
func (r *derivation) dropDerivedAll(n *graph.Node) (stuck []string) {
	for i := len(n.Derived) - 1; i >= 0; i-- {
		if !r.dropDerived(n.Derived[i]) {
			stuck = append(stuck, n.Derived[i])
		}
	}
	if !slices.Equal(n.Derived, stuck) {
		n.Derived = stuck
	}
	return stuck
}

// dropDerived deletes a derived value whose base no longer derives it, and
// reports whether it is gone. A value already being removed further up is
// left to that removal.
func (r *derivation) dropDerived(key string) bool {
	dn := r.g.Node(key)
	if dn == nil {
		return true
	}
	if _, touched := r.prior[key]; r.reverting && dn.Applied != nil && !touched {
		// A revert changes nothing the forward pass left alone: a value
		// that stayed after an earlier failed delete (one its base no
		// longer derives) stays, as before the transaction.
		return false
	}
	r.mut(dn)
	dn.Intent, dn.IntentSeq = nil, r.seq
	dn.SetRare(nil, dn.ClaimantKeys())
	r.g.SetDeps(dn, nil, dn.Adeps())
	if dn.Removing {
		return true // its removal, further up, completes and drops it
	}
	err := r.unknownOutcome(key)
	if err != nil && dn.FailedSeq != r.seq32 {
		r.failUnknown(dn, err) // read back in vain: not decided on, no call (as in reconcileNode)
	}
	switch {
	case dn.Applied == nil:
		if err == nil {
			r.settle(dn, false, true)
		}
		return true
	case err != nil || dn.FailedSeq == r.seq32 && dn.LastOp == OpDelete:
		return false // not decided on, or its delete failed in this transaction: it stays (so does its base)
	}
	return r.remove(dn, 0, false)
}
