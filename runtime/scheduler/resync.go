package scheduler

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// resyncPass is the run's resync: the intended state replaced, the
// refreshed view of the southbound applied, stale values dropped.
type resyncPass struct{ *run }

// sbView is the southbound as a refresh found it: what each descriptor's
// Retrieve returned, checked. Only the keys of refreshed descriptors are
// known; the others keep the scheduler's view.
type sbView struct {
	// index maps keys to items.
	index map[string]int32
	items []sbItem
	// refreshed are the descriptors whose Retrieve succeeded.
	refreshed map[kv.Descriptor]bool
	// added is the graph's count of added nodes when the view was
	// taken: with sbItem.node, graph.current's argument.
	added uint64
}

type sbItem struct {
	key    string
	value  proto.Message
	meta   any
	origin kv.Origin
	// node is the graph's node of key when the view was taken (nil:
	// none), so that a resync pairs items with nodes without a lookup
	// each (see graph.current).
	node *node
	// used marks an item decided by the run in progress: known to the
	// graph when the view was applied, or adopted since (never adopted
	// again by a re-create, never stale). Reset at the start of each run.
	used bool
}

// get returns the item of key, or nil.
func (v *sbView) get(key string) *sbItem {
	if i, ok := v.index[key]; ok {
		return &v.items[i]
	}
	return nil
}

// refresh reads the southbound through each descriptor's Retrieve, in
// RetrieveDependencies order, and returns the checked view. Metadata maps
// are updated as each descriptor is read, so that a later Retrieve can
// resolve what an earlier one found (a route's interface by its index).
// A failed Retrieve is an error of the transaction; its descriptor keeps
// the scheduler's view. The caller holds s.mu.
func (part *executor) refresh(ctx context.Context, j *job) (*sbView, []KeyError) {
	s := part.Scheduler
	view := &sbView{index: make(map[string]int32, s.g.nodes.len()), items: make([]sbItem, 0, s.g.nodes.len()),
		refreshed: map[kv.Descriptor]bool{}, added: s.g.added}
	var errs []KeyError
	correlate := s.correlate(j)
	for _, d := range s.retrieveOrder {
		items, err := s.retrieveGuarded(ctx, d, "", correlate[d])
		if err != nil {
			errs = append(errs, KeyError{Key: d.KeyPrefix(), Op: OpRetrieve, Err: fmt.Errorf("descriptor %s: %w", d.Name(), err)})
			s.opts.logger.Warn("retrieve failed; the descriptor keeps its view of the southbound", "descriptor", d.Name(), "error", err)
			continue
		}
		view.refreshed[d] = true
		withMeta := d.WithMetadata()
		var asked map[string]bool // correlate[d]'s keys, built when an item needs it
		for i, it := range items {
			reason := ""
			_, dup := view.index[it.Key] // key spaces are disjoint: a duplicate is this descriptor's
			var n *node
			if it.Key != "" {
				n = s.g.node(it.Key)
			}
			switch {
			case it.Key == "":
				reason = "empty key"
			case it.Value == nil || !it.Value.ProtoReflect().IsValid():
				reason = "no value"
			case dup:
				reason = "duplicate key"
			case !s.inKeySpace(d, it.Key, n):
				reason = "the key is outside the descriptor's key space"
			}
			if reason != "" {
				s.opts.logger.Warn("retrieve: item dropped", "descriptor", d.Name(), "item", i, "key", it.Key, "reason", reason)
				continue
			}
			meta := it.Metadata // nil when it carries no data (see kv.TypedDescriptor.Retrieve)
			origin := it.Origin
			if origin == kv.OriginUnknown {
				// A descriptor that cannot tell ownership leaves it to
				// the scheduler: what it applied, or asked about (the
				// correlated values: intended, or remembered from an
				// agent's record), is ours; anything else is not.
				switch {
				case n != nil && n.applied != nil && n.origin != kv.OriginSB:
					origin = kv.OriginNB
				default:
					if asked == nil {
						asked = make(map[string]bool, len(correlate[d]))
						for _, c := range correlate[d] {
							asked[c.Key] = true
						}
					}
					if asked[it.Key] {
						origin = kv.OriginNB
					}
				}
			}
			view.index[it.Key] = int32(len(view.items))
			view.items = append(view.items, sbItem{key: it.Key, value: it.Value, meta: meta, origin: origin, node: n})
			if withMeta {
				setMetadata(d, d.Label(it.Key), meta)
			}
		}
		if withMeta {
			// Ours that the southbound no longer has lose their metadata
			// (they are MISSING); obtained ones keep theirs.
			for _, it := range correlate[d] {
				if _, seen := view.index[it.Key]; !seen {
					if n := s.g.node(it.Key); n != nil && n.applied != nil {
						deleteMetadata(d, d.Label(it.Key))
					}
				}
			}
		}
	}
	return view, errs
}

// inKeySpace reports whether key, found by d's Retrieve, is in d's key
// space; n is the graph's node of key (nil: none). A key the graph holds
// as d's was matched (its values checked) when it was taken up, and key
// spaces do not change: only a key new to the graph is matched again
// (most of a refresh finds what it knows).
func (part *executor) inKeySpace(d kv.Descriptor, key string, n *node) bool {
	s := part.Scheduler
	if n != nil && n.desc == d {
		return true
	}
	return s.lookup(key) == d
}

