package scheduler

import (
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
)

// resyncPass is the run's resync: the intended state replaced, the
// refreshed view of the southbound applied, stale values dropped.
type resyncPass struct {
	*run
	// view is the southbound as a resync's refresh found it; viewFresh
	// the values adopted as intended and untouched since, whose derived
	// values without Retrieve are taken to exist; missingDependents the
	// values that need one marked MISSING.
	view              *sbView
	viewFresh         map[string]bool
	missingDependents []string
	// staleTaken are the stale values the first dropStale of a resync
	// took up, for the last one to link to their base; staleDeferred
	// those of them it left to the last one.
	staleTaken, staleDeferred []string
	// leftovers are the stale values of ours that the graph held when a
	// resync began (earlier runs failed to delete them).
	leftovers []string
	// adopting are the values adopted with other contents than intended,
	// whose next operation carries the ADOPTED flag (see opFor).
	adopting map[string]bool
}

// resync runs a resync job: the intended state replaced (full, upstream),
// the refreshed view of the southbound applied (full, downstream), and
// every value out of line with its target reconciled. Its cost follows
// what differs: one pass looks at every value, and only those that need
// something are sorted and reconciled.
func (r *resyncPass) resync(j *job) {
	// The values whose intent changes are reconciled first: a re-create
	// or a delete goes before what the view asks to repair.
	var intents []string
	if j.kind == FullResyncTxn || j.kind == UpstreamResyncTxn {
		intents = r.resyncIntents(j)
	}

	// One pass over the values: what is out of line with its target
	// already (failed, pending, ...), and how many the view should hold.
	var rest []string
	v := r.view
	held := 0
	refreshed := v.refreshedFunc()
	for key, n := range r.g.All() {
		if v != nil && n.Applied != nil && n.Origin != kv.OriginSB && refreshed(n.Desc) {
			held++
		}
		if r.outOfLine(n) {
			rest = append(rest, key)
			if n.State == FAILED && n.Applied != nil && n.Intent != nil && n.Desc != nil && n.InvalidErr() == nil &&
				n.Desc.NeedsRecreate(key, n.Applied, n.Intent) {
				r.doomAll(n) // re-created: nothing is created on its old version (and deleted again)
			}
		}
		if r.leftover(n) {
			r.doom(n) // it goes: nothing is created on it (and deleted again)
			if v != nil {
				// For dropStale and linkToBase (its base unknown then).
				r.leftovers = append(r.leftovers, key)
			}
		}
	}
	var repairs []string
	if v != nil {
		act := r.viewActs(held)
		slices.Sort(act)
		repairs = r.applyView(act)
		// Stale values go first (a derived value that neither version
		// of its re-created base lists, say, must not outlive it): those
		// that no other value found needs. Left out: what the intended
		// values derive, which the reconciliation adopts. The others go
		// last, once what needs them has been decided.
		r.dropStale(true)
		for _, key := range r.leftovers {
			if n := r.g.Node(key); r.leftover(n) {
				r.linkToBase(n)
			}
		}
	}

	for _, key := range intents {
		r.reconcile(key)
	}
	// Then what the view changed (values to create again or to update
	// back), then every value that was out of line, and the dependents
	// of what went missing.
	for _, key := range repairs {
		r.reconcile(key)
	}
	rest = append(rest, r.missingDependents...)
	slices.Sort(rest)
	rest = slices.Compact(rest)
	for _, key := range rest {
		r.reconcile(key)
	}
	if v != nil {
		// Late, what the intended values derive but nothing adopted (its
		// base could not be decided) is stale too, like anything of ours
		// left undecided.
		r.dropStale(false)
	}
}

// resyncIntents replaces the intended state with the job's values and
// returns the keys whose intent changed, dooming what they remove.
func (r *resyncPass) resyncIntents(j *job) []string {
	keep := setOf(j.items, func(it *KeyValue) string { return it.Key })
	var dropped []string
	for key, n := range r.g.All() {
		if n.Base == "" && n.Intent != nil && !keep[key] {
			dropped = append(dropped, key)
		}
	}
	slices.Sort(dropped)
	for _, key := range dropped {
		r.setIntent(key, nil)
	}
	intents := dropped
	for _, it := range j.items {
		n := r.g.Node(it.Key)
		if n != nil && n.Base == "" && n.Intent != nil && it.Value != nil && n.InvalidErr() == nil &&
			(n.Intent == it.Value || proto.Equal(n.Intent, it.Value)) {
			continue // the same intent: nothing to re-evaluate
		}
		r.setIntent(it.Key, it.Value)
		intents = append(intents, it.Key)
	}
	for _, key := range intents {
		r.doom(r.g.Node(key))
	}
	return intents
}

