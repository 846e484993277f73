package scheduler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// unknowns is the run's handling of read-backs and of values whose
// outcome is unknown.
type unknowns struct {
	*run
	// unsure is what the read-backs before the run found of the values
	// whose outcome was unknown (see unsure.go); unsureGone those of
	// graph.unsure that a simulation deleted (the transaction drops them
	// from graph.unsure when its plan is kept).
	unsure     []unsureFact
	unsureGone []string
}

// Values whose outcome is unknown.
//
// A call that fails is read back (readBack). When the read-back fails too,
// the call may have applied, in whole or in part, or not at all, whatever
// the call: the graph keeps what it knew before for an update, and holds
// nothing for a create or a delete (the value may be absent: nothing that
// needs it is created on it), and the version the call was about (for a
// delete, the one it was to remove) goes to graph.unsure. Before the next transaction plans,
// those values are read back again (readBackUnsure): what is found is a
// fact, which the transaction takes first (takeUnsure) and brings to its
// target at its end (settleUnsure), as a notification of the change would.
// While a read-back keeps failing, the value is not decided on (it fails
// again, naming the read-back's error), and nothing it may need is deleted:
// not its dependencies, nor its base (unsureBlocker); such a removal fails
// with ErrStillNeeded and ErrOutcomeUnknown. Otherwise a value created in
// part could be left in the southbound without what it needs, where the
// graph, not knowing it is there, would delete that. (A Delete of the
// value instead, blindly, could not be trusted: a handler finds what to
// delete through the metadata that the failed create never returned, and
// may report as not found what it could not look up.)

// unsureFact is what a read-back before a transaction found for a value
// of graph.unsure: value (nil: nothing) and its metadata, or err when the
// read-back failed again.
type unsureFact struct {
	key string
	// expected is the version the failed call was about.
	expected proto.Message
	value    proto.Message
	meta     any
	err      error
	// fresh: the graph had nothing applied (see takeUnsure).
	fresh bool
}

// markUnsure records that the southbound may hold value for n, as a call
// left it whose read-back failed: the version a create or an update was
// about, or the one a delete was to remove (which it may have kept; the
// graph holds nothing of it meanwhile). Only a run that makes calls gets
// here (a simulation's calls do not fail). It returns the value's error:
// the call's err, made to match ErrOutcomeUnknown when the outcome is
// unknown (errors.go: the error of a value whose call failed and whose
// read-back failed too matches it, and so does its status).
func (r *unknowns) markUnsure(n *node, value proto.Message, err error) error {
	if value == nil || !r.canReadBack(n) {
		return err // (a descriptor without Retrieve is taken at its word)
	}
	if r.g.unsure == nil {
		r.g.unsure = map[string]proto.Message{}
	}
	r.g.unsure[n.key] = value
	if err == nil || errors.Is(err, ErrOutcomeUnknown) {
		return err
	}
	return fmt.Errorf("%w (%w: its read-back failed)", err, ErrOutcomeUnknown)
}

// canReadBack reports whether a value of n whose outcome is unknown can
// be read back later (markUnsure records it): a run that makes calls, and
// a descriptor that can Retrieve.
func (r *unknowns) canReadBack(n *node) bool { return !r.sim && n.desc != nil && n.desc.CanRetrieve() }

// readBackUnsure reads back, before a transaction plans, each value whose
// outcome is unknown (the refresh of a resync, view, tells for the
// descriptors it read). What is found leaves graph.unsure unless the
// transaction is a dry run (which changes nothing: the next one reads it
// again); a failed read-back leaves it there.
func (s *executor) readBackUnsure(ctx context.Context, dryRun bool, view *sbView) []unsureFact {
	if len(s.g.unsure) == 0 {
		return nil
	}
	var facts []unsureFact
	for _, key := range slices.Sorted(maps.Keys(s.g.unsure)) {
		expected := s.g.unsure[key]
		n := s.g.node(key)
		if n == nil || n.desc == nil || !n.desc.CanRetrieve() {
			// Gone from the graph (a resync dropped it), or nothing
			// can tell: a resync refreshes what it can.
			delete(s.g.unsure, key)
			continue
		}
		if view != nil && view.refreshed[n.desc] {
			if !dryRun {
				delete(s.g.unsure, key)
			}
			continue
		}
		value, meta, err := s.readKey(ctx, n, expected)
		f := unsureFact{key: key, expected: expected, value: value, meta: meta, err: err}
		if err != nil {
			s.opts.logger.Warn("read-back of a value whose outcome is unknown failed again; it is not decided on, and what it may need stays",
				"key", key, "descriptor", n.desc.Name(), "error", err)
			facts = append(facts, f)
			continue
		}
		facts = append(facts, f)
		if !dryRun {
			delete(s.g.unsure, key)
		}
	}
	return facts
}

// takeUnsure takes, first in the run, what the read-backs before it found:
// a value found is applied, one gone is removed (what needs it first); the
// graph holds it from there on (the plan and the run after a failure
// both take it, the same). It is a fact, not a change of the transaction:
// a revert starts from it.
func (r *unknowns) takeUnsure() {
	if len(r.unsure) == 0 {
		return
	}
	prior := r.prior
	r.prior = nil
	for i := range r.unsure {
		f := &r.unsure[i]
		n := r.g.node(f.key)
		if f.err != nil || n == nil || r.abort {
			continue
		}
		f.fresh = n.applied == nil
		switch {
		case f.value != nil:
			r.mut(n)
			r.takeApplied(n, f.value, f.meta)
			r.doom(n) // nothing intends it: it goes, and nothing is created on it
			// What it derives and the graph holds with no base (a
			// leftover whose delete failed) goes before it; and it
			// goes before its base.
			r.linkFoundDerived(n)
			r.linkFoundToBase(n)
		case n.applied != nil && !n.removing:
			// Gone: what derives from it and what needs it go first,
			// before the transaction counts on it.
			var flags Flags
			if n.origin == kv.OriginSB {
				flags = FlagObtained
			}
			r.remove(n, flags, true)
		}
	}
	r.prior = prior
}