// correlate returns, per descriptor, the values the scheduler expects the
// southbound to hold, in no particular order: the applied version of each
// value of ours, else its intended one (for a full resync, the
// transaction's values replace the intended state, their derived values
// included).
func (part *executor) correlate(j *job) map[kv.Descriptor][]kv.Item[string, proto.Message, any] {
	s := part.Scheduler
	full := j.kind == FullResyncTxn
	// One pass collects every item with the index of its descriptor
	// (few: found by a short scan), then the items are moved in place
	// into per-descriptor runs of the same array, cut in per-descriptor
	// slices: one allocation of the graph's size, where appending per
	// descriptor regrew each slice (a downstream resync allocated twice
	// as much), and a copy into a second array allocated as much again.
	var descs []kv.Descriptor
	last := -1
	items := make([]kv.Item[string, proto.Message, any], 0, s.g.nodes.len())
	which := make([]int32, 0, s.g.nodes.len())
	for key, n := range s.g.all() {
		if n.desc == nil || n.origin == kv.OriginSB {
			continue
		}
		var it kv.Item[string, proto.Message, any]
		switch {
		case n.applied != nil:
			it = kv.Item[string, proto.Message, any]{Key: key, Value: n.applied, Metadata: n.metadata, Origin: kv.OriginNB}
		case n.intent != nil && n.invalid == nil && !full:
			it = kv.Item[string, proto.Message, any]{Key: key, Value: n.intent, Origin: kv.OriginNB}
		default:
			continue
		}
		if last < 0 || descs[last] != n.desc {
			if last = slices.Index(descs, n.desc); last < 0 {
				last = len(descs)
				descs = append(descs, n.desc)
			}
		}
		items = append(items, it)
		which = append(which, int32(last))
	}
	out := groupByDesc(descs, items, which)
	if !full {
		return out
	}
	s.correlateFull(j, out)
	return out
}

// groupByDesc cuts items, whose descriptors are descs[which[i]], into one
// slice per descriptor, moving them in place into per-descriptor runs.
func groupByDesc(descs []kv.Descriptor, items []kv.Item[string, proto.Message, any], which []int32) map[kv.Descriptor][]kv.Item[string, proto.Message, any] {
	out := make(map[kv.Descriptor][]kv.Item[string, proto.Message, any], len(descs))
	if len(descs) == 1 {
		out[descs[0]] = slices.Clip(items)
	} else if len(descs) > 1 {
		ends := make([]int, len(descs))
		for _, w := range which {
			ends[w]++
		}
		for i := 1; i < len(ends); i++ {
			ends[i] += ends[i-1]
		}
		next := make([]int, len(descs))
		for i := 1; i < len(next); i++ {
			next[i] = ends[i-1]
		}
		// Each run is filled from its start: an item of another
		// descriptor found there is swapped into the next free place of
		// its own run, where it stays. Each swap places one item for
		// good: with one descriptor holding most values, there are few.
		for w := range descs {
			for next[w] < ends[w] {
				i := next[w]
				o := which[i]
				if int(o) == w {
					next[w]++
					continue
				}
				k := next[o]
				items[i], items[k] = items[k], items[i]
				which[i], which[k] = which[k], which[i]
				next[o]++
			}
		}
		start := 0
		for w, d := range descs {
			out[d] = items[start:ends[w]:ends[w]] // capped: an append copies
			start = ends[w]
		}
	}
	return out
}

// correlateFull adds to out the transaction's values of a full resync
// (and their derived values) that the graph does not hold applied.
func (part *executor) correlateFull(j *job, out map[kv.Descriptor][]kv.Item[string, proto.Message, any]) {
	s := part.Scheduler
	added := map[string]bool{}
	var walk func(key string, value proto.Message, depth int)
	walk = func(key string, value proto.Message, depth int) {
		if value == nil || depth > s.opts.maxCycle || added[key] {
			return
		}
		n := s.g.node(key)
		d := s.lookup(key)
		if n != nil {
			d = n.desc
		}
		if d == nil || d.Validate(key, value) != nil {
			return
		}
		if n == nil || n.applied == nil || n.origin == kv.OriginSB {
			added[key] = true
			out[d] = append(out[d], kv.Item[string, proto.Message, any]{Key: key, Value: value, Origin: kv.OriginNB})
		}
		for _, dv := range d.Derived(key, value) {
			walk(dv.Key, dv.Value, depth+1)
		}
	}
	for _, it := range j.items {
		walk(it.Key, it.Value, 0)
	}
	for _, it := range j.opts.remembered {
		walk(it.Key, it.Value, 0)
	}
}