// intendedDerived maps the keys that the intended values derive, through
// any number of levels (bounded by maxCycle), whether or not those derived
// values exist yet, to the key of the value that derives them.
func (r *resyncPass) intendedDerived() map[string]string {
	out := map[string]string{}
	for key, n := range r.g.All() {
		if n.Base == "" && n.Intent != nil && n.InvalidErr() == nil && n.Origin != kv.OriginSB {
			walkDerived(r.s, n.Desc, key, n.Intent, func(base, k string, _ proto.Message, _ kv.Descriptor) bool {
				if out[k] != "" {
					return false
				}
				out[k] = base
				return true
			})
		}
	}
	return out
}

// walkDerived calls visit with each value (key, value, descriptor) that
// value, of key by d, derives, and with what those derive in turn, through
// up to maxCycle levels; visit returns false to leave out what one derives.
func walkDerived(s *Scheduler, d kv.Descriptor, key string, value proto.Message, visit func(base, key string, value proto.Message, d kv.Descriptor) bool) {
	var walk func(d kv.Descriptor, key string, value proto.Message, depth int)
	walk = func(d kv.Descriptor, key string, value proto.Message, depth int) {
		if d == nil || value == nil || depth > s.opts.maxCycle {
			return
		}
		for _, dv := range d.Derived(key, value) {
			if dd := s.lookup(dv.Key); dv.Key != "" && dv.Value != nil && visit(key, dv.Key, dv.Value, dd) {
				walk(dd, dv.Key, dv.Value, depth+1)
			}
		}
	}
	walk(d, key, value, 0)
}

// outOfLine reports whether reconciling n might change something: false
// for a value of ours CONFIGURED as intended, with what it needs present.
func (r *resyncPass) outOfLine(n *graph.Node) bool {
	switch {
	case n.Origin == kv.OriginSB:
		return false
	case n.State != CONFIGURED || n.Applied == nil || n.Applied != n.Intent || n.Removing:
		return true
	case n.Base != "":
		if b := r.g.Node(n.Base); b == nil || !b.Exists() {
			return true
		}
	}
	return !r.depsMet(n, n.Adeps())
}

// viewActs returns the keys that applyView must look at: those of the
// values the view changes (see viewChanges), and those of the foreign
// values it holds (to be OBTAINED). It pairs each item with the graph's
// node of its key through the node the refresh found (graph.current), not
// a lookup of each value; held is the number of values of ours that the
// view should hold (applied, of a refreshed descriptor): when fewer were
// paired with an item, those missing are found by a lookup of each.
func (r *resyncPass) viewActs(held int) []string {
	v := r.view
	refreshed := v.refreshedFunc()
	var act []string
	paired := 0
	for i := range v.items {
		it := &v.items[i]
		it.used = false // a run decides anew
		n := r.g.Current(it.key, it.node, v.added)
		switch {
		case n == nil:
			if it.origin != kv.OriginNB {
				act = append(act, it.key) // foreign: OBTAINED
			}
			continue
		case !refreshed(n.Desc):
			continue
		case n.Applied != nil && n.Origin != kv.OriginSB:
			paired++
		}
		if r.viewChanges(n, it) {
			act = append(act, it.key)
		}
	}
	if paired < held {
		for key, n := range r.g.All() {
			if n.Applied != nil && n.Origin != kv.OriginSB && refreshed(n.Desc) && v.get(key) == nil {
				act = append(act, key) // missing
			}
		}
	}
	return act
}

// viewChanges reports whether the view changes n, a value of a refreshed
// descriptor whose item is it (nil: the view does not hold it), and marks
// it as decided.
func (r *resyncPass) viewChanges(n *graph.Node, it *sbItem) bool {
	if it != nil && (n.Applied != nil || n.Intent != nil || n.Origin == kv.OriginSB) {
		// Known to the graph: never adopted on create, never stale. (A
		// value of ours with nothing applied nor intended, say a create
		// whose read-back failed, is stale when found.)
		it.used = true
	}
	switch {
	case n.Origin == kv.OriginSB:
		return it != nil && n.Base == "" && !proto.Equal(n.Applied, it.value)
	case n.Applied != nil && it == nil:
		return true // missing
	case n.Applied != nil:
		// The very value applied (a Retrieve that returns what it was
		// given to correlate) is equal with no comparison, as in change.
		return n.Applied != it.value && !n.Desc.Equivalent(n.Key, n.Applied, it.value) || !graph.SameValue(n.Metadata, it.meta)
	}
	return it != nil && n.Intent != nil // to adopt
}

