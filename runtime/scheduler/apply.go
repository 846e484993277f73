package scheduler

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/registry"
)

// apply runs the job's changes through the algorithm.
func (r *txnPass) apply(j *job) {
	r.takeUnsure()
	switch j.kind {
	case NBTxn:
		// The items' nodes, kept from setIntent to reconcileTop (see
		// graph.current).
		nodes := make([]*graph.Node, len(j.items))
		added, deletes := r.g.Added, 0
		for i, it := range j.items {
			nodes[i] = r.setIntent(it.Key, it.Value)
			if it.Value == nil {
				deletes++
			}
		}
		if deletes > 64 && r.doomed == nil { // takeUnsure may have doomed some
			r.newDoomed(deletes) // not grown step by step
		}
		for _, n := range nodes {
			r.doom(n)
		}
		for i, it := range j.items {
			r.reconcileTop(it.Key, r.g.Current(it.Key, nodes[i], added))
		}
	case SBNotification:
		for _, it := range j.items {
			r.notify(it)
		}
	case RetryTxn:
		r.flags = FlagRetry
		for _, it := range j.retry {
			n := r.g.Node(it.key)
			if n == nil || n.IntentSeq != it.intentSeq || n.State != RETRYING {
				continue // superseded by a newer value, or resolved meanwhile
			}
			r.mut(n)
			n.Retries++
			r.reconcile(it.key)
		}
	case FullResyncTxn, UpstreamResyncTxn, DownstreamResyncTxn:
		r.resync(j)
	case DriftCheckTxn:
		r.applyDrift(j.drift.items)
	case RegistrationTxn:
		for _, it := range j.items {
			if n := r.g.Node(it.Key); n != nil && (n.Desc == nil || registry.IsMisfit(n.Desc)) {
				r.mut(n)
				n.Desc = r.s.lookup(it.Key)
				r.g.SetUnimplemented(n.Key, false)
				r.evaluate(n)
			}
		}
		for _, it := range j.items {
			r.reconcile(it.Key)
		}
	}
	// Values whose removal waited for removals that never completed (they
	// waited for each other) decide again, now that nothing is being
	// removed: each is deleted, or fails with ErrStillNeeded, instead of
	// staying out of line with its target unnoticed.
	r.settleUnsure()
	r.releaseDoomed() // after the leftovers settleUnsure deletes
	r.runLater()
	r.reportAdopted()
}

// reportUnimplemented makes the values the transaction set that no
// descriptor handles errors of their keys (ErrUnimplemented), and logs
// them. The values stay recorded, UNIMPLEMENTED, so that a descriptor
// registered later applies them.
func (r *txnPass) reportUnimplemented(j *job) {
	if len(r.g.Unimplemented) == 0 {
		return
	}
	switch j.kind {
	case NBTxn, FullResyncTxn, UpstreamResyncTxn:
	default:
		return
	}
	for _, it := range j.items {
		if it.Value == nil {
			continue
		}
		if n := r.g.Node(it.Key); n != nil && n.State == UNIMPLEMENTED {
			r.keyErr(it.Key, OpNone, ErrUnimplemented)
			r.s.opts.logger.Warn("no descriptor handles the key; the value waits, UNIMPLEMENTED, for one", "key", it.Key, "seq", r.seq)
		}
	}
}

// reconcileTop reconciles a key of the transaction, whose node is n (nil:
// none), and records a NOOP when its value needed nothing.
func (r *txnPass) reconcileTop(key string, n *graph.Node) {
	added := r.g.Added
	r.reconcileNode(n)
	if n = r.g.Current(key, n, added); n != nil && n.Base == "" && n.OpSeq != r.seq32 && n.Intent != nil && n.State == CONFIGURED {
		r.opFor(n, Op{Key: key, Kind: OpNone, Value: n.Intent, Flags: FlagNoop})
	}
}

// notify applies one southbound notification.
func (r *txnPass) notify(it KeyValue) {
	n := r.g.Node(it.Key)
	if n != nil && n.Base != "" {
		r.keyErr(it.Key, OpNone, ErrDerivedKey)
		return
	}
	if it.Value == nil {
		if n != nil {
			r.learn(n, nil, nil)
		}
		return
	}
	d := r.s.lookup(it.Key)
	var err error
	switch {
	case n == nil && d == nil:
		// No descriptor handles the key: nothing could ever create,
		// compare or delete it. A plugin's watcher reports its own keys.
		err = ErrUnimplemented
	case (n == nil || n.Intent == nil) && registry.IsMisfit(d):
		// Under a descriptor's prefix but outside its key space: no
		// descriptor could read it back or delete it either. The
		// notification is refused, naming the key and the template.
		err = d.Validate(it.Key, it.Value)
	case n != nil && n.Desc != nil:
		err = checkType(n.Desc, it.Value)
	default:
		err = checkType(d, it.Value)
	}
	switch {
	case err != nil:
		r.keyErr(it.Key, OpNone, fmt.Errorf("notification: %w", err))
	case n != nil && n.Intent != nil:
		// One of ours, seen in the southbound: trust what it says it
		// holds, then bring it to the intended value.
		r.learn(n, it.Value, it.Metadata)
	case n == nil:
		r.observe(r.newNode(it.Key, ""), it.Value, it.Metadata, OBTAINED)
	default:
		r.observe(n, it.Value, it.Metadata, OBTAINED)
	}
}

// checkType returns an error when value is not a message of d's value
// type (or is a nil message): it names the expected and the given type.
func checkType(d kv.Descriptor, value proto.Message) error {
	m := value.ProtoReflect()
	if !m.IsValid() {
		return fmt.Errorf("%w: a nil %T message (a value that is gone is reported with no value)", kv.ErrWrongType, value)
	}
	if d == nil || d.ValueType() == nil {
		return nil
	}
	want, got := d.ValueType().Descriptor().FullName(), m.Descriptor().FullName()
	if want != got {
		return fmt.Errorf("%w: descriptor %s takes %s, got %s", kv.ErrWrongType, d.Name(), want, got)
	}
	return nil
}
