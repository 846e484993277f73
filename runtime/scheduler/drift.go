package scheduler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/registry"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/view"
)

// ErrDrifted is what a *DriftError is (errors.Is): a value of ours that
// the southbound changed or lost behind the scheduler's back.
var ErrDrifted = view.ErrDrifted

// DriftError is the LastErr (and Status.Drift) of a value that a drift
// check found changed (DRIFTED) or gone (MISSING) behind our back, and
// that its policy leaves so (report), or whose repairs back off.
type DriftError = view.DriftError

// DriftCheck names the values a drift check reads back: keys, and every
// value of ours of the descriptors named (all when both are empty and the
// check is periodic).
type DriftCheck struct {
	Keys        []string
	Descriptors []string
}

// CheckDrift reads back, through their descriptors' Retrieve, the values
// of ours that c names, and handles what changed or went behind our back
// by each value's drift policy (see "Drift" in the package doc). Values
// that cannot be read back (no Retrieve, not ours, not applied) are left
// out. A check that finds no drift records no transaction: its Result
// has Seq 0. A descriptor name that is not registered is an error.
func (s *Scheduler) CheckDrift(ctx context.Context, c DriftCheck) (*Result, error) {
	if ctx == nil {
		err := errNilContext("check drift")
		return &Result{Kind: DriftCheckTxn, Err: err}, err
	}
	select {
	case r := <-s.CheckDriftAsync(c):
		return r, r.Err
	case <-ctx.Done():
		return &Result{Kind: DriftCheckTxn, Err: ctx.Err()}, ctx.Err()
	}
}

// CheckDriftAsync is CheckDrift without waiting.
func (s *Scheduler) CheckDriftAsync(c DriftCheck) <-chan *Result {
	j := &job{kind: DriftCheckTxn, ctx: context.Background(), done: make(chan *Result, 1),
		drift: &driftJob{check: c}, opts: txnOptions{description: "drift check"}}
	if err := s.enqueue(j); err != nil {
		return resolved(&Result{Kind: DriftCheckTxn, Err: err})
	}
	return j.done
}

// driftJob is a drift check's input and what its reads decided.
type driftJob struct {
	check DriftCheck
	// sweep: a slice of the periodic check (WithDriftCheck).
	sweep bool
	items []driftItem
}

// driftAction is what a drift check does with one value.
type driftAction uint8

const (
	// driftTake: the southbound holds what is intended after all (put
	// back by someone, or found again): taken as applied, no call.
	driftTake driftAction = iota
	driftRepair
	driftReport
	driftAdopt
)

// driftItem is one value a drift check read back, and its decision.
type driftItem struct {
	key    string
	action driftAction
	found  proto.Message // nil: gone
	meta   any
	err    *DriftError
}

// driftBackoff is the repair history of one value (see repairAllowed).
type driftBackoff struct {
	last, until time.Time
	delay       time.Duration
	strikes     int
	recheck     bool
}

// prepareDrift reads back the values j's check names and decides, for
// each, what to do (j.drift.items); the worker holds s.mu. A value found
// gone brings its derived values and dependents into the check (the
// kernel takes the routes of a link that goes).
func (s *executor) prepareDrift(j *job) error {
	dj := j.drift
	keys, err := s.driftKeys(dj)
	if err != nil {
		return err
	}
	now := time.Now()
	s.forgetBackoffs(now)
	seen := setOf(keys, itself)
	for round := 0; len(keys) > 0 && round < 8; round++ {
		reads := s.readDrift(keys)
		var more []string
		for _, key := range keys {
			rd, ok := reads[key]
			if !ok {
				continue
			}
			it := s.decideDrift(key, rd, now)
			if it == nil {
				continue
			}
			dj.items = append(dj.items, *it)
			if it.found != nil || it.action == driftTake {
				continue
			}
			n := s.g.Node(key)
			for _, k := range append(slices.Clone(n.Derived), s.g.DependentsOf(key)...) {
				if !seen[k] {
					seen[k] = true
					more = append(more, k)
				}
			}
		}
		slices.Sort(more)
		keys = more
	}
	return nil
}

