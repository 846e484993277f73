package scheduler

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/callctx"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/grouping"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/guard"
)

// calling is the run's southbound calls: made (execution) or recorded
// (simulation), grouped, replayed, and their metadata learnt.
type calling struct {
	*run
	// calls are the southbound calls a simulation would make, in order;
	// grouped counts the calls of the group the last one is in (0: made
	// alone; see groupCall).
	calls   callList
	grouped int
	// vanished are the keys that calls of a group deleted beyond the
	// failure that ends the plan (see vanishedBeyondFailure): gone from
	// the southbound while the graph, until the run replays or settles
	// those calls, still holds them.
	vanished map[string]bool
	// replay holds the results of the calls made before a failure;
	// replayed counts those used; made are the keys of the calls the run
	// made itself while some were left (see settleLeftovers).
	replay   []callResult
	replayed int
	made     []string
	// metaKeys are the keys whose metadata a simulation did not sync.
	metaKeys []string
	// called is set by a southbound call, until the operation that
	// records it.
	called bool
}

// Batched and concurrent execution.
//
// The plan's calls are made in the plan's order. A run of consecutive
// calls of one descriptor and one kind, none of which depends on another
// (no dependency, in either the new or the old value, and no derivation
// between any two), may be made together: as one batch when the descriptor
// applies batches (kv.Batcher), or as concurrent calls when it declares
// them safe (kv.Concurrent). Such a group changes nothing but how the calls
// are made: the algorithm planned each call alone, and on a failure it
// replays each outcome alone (see finishTxn), so a value that fails in a
// group is treated as if its own call had failed.
//
// A group is one call for the watchdog (one deadline, the descriptor's call
// timeout): given up on, every operation of it fails with the timeout, and
// the algorithm's read-back finds out what was applied.

// groupMode returns how the calls of d may be grouped, cached per
// descriptor: in its guard (every registered descriptor has one), else in
// a map. Only the goroutine running the transaction calls it.
func (s *caller) groupMode(d kv.Descriptor) (grouping.Mode, int) {
	if s.opts.batchSize < 2 || d == nil {
		return grouping.None, 1
	}
	if g, ok := d.(*guard.Guard); ok {
		if !g.Grouped {
			g.Group, g.Grouped = grouping.InfoOf(d, !s.opts.noConcurrency, s.opts.logger), true
		}
		return g.Group.Mode, g.Group.Workers
	}
	if g, ok := s.groupModes[d]; ok {
		return g.Mode, g.Workers
	}
	g := grouping.InfoOf(d, !s.opts.noConcurrency, s.opts.logger)
	put(&s.groupModes, d, g)
	return g.Mode, g.Workers
}

// groupEnd returns the end (exclusive) of the group of calls of the plan
// that starts at call i: i+1 when call i is made alone.
func groupEnd(plan *run, i int) int {
	end := i + 1
	for end < plan.calls.Len() && plan.calls.At(end).joins {
		end++
	}
	return end
}

// groupCall decides whether the call the plan made last, on n, joins the
// group of the call before it: both of one descriptor whose calls may be
// grouped, of one kind, and independent of each other and of the group's
// other calls. It is decided as the plan makes the call, when what tells
// (the dependencies of the value and of the applied one, the base) is at
// hand, so the call need not keep it. A reverting transaction's calls are
// made one at a time: its first failure ends it.
func (r *calling) groupCall(c *plannedCall, n *graph.Node, kind OpKind, value proto.Message) {
	if r.opts.revert {
		return
	}
	var mode grouping.Mode
	if gd, ok := n.Desc.(*guard.Guard); ok && gd.Grouped && r.s.opts.batchSize >= 2 {
		mode = gd.Group.Mode // the usual case, without a call
	} else {
		mode, _ = r.s.groupMode(n.Desc)
	}
	if mode == grouping.None {
		r.grouped = 0
		return
	}
	var deps, adeps []kv.Dependency
	if kind != OpDelete {
		deps = r.depsOfValue(n, value)
	}
	if kind != OpCreate {
		adeps = n.Adeps()
	}
	g := &r.s.grouping
	k := r.calls.Len() - 1 // c's index
	if r.grouped > 0 && r.grouped < r.s.opts.batchSize && !r.calls.StartsChunk(k) {
		if p := r.calls.At(k - 1); p.kind == kind && sameDesc(p.desc, c.desc) {
			if r.grouped == 1 {
				// A second call: the first is looked at only now (most
				// groups are of one call).
				g.Open(c.desc.KeyPrefix())
			}
			if g.Join(c.key, n.Base, deps, adeps, c.first) {
				c.joins = true
				r.grouped++
				return
			}
		}
	}
	g.Start(c.key, n.Base, deps, adeps)
	r.grouped = 1
}