// linkFoundToBase makes n, a derived value found by a read-back, a derived
// value of its base when the graph holds the base applied and the base's
// version does not derive it (a revert or an update moved it on): a
// removal of the base then deletes n first.
func (r *unknowns) linkFoundToBase(n *node) {
	b := n.base
	if b == "" {
		b = n.desc.BaseOf(n.key)
	}
	bn := r.g.node(b)
	if b == "" || bn == nil || bn == n || bn.applied == nil || bn.origin != kv.OriginNB || bn.removing || slices.Contains(bn.derived, n.key) {
		return
	}
	r.mut(n)
	n.base = b
	r.mut(bn)
	bn.derived = append(slices.Clone(bn.derived), n.key)
}

// settleUnsure brings, last in the run, the values read back to their
// targets: what one found derives comes, and what depends on it may go
// on; one found gone (removed by takeUnsure) is created again when still
// wanted. Then what an earlier run did not delete because the value might
// need it (its base, its dependencies) decides again.
func (r *unknowns) settleUnsure() {
	for i := range r.unsure {
		f := &r.unsure[i]
		n := r.g.node(f.key)
		if f.err != nil || n == nil || r.abort {
			continue
		}
		if f.value == nil {
			// Found gone: what was kept for it decides first (else it is
			// created on that, and deleted again with it).
			r.reconcileRefusedFor(n, f.expected)
			r.reconcile(n.key) // created again when still wanted
			continue
		}
		if f.fresh && n.applied != nil {
			r.derive(n)
			r.triggerDependents(n.key)
		}
		r.reconcile(n.key)
		r.reconcileRefusedFor(n, f.expected)
	}
}

// reconcileRefusedFor reconciles n's base and the dependencies of its
// version expected whose removal was refused while n was unknown.
func (r *unknowns) reconcileRefusedFor(n *node, expected proto.Message) {
	if n.base != "" {
		r.reconcileRefused(n.base)
	}
	for _, d := range r.depsOfValue(n, expected) {
		if !d.IsAnyOf() {
			r.reconcileRefused(d.Key)
		}
	}
}

// reconcileRefused reconciles key when its removal was refused for a value
// of unknown outcome.
func (r *unknowns) reconcileRefused(key string) {
	if n := r.g.node(key); n != nil && n.state == FAILED && errors.Is(n.lastErr, ErrOutcomeUnknown) && errors.Is(n.lastErr, ErrStillNeeded) {
		r.reconcileNode(n)
	}
}

// unknownOutcome returns the error of the read-back that failed again for
// key, nil when what the southbound holds of it is known.
func (r *unknowns) unknownOutcome(key string) error {
	for i := range r.unsure {
		if r.unsure[i].key == key {
			return r.unsure[i].err
		}
	}
	return nil
}

// failUnknown fails n, whose outcome is still unknown, with no call: what
// the southbound holds of it decides what to call.
func (r *unknowns) failUnknown(n *node, err error) {
	want, _ := r.target(n)
	kind := OpUpdate
	if n.applied == nil {
		kind = OpCreate
	}
	r.mut(n)
	n.lastOp = kind
	r.fail(n, kind, fmt.Errorf("%s: %w (its read-back failed: %w)", n.key, ErrOutcomeUnknown, err), r.nodeFlags(n), n.applied, want, true)
}

// unsureBlocker returns a value whose outcome is unknown (a read-back
// before the run failed again, or one in the run failed) that may need n,
// as a dependency or as its base: n may not go before it is known.
func (r *unknowns) unsureBlocker(n *node) string {
	for _, k := range slices.Sorted(maps.Keys(r.g.unsure)) {
		if r.knownNow(k) || slices.Contains(r.unsureGone, k) {
			continue // read back before a dry run, which left it listed; or deleted
		}
		u := r.g.node(k)
		if u == nil || u.desc == nil {
			continue
		}
		if u.base == n.key {
			return k
		}
		for _, d := range r.depsOfValue(u, r.g.unsure[k]) {
			if d.Key == n.key || d.IsAnyOf() && d.AnyOf.Accepts(n.key) {
				return k
			}
		}
	}
	return ""
}

// unsureOf reports whether the outcome of key is unknown: its node stays
// in the graph, nothing intended or applied, until a read-back tells (so
// that unsureBlocker finds its base and dependencies).
func (r *unknowns) unsureOf(key string) bool {
	if len(r.g.unsure) == 0 {
		return false
	}
	_, ok := r.g.unsure[key]
	return ok && !r.knownNow(key) && !slices.Contains(r.unsureGone, key)
}

// knownNow reports whether a read-back before the run found what the
// southbound holds for key.
func (r *unknowns) knownNow(key string) bool {
	for i := range r.unsure {
		if r.unsure[i].key == key {
			return r.unsure[i].err == nil
		}
	}
	return false
}

// known records that what the southbound holds for key, of unknown
// outcome before, is known: a read-back told, or a call succeeded (an
// undo, or a Delete of the version the graph held by a cascade), or the
// southbound lost it. A simulation keeps it in unsureGone, which the
// transaction applies when its plan is kept.
func (r *unknowns) known(key string) {
	if len(r.g.unsure) == 0 {
		return
	}
	if _, ok := r.g.unsure[key]; !ok {
		return
	}
	if r.sim {
		r.unsureGone = append(r.unsureGone, key)
	} else {
		delete(r.g.unsure, key)
	}
}
