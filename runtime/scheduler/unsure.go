package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
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
	// takingFacts is set while takeUnsure takes the findings: a value
	// found gone takes with it what its applied version needs it for, and
	// nothing else (see removeDependents).
	takingFacts bool
}

// Values whose outcome is unknown (doc.go states the promise): a failed
// call whose read-back (readBack) failed too leaves the version it was
// about in graph.unsure (markUnsure); the graph holds nothing for a create
// or a delete. Before the next transaction plans, they are read back again
// (readBackUnsure); what is found is a fact the transaction takes first
// (takeUnsure) and brings to its target at its end (settleUnsure). Until
// then, nothing a value may need is deleted (unsureBlocker): a value
// created in part could be left without it. (A blind Delete instead could
// not be trusted: a handler finds what to delete through the metadata the
// failed create never returned, and may report as not found what it could
// not look up.)

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
	// peer: read back as a found-gone value's partner (expected: applied).
	peer bool
	// taken: by the reverted run before this one, which left it to settle
	// (see settleLater).
	taken bool
}

// markUnsure records that the southbound may hold value for n, as a call
// whose read-back failed left it: the version a create or an update was
// about, or the one a delete was to remove. It returns the value's error:
// the call's err, made to match ErrOutcomeUnknown (see its doc).
func (r *unknowns) markUnsure(n *graph.Node, value proto.Message, err error) error {
	if value == nil || !r.canReadBack(n) {
		return err // (a descriptor without Retrieve is taken at its word)
	}
	put(&r.g.Unsure, n.Key, value)
	if err == nil || errors.Is(err, ErrOutcomeUnknown) {
		return err
	}
	return fmt.Errorf("%w (%w: its read-back failed)", err, ErrOutcomeUnknown)
}

// outcomeKnown returns err, a value's error, without the mark of
// markUnsure or failUnknown: what the southbound holds of the value is
// known, and its failure before the read-backs stands.
func outcomeKnown(err error) error {
	if e, ok := err.(*exhausted); ok {
		if known := outcomeKnown(e.err); known != e.err {
			return &exhausted{attempts: e.attempts, err: known}
		}
		return err
	}
	if e, ok := err.(*unknownAgain); ok {
		if e.prior != nil {
			return e.prior
		}
		return fmt.Errorf("%s: its read-back failed: %w", e.key, e.read)
	}
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		if es := u.Unwrap(); len(es) == 2 && es[1] == ErrOutcomeUnknown {
			return es[0]
		}
	}
	return err
}

// canReadBack reports whether a value of n whose outcome is unknown can
// be read back later (markUnsure records it): a run that makes calls, and
// a descriptor that can Retrieve.
func (r *unknowns) canReadBack(n *graph.Node) bool {
	return !r.sim && n.Desc != nil && n.Desc.CanRetrieve()
}

// readBackUnsure reads back, before a transaction plans, each value whose
// outcome is unknown (the refresh of a resync, view, tells for the
// descriptors it read). What is found leaves graph.unsure unless the
// transaction is a dry run (which changes nothing: the next one reads it
// again); a failed read-back leaves it there.
func (s *executor) readBackUnsure(ctx context.Context, dryRun bool, view *sbView) []unsureFact {
	if len(s.g.Unsure) == 0 {
		return nil
	}
	var facts []unsureFact
	for _, key := range slices.Sorted(maps.Keys(s.g.Unsure)) {
		expected := s.g.Unsure[key]
		n := s.g.Node(key)
		if n == nil || n.Desc == nil || !n.Desc.CanRetrieve() {
			// Gone from the graph (a resync dropped it), or nothing
			// can tell: a resync refreshes what it can.
			delete(s.g.Unsure, key)
			continue
		}
		if view != nil && view.refreshed[n.Desc] {
			if !dryRun {
				delete(s.g.Unsure, key)
			}
			continue
		}
		value, meta, err := s.readKey(ctx, n, expected)
		facts = append(facts, unsureFact{key: key, expected: expected, value: value, meta: meta, err: err})
		if err != nil {
			s.opts.logger.Warn("read-back of a value whose outcome is unknown failed again; it is not decided on, and what it may need stays",
				"key", key, "descriptor", n.Desc.Name(), "error", err)
		} else if !dryRun {
			delete(s.g.Unsure, key)
		}
		if err == nil && value == nil {
			facts = s.readBackUnsurePartners(ctx, dryRun, view, n, expected, facts)
		}
	}
	return facts
}