// sameDesc reports whether a and b are one descriptor. Registered ones
// are guards, compared as pointers: cheaper than comparing interfaces.
func sameDesc(a, b kv.Descriptor) bool {
	if ga, ok := a.(*guard.Guard); ok {
		gb, ok := b.(*guard.Guard)
		return ok && ga == gb
	}
	return a == b
}

// execGroup makes the calls [i, end) of the plan of st together, and
// records their outcomes as executePlan does for one call. failed is the
// first of them that failed, or -1; taken is set when the watchdog gave up
// on the group (see callInline).
func (s *caller) execGroup(st *txnState, i, end int, unheld *map[int]any) (ops []kv.BatchOp[string, proto.Message, any], failed int, taken *callCtx) {
	plan := st.plan
	calls := plan.calls.Slice(i, end)
	// The buffer is the scheduler's, taken for the group: a group given
	// up on keeps it (its goroutines may still write to it).
	ops = s.batchOps
	s.batchOps = nil
	if cap(ops) < len(calls) {
		ops = make([]kv.BatchOp[string, proto.Message, any], len(calls), max(len(calls), min(s.opts.batchSize, 4*len(calls))))
	}
	ops = ops[:len(calls)]
	// The nodes are looked up once: the calls change nothing in the graph.
	nodes := s.groupNodes[:0]
	for k := range calls {
		c := &calls[k]
		n := c.node(s.g)
		nodes = append(nodes, n)
		meta := c.meta
		if !c.first && n != nil {
			meta = n.Metadata
		}
		op := &ops[k]
		*op = kv.BatchOp[string, proto.Message, any]{Key: c.key, Value: c.value, OldValue: c.prev, OldMetadata: meta}
		if c.kind == OpDelete {
			op.Value, op.OldValue = c.prev, nil
		}
	}
	first := &calls[0]
	mode, workers := s.groupMode(first.desc)
	cc := s.newCallCtx(st.ctx, first.kind, first.desc, first.key, len(calls))
	cc.st = st
	st.callIndex, st.groupEnd = i, end
	s.inFlight.Store(cc)
	if s.closing.Load() {
		if !s.inFlight.CompareAndSwap(cc, nil) {
			return nil, -1, cc
		}
		cc.closing = true
		err := cc.cause()
		for k := range ops {
			ops[k].Err = err
		}
	} else if mode == grouping.Batch {
		callBatch(cc, ops)
	} else {
		callConcurrent(cc, ops, workers)
	}
	cc.End(callctx.Returned)
	if !s.inFlight.CompareAndSwap(cc, nil) {
		s.late(cc, nil)
		return nil, -1, cc
	}
	st.groupEnd = 0
	st.res.Batches++
	st.res.BatchedOps += len(calls)
	if s.opts.observer != nil {
		s.observeGroup(cc, ops)
	}
	if cc.span != nil {
		endGroupSpan(cc, ops)
	}
	failed = -1
	for k := range calls {
		c := &calls[k]
		op := &ops[k]
		if op.Err != nil {
			if failed < 0 {
				failed = i + k
			}
			continue
		}
		m := op.Metadata
		st.recordMeta(i+k, c, nodes[k], m, unheld)
	}
	clear(nodes)
	s.groupNodes = nodes[:0]
	return ops, failed, nil
}

// observeGroup reports the calls of a group to the observer: each as
// taking its share of the group's time.
func (s *caller) observeGroup(cc *callCtx, ops []kv.BatchOp[string, proto.Message, any]) {
	o := s.opts.observer
	took := time.Since(cc.Start)
	share := took / time.Duration(len(ops))
	name := cc.desc.Name()
	for k := range ops {
		o.OpDone(name, cc.op, share, ops[k].Err)
	}
	if so, ok := o.(*safeObserver); ok {
		so.batchDone(name, cc.op, len(ops), took)
	}
}

// callBatch gives ops to the Batch of cc's descriptor; a panic fails them
// all.
func callBatch(cc *callCtx, ops []kv.BatchOp[string, proto.Message, any]) {
	defer func() {
		if p := recover(); p != nil {
			err := kv.NonRetriable(fmt.Errorf("handler of %s panicked in Batch: %v", cc.name(), p))
			for k := range ops {
				ops[k].Err = err
				ops[k].Metadata = nil
			}
		}
	}()
	kind := kv.BatchDelete
	switch cc.op {
	case OpCreate:
		kind = kv.BatchCreate
	case OpUpdate:
		kind = kv.BatchUpdate
	}
	cc.desc.Batch(cc, kind, ops)
}

