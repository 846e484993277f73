package scheduler

import (
	"context"
	"slices"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// applyDrift applies what a drift check decided (see decideDrift): every
// drift is recorded first (an operation flagged DRIFTED, with MISSING
// when the value is gone), then the values to repair, or taken back as
// they are, are reconciled, dependencies first by the algorithm's order.
func (r *txnPass) applyDrift(items []driftItem) {
	var again []string
	for i := range items {
		it := &items[i]
		n := r.g.node(it.key)
		if n == nil || n.desc == nil {
			continue
		}
		switch it.action {
		case driftTake: // as intended after all: taken as applied, no call
			r.mut(n)
			r.takeApplied(n, it.found, it.meta)
			again = append(again, it.key)
		case driftAdopt:
			r.adoptDrift(n, it)
			again = append(again, it.key)
		default:
			r.markDrift(n, it)
			if it.action == driftRepair {
				again = append(again, it.key)
			}
		}
	}
	for _, key := range again {
		r.reconcile(key)
	}
}

// markDrift records that n drifted: it holds what the southbound holds
// (nothing, when gone), DRIFTED or MISSING with the drift as its error.
func (r *txnPass) markDrift(n *node, it *driftItem) {
	if it.found == nil { // its derived values without Retrieve went with it
		r.markGone(n, it.err, FlagDrifted, func(dn *node) bool { return dn.desc != nil && !dn.desc.CanRetrieve() })
		return
	}
	prev := n.applied
	r.mut(n)
	n.applied, n.metadata, n.lastErr, n.state = it.found, it.meta, it.err, DRIFTED
	r.g.setDeps(n, n.deps, r.depsOfValue(n, it.found))
	r.syncMetadata(n)
	r.opFor(n, Op{Key: n.key, Kind: OpNone, Value: it.found, PrevValue: prev, Flags: FlagDrifted | r.nodeFlags(n), Err: it.err})
}

// adoptDrift takes the southbound's contents of n as its intended and
// applied value (policy adopt), and records it (DRIFTED ADOPTED).
func (r *txnPass) adoptDrift(n *node, it *driftItem) {
	prev := n.applied
	r.setIntent(n.key, it.found)
	r.mut(n)
	r.takeApplied(n, it.found, it.meta)
	r.opFor(n, Op{Key: n.key, Kind: OpNone, Value: it.found, PrevValue: prev, Flags: FlagDrifted | FlagAdopted | r.nodeFlags(n), Err: it.err})
	r.s.opts.logger.Warn("drift: the southbound's value adopted as intended (drift policy adopt)", "key", n.key, "drift", it.err.Error())
}

// scheduleDriftJob queues a drift check after delay.
func (s *jobs) scheduleDriftJob(delay time.Duration, dj *driftJob) {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if s.closed {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(delay, func() {
		s.qmu.Lock()
		delete(s.timers, t)
		s.qmu.Unlock()
		desc := "drift check"
		if dj.sweep {
			desc = "periodic drift check"
		}
		j := &job{kind: DriftCheckTxn, ctx: context.Background(), drift: dj, opts: txnOptions{description: desc}}
		if s.enqueue(j) == nil && dj.sweep {
			s.scheduleDriftJob(time.Duration(s.driftStep.Load()), &driftJob{sweep: true})
		}
	})
	s.timers[t] = struct{}{}
}

// sweepSlice returns the periodic check's next slice: up to the slice
// size of the keys of one descriptor. A pass over every driftable value
// is planned when the last one ends, and the interval between slices set
// so that a pass takes the check's interval.
func (s *executor) sweepSlice() []string {
	for range 2 {
		for len(s.sweep) > 0 {
			keys := s.sweep[0]
			s.sweep = s.sweep[1:]
			if len(keys) > 0 {
				return keys
			}
		}
		s.planSweep()
	}
	return nil
}

// planSweep plans a pass of the periodic check: the driftable keys by
// descriptor, sorted, in slices.
func (s *executor) planSweep() {
	byDesc := map[kv.Descriptor][]string{}
	for key, n := range s.g.all() {
		if s.driftable(n) {
			byDesc[n.desc] = append(byDesc[n.desc], key)
		}
	}
	s.sweep = s.sweep[:0]
	size := s.opts.driftSlice
	for _, d := range s.retrieveOrder {
		keys := byDesc[d]
		slices.Sort(keys)
		for len(keys) > 0 {
			k := min(size, len(keys))
			s.sweep = append(s.sweep, keys[:k:k])
			keys = keys[k:]
		}
	}
	step := s.opts.driftInterval / time.Duration(max(1, len(s.sweep)))
	s.driftStep.Store(int64(max(step, time.Millisecond)))
}