// readBackUnsurePartners reads back, as readBackPartners does after a
// failed Delete, the partners of n (see cyclePartner), found gone before a
// transaction (expected: the version it was about). One found gone is a
// fact as n's; one whose read-back fails is of unknown outcome.
func (s *executor) readBackUnsurePartners(ctx context.Context, dryRun bool, view *sbView, n *graph.Node, expected proto.Message, facts []unsureFact) []unsureFact {
	mine := n.Desc.Dependencies(n.Key, expected)
	for _, p := range s.g.DependentNodes(nil, n.Key, true) {
		k := p.Key
		if !cyclePartner(n, mine, p) || p.Desc == nil || !p.Desc.CanRetrieve() ||
			view != nil && view.refreshed[p.Desc] || s.g.Unsure[k] != nil || slices.ContainsFunc(facts, func(f unsureFact) bool { return f.key == k }) {
			continue
		}
		found, meta, err := s.readKey(ctx, p, p.Applied)
		if err == nil && found != nil && (found == p.Applied || p.Desc.Equivalent(k, found, p.Applied)) {
			continue
		}
		facts = append(facts, unsureFact{key: k, expected: p.Applied, value: found, meta: meta, err: err, peer: true})
		if err != nil && !dryRun {
			put(&s.g.Unsure, k, p.Applied)
		}
	}
	return facts
}

// cyclePartner reports whether p, applied, is on a dependency cycle of
// two with n, whose version has the dependencies mine: each needs the
// other directly (a veth pair's ends).
func cyclePartner(n *graph.Node, mine []kv.Dependency, p *graph.Node) bool {
	on := func(deps []kv.Dependency, key string) bool {
		return slices.ContainsFunc(deps, func(d kv.Dependency) bool { return !d.IsAnyOf() && d.Key == key })
	}
	return p != n && p.Applied != nil && on(p.Adeps(), n.Key) && on(mine, p.Key)
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
	if r.view != nil {
		for i := range r.view.items {
			r.view.items[i].used = false // the plan's marks: this run decides anew
		}
	}
	prior, flags := r.prior, r.flags
	r.prior, r.takingFacts, r.flags = nil, true, flags|FlagFinding
	for i := range r.unsure {
		f := &r.unsure[i]
		n := r.g.Node(f.key)
		if f.taken || f.err != nil || n == nil || n.FailedSeq == r.seq32 {
			// (Every fact is taken, even once a removal on the way failed
			// a reverting run; but not one older than a call of the run
			// that failed on its value: an earlier fact's removal took it
			// on the way, and that call's read-back tells.)
			continue
		}
		// Known now: its failure stands without ErrOutcomeUnknown, or goes
		// when what the call was about is found (a revert restores that).
		r.mut(n)
		n.SetLastErr(outcomeKnown(n.LastErr()))
		switch {
		case f.value != nil:
			r.takeApplied(n, f.value, f.meta)
			r.doom(n) // nothing intends it: it goes, and nothing is created on it
			// What it derives and the graph holds with no base (a
			// leftover whose delete failed) goes before it; and it
			// goes before its base.
			r.linkFoundDerived(n)
			r.linkToBase(n)
			if want, pending := r.target(n); want != nil && !pending && (want == f.value || n.Desc.Equivalent(n.Key, want, f.value)) {
				r.settle(n, false, false)
			}
		case n.Applied != nil && !n.Removing:
			// Gone: what derives from it and what needs it go first,
			// before the transaction counts on it.
			var flags Flags
			if n.Origin == kv.OriginSB {
				flags = FlagObtained
			}
			r.remove(n, flags, true)
		}
		// What was kept for it and nothing intends goes in this run
		// (settleUnsure), whether it was found or gone: nothing is
		// created on it before.
		r.refusedFor(n, f.expected, func(d *graph.Node) {
			if d.Intent == nil {
				r.doomAll(d)
			}
		})
	}
	r.takingFacts = false
	r.failUnknownPeers()
	r.prior, r.flags = prior, flags
}