// applyView brings the graph's view of the southbound in line with what
// the refresh found for the keys in act (sorted), and returns the keys it
// changed. No call is made: values of ours that are missing are marked
// MISSING (and created again by the reconciliation that follows), values
// found with other contents are taken as applied (and updated back), values
// intended and found are adopted (applied, with no Create), values not ours
// become OBTAINED. Values of ours that are no longer intended (stale) are
// left to dropStale.
func (r *resyncPass) applyView(act []string) []string {
	var changed []string
	for _, key := range act {
		n := r.g.Node(key)
		it := r.view.get(key)
		switch {
		case n == nil:
			r.observe(r.newNode(key, ""), it.value, it.meta, OBTAINED)
		case n.Origin == kv.OriginSB:
			r.observe(n, it.value, it.meta, OBTAINED)
		case n.Applied != nil && it == nil:
			r.markGone(n, nil, 0, func(dn *graph.Node) bool { return !r.view.refreshed[dn.Desc] })
			changed = append(changed, key)
		case n.Applied != nil:
			r.mut(n)
			if !n.Desc.Equivalent(key, n.Applied, it.value) {
				n.Applied = it.value
				r.g.SetDeps(n, n.Deps, n.Desc.Dependencies(key, it.value))
				changed = append(changed, key)
			}
			n.Metadata = it.meta
			r.syncMetadata(n)
		case r.unsureNow(n): // its call failed after the refresh, its read-back too: not adopted
		default:
			r.adopt(n, it.value, it.meta)
			r.adoptDerived(n)
			changed = append(changed, key)
		}
	}
	return changed
}

// adoptDerived links to n, a value just adopted from the view, the values
// that its found version derives and that the view holds too, adopting
// them: a re-create or an update of n that follows then deletes them
// first, as it would delete derived values it had created itself. (Left
// out, a re-create would delete the base under them, and create them
// again by adopting what the refresh saw before the base went.) Derived
// values the view does not hold are left to the reconciliation of n.
func (r *resyncPass) adoptDerived(n *graph.Node) {
	if n.Desc == nil || n.Applied == nil {
		return
	}
	// What the found version derives, and what the intended one does: a
	// Retrieve may report a base without the field that derives (members
	// reported as items of their own), and what the intent derives is
	// what a re-create or update of n must find linked. (A key given by
	// both is adopted once: the first adoption marks its item used.)
	ds := n.Desc.Derived(n.Key, n.Applied)
	if n.Intent != nil && n.InvalidErr() == nil {
		ds = append(slices.Clip(ds), n.Desc.Derived(n.Key, n.Intent)...)
	}
	for _, d := range ds {
		it, dn := r.view.get(d.Key), r.g.Node(d.Key)
		if d.Key == "" || d.Value == nil || it == nil || it.used || dn == nil && slices.Contains(n.Derived, d.Key) ||
			dn != nil && (dn.Applied != nil || dn.Intent != nil || dn.Base != "" && dn.Base != n.Key) {
			continue // not found, decided already, or known to the graph (but for a node holding nothing: a delete of unknown outcome)
		}
		if desc := r.s.lookup(d.Key); desc == nil || !r.view.refreshed[desc] {
			continue
		}
		if dn == nil {
			dn = r.newDerived(n, d.Key)
		} else {
			r.linkBase(dn, n)
		}
		dn.Intent, dn.IntentSeq = d.Value, r.seq
		r.evaluate(dn)
		r.adopt(dn, it.value, it.meta)
		r.adoptDerived(dn)
	}
}

// markGone records that the southbound lost n, one of ours (found by a
// resync's refresh, or by a drift check with flags FlagDrifted): n is no
// longer applied, MISSING with err, nor are the values derived from it
// that went with it (wentWith: their descriptor cannot tell).
func (r *resyncPass) markGone(n *graph.Node, err error, flags Flags, wentWith func(dn *graph.Node) bool) {
	prev := n.Applied
	r.mut(n)
	r.takeApplied(n, nil, nil)
	n.State = MISSING
	n.SetLastErr(err)
	r.opFor(n, Op{Key: n.Key, Kind: OpNone, PrevValue: prev, Flags: flags | FlagMissing | r.nodeFlags(n), Err: err})
	// What needs n is reconciled after a resync's repairs: deleted (or
	// made PENDING) if n cannot come back.
	r.missingDependents = append(r.missingDependents, r.g.DependentsOf(n.Key)...)
	for _, k := range n.Derived {
		if dn := r.g.Node(k); dn != nil && dn.Applied != nil && dn.Origin != kv.OriginSB && wentWith(dn) {
			r.markGone(dn, err, flags, wentWith)
		}
	}
}

