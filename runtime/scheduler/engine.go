package scheduler

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// run is one pass of the reconcile algorithm over the graph: a simulation
// (sim: no southbound calls, rolled back afterwards, its operations are the
// plan) or an execution. Both run the same code, so the plan is exactly what
// an execution without failures does.
type run struct {
	s    *Scheduler
	g    *graph
	ctx  context.Context
	seq  uint64
	opts txnOptions
	sim  bool
	// flags are added to every operation of the run (FlagRetry).
	flags Flags

	ops  []Op
	errs []KeyError
	// abort is set on the first failure of a reverting execution.
	abort bool
	// unit holds the members of a dependency cycle being created together:
	// dependencies on them count as met.
	unit map[string]bool
	// applied lists the executed operations, for revert.
	applied []appliedOp
	// retry lists the keys that failed with a retriable error.
	retry []string
	// touched collects the keys whose status may have changed (execution
	// with watchers only).
	touched map[string]struct{}
}

type appliedOp struct {
	key         string
	kind        OpKind
	desc        kv.Descriptor
	prev, value proto.Message
	meta        any
	failed      bool
}

// mut snapshots n into the journal before a change.
func (r *run) mut(n *node) {
	r.g.touch(n)
	n.seq = r.seq
	if r.touched != nil {
		r.touched[n.key] = struct{}{}
	}
}

// undoable records an executed operation for a reverting transaction.
func (r *run) undoable(a appliedOp) {
	if r.opts.revert && !r.sim {
		r.applied = append(r.applied, a)
	}
}

// opFor records an operation on n (already mut'ed).
func (r *run) opFor(n *node, o Op) {
	o.Flags |= r.flags
	n.opSeq = r.seq
	r.ops = append(r.ops, o)
}

func (r *run) keyErr(key string, kind OpKind, err error) {
	r.errs = append(r.errs, KeyError{Key: key, Op: kind, Err: err})
}

// newNode adds a node for key, resolving its descriptor.
func (r *run) newNode(key, base string) *node {
	n := &node{key: key, base: base, origin: kv.OriginNB, desc: r.s.lookup(key)}
	r.g.addNode(n)
	if r.touched != nil {
		r.touched[key] = struct{}{}
	}
	return n
}

// setIntent records the intended value of an NB key (nil: delete it).
func (r *run) setIntent(key string, value proto.Message) {
	n := r.g.nodes[key]
	if n != nil && n.base != "" {
		r.keyErr(key, OpNone, ErrDerivedKey)
		return
	}
	if value == nil {
		if n == nil || n.intent == nil {
			if n != nil && n.origin == kv.OriginSB && n.applied != nil {
				r.keyErr(key, OpDelete, ErrObtainedKey)
			}
			return
		}
		r.mut(n)
		n.intent, n.invalid, n.intentSeq, n.retries = nil, nil, r.seq, 0
		r.g.setDeps(n, r.depsOf(n))
		return
	}
	if n == nil {
		n = r.newNode(key, "")
	}
	r.mut(n)
	n.intent, n.intentSeq, n.retries = value, r.seq, 0
	if n.origin == kv.OriginSB {
		n.origin = kv.OriginNB // an intended value takes an obtained one over
	}
	r.evaluate(n)
}

// evaluate validates n's intent and indexes its dependencies. n is mut'ed.
func (r *run) evaluate(n *node) {
	if n.desc == nil {
		n.invalid = nil
		r.g.setUnimplemented(n.key, n.intent != nil)
		r.g.setDeps(n, nil)
		return
	}
	n.invalid = nil
	if n.intent != nil {
		n.invalid = n.desc.Validate(n.key, n.intent)
	}
	r.g.setDeps(n, r.depsOf(n))
}

// depsOf returns the dependencies to index for n: those of the intent, or,
// while the intent is invalid or absent, those of the applied value (so that
// an applied value is still deleted before what it depends on).
func (r *run) depsOf(n *node) []kv.Dependency {
	if n.desc == nil {
		return nil
	}
	if n.intent != nil && n.invalid == nil {
		return n.desc.Dependencies(n.key, n.intent)
	}
	if n.applied != nil {
		return n.desc.Dependencies(n.key, n.applied)
	}
	return nil
}

// depsMet reports whether every dependency of n is satisfied.
func (r *run) depsMet(n *node) bool {
	for i := range n.deps {
		d := &n.deps[i]
		if d.IsAnyOf() {
			if r.g.anyOfSatisfied(&d.AnyOf) == "" {
				return false
			}
			continue
		}
		t := r.g.nodes[d.Key]
		if t == nil {
			return false
		}
		if !t.exists() && !(r.unit[d.Key] && t.failedSeq != r.seq) {
			return false
		}
	}
	return true
}