// failUnknownPeers fails, once every fact is taken, the cycle partners of
// values found gone whose read-back failed: of unknown outcome now, the
// graph holds nothing of them. (In a reverting run, the failure stops it.)
func (r *unknowns) failUnknownPeers() {
	for i := range r.unsure {
		f := &r.unsure[i]
		if n := r.g.Node(f.key); !f.taken && f.err != nil && f.peer && n != nil && n.Applied != nil && !r.abort {
			r.mut(n)
			n.Applied, n.Metadata = nil, nil
			r.g.SetDeps(n, n.Deps, nil)
			r.g.SetExisting(n.Key, false)
			r.syncMetadata(n)
			r.failUnknown(n, f.err)
		}
	}
}

// settleUnsure brings, last in the run, the values read back to their
// targets: what one found derives comes (what it no longer derives, in
// another version than the graph held, goes), and what depends on it may
// go on; one found gone (removed by takeUnsure) is created again when still
// wanted. Then what an earlier run did not delete because the value might
// need it (its base, its dependencies) decides again. The facts a
// reverted run left (taken, see settleLater) bring no retry of a value
// that failed, which the revert does not retry: only one PENDING, or one
// found without what its version needs, is reconciled.
func (r *unknowns) settleUnsure() {
	for i := range r.unsure {
		f := &r.unsure[i]
		n := r.g.Node(f.key)
		if f.err != nil || n == nil || r.abort {
			continue
		}
		// (A value found without what its version needs goes, as after a
		// create that finds it: no retry of its failed call.)
		self := !f.taken || n.State == PENDING || n.Applied != nil && !r.depsMet(n, n.Adeps())
		if f.value == nil {
			// Found gone: what was kept for it decides first (else it is
			// created on that, and deleted again with it).
			r.refusedFor(n, f.expected, r.reconcileNode)
			if self {
				r.reconcile(n.Key) // created again when still wanted
			}
			for _, d := range r.g.DependentNodes(nil, f.key, true) {
				r.reconcileNode(r.g.Current(d.Key, d, 0)) // those whose intent needs it (see takingFacts)
			}
			continue
		}
		if n.Applied != nil {
			r.derive(n)
			r.triggerDependents(n.Key, nil)
		}
		if self {
			r.reconcile(n.Key)
		}
		r.refusedFor(n, f.expected, r.reconcileNode)
	}
}

// refusedFor calls f, in turn, with n's base and each plain dependency of
// its version expected whose removal was refused while n was of unknown
// outcome (see unsureBlocker), once read back.
func (r *unknowns) refusedFor(n *graph.Node, expected proto.Message, f func(*graph.Node)) {
	keys := []string{n.Base}
	for _, d := range r.depsOfValue(n, expected) {
		keys = append(keys, d.Key) // "" for AnyOf: no node
	}
	for _, k := range keys {
		if d := r.g.Node(k); d != nil && (d.State == FAILED || d.State == RETRYING) && errors.Is(d.LastErr(), ErrStillNeeded) && errors.Is(d.LastErr(), ErrOutcomeUnknown) {
			f(d)
		}
	}
}