// callConcurrent makes the calls on up to workers goroutines, each
// operation's outcome in ops. The calls are read from ops, which a group
// given up on keeps: the plan's calls are the next transaction's by then.
// Once the group is given up on, the calls not started are not made: the
// transaction went on without them.
func callConcurrent(cc *callCtx, ops []kv.BatchOp[string, proto.Message, any], workers int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	work := func() {
		defer wg.Done()
		for {
			k := int(next.Add(1)) - 1
			if k >= len(ops) {
				return
			}
			op := &ops[k]
			if cc.given.Load() {
				op.Err = cc.cause()
				continue
			}
			prev, value := op.OldValue, op.Value
			if cc.op == OpDelete {
				prev, value = op.Value, nil
			}
			op.Metadata, op.Err = callHandler(cc, op.Key, prev, value, op.OldMetadata)
		}
	}
	workers = min(workers, len(ops))
	wg.Add(workers)
	for range workers - 1 {
		go work()
	}
	work()
	wg.Wait()
}

// BatchObserver is an Observer that is also told of each batch, and of
// each group of concurrent calls, with its size; OpDone is still called
// for each of its operations (with the group's time shared among them).
type BatchObserver interface {
	BatchDone(descriptor string, op OpKind, ops int, took time.Duration)
}

// vanishedBeyondFailure returns the keys that calls of the failed group
// deleted after the first failed one, or tried to (a delete that failed may
// have removed the value in part): a batch or concurrent group makes
// them all, where one call at a time would have stopped at the failure.
// Until the run replays those deletes, or settles them at its end, what
// depends on those keys is taken not to be met (see depsMet): a dependent
// is not created on a value the southbound no longer holds.
func vanishedBeyondFailure(results []callResult) map[string]bool {
	var out map[string]bool
	failed := false
	for i := range results {
		c := &results[i]
		if failed && c.kind == OpDelete {
			put(&out, c.key, true) // (one that failed may have removed it first: read back when settled)
		}
		failed = failed || c.err != nil
	}
	return out
}

// takeReplay returns the result of the call (kind, key) made by the plan,
// or nil when the plan made no such call: the run then makes it. The run
// after a failure makes the plan's calls in the plan's order up to the
// failure, and in the plan's order after it as long as the failure changes
// nothing for them; the calls of a group after its first failure were
// made, though, and the run may get to them in another order or not at
// all (a failed delete of a dependent stops the removal of its
// dependency, for one; a call before the failure on a value whose peer
// such a delete took may no longer be made): they are looked for ahead,
// and those the run never gets to are settled at its end (settleLeftovers).
func (r *calling) takeReplay(kind OpKind, key string) *callResult {
	for r.replayed < len(r.replay) && r.replay[r.replayed].used {
		r.replayed++
	}
	for i := r.replayed; i < len(r.replay); i++ {
		c := &r.replay[i]
		if !c.used && c.kind == kind && c.key == key {
			c.used = true
			if kind == OpDelete && !slices.ContainsFunc(r.replay[i+1:], func(l callResult) bool { return !l.used && l.kind == kind && l.key == key }) {
				delete(r.vanished, key) // the graph takes the (last) delete now
			}
			return c
		}
	}
	return nil
}

// settleLeftovers settles, at the run's end, each call of the plan that
// the run did not replay (see takeReplay, settleLeftover).
func (r *calling) settleLeftovers() {
	// Each key stays vanished until its call is settled below: what the
	// settling of one brings back (a value created again, what needs it)
	// must not count on another that is gone and not yet settled.
	defer func() { r.vanished = nil }()
	settled := false
	for i := r.replayed; i < len(r.replay); i++ {
		settled = r.settleLeftover(i) || settled
	}
	if settled {
		r.runLater()
	}
}

// settleLeftover brings into the graph what call i of the plan, unless
// used, changed in the southbound, as a notification of the change would
// (one that a later call on its key, replayed or made, superseded is
// done): what it left is read back (see readLeftover), and the value
// found is taken as applied and brought to its target, or taken as gone
// (what depends on it goes first, and it is created again when still
// wanted). When the read-back of a call that failed fails too, the value
// fails with the call's error, as after any failed call whose outcome is
// unknown: neither CONFIGURED nor gone, whatever the southbound holds. It
// reports whether the graph took the call.
func (r *calling) settleLeftover(i int) bool {
	c := &r.replay[i]
	if c.used {
		return false
	}
	c.used = true
	delete(r.vanished, c.key) // the graph takes it now
	n := r.g.Node(c.key)
	if n == nil || n.Desc == nil || slices.Contains(r.made, c.key) || slices.ContainsFunc(r.replay[i+1:], func(l callResult) bool { return l.used && l.key == c.key }) {
		return false // (a later call on it, replayed or made: the graph holds what that call left)
	}
	value, meta, expected := c.value, c.meta, c.value
	if c.kind == OpDelete {
		value, meta, expected = nil, nil, n.Applied
	}
	switch found, fmeta, known := r.readLeftover(n, c, expected); {
	case known:
		value, meta = found, fmeta
	case c.err != nil:
		r.s.opts.logger.Debug("a call that the run after a failure did not make again failed, and its outcome is unknown",
			"key", c.key, "op", c.kind.String(), "error", c.err, "seq", r.seq)
		r.mut(n)
		if c.kind == OpDelete {
			// As deleteCall: the graph holds nothing of it, and
			// what needs it goes.
			r.takeApplied(n, nil, nil)
			r.keep(n, 0, r.markUnsure(n, expected, c.err), expected, false)
		} else {
			n.LastOp = c.kind
			r.fail(n, c.kind, r.markUnsure(n, expected, c.err), 0, n.Applied, c.value, false)
		}
		return true
	}
	r.s.opts.logger.Debug("settling a call that the run after a failure did not make again",
		"key", c.key, "op", c.kind.String(), "exists", value != nil, "seq", r.seq)
	r.learn(n, value, meta)
	return true
}