// target returns what n should have applied now, and whether it is held
// back by unmet dependencies.
func (r *run) target(n *node) (want proto.Message, pending bool) {
	switch {
	case n.desc == nil || n.intent == nil:
		return nil, false
	case n.invalid != nil:
		// Keep the last valid version (see doc.go: "Invalid values").
		if n.applied != nil && !r.depsMet(n) {
			return nil, true
		}
		return n.applied, false
	case n.failedSeq == r.seq:
		return n.applied, false // failed once in this transaction: not again
	case !r.depsMet(n):
		return nil, true
	}
	return n.intent, false
}

// reconcile brings the southbound state of key to its target.
func (r *run) reconcile(key string) {
	if r.abort {
		return
	}
	n := r.g.nodes[key]
	if n == nil || n.removing {
		return
	}
	if n.origin == kv.OriginSB {
		return // obtained or discovered: never created, updated or deleted by us
	}
	want, pending := r.target(n)
	switch {
	case want == nil && n.applied == nil:
		if pending && len(r.unit) == 0 && n.intent != nil {
			if group := r.cycleGroup(n); group != nil {
				r.createUnit(group)
				return
			}
		}
		r.settle(n, pending)
	case want == nil:
		r.remove(n, 0)
	case n.applied == nil:
		r.create(n, 0)
	case n.desc.Equivalent(key, n.applied, want):
		if n.applied != want {
			// Equal for the southbound, but fields left out of the
			// comparison (those that derive values) may have changed.
			r.mut(n)
			n.applied = want
			r.derive(n)
		}
		r.settle(n, false)
	case !n.desc.CanUpdate() || n.desc.NeedsRecreate(key, n.applied, want):
		r.remove(n, FlagRecreate)
		if n.applied == nil && !r.abort {
			r.create(n, FlagRecreate)
		}
	default:
		r.update(n)
	}
}

// call performs one southbound operation; a simulation performs none. A
// panicking handler fails the operation instead of the scheduler.
func (r *run) call(kind OpKind, n *node, prev, value proto.Message) (meta any, err error) {
	if r.sim {
		return nil, nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = kv.NonRetriable(fmt.Errorf("handler of %s panicked: %v", n.desc.Name(), p))
		}
	}()
	switch kind {
	case OpCreate:
		return n.desc.Create(r.ctx, n.key, value)
	case OpUpdate:
		return n.desc.Update(r.ctx, n.key, prev, value, n.metadata)
	default:
		return nil, n.desc.Delete(r.ctx, n.key, prev, n.metadata)
	}
}

func (r *run) nodeFlags(n *node) Flags {
	var f Flags
	if n.base != "" {
		f |= FlagDerived
	}
	if r.unit[n.key] {
		f |= FlagCycle
	}
	return f
}

func (r *run) create(n *node, flags Flags) {
	flags |= r.nodeFlags(n)
	if n.state == PENDING {
		flags |= FlagWasPending
	}
	want := n.intent
	meta, err := r.call(OpCreate, n, nil, want)
	r.mut(n)
	n.lastOp = OpCreate
	if err != nil {
		r.fail(n, OpCreate, err, flags, nil, want)
		return
	}
	n.applied, n.metadata, n.lastErr, n.state = want, meta, nil, CONFIGURED
	r.g.setExisting(n.key, true)
	r.syncMetadata(n)
	r.opFor(n, Op{Key: n.key, Kind: OpCreate, Value: want, Flags: flags})
	r.undoable(appliedOp{key: n.key, kind: OpCreate, desc: n.desc, value: want, meta: meta})
	r.derive(n)
	r.triggerDependents(n.key)
}

func (r *run) update(n *node) {
	prev, want := n.applied, n.intent
	flags := r.nodeFlags(n)
	r.dropObsoleteDerived(n, want)
	if r.abort {
		return
	}
	meta, err := r.call(OpUpdate, n, prev, want)
	r.mut(n)
	n.lastOp = OpUpdate
	if err != nil {
		r.fail(n, OpUpdate, err, flags, prev, want)
		r.derive(n) // bring back what the old value derives
		return
	}
	n.applied, n.metadata, n.lastErr, n.state = want, meta, nil, CONFIGURED
	r.syncMetadata(n)
	r.opFor(n, Op{Key: n.key, Kind: OpUpdate, Value: want, PrevValue: prev, Flags: flags})
	r.undoable(appliedOp{key: n.key, kind: OpUpdate, desc: n.desc, prev: prev, value: want, meta: meta})
	r.derive(n)
}