// unknownOutcome returns the error of the read-back that failed again for
// key, nil when what the southbound holds of it is known.
func (r *unknowns) unknownOutcome(key string) error {
	if f := r.fact(key); f != nil && (f.err == nil || r.unsureOf(key)) {
		return f.err // (known since: a call on it succeeded)
	}
	return nil
}

// foundGone reports whether a read-back before the run found key gone.
func (r *unknowns) foundGone(key string) bool {
	f := r.fact(key)
	return f != nil && f.err == nil && f.value == nil
}

// fact returns what a read-back before the run found for key, or nil.
func (r *unknowns) fact(key string) *unsureFact {
	for i := range r.unsure {
		if r.unsure[i].key == key {
			return &r.unsure[i]
		}
	}
	return nil
}

// failUnknown fails n, whose outcome is still unknown, with no call, its
// operation the one its target calls for: what the southbound holds of
// it decides what to call (a revert's read-back of it is a finding).
func (r *unknowns) failUnknown(n *graph.Node, err error) {
	want, _ := r.target(n)
	kind := OpUpdate
	if want == nil {
		kind = OpDelete
	} else if n.Applied == nil {
		kind = OpCreate
	}
	r.mut(n)
	n.LastOp = kind
	again := &unknownAgain{key: n.Key, prior: outcomeKnown(n.LastErr()), read: err}
	r.fail(n, kind, again, r.nodeFlags(n), n.Applied, want, true)
}

// unknownAgain is the error of a value whose read-back failed again (see
// failUnknown); prior is its error before (nil: none), which stands once
// a read-back tells (outcomeKnown).
type unknownAgain struct {
	key         string
	prior, read error
}

func (e *unknownAgain) Error() string {
	return fmt.Sprintf("%s: %v (its read-back failed: %v)", e.key, ErrOutcomeUnknown, e.read)
}

func (e *unknownAgain) Unwrap() []error { return []error{ErrOutcomeUnknown, e.read} }

// exhausted is the error of a value whose retries ran out: its last.
type exhausted struct {
	attempts int
	err      error
}

func (e *exhausted) Error() string {
	return fmt.Sprintf("%v after %d attempts: %v", ErrRetriesExhausted, e.attempts, e.err)
}

func (e *exhausted) Unwrap() []error { return []error{ErrRetriesExhausted, e.err} }