// driftKeys returns the keys a check reads: those named, and those of the
// descriptors named, or the periodic check's next slice.
func (s *executor) driftKeys(dj *driftJob) ([]string, error) {
	if dj.sweep {
		return s.sweepSlice(), nil
	}
	keys := slices.Clone(dj.check.Keys)
	if len(dj.check.Descriptors) == 0 {
		return keys, nil
	}
	want := map[kv.Descriptor]bool{}
	for _, name := range dj.check.Descriptors {
		d := s.descs[name]
		if d == nil {
			return nil, fmt.Errorf("scheduler: drift check: descriptor %q is not registered", name)
		}
		want[d] = true
	}
	for key, n := range s.g.All() {
		if want[n.Desc] && s.driftable(n) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

// driftable reports whether a drift check can read n back: a value of
// ours, applied (or reported MISSING by a check), of a descriptor that
// can Retrieve, neither being removed nor of unknown outcome.
func (s *executor) driftable(n *graph.Node) bool {
	if n == nil || n.Desc == nil || !n.Desc.CanRetrieve() || registry.IsMisfit(n.Desc) ||
		n.Origin == kv.OriginSB || n.Removing {
		return false
	}
	if _, unsure := s.g.Unsure[n.Key]; unsure {
		return false
	}
	switch n.State {
	case CONFIGURED, DRIFTED:
		return n.Applied != nil
	case MISSING:
		return n.Applied == nil && errors.Is(n.LastErr(), ErrDrifted)
	}
	return false
}

// readDrift reads back the driftable values among keys, one Retrieve per
// descriptor (in RetrieveDependencies order) with those values to
// correlate, and returns what was found for each (a zero sbRead: gone).
// Keys whose Retrieve failed are left out (logged).
func (s *executor) readDrift(keys []string) map[string]sbRead {
	byDesc := map[kv.Descriptor][]kv.Item[string, proto.Message, any]{}
	for _, key := range keys {
		if n := s.g.Node(key); s.driftable(n) {
			if it, ok := expectedItem(key, n, true); ok { // a MISSING value: its intent
				byDesc[n.Desc] = append(byDesc[n.Desc], it)
			}
		}
	}
	out := make(map[string]sbRead, len(keys))
	for _, d := range s.retrieveOrder {
		if len(byDesc[d]) == 0 {
			continue
		}
		found, err := s.readAsked(context.Background(), d, "", byDesc[d])
		if err != nil {
			s.opts.logger.Warn("drift check: retrieve failed; its values are checked again later", "descriptor", d.Name(), "error", err)
		}
		maps.Copy(out, found)
	}
	return out
}

// decideDrift decides what a check does with key, read back as rd: nil
// when nothing changed (or a report stands).
func (s *executor) decideDrift(key string, rd sbRead, now time.Time) *driftItem {
	n := s.g.Node(key)
	var want proto.Message
	if n.Intent != nil && n.InvalidErr() == nil {
		want = n.Intent
	}
	policy := s.driftPolicy(n)
	switch {
	case rd.value != nil && want != nil && (rd.value == want || n.Desc.Equivalent(key, rd.value, want)):
		if n.State == CONFIGURED && n.Applied != nil && (n.Applied == want || n.Applied == rd.value || n.Desc.Equivalent(key, n.Applied, rd.value)) &&
			(!n.Desc.WithMetadata() || graph.SameValue(n.Metadata, rd.meta)) {
			return nil // as applied: no drift (a new index, say, is taken)
		}
		return &driftItem{key: key, action: driftTake, found: rd.value, meta: rd.meta}
	case n.State != CONFIGURED && sameDrift(n, rd):
		// Reported before, and still so: a repair is due only once its
		// backoff has ended.
		if policy != kv.DriftRepair {
			return nil
		}
	case rd.value != nil && n.Applied != nil && (n.Applied == rd.value || n.Desc.Equivalent(key, n.Applied, rd.value)):
		return nil
	}
	de := &DriftError{Missing: rd.value == nil, Policy: policy, Noticed: now}
	if !de.Missing && want != nil {
		d := n.Desc
		de.Diff = kv.Diff(want, rd.value, func(a, b proto.Message) bool { return d.Equivalent(key, a, b) })
	}
	it := &driftItem{key: key, found: rd.value, meta: rd.meta, err: de}
	if !s.driftAction(n, it, rd, now) {
		return nil
	}
	return it
}

// driftAction sets what the check does with it, the drift of n, by n's
// policy; false when nothing is to be done (backing off, reported
// already).
func (s *executor) driftAction(n *graph.Node, it *driftItem, rd sbRead, now time.Time) bool {
	de := it.err
	switch {
	case de.Policy == kv.DriftReport:
		it.action = driftReport
	case de.Policy == kv.DriftAdopt && !de.Missing && n.Base == "":
		it.action = driftAdopt
	case de.Policy == kv.DriftAdopt:
		it.action = driftReport // a gone value, or a derived one: reported
	case s.repairAllowed(n.Key, now, de):
		it.action = driftRepair
	case n.State != CONFIGURED && sameDrift(n, rd):
		return false // backing off, reported already
	default:
		it.action = driftReport
	}
	return true
}

// sameDrift reports whether n, reported DRIFTED or MISSING, is still as
// reported.
func sameDrift(n *graph.Node, rd sbRead) bool {
	if rd.value == nil {
		return n.State == MISSING && n.Applied == nil
	}
	return n.State == DRIFTED && n.Applied != nil && (n.Applied == rd.value || n.Desc.Equivalent(n.Key, n.Applied, rd.value))
}

// driftPolicy is n's policy: the scheduler's override (WithDriftPolicy),
// else its descriptor's.
func (s *executor) driftPolicy(n *graph.Node) kv.DriftPolicy {
	if f := s.opts.driftPolicy; f != nil {
		if p, ok := f(n.Key, n.Desc.Name()); ok {
			return p
		}
	}
	return n.Desc.DriftPolicy()
}

// repairAllowed decides whether a drifted value may be repaired now, and
// records the repair. A repair soon after the one before (within eight
// backoff bases and twice the last delay) counts a strike: after k in a
// row, the next repair waits base*2^(k-1), at most the maximum
// (WithDriftBackoff). A value backing off is checked again when its wait
// ends; de says so.
func (s *executor) repairAllowed(key string, now time.Time, de *DriftError) bool {
	b := s.driftBk[key]
	if b == nil {
		b = &driftBackoff{}
		put(&s.driftBk, key, b)
	}
	if now.Before(b.until) {
		de.Repairs, de.BackoffUntil = b.strikes, b.until
		if !b.recheck {
			b.recheck = true
			s.scheduleDriftJob(b.until.Sub(now)+time.Millisecond, &driftJob{check: DriftCheck{Keys: []string{key}}})
		}
		return false
	}
	base, most := s.opts.driftBackoff, s.opts.driftBackoffMax
	if !b.last.IsZero() && now.Sub(b.last) < 8*base+2*b.delay {
		b.strikes++
	} else {
		b.strikes = 0
	}
	b.delay = 0
	if b.strikes > 0 {
		b.delay = most
		if b.strikes < 32 && base<<(b.strikes-1) < most {
			b.delay = base << (b.strikes - 1)
		}
		s.opts.logger.Warn("drift: something keeps undoing this value; its repairs back off",
			"key", key, "repairs_in_a_row", b.strikes, "next_repair_after", b.delay)
	}
	b.last, b.until, b.recheck = now, now.Add(b.delay), false
	de.Repairs = b.strikes
	return true
}

// forgetBackoffs drops, once a minute, the repair histories that no
// longer count (see repairAllowed).
func (s *executor) forgetBackoffs(now time.Time) {
	if len(s.driftBk) == 0 || now.Sub(s.driftForgot) < time.Minute {
		return
	}
	s.driftForgot = now
	for key, b := range s.driftBk {
		if now.Sub(b.last) > 8*s.opts.driftBackoff+2*b.delay && !b.recheck {
			delete(s.driftBk, key)
		}
	}
}

// applyDrift applies what a drift check decided (see decideDrift): every
// drift is recorded first (an operation flagged DRIFTED, with MISSING
// when the value is gone), then the values to repair, or taken back as
// they are, are reconciled, dependencies first by the algorithm's order.
func (r *txnPass) applyDrift(items []driftItem) {
	var again []string
	for i := range items {
		it := &items[i]
		n := r.g.Node(it.key)
		if n == nil || n.Desc == nil {
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
func (r *txnPass) markDrift(n *graph.Node, it *driftItem) {
	if it.found == nil { // its derived values without Retrieve went with it
		r.markGone(n, it.err, FlagDrifted, func(dn *graph.Node) bool { return dn.Desc != nil && !dn.Desc.CanRetrieve() })
		return
	}
	prev := n.Applied
	r.mut(n)
	r.takeApplied(n, it.found, it.meta)
	n.State = DRIFTED
	n.SetLastErr(it.err)
	r.opFor(n, Op{Key: n.Key, Kind: OpNone, Value: it.found, PrevValue: prev, Flags: FlagDrifted | r.nodeFlags(n), Err: it.err})
}

// adoptDrift takes the southbound's contents of n as its intended and
// applied value (policy adopt), and records it (DRIFTED ADOPTED).
func (r *txnPass) adoptDrift(n *graph.Node, it *driftItem) {
	prev := n.Applied
	r.setIntent(n.Key, it.found)
	r.mut(n)
	r.takeApplied(n, it.found, it.meta)
	r.opFor(n, Op{Key: n.Key, Kind: OpNone, Value: it.found, PrevValue: prev, Flags: FlagDrifted | FlagAdopted | r.nodeFlags(n), Err: it.err})
	r.s.opts.logger.Warn("drift: the southbound's value adopted as intended (drift policy adopt)", "key", n.Key, "drift", it.err.Error())
}

// scheduleDriftJob queues a drift check after delay.
func (s *jobs) scheduleDriftJob(delay time.Duration, dj *driftJob) {
	s.after(delay, func() {
		desc := "drift check"
		if dj.sweep {
			desc = "periodic drift check"
		}
		j := &job{kind: DriftCheckTxn, ctx: context.Background(), drift: dj, opts: txnOptions{description: desc}}
		if s.enqueue(j) == nil && dj.sweep {
			s.scheduleDriftJob(time.Duration(s.driftStep.Load()), &driftJob{sweep: true})
		}
	})
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
	for key, n := range s.g.All() {
		if s.driftable(n) {
			byDesc[n.Desc] = append(byDesc[n.Desc], key)
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