// remove deletes n from the southbound: first the values that depend on it
// (they become PENDING), then its derived values, then n itself.
func (r *run) remove(n *node, flags Flags) {
	flags |= r.nodeFlags(n)
	r.mut(n)
	n.removing = true
	r.g.setExisting(n.key, false)
	// Derived values first (they go with n, they do not wait for it), then
	// whatever else depends on n (it waits: PENDING).
	for i := len(n.derived) - 1; i >= 0; i-- {
		r.dropDerived(n.derived[i])
	}
	n.derived = nil
	for _, k := range r.g.dependentsOf(n.key) {
		if d := r.g.nodes[k]; d != nil && d.applied != nil && !d.removing {
			r.reconcile(k)
		}
	}
	if r.abort {
		n.removing = false
		r.g.setExisting(n.key, n.applied != nil)
		return
	}
	prev, oldMeta := n.applied, n.metadata
	if n.origin != kv.OriginSB {
		if _, err := r.call(OpDelete, n, prev, nil); err != nil {
			n.removing = false
			n.lastOp = OpDelete
			r.g.setExisting(n.key, true)
			r.fail(n, OpDelete, err, flags, prev, nil)
			return
		}
		r.undoable(appliedOp{key: n.key, kind: OpDelete, desc: n.desc, prev: prev, meta: oldMeta})
	}
	n.applied, n.metadata, n.removing, n.lastErr = nil, nil, false, nil
	n.lastOp = OpDelete
	r.syncMetadata(n)
	_, pending := r.target(n)
	if pending && flags&FlagRecreate == 0 {
		flags |= FlagIsPending
	}
	if n.origin == kv.OriginSB {
		flags |= FlagObtained
	}
	r.opFor(n, Op{Key: n.key, Kind: OpDelete, PrevValue: prev, Flags: flags})
	if flags&FlagRecreate == 0 {
		r.settleQuiet(n, pending)
	}
}

// fail records a failed operation on n (already mut'ed).
func (r *run) fail(n *node, kind OpKind, err error, flags Flags, prev, value proto.Message) {
	n.failedSeq, n.lastErr = r.seq, err
	retriable := r.opts.retry.enabled() && n.desc.IsRetriable(err) && n.retries < r.opts.retry.MaxAttempts && !r.opts.revert
	if retriable {
		n.state = RETRYING
		r.retry = append(r.retry, n.key)
	} else {
		n.state = FAILED
		if n.retries > 0 && n.retries >= r.opts.retry.MaxAttempts {
			n.lastErr = fmt.Errorf("%w after %d attempts: %w", ErrRetriesExhausted, n.retries+1, err)
		}
	}
	r.opFor(n, Op{Key: n.key, Kind: kind, Value: value, PrevValue: prev, Flags: flags, Err: err})
	r.keyErr(n.key, kind, err)
	if r.opts.revert {
		r.abort = true
		r.applied = append(r.applied, appliedOp{key: n.key, kind: kind, desc: n.desc, prev: prev, value: value, meta: n.metadata, failed: true})
	}
}

// settle sets the state of a node that needs no southbound operation, and
// drops nodes that nothing refers to any more. A change to PENDING,
// INVALID or UNIMPLEMENTED is recorded as an operation of kind OpNone.
func (r *run) settle(n *node, pending bool) { r.settleState(n, pending, true) }

// settleQuiet is settle after an operation that was recorded already.
func (r *run) settleQuiet(n *node, pending bool) { r.settleState(n, pending, false) }

func (r *run) settleState(n *node, pending, record bool) {
	if n.intent == nil && n.applied == nil && !n.removing {
		r.mut(n)
		r.g.setDeps(n, nil)
		r.g.setUnimplemented(n.key, false)
		r.g.delNode(n)
		n.state = REMOVED
		return
	}
	var st State
	var flags Flags
	switch {
	case n.failedSeq == r.seq:
		return // fail() set FAILED or RETRYING
	case n.desc == nil:
		st, flags = UNIMPLEMENTED, FlagUnimplemented
	case n.invalid != nil:
		st, flags = INVALID, FlagInvalid
	case pending:
		st, flags = PENDING, FlagIsPending
	case n.applied != nil:
		st = CONFIGURED
	default:
		st = NONEXISTENT
	}
	if n.state == st && (st != CONFIGURED || n.lastErr == nil) {
		return
	}
	r.mut(n)
	n.state = st
	if st == CONFIGURED {
		n.lastErr = nil
	} else if st == INVALID {
		n.lastErr = n.invalid
	}
	if flags != 0 && record {
		r.opFor(n, Op{Key: n.key, Kind: OpNone, Value: n.intent, Flags: flags | r.nodeFlags(n)})
	}
}