// unsureBlocker returns a value whose outcome is unknown (a read-back
// before the run failed again, or one in the run failed) that may need n,
// as a dependency or as its base: n may not go before it is known.
func (r *unknowns) unsureBlocker(n *graph.Node) string {
	for _, k := range slices.Sorted(maps.Keys(r.g.Unsure)) {
		if r.knownNow(k) || slices.Contains(r.unsureGone, k) {
			continue // read back before a dry run, which left it listed; or deleted
		}
		u := r.g.Node(k)
		if u == nil || u.Desc == nil {
			continue
		}
		if u.Base == n.Key || u.Base == "" && u.Desc.BaseOf(k) == n.Key { // (a stale one found while its base was unread: not linked)
			return k
		}
		for _, d := range r.depsOfValue(u, r.g.Unsure[k]) {
			if d.Key == n.Key || d.IsAnyOf() && d.AnyOf.Accepts(n.Key) {
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
	_, ok := r.g.Unsure[key]
	return ok && !r.knownNow(key) && !slices.Contains(r.unsureGone, key)
}

// knownNow reports whether a read-back before a dry run's plan found key
// (listed still; in a run, a call on it failed since: unknown again).
func (r *unknowns) knownNow(key string) bool {
	f := r.fact(key)
	return r.sim && f != nil && f.err == nil
}

// known records that what the southbound holds for key, of unknown
// outcome before, is known: a read-back told, or a call succeeded (an
// undo, or a Delete of the version the graph held by a cascade), or the
// southbound lost it. A simulation keeps it in unsureGone, which the
// transaction applies when its plan is kept.
func (r *unknowns) known(key string) {
	if _, ok := r.g.Unsure[key]; !ok {
		return
	}
	if r.sim {
		r.unsureGone = append(r.unsureGone, key)
	} else {
		delete(r.g.Unsure, key)
	}
}

// readBack reads, after a failed call on n, what the southbound holds for
// n's key: the call may have applied in part (a link created and its MTU
// refused, a delete that removed the value and then failed), so nothing
// may be assumed. It calls the descriptor's Retrieve with n's key alone to
// correlate (expected is the value the call was about) and keeps only
// what it returns for that key. known is false when the descriptor cannot
// Retrieve or the Retrieve failed: the graph then keeps what it held, and
// when the Retrieve failed the value is of unknown outcome (markUnsure). A simulation never gets here: its calls do not fail.
func (r *unknowns) readBack(n *graph.Node, expected proto.Message) (found proto.Message, meta any, known bool) {
	if n.Desc == nil || !n.Desc.CanRetrieve() {
		return nil, nil, false
	}
	ctx, span := r.ctx, Span(nil)
	if t := r.s.opts.tracer; t != nil {
		ctx, span = t.Start(ctx, SpanReadBack, slog.String(AttrDescriptor, n.Desc.Name()), slog.String(AttrKey, n.Key))
	}
	found, meta, err := r.s.readKey(ctx, n, expected)
	if span != nil {
		span.End(err, slog.Bool(AttrFound, found != nil))
	}
	if err != nil {
		r.s.opts.logger.Warn("read-back after a failed call failed; what the call left is unknown until a read-back succeeds",
			"key", n.Key, "descriptor", n.Desc.Name(), "error", err)
		return nil, nil, false
	}
	return found, meta, true
}

// readKey reads n's key alone (expected: the version a call was about).
// A key read so while its descriptor is blind is known (see blindTo).
func (s *caller) readKey(ctx context.Context, n *graph.Node, expected proto.Message) (proto.Message, any, error) {
	found, err := s.readAsked(ctx, n.Desc, n.Key, []kv.Item[string, proto.Message, any]{{Key: n.Key, Value: expected, Metadata: n.Metadata, Origin: kv.OriginNB}})
	if keys, blind := s.blind[n.Desc]; blind && err == nil {
		if _, read := keys[n.Key]; !read {
			put(&keys, n.Key, s.seq) // (before a transaction plans, the last one's)
			s.blind[n.Desc] = keys
		}
	}
	return found[n.Key].value, found[n.Key].meta, err
}

// blindTo reports whether what the southbound held of n before the
// running transaction's calls was unknown to the graph: its descriptor's
// last refresh failed, and no read of its key alone succeeded since, but
// in this transaction after a call (a failed call's read-back).
func (s *caller) blindTo(n *graph.Node) bool {
	keys, blind := s.blind[n.Desc]
	at, read := keys[n.Key]
	return blind && (!read || at >= s.seq)
}

// sbRead is what a read found for a key (value nil: nothing).
type sbRead struct {
	value proto.Message
	meta  any
}

// readAsked calls d's Retrieve with asked to correlate (key: the one key
// of a read-back, else "") and returns what it reports for each key asked,
// the first valid item of each (a zero sbRead: nothing); nil when the
// Retrieve failed. Read-backs and drift checks correlate the same way.
func (s *caller) readAsked(ctx context.Context, d kv.Descriptor, key string, asked []kv.Item[string, proto.Message, any]) (map[string]sbRead, error) {
	items, err := s.retrieveGuarded(ctx, d, key, asked)
	if err != nil {
		return nil, err
	}
	out := make(map[string]sbRead, len(asked))
	for _, it := range asked {
		out[it.Key] = sbRead{}
	}
	for _, it := range items {
		if f, ok := out[it.Key]; ok && f.value == nil && it.Value != nil && it.Value.ProtoReflect().IsValid() {
			out[it.Key] = sbRead{it.Value, it.Metadata}
		}
	}
	return out, nil
}

// retrieveGuarded calls d's Retrieve (for key, or for a refresh when key
// is empty), timed for the observer and given up on at its deadline; a
// panic is an error naming the descriptor.
func (s *caller) retrieveGuarded(ctx context.Context, d kv.Descriptor, key string, correlate []kv.Item[string, proto.Message, any]) ([]kv.Item[string, proto.Message, any], error) {
	var items []kv.Item[string, proto.Message, any]
	ok, err := s.callOut(ctx, OpRetrieve, d, key, func(c *callCtx) (err error) {
		defer func() {
			if p := recover(); p != nil {
				//lint:ignore ST1005 Retrieve is the name of the descriptor's method
				err = fmt.Errorf("Retrieve of descriptor %s panicked: %v", d.Name(), p)
			}
		}()
		items, err = d.Retrieve(c, correlate)
		return err
	})
	if !ok {
		return nil, err
	}
	return items, err
}

// takeApplied records that the southbound holds value (nil: nothing) for
// n, as a read-back or a refresh found it; n is mut'ed. A value equivalent
// to the version n holds leaves that version applied, as in a refresh
// (applyView): the comparison says they are the same, and the held one has
// what a Retrieve may leave out (the fields that derive values).
func (r *unknowns) takeApplied(n *graph.Node, value proto.Message, meta any) {
	r.known(n.Key)
	if value != nil && n.Applied != nil && value != n.Applied && n.Desc != nil && n.Desc.Equivalent(n.Key, n.Applied, value) {
		value = n.Applied
	}
	n.Applied, n.Metadata = value, meta
	var deps []kv.Dependency
	if value != nil {
		deps = r.depsOfValue(n, value)
		if n.Base == "" && n.Intent == nil && n.Desc != nil {
			if b := n.Desc.BaseOf(n.Key); b != "" {
				// A leftover of no base needs the one it names: that
				// base's removal deletes it first.
				deps = append(slices.Clip(deps), kv.Dependency{Label: "base", Key: b})
			}
		}
	} else {
		n.DoomMark = 0 // gone: a version created again is not doomed (see remove)
	}
	r.g.SetDeps(n, n.Deps, deps)
	r.g.SetExisting(n.Key, value != nil && !n.Removing)
	r.syncMetadata(n)
}

// readBackPartners reads back, after a failed Delete of n found gone, the
// applied values on a dependency cycle of two with it (each needs the
// other directly: a veth pair's ends), which a southbound holding the
// cycle as one object removed with n. One found gone is gone (one being
// removed is not deleted again); one not read is of unknown outcome (one
// being removed by a transaction that goes on is deleted next), unless
// keepUnread: then it stays as it is.
func (r *unknowns) readBackPartners(n *graph.Node, prev proto.Message, keepUnread bool) {
	mine := r.depsOfValue(n, prev)
	for _, p := range r.g.DependentNodes(nil, n.Key, true) {
		k := p.Key
		if p = r.g.Current(k, p, 0); p == nil || !cyclePartner(n, mine, p) || !r.canReadBack(p) || p.Removing && slices.Contains(r.gone, k) {
			continue // (one being removed as found gone is known gone)
		}
		found, meta, err := r.s.readKey(r.ctx, p, p.Applied)
		switch was := p.Applied; {
		case err != nil && keepUnread:
		case err != nil && p.Removing && !(r.opts.revert && !r.reverting):
			r.mut(p) // its removal goes on; a failure that holds it says so
			p.SetLastErr(r.markUnsure(p, was, p.LastErr()))
		case err != nil || found == nil || found != was && !p.Desc.Equivalent(k, found, was):
			r.mut(p)
			r.takeApplied(p, found, meta) // gone, unknown (nil), or found changed
			if err != nil {
				p.SetLastErr(r.markUnsure(p, was, fmt.Errorf("%s: read back after %s's delete failed: %w", p.Key, n.Key, err)))
			}
		}
	}
}