// resync runs a resync job: the intended state replaced (full, upstream),
// the refreshed view of the southbound applied (full, downstream), and
// every value out of line with its target reconciled. Its cost follows
// what differs: one pass looks at every value, and only those that need
// something are sorted and reconciled.
func (part *resyncPass) resync(j *job) {
	r := part.run
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
	for key, n := range r.g.all() {
		if v != nil && n.applied != nil && n.origin != kv.OriginSB && refreshed(n.desc) {
			held++
		}
		if r.outOfLine(n) {
			rest = append(rest, key)
		}
	}
	var repairs []string
	if v != nil {
		// The leftovers of earlier runs, for dropStale and linkLeftover:
		// never CONFIGURED, so out of line.
		for _, key := range rest {
			if r.leftover(r.g.node(key)) {
				r.leftovers = append(r.leftovers, key)
			}
		}
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
			r.linkLeftover(r.g.node(key))
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
func (part *resyncPass) resyncIntents(j *job) []string {
	r := part.run
	keep := make(map[string]bool, len(j.items))
	for _, it := range j.items {
		keep[it.Key] = true
	}
	var dropped []string
	for key, n := range r.g.all() {
		if n.base == "" && n.intent != nil && !keep[key] {
			dropped = append(dropped, key)
		}
	}
	slices.Sort(dropped)
	for _, key := range dropped {
		r.setIntent(key, nil)
	}
	intents := dropped
	for _, it := range j.items {
		n := r.g.node(it.Key)
		if n != nil && n.base == "" && n.intent != nil && it.Value != nil && n.invalid == nil &&
			(n.intent == it.Value || proto.Equal(n.intent, it.Value)) {
			continue // the same intent: nothing to re-evaluate
		}
		r.setIntent(it.Key, it.Value)
		intents = append(intents, it.Key)
	}
	for _, key := range intents {
		r.doom(r.g.node(key))
	}
	return intents
}

// intendedDerived maps the keys that the intended values derive, through
// any number of levels (bounded by maxCycle), whether or not those derived
// values exist yet, to the key of the value that derives them.
func (part *resyncPass) intendedDerived() map[string]string {
	r := part.run
	out := map[string]string{}
	var walk func(d kv.Descriptor, key string, value proto.Message, depth int)
	walk = func(d kv.Descriptor, key string, value proto.Message, depth int) {
		if d == nil || value == nil || depth > r.s.opts.maxCycle {
			return
		}
		for _, dv := range d.Derived(key, value) {
			if dv.Key == "" || dv.Value == nil || out[dv.Key] != "" {
				continue
			}
			out[dv.Key] = key
			walk(r.s.lookup(dv.Key), dv.Key, dv.Value, depth+1)
		}
	}
	for key, n := range r.g.all() {
		if n.base == "" && n.intent != nil && n.invalid == nil && n.origin != kv.OriginSB {
			walk(n.desc, key, n.intent, 0)
		}
	}
	return out
}

// outOfLine reports whether reconciling n might change something: false
// for a value of ours CONFIGURED as intended, with what it needs present.
func (part *resyncPass) outOfLine(n *node) bool {
	r := part.run
	switch {
	case n.origin == kv.OriginSB:
		return false
	case n.state != CONFIGURED || n.applied == nil || n.applied != n.intent || n.removing:
		return true
	case n.base != "":
		if b := r.g.node(n.base); b == nil || !b.exists() {
			return true
		}
	}
	return !r.depsMet(n, n.adeps)
}

// viewActs returns the keys that applyView must look at: those of the
// values the view changes (see viewChanges), and those of the foreign
// values it holds (to be OBTAINED). It pairs each item with the graph's
// node of its key through the node the refresh found (graph.current), not
// a lookup of each value; held is the number of values of ours that the
// view should hold (applied, of a refreshed descriptor): when fewer were
// paired with an item, those missing are found by a lookup of each.
func (part *resyncPass) viewActs(held int) []string {
	r := part.run
	v := r.view
	refreshed := v.refreshedFunc()
	var act []string
	paired := 0
	for i := range v.items {
		it := &v.items[i]
		it.used = false // a run decides anew
		n := r.g.current(it.key, it.node, v.added)
		switch {
		case n == nil:
			if it.origin != kv.OriginNB {
				act = append(act, it.key) // foreign: OBTAINED
			}
			continue
		case !refreshed(n.desc):
			continue
		case n.applied != nil && n.origin != kv.OriginSB:
			paired++
		}
		if r.viewChanges(n, it) {
			act = append(act, it.key)
		}
	}
	if paired < held {
		for key, n := range r.g.all() {
			if n.applied != nil && n.origin != kv.OriginSB && refreshed(n.desc) && v.get(key) == nil {
				act = append(act, key) // missing
			}
		}
	}
	return act
}

// refreshedFunc returns a test of whether a descriptor was refreshed (nil
// never was; nor was any in no view) that remembers its last answer: a
// pass over the values meets them grouped by descriptor, mostly.
func (v *sbView) refreshedFunc() func(kv.Descriptor) bool {
	var last kv.Descriptor
	was := false
	return func(d kv.Descriptor) bool {
		if v == nil || d == nil {
			return false
		}
		if d != last {
			last, was = d, v.refreshed[d]
		}
		return was
	}
}

// viewChanges reports whether the view changes n, a value of a refreshed
// descriptor whose item is it (nil: the view does not hold it), and marks
// it as decided.
func (part *resyncPass) viewChanges(n *node, it *sbItem) bool {
	if it != nil && (n.applied != nil || n.intent != nil || n.origin == kv.OriginSB) {
		// Known to the graph: never adopted on create, never stale. (A
		// value of ours with nothing applied nor intended, say a create
		// whose read-back failed, is stale when found.)
		it.used = true
	}
	switch {
	case n.origin == kv.OriginSB:
		return it != nil && n.base == "" && !proto.Equal(n.applied, it.value)
	case n.applied != nil && it == nil:
		return true // missing
	case n.applied != nil:
		// The very value applied (a Retrieve that returns what it was
		// given to correlate) is equal with no comparison, as in change.
		return n.applied != it.value && !n.desc.Equivalent(n.key, n.applied, it.value) || !metaEqual(n.metadata, it.meta)
	}
	return it != nil && n.intent != nil // to adopt
}

// applyView brings the graph's view of the southbound in line with what
// the refresh found for the keys in act (sorted), and returns the keys it
// changed. No call is made: values of ours that are missing are marked
// MISSING (and created again by the reconciliation that follows), values
// found with other contents are taken as applied (and updated back), values
// intended and found are adopted (applied, with no Create), values not ours
// become OBTAINED. Values of ours that are no longer intended (stale) are
// left to dropStale.
func (part *resyncPass) applyView(act []string) []string {
	r := part.run
	var changed []string
	for _, key := range act {
		n := r.g.node(key)
		it := r.view.get(key)
		switch {
		case n == nil:
			r.observe(r.newNode(key, ""), it.value, it.meta, OBTAINED)
		case n.origin == kv.OriginSB:
			r.observe(n, it.value, it.meta, OBTAINED)
		case n.applied != nil && it == nil:
			r.markMissing(n)
			changed = append(changed, key)
		case n.applied != nil:
			r.mut(n)
			if !n.desc.Equivalent(key, n.applied, it.value) {
				n.applied = it.value
				r.g.setDeps(n, n.deps, n.desc.Dependencies(key, it.value))
				changed = append(changed, key)
			}
			n.metadata = it.meta
			r.syncMetadata(n)
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
func (part *resyncPass) adoptDerived(n *node) {
	r := part.run
	if n.desc == nil || n.applied == nil {
		return
	}
	// What the found version derives, and what the intended one does: a
	// Retrieve may report a base without the field that derives (members
	// reported as items of their own), and what the intent derives is
	// what a re-create or update of n must find linked. (A key given by
	// both is adopted once: the first adoption marks its item used.)
	ds := n.desc.Derived(n.key, n.applied)
	if n.intent != nil && n.invalid == nil {
		ds = append(slices.Clip(ds), n.desc.Derived(n.key, n.intent)...)
	}
	for _, d := range ds {
		it := r.view.get(d.Key)
		if d.Key == "" || d.Value == nil || it == nil || it.used || r.g.node(d.Key) != nil || slices.Contains(n.derived, d.Key) {
			continue // not found, decided already, or known to the graph
		}
		if desc := r.s.lookup(d.Key); desc == nil || !r.view.refreshed[desc] {
			continue
		}
		r.mut(n)
		n.derived = append(slices.Clone(n.derived), d.Key)
		dn := r.newNode(d.Key, n.key)
		dn.intent, dn.intentSeq = d.Value, r.seq
		r.evaluate(dn)
		r.adopt(dn, it.value, it.meta)
		r.adoptDerived(dn)
	}
}

// metaEqual compares metadata, which may be of an incomparable type.
func metaEqual(a, b any) bool {
	if a == nil || b == nil {
		return a == b // no comparison that can panic
	}
	return metaEqualAny(a, b)
}

func metaEqualAny(a, b any) (eq bool) {
	defer func() {
		if recover() != nil {
			eq = false
		}
	}()
	return a == b
}

// markMissing records that the southbound lost n, one of ours: n is no
// longer applied, nor are the values derived from it whose descriptor
// cannot tell (no Retrieve): they went with their base.
func (part *resyncPass) markMissing(n *node) {
	r := part.run
	prev := n.applied
	r.mut(n)
	n.applied, n.metadata, n.state, n.lastErr = nil, nil, MISSING, nil
	r.g.setDeps(n, n.deps, nil)
	r.g.setExisting(n.key, false)
	r.syncMetadata(n)
	r.opFor(n, Op{Key: n.key, Kind: OpNone, PrevValue: prev, Flags: FlagMissing | r.nodeFlags(n)})
	// What needs n is reconciled after the repairs: deleted (or made
	// PENDING) if n cannot come back.
	r.missingDependents = append(r.missingDependents, r.g.dependentsOf(n.key)...)
	for _, k := range n.derived {
		if dn := r.g.node(k); dn != nil && dn.applied != nil && dn.origin != kv.OriginSB && !r.view.refreshed[dn.desc] {
			r.markMissing(dn)
		}
	}
}

// adopt takes a value found in the southbound as the applied version of
// n, intended and not applied: the reconciliation that follows finds it
// equal to the intent (no call) or updates it.
func (part *resyncPass) adopt(n *node, value proto.Message, meta any) {
	r := part.run
	if it := r.view.get(n.key); it != nil {
		it.used = true
	}
	r.mut(n)
	n.applied, n.metadata, n.origin = value, meta, kv.OriginNB
	r.g.setDeps(n, n.deps, n.desc.Dependencies(n.key, value))
	r.g.setExisting(n.key, true)
	r.syncMetadata(n)
	if n.intent != nil && n.invalid == nil && n.desc.Equivalent(n.key, value, n.intent) {
		n.state, n.lastErr = CONFIGURED, nil
		if r.viewFresh == nil {
			r.viewFresh = map[string]bool{}
		}
		r.viewFresh[n.key] = true
		r.opFor(n, Op{Key: n.key, Kind: OpNone, Value: value, Flags: FlagAdopted | r.nodeFlags(n)})
		return
	}
	// Found with other contents: the update (or re-create, or removal)
	// that follows carries the ADOPTED flag, so that the record never
	// shows an adopted value in a state it does not have; reportAdopted
	// records one that nothing followed.
	if r.adopting == nil {
		r.adopting = map[string]bool{}
	}
	r.adopting[n.key] = true
}

// adoptFound adopts n, not applied, when the refreshed view holds it and
// has not been decided yet: whether n is then kept, updated or deleted, the
// graph must know it is there (a value found PENDING is deleted, not left
// in the southbound). It reports whether it adopted n.
func (part *resyncPass) adoptFound(n *node) bool {
	r := part.run
	if n.desc == nil || !r.view.refreshed[n.desc] {
		return false
	}
	it := r.view.get(n.key)
	if it == nil || it.used {
		return false
	}
	r.adopt(n, it.value, it.meta)
	return true
}

// adoptOnCreate is create's look into the refreshed view: a value about
// to be created that the southbound holds already (a derived value of a
// base adopted in this resync, say) is adopted instead. It reports whether
// it handled n.
func (part *resyncPass) adoptOnCreate(n *node) bool {
	r := part.run
	if n.desc == nil {
		return false
	}
	var value proto.Message
	var meta any
	switch {
	case r.view.refreshed[n.desc]:
		it := r.view.get(n.key)
		if it == nil || it.used {
			return false // not there; or decided already (a re-create)
		}
		value, meta = it.value, it.meta
	case n.desc.CanRetrieve():
		return false // its Retrieve failed: nothing is known, it is created
	default:
		// A derived value whose descriptor cannot Retrieve is taken to
		// exist when its base was found as intended: it is regenerated
		// from the base, not created. (Its descriptor should Retrieve
		// when the base's comparison leaves out the field that derives
		// it: a base found equal says nothing of it then.)
		if n.base == "" || !r.viewFresh[n.base] || n.intent == nil || r.viewFresh[n.key] {
			return false
		}
		value = n.intent
	}
	r.adopt(n, value, meta)
	r.derive(n)
	r.triggerDependents(n.key)
	r.reconcile(n.key)
	return true
}

// dropStale deletes what the refresh found of ours (claimed by its
// descriptor, or applied by us before) that nothing intends any more:
// neither a value in the graph, nor a key that an intended value derives. A
// stale value that a stale base derives is linked to it first (see
// linkStale), so that it is deleted before its base, and its base stays
// when it cannot be.
//
// The first pass (early) takes every stale value into the graph, so that a
// removal in the reconciliation that follows finds it among the dependents
// of what it removes, and deletes those that no other value found needs;
// the others (staleDeferred) wait for the last pass, once what needs them
// has been decided.
func (part *resyncPass) dropStale(early bool) {
	r := part.run
	stale := r.staleFound(early)
	if len(stale) == 0 && len(r.staleTaken) == 0 {
		return // the usual resync: what was found is known
	}
	// Stale values of ours that the graph knows already (an earlier run
	// failed to delete them): a base found stale now is linked to them,
	// or they to it.
	var leftovers []*node
	for _, key := range r.leftovers {
		if n := r.g.node(key); r.leftover(n) {
			leftovers = append(leftovers, n)
		}
	}
	var unread map[string]proto.Message
	if early {
		stale, unread = r.staleIntended(stale)
	}
	// Early, only what no other value found needs; late, what no value
	// found and left undecided (its base could not be read, say) needs.
	neededBy := r.neededBy(stale, early)
	r.neededByKept(stale, neededBy)
	slices.Sort(stale)
	added, taken := r.takeStale(stale, unread, early)
	r.linkStale(added, leftovers)
	if early {
		for _, n := range added {
			r.staleTaken = append(r.staleTaken, n.key)
		}
	}
	// The base of a value kept is kept too.
	for changed := true; changed; {
		changed = false
		for _, n := range taken {
			if neededBy[n.key] != "" && n.base != "" && neededBy[n.base] == "" && r.view.get(n.base) != nil {
				neededBy[n.base], changed = n.key, true
			}
		}
		if changed {
			r.neededByKept(stale, neededBy)
		}
	}
	for _, n := range added {
		r.opFor(n, Op{Key: n.key, Kind: OpNone, Value: n.applied, Flags: FlagStale | r.nodeFlags(n)})
	}
	for _, n := range taken {
		r.decideStale(n, neededBy[n.key], early)
	}
}

// staleFound returns the keys of the values of ours that the refresh found
// and nothing intends; the last pass adds those the first one deferred.
func (part *resyncPass) staleFound(early bool) []string {
	r := part.run
	var stale []string
	for i := range r.view.items {
		if it := &r.view.items[i]; it.origin == kv.OriginNB && !it.used {
			stale = append(stale, it.key)
		}
	}
	if !early {
		for _, k := range r.staleDeferred {
			if n := r.g.node(k); n != nil && n.applied != nil && n.intent == nil && n.origin == kv.OriginNB && !n.removing {
				stale = append(stale, k)
			}
		}
	}
	return stale
}

// staleIntended is the first pass's treatment of the stale values that an
// intended value derives, and of the derived values of stale bases that
// the refresh could not read: it returns the stale keys left to decide,
// and the unread values (taken up as found) among them.
func (part *resyncPass) staleIntended(stale []string) ([]string, map[string]proto.Message) {
	r := part.run
	// What the intended values derive is adopted by the reconciliation,
	// not deleted first. One whose base exists is linked to it now
	// (adoptDerived), as if the base had been found with it: a re-create
	// of the base then deletes it first instead of pulling the base from
	// under it.
	intended := r.intendedDerived()
	var bases, derived []string
	stale = slices.DeleteFunc(stale, func(k string) bool {
		b := intended[k]
		if b != "" {
			bases = append(bases, b)
			derived = append(derived, k)
		}
		return b != ""
	})
	slices.Sort(bases)
	for _, b := range slices.Compact(bases) {
		if n := r.g.node(b); n != nil && n.applied != nil && n.origin == kv.OriginNB && !n.removing {
			r.adoptDerived(n)
		}
	}
	r.takeUnclaimedDerived(derived, intended)
	// The found version of a stale base says what it derives: those
	// values whose descriptor the refresh could not read are taken up
	// with it, as found, so that they go before it (a Delete of one that
	// turns out absent fails like any call: the base stays, FAILED, for
	// the next resync).
	unread := r.unreadDerived(stale, intended)
	return append(stale, slices.Sorted(maps.Keys(unread))...), unread
}

// takeStale takes the stale values into the graph as found: added are
// those new to it, taken those that dropStale decides on (the added, and
// late, those the first pass deferred).
func (part *resyncPass) takeStale(stale []string, unread map[string]proto.Message, early bool) (added, taken []*node) {
	r := part.run
	for _, key := range stale {
		value, meta := unread[key], any(nil)
		it := r.view.get(key)
		if it != nil {
			value, meta = it.value, it.meta
		}
		n := r.g.node(key)
		if n != nil && (n.applied != nil || n.intent != nil) {
			if !early && n.intent == nil && slices.Contains(r.staleDeferred, key) {
				taken = append(taken, n) // deferred by the first pass
			}
			continue // handled by the reconciliation
		}
		if n == nil {
			n = r.newNode(key, "")
		}
		if it != nil {
			it.used = true // decided: deleted, never adopted again in this run
		}
		r.mut(n)
		if n.base != "" && r.orphaned(n) {
			n.base = "" // a node left of a derived value: linked again below
		}
		n.applied, n.metadata, n.origin = value, meta, kv.OriginNB
		r.g.setDeps(n, nil, n.desc.Dependencies(key, value))
		r.g.setExisting(key, true)
		added = append(added, n)
		taken = append(taken, n)
	}
	return added, taken
}

// decideStale deletes a stale value taken up, or keeps it when neededBy (a
// value found and not decided that needs it) is set.
func (part *resyncPass) decideStale(n *node, neededBy string, early bool) {
	r := part.run
	switch {
	case n.base != "" && r.staleBase(n):
		// Goes with its base, stale too.
	case neededBy != "" && early:
		r.staleDeferred = append(r.staleDeferred, n.key) // decided last
	case neededBy != "":
		// Kept, and says why: deleting it would pull it from under a value
		// the scheduler could not decide on. A later resync decides again.
		r.mut(n)
		r.fail(n, OpDelete, fmt.Errorf("not deleted, %w: %s, found in the southbound and not decided, needs it",
			ErrStillNeeded, neededBy), r.nodeFlags(n)|FlagStale, n.applied, nil, true)
	default:
		r.reconcile(n.key) // its derived values go with it
	}
}

// takeUnclaimedDerived takes into the graph, as found, the values of ours
// that the refresh found and that an intended value derives (derived, with
// their bases in intended), whose base the graph does not hold applied
// (its descriptor could not be read, say): until the base's create derives
// them (and takes them as found), what they need must not go from under
// them, so a removal must find them among its dependents. The last pass
// of dropStale deletes those that no value derived in the end.
func (part *resyncPass) takeUnclaimedDerived(derived []string, intended map[string]string) {
	r := part.run
	slices.Sort(derived)
	for _, key := range derived {
		it := r.view.get(key)
		if it == nil || it.used {
			continue
		}
		if b := r.g.node(intended[key]); b != nil && b.applied != nil && !b.removing {
			continue // linked to it by adoptDerived
		}
		n := r.g.node(key)
		if n != nil && (n.applied != nil || n.intent != nil) {
			continue
		}
		if n == nil {
			if r.s.lookup(key) == nil {
				continue
			}
			n = r.newNode(key, "")
		} else if n.desc == nil {
			continue
		}
		it.used = true // taken: never adopted again in this run
		r.mut(n)
		n.applied, n.metadata, n.origin = it.value, it.meta, kv.OriginNB
		r.g.setDeps(n, n.deps, r.depsOfValue(n, it.value))
		r.g.setExisting(key, true)
		// Decided, and linked to its base when the base stays, by the
		// last pass.
		r.staleDeferred = append(r.staleDeferred, key)
		r.staleTaken = append(r.staleTaken, key)
	}
}

// unreadDerived returns the values that the found versions of the stale
// values in stale derive, through any number of levels (bounded by
// maxCycle), whose descriptor the refresh did not read (its Retrieve
// failed, or it has none), each as its base's found version derives it.
// Left out: keys the graph or the view knows, and those that the
// intended values derive.
func (part *resyncPass) unreadDerived(stale []string, intended map[string]string) map[string]proto.Message {
	r := part.run
	var out map[string]proto.Message
	var walk func(d kv.Descriptor, key string, value proto.Message, depth int)
	walk = func(d kv.Descriptor, key string, value proto.Message, depth int) {
		if d == nil || value == nil || depth > r.s.opts.maxCycle {
			return
		}
		for _, dv := range d.Derived(key, value) {
			dd := r.s.lookup(dv.Key)
			if dv.Key == "" || dv.Value == nil || dd == nil || r.view.refreshed[dd] || out[dv.Key] != nil ||
				r.view.get(dv.Key) != nil || r.g.node(dv.Key) != nil || intended[dv.Key] != "" {
				continue
			}
			if out == nil {
				out = map[string]proto.Message{}
			}
			out[dv.Key] = dv.Value
			walk(dd, dv.Key, dv.Value, depth+1)
		}
	}
	for _, key := range stale {
		n := r.g.node(key)
		if it := r.view.get(key); it != nil && (n == nil || n.applied == nil && n.intent == nil) {
			walk(r.s.lookup(key), key, it.value, 0)
		}
	}
	return out
}

// takeUnreadDerived takes up, before n is removed in a resync, the values
// that its applied version (the version found, for a value adopted in
// this run) derives, whose descriptor the refresh did not read and that
// the graph does not know: the found version of a base says what it has,
// so they are taken to exist, derived from n, and go before it (see
// unreadDerived for the stale values).
func (part *resyncPass) takeUnreadDerived(n *node) {
	r := part.run
	if n.desc == nil || n.applied == nil || n.origin != kv.OriginNB {
		return
	}
	for _, dv := range n.desc.Derived(n.key, n.applied) {
		dd := r.s.lookup(dv.Key)
		if dv.Key == "" || dv.Value == nil || dd == nil || r.view.refreshed[dd] || r.g.node(dv.Key) != nil {
			continue
		}
		r.mut(n)
		n.derived = append(slices.Clone(n.derived), dv.Key)
		dn := r.newNode(dv.Key, n.key)
		dn.applied = dv.Value
		r.g.setDeps(dn, nil, dd.Dependencies(dv.Key, dv.Value))
		r.g.setExisting(dv.Key, true)
		r.opFor(dn, Op{Key: dv.Key, Kind: OpNone, Value: dv.Value, Flags: FlagStale | r.nodeFlags(dn)})
	}
}

// staleBase reports whether the base of n, a stale value linked to it, is
// stale too (or gone already, with n).
func (part *resyncPass) staleBase(n *node) bool {
	r := part.run
	b := r.g.node(n.base)
	return b == nil || b.intent == nil
}

// linkStale links the stale values just taken up (added), those an
// earlier pass of the run took up that are still there (their delete
// failed), and the leftovers of earlier runs that the refresh found again,
// to a stale base among them: the base that derives them from the version
// found, or the one their descriptor's BaseOf names (a southbound may
// report a base without the field that derives). A base is then deleted
// only after what it derives, and stays when that cannot go.
func (part *resyncPass) linkStale(added, leftovers []*node) {
	r := part.run
	pool := make(map[string]*node, len(added)+len(leftovers)+len(r.staleTaken))
	for _, n := range added {
		pool[n.key] = n
	}
	for _, n := range leftovers {
		pool[n.key] = n
	}
	for _, k := range r.staleTaken {
		if n := r.g.node(k); n != nil && pool[k] == nil && n.applied != nil && n.intent == nil && n.origin == kv.OriginNB && !n.removing {
			pool[k] = n
		}
	}
	if len(pool) == 0 {
		return
	}
	link := r.linkDerived
	keys := slices.Sorted(maps.Keys(pool))
	for _, k := range keys {
		n := pool[k]
		for _, d := range n.desc.Derived(n.key, n.applied) {
			if dn := pool[d.Key]; dn != nil {
				link(dn, n)
			}
		}
	}
	for _, k := range keys {
		dn := pool[k]
		if dn.base != "" {
			continue
		}
		b := dn.desc.BaseOf(k)
		if n := pool[b]; n != nil {
			link(dn, n)
		} else if n := r.g.node(b); n != nil && n.desc != nil && n.applied != nil && n.origin == kv.OriginNB && !n.removing {
			// A base of ours that stays (intended, found as another
			// version, say): an update or re-create of it deletes the
			// value first, as it would one it derived.
			link(dn, n)
		}
	}
}

// linkDerived makes dn, a stale value with no base, a derived value of n:
// a removal, update or re-create of n then deletes it first.
func (part *resyncPass) linkDerived(dn, n *node) {
	r := part.run
	if dn == n || dn.base != "" || n.base == dn.key {
		return
	}
	r.mut(dn)
	dn.base = n.key
	r.mut(n)
	n.derived = append(slices.Clone(n.derived), dn.key)
}

// linkFoundDerived makes the values that n derives in the version a
// read-back found (the graph did not know it: its refresh failed) n's
// derived values where the southbound holds them: stale nodes with no
// base, and values the resync's refresh found that have no node yet. A
// removal or re-create of n then deletes them first.
func (part *resyncPass) linkFoundDerived(n *node) {
	r := part.run
	if n.desc == nil || n.applied == nil || n.origin != kv.OriginNB {
		return
	}
	for _, d := range n.desc.Derived(n.key, n.applied) {
		dn := r.g.node(d.Key)
		switch {
		case dn == nil:
			if r.view == nil {
				continue
			}
			it := r.view.get(d.Key)
			dd := r.s.lookup(d.Key)
			if it == nil || it.used || it.value == nil || dd == nil || it.origin != kv.OriginNB {
				continue
			}
			it.used = true
			r.mut(n)
			n.derived = append(slices.Clone(n.derived), d.Key)
			dn = r.newNode(d.Key, n.key)
			dn.applied, dn.metadata = it.value, it.meta
			r.g.setDeps(dn, nil, dd.Dependencies(d.Key, it.value))
			r.g.setExisting(d.Key, true)
			r.syncMetadata(dn)
			r.opFor(dn, Op{Key: d.Key, Kind: OpNone, Value: it.value, Flags: FlagStale | r.nodeFlags(dn)})
		case dn != n && dn.desc != nil && dn.applied != nil && !dn.removing && dn.base == "" && dn.intent == nil:
			r.linkDerived(dn, n)
		}
	}
}

// linkLeftover links n, when it is a stale value of ours that an earlier
// run failed to delete and whose base was unknown then (its Retrieve
// failed, say), to its base as its descriptor's BaseOf names it, when the
// graph knows that base as applied now: the base is then deleted only
// after it.
func (part *resyncPass) linkLeftover(n *node) {
	r := part.run
	if !r.leftover(n) {
		return
	}
	b := r.g.node(n.desc.BaseOf(n.key))
	if b != nil && b.desc != nil && b.applied != nil && b.origin == kv.OriginNB && !b.removing {
		r.linkDerived(n, b)
	}
}

// leftover reports whether n is a value of ours that nothing intends nor
// derives and that the southbound holds (as far as known): its delete
// failed.
func (part *resyncPass) leftover(n *node) bool {
	return n != nil && n.desc != nil && n.applied != nil && n.intent == nil && n.base == "" && n.origin == kv.OriginNB && !n.removing
}

// neededBy maps each key of stale that another value the refresh found
// depends on (plainly, or as a possible satisfier of an AnyOf dependency)
// to one such value. Early, every value found counts but the stale ones
// (they may need each other); late, only those still undecided (neither
// known to the graph nor adopted).
func (part *resyncPass) neededBy(stale []string, early bool) map[string]string {
	r := part.run
	isStale := make(map[string]bool, len(stale))
	for _, k := range stale {
		isStale[k] = true
	}
	needed := map[string]string{}
	for i := range r.view.items {
		it := &r.view.items[i]
		if isStale[it.key] || !early && (it.used || r.g.node(it.key) != nil) {
			continue
		}
		d := r.s.lookup(it.key)
		if d == nil {
			continue
		}
		for _, dep := range d.Dependencies(it.key, it.value) {
			if !dep.IsAnyOf() {
				if isStale[dep.Key] && needed[dep.Key] == "" {
					needed[dep.Key] = it.key
				}
				continue
			}
			for _, k := range stale {
				if needed[k] == "" && dep.AnyOf.Accepts(k) {
					needed[k] = it.key
				}
			}
		}
	}
	return needed
}

// neededByKept extends neededBy to what the stale values it keeps need in
// turn, among stale: their dependencies and their base. Deleting one would
// pull it from under a value that stays.
func (part *resyncPass) neededByKept(stale []string, neededBy map[string]string) {
	r := part.run
	if len(neededBy) == 0 {
		return
	}
	isStale := make(map[string]bool, len(stale))
	for _, k := range stale {
		isStale[k] = true
	}
	work := slices.Sorted(maps.Keys(neededBy))
	for len(work) > 0 {
		k := work[len(work)-1]
		work = work[:len(work)-1]
		it, d := r.view.get(k), r.s.lookup(k)
		if it == nil || d == nil {
			continue
		}
		mark := func(t string) {
			if isStale[t] && neededBy[t] == "" {
				neededBy[t] = k
				work = append(work, t)
			}
		}
		mark(d.BaseOf(k))
		for _, dep := range d.Dependencies(k, it.value) {
			if !dep.IsAnyOf() {
				mark(dep.Key)
				continue
			}
			for _, t := range stale {
				if dep.AnyOf.Accepts(t) {
					mark(t)
				}
			}
		}
	}
}

// syncMetadataMaps sets the metadata maps of the refreshed descriptors
// back to what the graph holds, after a dry run that refreshed them.
func (part *executor) syncMetadataMaps(view *sbView) {
	s := part.Scheduler
	sync := func(key string, d kv.Descriptor) {
		if d == nil || !d.WithMetadata() || !view.refreshed[d] {
			return
		}
		if n := s.g.node(key); n != nil && n.applied != nil {
			setMetadata(d, d.Label(key), n.metadata)
		} else {
			deleteMetadata(d, d.Label(key))
		}
	}
	for i := range view.items {
		sync(view.items[i].key, s.lookup(view.items[i].key))
	}
	for key, n := range s.g.all() {
		sync(key, n.desc)
	}
}

// reportAdopted records the values adopted with other contents than
// intended that no operation followed (they went PENDING, say), with the
// state they end the run in.
func (part *resyncPass) reportAdopted() {
	r := part.run
	if len(r.adopting) == 0 {
		return
	}
	for _, key := range slices.Sorted(maps.Keys(r.adopting)) {
		if n := r.g.node(key); n != nil {
			r.opFor(n, Op{Key: key, Kind: OpNone, Value: n.applied, Flags: r.nodeFlags(n)}) // opFor adds ADOPTED
		}
	}
}

// BaseOf guards the descriptor's BaseOf like its other functions (guard.go):
// a panic is logged and names no base; only linkStale calls it.
func (g *guard) BaseOf(key string) (base string) {
	defer func() {
		if p := recover(); p != nil {
			g.recovered(p, "BaseOf", key, false)
			base = ""
		}
	}()
	return g.Descriptor.BaseOf(key)
}