// adopt takes a value found in the southbound as the applied version of
// n, intended and not applied: the reconciliation that follows finds it
// equal to the intent (no call) or updates it.
func (r *resyncPass) adopt(n *graph.Node, value proto.Message, meta any) {
	if it := r.view.get(n.Key); it != nil {
		it.used = true
	}
	r.mut(n)
	n.Origin = kv.OriginNB
	r.takeApplied(n, value, meta)
	if r.cannotMeet(n) {
		r.doomAll(n) // it goes (PENDING): nothing is created on it
	}
	if n.Intent != nil && n.InvalidErr() == nil && n.Desc.Equivalent(n.Key, value, n.Intent) {
		n.State = CONFIGURED
		n.SetLastErr(nil)
		put(&r.viewFresh, n.Key, true)
		r.opFor(n, Op{Key: n.Key, Kind: OpNone, Value: value, Flags: FlagAdopted | r.nodeFlags(n)})
		return
	}
	// Found with other contents: the update (or re-create, or removal)
	// that follows carries the ADOPTED flag, so that the record never
	// shows an adopted value in a state it does not have; reportAdopted
	// records one that nothing followed.
	put(&r.adopting, n.Key, true)
}

// cannotMeet reports whether n, adopted, needs a value that neither the
// graph holds nor the refresh found: n goes, unless the transaction
// creates that value before n is decided (then what waited for n is
// decided once the pass is over: releaseDoomed).
func (r *resyncPass) cannotMeet(n *graph.Node) bool {
	for i := range n.Deps {
		d := &n.Deps[i]
		if t := r.g.Node(d.Key); !d.IsAnyOf() && (t == nil || !t.Exists()) && r.view.get(d.Key) == nil {
			return true
		}
	}
	return false
}

// adoptFound adopts n, not applied, when the refreshed view holds it and
// has not been decided yet: whether n is then kept, updated or deleted, the
// graph must know it is there (a value found PENDING is deleted, not left
// in the southbound). It reports whether it adopted n.
func (r *resyncPass) adoptFound(n *graph.Node) bool {
	if n.Desc == nil || !r.view.refreshed[n.Desc] {
		return false
	}
	it := r.view.get(n.Key)
	if it == nil || it.used || r.unsureNow(n) {
		return false
	}
	r.adopt(n, it.value, it.meta)
	return true
}

// unsureNow reports whether a call of the run on n failed, after the
// refresh, and its read-back too: the refresh's item of it is not
// adopted, n is not decided on.
func (r *resyncPass) unsureNow(n *graph.Node) bool {
	return n.FailedSeq == r.seq32 && r.unsureOf(n.Key)
}

// adoptOnCreate is create's look into the refreshed view: a value about
// to be created that the southbound holds already (a derived value of a
// base adopted in this resync, say) is adopted instead. It reports whether
// it handled n.
func (r *resyncPass) adoptOnCreate(n *graph.Node) bool {
	switch {
	case n.Desc == nil:
		return false
	case r.view.refreshed[n.Desc]:
		if !r.adoptFound(n) {
			return false // not there; or decided already (a re-create)
		}
	case n.Desc.CanRetrieve():
		return false // its Retrieve failed: nothing is known, it is created
	default:
		// A derived value whose descriptor cannot Retrieve is taken to
		// exist when its base was found as intended: it is regenerated
		// from the base, not created. (Its descriptor should Retrieve
		// when the base's comparison leaves out the field that derives
		// it: a base found equal says nothing of it then.)
		if n.Base == "" || !r.viewFresh[n.Base] || n.Intent == nil || r.viewFresh[n.Key] {
			return false
		}
		r.adopt(n, n.Intent, nil)
	}
	r.derive(n)
	r.triggerDependents(n.Key, nil)
	r.reconcile(n.Key)
	return true
}

// reportAdopted records the values adopted with other contents than
// intended that no operation followed (they went PENDING, say), with the
// state they end the run in.
func (r *resyncPass) reportAdopted() {
	if len(r.adopting) == 0 {
		return // maps.Keys' iterator would allocate, once per transaction
	}
	for _, key := range slices.Sorted(maps.Keys(r.adopting)) {
		if n := r.g.Node(key); n != nil {
			r.opFor(n, Op{Key: key, Kind: OpNone, Value: n.Applied, Flags: r.nodeFlags(n)}) // opFor adds ADOPTED
		}
	}
}
