package scheduler

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// derive brings the derived values of n in line with its applied value:
// values no longer derived are deleted first, then the derived ones are set
// and reconciled. A derived value whose deletion failed stays in n.derived,
// so that it is deleted later and never outlives its base unnoticed.
func (r *run) derive(n *node) {
	if n.desc == nil {
		return
	}
	var ds []kv.Derived
	if n.applied != nil && !n.removing {
		ds = n.desc.Derived(n.key, n.applied)
	}
	keys := make([]string, 0, len(ds))
	values := make([]proto.Message, 0, len(ds))
	for _, d := range ds {
		if d.Key == "" || d.Value == nil || slices.Contains(keys, d.Key) {
			continue
		}
		if dn := r.g.nodes[d.Key]; dn != nil && dn.base != n.key {
			r.keyErr(d.Key, OpNone, fmt.Errorf("derived from %s, but the key is already used by another value", n.key))
			continue
		}
		keys = append(keys, d.Key)
		values = append(values, d.Value)
	}
	var stuck []string
	for i := len(n.derived) - 1; i >= 0; i-- {
		if k := n.derived[i]; !slices.Contains(keys, k) && !r.dropDerived(k) {
			stuck = append(stuck, k)
		}
	}
	if all := append(slices.Clone(keys), stuck...); !slices.Equal(n.derived, all) {
		r.mut(n)
		n.derived = all
	}
	for i, k := range keys {
		if !n.exists() {
			// Reconciling a derived value removed n itself (n depends on
			// a value it derives, and the new version of that one cannot
			// exist): its removal dropped what it derives, and nothing
			// more may be derived from a base that is gone.
			return
		}
		dn := r.g.nodes[k]
		if dn == nil {
			dn = r.newNode(k, n.key)
		}
		if dn.intent == nil || !proto.Equal(dn.intent, values[i]) {
			r.mut(dn)
			dn.intent, dn.intentSeq = values[i], r.seq
			r.evaluate(dn)
		}
		if n.origin == kv.OriginSB {
			r.observe(dn, dn.intent, nil, DISCOVERED)
		} else {
			r.reconcile(k)
		}
	}
}

// dropObsoleteDerived deletes, before n is updated to want, the derived
// values that want no longer derives.
func (r *run) dropObsoleteDerived(n *node, want proto.Message) {
	if len(n.derived) == 0 {
		return
	}
	keep := map[string]bool{}
	for _, d := range n.desc.Derived(n.key, want) {
		keep[d.Key] = true
	}
	var kept []string
	for _, k := range n.derived {
		if keep[k] {
			kept = append(kept, k)
		}
	}
	if len(kept) == len(n.derived) {
		return
	}
	old := n.derived
	r.mut(n)
	n.derived = kept
	for i := len(old) - 1; i >= 0; i-- {
		if k := old[i]; !keep[k] && !r.dropDerived(k) {
			n.derived = append(n.derived, k)
		}
	}
}

// dropDerivedAll deletes all derived values of n, which is being removed,
// and returns those that could not be deleted.
func (r *run) dropDerivedAll(n *node) (stuck []string) {
	for i := len(n.derived) - 1; i >= 0; i-- {
		if !r.dropDerived(n.derived[i]) {
			stuck = append(stuck, n.derived[i])
		}
	}
	if !slices.Equal(n.derived, stuck) {
		n.derived = stuck
	}
	return stuck
}

// dropDerived deletes a derived value whose base no longer derives it, and
// reports whether it is gone. A value already being removed further up is
// left to that removal.
func (r *run) dropDerived(key string) bool {
	dn := r.g.nodes[key]
	if dn == nil {
		return true
	}
	r.mut(dn)
	dn.intent, dn.invalid, dn.intentSeq = nil, nil, r.seq
	r.g.setDeps(dn, nil, dn.adeps)
	if dn.removing {
		return true // its removal, further up, completes and drops it
	}
	if dn.applied != nil {
		if dn.failedSeq == r.seq {
			return false // its delete failed in this transaction: not again
		}
		return r.remove(dn, 0, false)
	}
	r.settle(dn, false)
	return true
}