// readLeftover reads back what call c, which the run after a failure did
// not make again, left of n: one that failed (its outcome), or one that
// created or updated n, which a later call (the delete of a cycle partner)
// may have taken since. A successful delete is gone; a successful call
// whose read-back fails is taken at its word, as is one of a descriptor
// without Retrieve.
func (r *calling) readLeftover(n *graph.Node, c *callResult, expected proto.Message) (proto.Message, any, bool) {
	if c.err == nil && (c.kind == OpDelete || !n.Desc.CanRetrieve()) {
		return nil, nil, false
	}
	return r.readBack(n, expected)
}

// learn takes value (nil: nothing) as what the southbound holds for n, as
// a notification says or a call left it, and brings n to its target from
// there: a value that vanished is removed (what depends on it first) and,
// when it is one of ours, created again if still wanted.
func (r *calling) learn(n *graph.Node, value proto.Message, meta any) {
	if value == nil {
		if n.Applied == nil || n.Removing {
			return
		}
		if n.Origin == kv.OriginSB {
			r.remove(n, FlagObtained, true)
			return
		}
		if r.remove(n, 0, true) {
			r.reconcile(n.Key)
		}
		return
	}
	r.mut(n)
	fresh := n.Applied == nil
	r.takeApplied(n, value, meta)
	if fresh {
		r.derive(n)
		r.triggerDependents(n.Key, nil)
	}
	r.reconcile(n.Key)
}

// call performs one southbound operation. A simulation performs none and
// records it in the plan's calls; an execution after a failed call first
// replays the results of the calls the plan made already.
func (r *calling) call(kind OpKind, n *graph.Node, prev, value proto.Message) (meta any, err error) {
	r.called = true
	if r.sim {
		c := r.calls.Add(plannedCall{kind: kind, key: n.Key, desc: n.Desc, n: n, prev: prev, value: value,
			meta: n.Metadata, first: n.CallSeq != r.seq32, op: int32(len(r.ops))})
		r.groupCall(c, n, kind, value)
		// Not journaled on purpose: a stale mark after a rollback only
		// ever carries an older transaction's number.
		n.CallSeq = r.seq32
		return nil, nil
	}
	if r.replayed < len(r.replay) {
		if c := r.takeReplay(kind, n.Key); c != nil {
			return c.meta, c.err
		}
		r.made = append(r.made, n.Key)
	}
	return r.s.doCall(r.ctx, kind, n.Desc, n.Key, prev, value, n.Metadata)
}

// observe records a value present in the southbound that we did not create
// (OBTAINED, or DISCOVERED for its derived values).
func (r *calling) observe(n *graph.Node, value proto.Message, meta any, st State) {
	if n.Origin == kv.OriginSB && n.State == st && n.Applied != nil && proto.Equal(n.Applied, value) && graph.SameValue(n.Metadata, meta) {
		// Seen again as it was: nothing to record (its derived values
		// are re-derived, and record only what changed).
		r.derive(n)
		return
	}
	r.mut(n)
	fresh := n.Applied == nil
	n.Origin, n.Applied, n.Metadata, n.State = kv.OriginSB, value, meta, st
	n.SetLastErr(nil)
	if n.Base == "" {
		n.Intent = nil
	}
	r.g.SetDeps(n, nil, nil) // not ours: nothing to order
	r.g.SetExisting(n.Key, true)
	r.syncMetadata(n)
	r.opFor(n, Op{Key: n.Key, Kind: OpNone, Value: value, Flags: FlagObtained | r.nodeFlags(n)})
	r.derive(n)
	if fresh {
		r.triggerDependents(n.Key, n)
	}
}

func (r *calling) syncMetadata(n *graph.Node) {
	if r.sim && n.Desc != nil && n.Desc.WithMetadata() {
		r.metaKeys = append(r.metaKeys, n.Key) // synced if the plan is kept
	} else if !r.sim {
		guard.SyncMetadata(n.Desc, n.Key, n.Applied != nil, n.Metadata)
	}
}
