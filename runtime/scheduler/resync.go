package scheduler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// sbView is the southbound as a refresh found it: what each descriptor's
// Retrieve returned, checked. Only the keys of refreshed descriptors are
// known; the others keep the scheduler's view.
type sbView struct {
	items map[string]sbItem
	// refreshed are the descriptors whose Retrieve succeeded.
	refreshed map[kv.Descriptor]bool
}

type sbItem struct {
	value  proto.Message
	meta   any
	origin kv.Origin
}

// retrieveOrder orders the descriptors that can Retrieve so that each comes
// after those named in its RetrieveDependencies (ties by name). A cycle is
// an error naming its members. Names of unregistered descriptors are
// ignored: they may be registered later.
func retrieveOrder(ds []kv.Descriptor) ([]kv.Descriptor, error) {
	byName := map[string]kv.Descriptor{}
	for _, d := range ds {
		byName[d.Name()] = d
	}
	names := slices.Sorted(maps.Keys(byName))
	const (
		unvisited = iota
		visiting
		done
	)
	mark := map[string]int{}
	var order []kv.Descriptor
	var path []string
	var visit func(name string) error
	visit = func(name string) error {
		switch mark[name] {
		case done:
			return nil
		case visiting:
			i := slices.Index(path, name)
			return fmt.Errorf("RetrieveDependencies form a cycle: %s", strings.Join(append(slices.Clone(path[i:]), name), " -> "))
		}
		mark[name] = visiting
		path = append(path, name)
		deps := slices.Clone(byName[name].RetrieveDependencies())
		slices.Sort(deps)
		for _, dep := range deps {
			if _, ok := byName[dep]; ok {
				if err := visit(dep); err != nil {
					return err
				}
			}
		}
		path = path[:len(path)-1]
		mark[name] = done
		if d := byName[name]; d.CanRetrieve() {
			order = append(order, d)
		}
		return nil
	}
	for _, name := range names {
		if err := visit(name); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// refresh reads the southbound through each descriptor's Retrieve, in
// RetrieveDependencies order, and returns the checked view. Metadata maps
// are updated as each descriptor is read, so that a later Retrieve can
// resolve what an earlier one found (a route's interface by its index).
// A failed Retrieve is an error of the transaction; its descriptor keeps
// the scheduler's view. The caller holds s.mu.
func (s *Scheduler) refresh(ctx context.Context, j *job) (*sbView, []KeyError) {
	view := &sbView{items: map[string]sbItem{}, refreshed: map[kv.Descriptor]bool{}}
	var errs []KeyError
	correlate := s.correlate(j)
	for _, d := range s.retrieveOrder {
		start := time.Now()
		items, err := d.Retrieve(ctx, correlate[d])
		if s.opts.observer != nil {
			s.opts.observer.OpDone(d.Name(), OpRetrieve, time.Since(start), err)
		}
		if err != nil {
			errs = append(errs, KeyError{Key: d.KeyPrefix(), Op: OpRetrieve, Err: fmt.Errorf("descriptor %s: %w", d.Name(), err)})
			s.opts.logger.Warn("retrieve failed; the descriptor keeps its view of the southbound", "descriptor", d.Name(), "error", err)
			continue
		}
		view.refreshed[d] = true
		seen := map[string]bool{}
		for i, it := range items {
			reason := ""
			switch {
			case it.Key == "":
				reason = "empty key"
			case it.Value == nil || !it.Value.ProtoReflect().IsValid():
				reason = "no value"
			case seen[it.Key]:
				reason = "duplicate key"
			case s.lookup(it.Key) != d:
				reason = "the key is outside the descriptor's key space"
			}
			if reason != "" {
				s.opts.logger.Warn("retrieve: item dropped", "descriptor", d.Name(), "item", i, "key", it.Key, "reason", reason)
				continue
			}
			seen[it.Key] = true
			view.items[it.Key] = sbItem{value: it.Value, meta: it.Metadata, origin: it.Origin}
			if d.WithMetadata() {
				d.SetMetadata(d.Label(it.Key), it.Metadata)
			}
		}
		if d.WithMetadata() {
			// Ours that the southbound no longer has lose their metadata
			// (they are MISSING); obtained ones keep theirs.
			for _, it := range correlate[d] {
				if n := s.g.nodes[it.Key]; !seen[it.Key] && n != nil && n.applied != nil {
					d.DeleteMetadata(d.Label(it.Key))
				}
			}
		}
	}
	return view, errs
}

// correlate returns, per descriptor, the values the scheduler expects the
// southbound to hold: the applied version of each value of ours, else its
// intended one (for a full resync, the transaction's values replace the
// intended state, their derived values included).
func (s *Scheduler) correlate(j *job) map[kv.Descriptor][]kv.Item[proto.Message, any] {
	out := map[kv.Descriptor][]kv.Item[proto.Message, any]{}
	add := map[string]kv.Item[proto.Message, any]{}
	for key, n := range s.g.nodes {
		if n.desc == nil || n.origin == kv.OriginSB {
			continue
		}
		switch {
		case n.applied != nil:
			add[key] = kv.Item[proto.Message, any]{Key: key, Value: n.applied, Metadata: n.metadata, Origin: kv.OriginNB}
		case n.intent != nil && n.invalid == nil && j.kind != FullResyncTxn:
			add[key] = kv.Item[proto.Message, any]{Key: key, Value: n.intent, Origin: kv.OriginNB}
		}
	}
	if j.kind == FullResyncTxn {
		var walk func(key string, value proto.Message, depth int)
		walk = func(key string, value proto.Message, depth int) {
			d := s.lookup(key)
			if d == nil || value == nil || depth > s.opts.maxCycle || d.Validate(key, value) != nil {
				return
			}
			if _, applied := add[key]; !applied {
				add[key] = kv.Item[proto.Message, any]{Key: key, Value: value, Origin: kv.OriginNB}
			}
			for _, dv := range d.Derived(key, value) {
				walk(dv.Key, dv.Value, depth+1)
			}
		}
		for _, it := range j.items {
			walk(it.Key, it.Value, 0)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(add)) {
		if d := s.lookup(key); d != nil {
			out[d] = append(out[d], add[key])
		}
	}
	return out
}

// resync runs a resync job: the intended state replaced (full, upstream),
// the refreshed view of the southbound applied (full, downstream), and
// every value reconciled with it.
func (r *run) resync(j *job) {
	// The values whose intent changes, in order, are reconciled first: a
	// re-create or a delete goes before what the view asks to repair.
	var intents []string
	if j.kind == FullResyncTxn || j.kind == UpstreamResyncTxn {
		keep := make(map[string]bool, len(j.items))
		for _, it := range j.items {
			keep[it.Key] = true
		}
		for _, key := range r.g.sortedKeys() {
			if n := r.g.nodes[key]; n != nil && n.base == "" && n.intent != nil && !keep[key] {
				r.setIntent(key, nil)
				intents = append(intents, key)
			}
		}
		for _, it := range j.items {
			var prev proto.Message
			if n := r.g.nodes[it.Key]; n != nil {
				prev = n.intent
			}
			r.setIntent(it.Key, it.Value)
			if prev == nil || it.Value == nil || !proto.Equal(prev, it.Value) {
				intents = append(intents, it.Key)
			}
		}
	}
	var repairs []string
	if r.view != nil {
		repairs = r.applyView()
	}
	// Then what the view changed (values to create again or to update
	// back), then everything: values out of line with their target
	// (failed ones, say) are brought back too.
	for _, key := range intents {
		r.reconcile(key)
	}
	for _, key := range repairs {
		r.reconcile(key)
	}
	for _, key := range r.g.sortedKeys() {
		r.reconcile(key)
	}
	if r.view != nil {
		r.dropStale()
	}
}

// sortedKeys returns the keys of the graph in order: a resync visits them
// in the same order when it plans and when it executes.
func (g *graph) sortedKeys() []string {
	return slices.Sorted(maps.Keys(g.nodes))
}

// applyView brings the graph's view of the southbound in line with what
// the refresh found, for the refreshed descriptors, and returns the keys
// it changed. No call is made: values of ours that are missing are marked
// MISSING (and created again by the reconciliation that follows), values
// found with other contents are taken as applied (and updated back), values
// intended and found are adopted (applied, with no Create), values not ours
// become OBTAINED. Values of ours that are no longer intended (stale) are
// left to dropStale.
func (r *run) applyView() []string {
	v := r.view
	keys := map[string]bool{}
	for key, n := range r.g.nodes {
		if n.desc != nil && v.refreshed[n.desc] {
			keys[key] = true
		}
	}
	for key := range v.items {
		keys[key] = true
	}
	var changed []string
	if r.viewUsed == nil {
		r.viewUsed = map[string]bool{}
	}
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		n := r.g.nodes[key]
		it, seen := v.items[key]
		if n != nil {
			// Decided here: never adopted on create, never stale.
			r.viewUsed[key] = true
		}
		switch {
		case n == nil:
			if seen && it.origin != kv.OriginNB {
				r.observe(r.newNode(key, ""), it.value, it.meta, OBTAINED)
			}
		case n.origin == kv.OriginSB:
			if seen && n.base == "" && !proto.Equal(n.applied, it.value) {
				r.observe(n, it.value, it.meta, OBTAINED)
			}
		case n.applied != nil && !seen:
			if n.desc != nil && v.refreshed[n.desc] {
				r.markMissing(n)
				changed = append(changed, key)
			}
		case n.applied != nil:
			if !n.desc.Equivalent(key, n.applied, it.value) {
				r.mut(n)
				n.applied, n.metadata = it.value, it.meta
				r.g.setDeps(n, n.deps, n.desc.Dependencies(key, it.value))
				r.syncMetadata(n)
				changed = append(changed, key)
			} else if !metaEqual(n.metadata, it.meta) {
				r.mut(n)
				n.metadata = it.meta
				r.syncMetadata(n)
			}
		case seen && n.intent != nil:
			r.adopt(n, it)
			changed = append(changed, key)
		}
	}
	return changed
}

// metaEqual compares metadata, which may be of an incomparable type.
func metaEqual(a, b any) (eq bool) {
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
func (r *run) markMissing(n *node) {
	prev := n.applied
	r.mut(n)
	n.applied, n.metadata, n.state, n.lastErr = nil, nil, MISSING, nil
	r.g.setDeps(n, n.deps, nil)
	r.g.setExisting(n.key, false)
	r.syncMetadata(n)
	r.opFor(n, Op{Key: n.key, Kind: OpNone, PrevValue: prev, Flags: FlagMissing | r.nodeFlags(n)})
	for _, k := range n.derived {
		if dn := r.g.nodes[k]; dn != nil && dn.applied != nil && dn.origin != kv.OriginSB && !r.view.refreshed[dn.desc] {
			r.markMissing(dn)
		}
	}
}

// adopt takes a value found in the southbound as the applied version of
// n, intended and not applied: the reconciliation that follows finds it
// equal to the intent (no call) or updates it.
func (r *run) adopt(n *node, it sbItem) {
	if r.viewUsed == nil {
		r.viewUsed = map[string]bool{}
	}
	r.viewUsed[n.key] = true
	r.mut(n)
	n.applied, n.metadata, n.origin = it.value, it.meta, kv.OriginNB
	r.g.setDeps(n, n.deps, n.desc.Dependencies(n.key, it.value))
	r.g.setExisting(n.key, true)
	r.syncMetadata(n)
	if n.intent != nil && n.invalid == nil && n.desc.Equivalent(n.key, it.value, n.intent) {
		n.state, n.lastErr = CONFIGURED, nil
		if r.viewFresh == nil {
			r.viewFresh = map[string]bool{}
		}
		r.viewFresh[n.key] = true
	}
	r.opFor(n, Op{Key: n.key, Kind: OpNone, Value: it.value, Flags: FlagAdopted | r.nodeFlags(n)})
}

// adoptOnCreate is create's look into the refreshed view: a value about
// to be created that the southbound holds already (a derived value of a
// base adopted in this resync, say) is adopted instead. It reports whether
// it handled n.
func (r *run) adoptOnCreate(n *node) bool {
	if r.view == nil || n.desc == nil || r.viewUsed[n.key] {
		return false // adopted once already (a re-create), or decided
	}
	it, seen := r.view.items[n.key]
	if !r.view.refreshed[n.desc] {
		// A derived value whose descriptor cannot Retrieve is taken to
		// exist when its base was found as intended: it is regenerated
		// from the base, not created.
		if n.base == "" || !r.viewFresh[n.base] || n.intent == nil {
			return false
		}
		it, seen = sbItem{value: n.intent, origin: kv.OriginNB}, true
	}
	if !seen {
		return false
	}
	r.adopt(n, it)
	r.derive(n)
	r.triggerDependents(n.key)
	r.reconcile(n.key)
	return true
}

// dropStale deletes what the refresh found of ours (claimed by its
// descriptor, or applied by us before) that nothing intends any more.
func (r *run) dropStale() {
	for _, key := range slices.Sorted(maps.Keys(r.view.items)) {
		it := r.view.items[key]
		if it.origin != kv.OriginNB || r.viewUsed[key] {
			continue
		}
		n := r.g.nodes[key]
		if n != nil && (n.applied != nil || n.intent != nil) {
			continue // handled by the reconciliation
		}
		if n == nil {
			n = r.newNode(key, "")
		}
		r.mut(n)
		n.applied, n.metadata, n.origin = it.value, it.meta, kv.OriginNB
		r.g.setDeps(n, nil, n.desc.Dependencies(key, it.value))
		r.g.setExisting(key, true)
		r.opFor(n, Op{Key: key, Kind: OpNone, Value: it.value, Flags: FlagStale | r.nodeFlags(n)})
		r.reconcile(key)
	}
}

// syncMetadataMaps sets the metadata maps of the refreshed descriptors
// back to what the graph holds, after a dry run that refreshed them.
func (s *Scheduler) syncMetadataMaps(view *sbView) {
	sync := func(key string, d kv.Descriptor) {
		if d == nil || !d.WithMetadata() || !view.refreshed[d] {
			return
		}
		if n := s.g.nodes[key]; n != nil && n.applied != nil {
			d.SetMetadata(d.Label(key), n.metadata)
		} else {
			d.DeleteMetadata(d.Label(key))
		}
	}
	for key := range view.items {
		sync(key, s.lookup(key))
	}
	for key, n := range s.g.nodes {
		sync(key, n.desc)
	}
}