// derive brings the derived values of n in line with its applied value.
func (r *run) derive(n *node) {
	if n.desc == nil {
		return
	}
	var ds []kv.Derived
	if n.applied != nil && !n.removing {
		ds = n.desc.Derived(n.key, n.applied)
	}
	keys := make([]string, 0, len(ds))
	for _, d := range ds {
		if d.Key == "" || d.Value == nil {
			continue
		}
		dn := r.g.nodes[d.Key]
		if dn != nil && dn.base != n.key {
			r.keyErr(d.Key, OpNone, fmt.Errorf("derived from %s, but the key is already used by another value", n.key))
			continue
		}
		if dn == nil {
			dn = r.newNode(d.Key, n.key)
		}
		keys = append(keys, d.Key)
		if dn.intent != nil && proto.Equal(dn.intent, d.Value) {
			continue
		}
		r.mut(dn)
		dn.intent, dn.intentSeq, dn.origin = d.Value, r.seq, n.origin
		r.evaluate(dn)
	}
	old := n.derived
	if !slices.Equal(old, keys) {
		r.mut(n)
		n.derived = keys
	}
	for i := len(old) - 1; i >= 0; i-- {
		if !slices.Contains(keys, old[i]) {
			r.dropDerived(old[i])
		}
	}
	for _, k := range keys {
		if dn := r.g.nodes[k]; dn.origin == kv.OriginSB {
			r.observe(dn, dn.intent, nil, DISCOVERED)
		} else {
			r.reconcile(k)
		}
	}
}

// dropObsoleteDerived removes, before n is updated to want, the derived
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
		if !keep[old[i]] {
			r.dropDerived(old[i])
		}
	}
}

// dropDerived removes a derived value whose base no longer derives it.
func (r *run) dropDerived(key string) {
	dn := r.g.nodes[key]
	if dn == nil {
		return
	}
	r.mut(dn)
	dn.intent = nil
	r.g.setDeps(dn, r.depsOf(dn))
	if dn.applied != nil {
		r.remove(dn, 0)
	} else {
		r.settle(dn, false)
	}
}

// triggerDependents reconciles the values waiting for key.
func (r *run) triggerDependents(key string) {
	for _, k := range r.g.dependentsOf(key) {
		if d := r.g.nodes[k]; d != nil && d.applied == nil && d.intent != nil && d.origin != kv.OriginSB {
			r.reconcile(k)
		}
	}
}

// observe records a value present in the southbound that we did not create
// (OBTAINED, or DISCOVERED for its derived values).
func (r *run) observe(n *node, value proto.Message, meta any, st State) {
	r.mut(n)
	fresh := n.applied == nil
	n.origin, n.applied, n.metadata, n.state, n.lastErr = kv.OriginSB, value, meta, st, nil
	if n.base == "" {
		n.intent = nil
		r.g.setDeps(n, nil)
	}
	r.g.setExisting(n.key, true)
	r.syncMetadata(n)
	r.opFor(n, Op{Key: n.key, Kind: OpNone, Value: value, Flags: FlagObtained | r.nodeFlags(n)})
	r.derive(n)
	if fresh {
		r.triggerDependents(n.key)
	}
}

// cycleGroup looks for a set of intended values, start among them, whose
// unmet dependencies all lie within the set (a dependency cycle such as a
// veth pair, with everything it needs from outside already there). It
// returns the set in creation order, or nil.
func (r *run) cycleGroup(start *node) []string {
	seen := map[string]bool{}
	var order []string
	ok := true
	var visit func(n *node)
	visit = func(n *node) {
		seen[n.key] = true
		for i := range n.deps {
			d := &n.deps[i]
			if d.IsAnyOf() {
				if r.g.anyOfSatisfied(&d.AnyOf) == "" {
					ok = false
					return
				}
				continue
			}
			t := r.g.nodes[d.Key]
			if t != nil && t.exists() {
				continue
			}
			if t == nil || t.intent == nil || t.desc == nil || t.invalid != nil || t.removing ||
				t.failedSeq == r.seq || t.origin == kv.OriginSB || len(seen) >= r.s.opts.maxCycle {
				ok = false
				return
			}
			if !seen[t.key] {
				visit(t)
				if !ok {
					return
				}
			}
		}
		order = append(order, n.key)
	}
	visit(start)
	if !ok || len(order) < 2 {
		return nil
	}
	return order
}

// createUnit creates the members of a cycle group together.
func (r *run) createUnit(group []string) {
	r.unit = make(map[string]bool, len(group))
	for _, k := range group {
		r.unit[k] = true
	}
	for _, k := range group {
		r.reconcile(k)
	}
	r.unit = nil
	// A member that failed leaves the others with an unmet dependency:
	// delete those again, so that no existing value lacks its dependency.
	for _, k := range group {
		if n := r.g.nodes[k]; n != nil && n.applied != nil && !r.depsMet(n) {
			r.reconcile(k)
		}
	}
}

func (r *run) syncMetadata(n *node) {
	if r.sim || n.desc == nil || !n.desc.WithMetadata() {
		return
	}
	if n.applied != nil {
		n.desc.SetMetadata(n.label(), n.metadata)
	} else {
		n.desc.DeleteMetadata(n.label())
	}
}
