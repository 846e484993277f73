package scheduler

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/guard"
)

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
	node *graph.Node
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
func (s *executor) refresh(ctx context.Context, j *job) (*sbView, []KeyError) {
	view := &sbView{index: make(map[string]int32, s.g.Nodes.Len()), items: make([]sbItem, 0, s.g.Nodes.Len()),
		refreshed: map[kv.Descriptor]bool{}, added: s.g.Added}
	var errs []KeyError
	correlate := s.correlate(j)
	for _, d := range s.retrieveOrder {
		items, err := s.retrieveGuarded(ctx, d, "", correlate[d])
		if err != nil {
			errs = append(errs, KeyError{Key: d.KeyPrefix(), Op: OpRetrieve, Err: fmt.Errorf("descriptor %s: %w", d.Name(), err)})
			s.opts.logger.Warn("retrieve failed; the descriptor keeps its view of the southbound", "descriptor", d.Name(), "error", err)
			if _, was := s.blind[d]; !was {
				put(&s.blind, d, nil)
			}
			continue
		}
		view.refreshed[d] = true
		delete(s.blind, d)
		put(&s.seen, d, true)
		withMeta := d.WithMetadata()
		var asked map[string]bool // correlate[d]'s keys, built when an item needs it
		for i, it := range items {
			reason := ""
			_, dup := view.index[it.Key] // key spaces are disjoint: a duplicate is this descriptor's
			n := s.g.Node(it.Key)        // nil for "": no node has an empty key
			switch {
			case it.Key == "":
				reason = "empty key"
			case it.Value == nil || !it.Value.ProtoReflect().IsValid():
				reason = "no value"
			case dup:
				reason = "duplicate key"
			case (n == nil || n.Desc != d) && s.lookup(it.Key) != d:
				// (Only a key new to the graph is matched: one it holds as
				// d's was matched when taken up, and key spaces do not change.)
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
				if n != nil && n.Applied != nil && n.Origin != kv.OriginSB {
					origin = kv.OriginNB
				} else {
					if asked == nil { // built once needed
						asked = setOf(correlate[d], func(c *kv.Item[string, proto.Message, any]) string { return c.Key })
					}
					if asked[it.Key] {
						origin = kv.OriginNB
					}
				}
			}
			view.index[it.Key] = int32(len(view.items))
			view.items = append(view.items, sbItem{key: it.Key, value: it.Value, meta: meta, origin: origin, node: n})
			if withMeta {
				guard.SetMetadata(d, d.Label(it.Key), meta)
			}
		}
		if withMeta {
			// Ours that the southbound no longer has lose their metadata
			// (they are MISSING); obtained ones keep theirs.
			for _, it := range correlate[d] {
				if _, seen := view.index[it.Key]; !seen {
					if n := s.g.Node(it.Key); n != nil && n.Applied != nil {
						guard.DeleteMetadata(d, d.Label(it.Key))
					}
				}
			}
		}
	}
	return view, errs
}

// correlate returns, per descriptor, the values the scheduler expects the
// southbound to hold, in no particular order: the applied version of each
// value of ours (of one of unknown outcome, the version the call was
// about), else its intended one (for a full resync, the
// transaction's values replace the intended state, their derived values
// included).
func (s *executor) correlate(j *job) map[kv.Descriptor][]kv.Item[string, proto.Message, any] {
	full := j.kind == FullResyncTxn
	// One pass collects every item with the index of its descriptor
	// (few: found by a short scan), then the items are moved in place
	// into per-descriptor runs of the same array, cut in per-descriptor
	// slices: one allocation of the graph's size, where appending per
	// descriptor regrew each slice (a downstream resync allocated twice
	// as much), and a copy into a second array allocated as much again.
	var descs []kv.Descriptor
	last := -1
	items := make([]kv.Item[string, proto.Message, any], 0, s.g.Nodes.Len())
	which := make([]int32, 0, s.g.Nodes.Len())
	for key, n := range s.g.All() {
		it, ok := expectedItem(key, n, !full)
		if !ok && len(s.g.Unsure) != 0 && s.g.Unsure[key] != nil && n.Desc != nil && n.Origin != kv.OriginSB {
			// Of unknown outcome: the southbound may hold what we applied.
			it, ok = kv.Item[string, proto.Message, any]{Key: key, Value: s.g.Unsure[key], Metadata: n.Metadata, Origin: kv.OriginNB}, true
		}
		if !ok {
			continue
		}
		if last < 0 || descs[last] != n.Desc {
			if last = slices.Index(descs, n.Desc); last < 0 {
				last = len(descs)
				descs = append(descs, n.Desc)
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

// expectedItem is what the scheduler expects the southbound to hold for n,
// when n is one of ours: its applied version, else (with intents) its
// valid intended one.
func expectedItem(key string, n *graph.Node, intents bool) (kv.Item[string, proto.Message, any], bool) {
	switch {
	case n.Desc == nil || n.Origin == kv.OriginSB:
	case n.Applied != nil:
		return kv.Item[string, proto.Message, any]{Key: key, Value: n.Applied, Metadata: n.Metadata, Origin: kv.OriginNB}, true
	case n.Intent != nil && n.InvalidErr() == nil && intents:
		return kv.Item[string, proto.Message, any]{Key: key, Value: n.Intent, Origin: kv.OriginNB}, true
	}
	return kv.Item[string, proto.Message, any]{}, false
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
func (s *executor) correlateFull(j *job, out map[kv.Descriptor][]kv.Item[string, proto.Message, any]) {
	added := map[string]bool{}
	add := func(_, key string, value proto.Message, d kv.Descriptor) bool {
		n := s.g.Node(key)
		if n != nil {
			d = n.Desc
		}
		if value == nil || d == nil || added[key] || kv.ValidateInput(d, key, value) != nil {
			return false // (what the spec computes is checked when it is set)
		}
		if n == nil || n.Applied == nil && s.g.Unsure[key] == nil || n.Origin == kv.OriginSB {
			// (one of unknown outcome is correlated by the version that
			// may be there: see correlate)
			added[key] = true
			out[d] = append(out[d], kv.Item[string, proto.Message, any]{Key: key, Value: value, Origin: kv.OriginNB})
		}
		return true
	}
	for _, it := range append(slices.Clip(j.items), j.opts.rareOr().remembered...) {
		if d := s.lookup(it.Key); add("", it.Key, it.Value, d) {
			walkDerived(s.Scheduler, d, it.Key, it.Value, add)
		}
	}
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

// syncMetadataMaps sets the metadata maps of the refreshed descriptors
// back to what the graph holds, after a dry run that refreshed them.
func (s *executor) syncMetadataMaps(view *sbView) {
	sync := func(key string, d kv.Descriptor) {
		if d == nil || !d.WithMetadata() || !view.refreshed[d] {
			return
		}
		if n := s.g.Node(key); n != nil && n.Applied != nil {
			guard.SetMetadata(d, d.Label(key), n.Metadata)
		} else {
			guard.DeleteMetadata(d, d.Label(key))
		}
	}
	for i := range view.items {
		sync(view.items[i].key, s.lookup(view.items[i].key))
	}
	for key, n := range s.g.All() {
		sync(key, n.Desc)
	}
}

// Southbound reads what the southbound holds for a descriptor through its
// Retrieve, correlated as a resync correlates (the values of ours the
// scheduler knows: applied, else intended), and returns it as Retrieve
// reported it; nothing changes. It runs on the worker between
// transactions, so that Retrieve never runs beside a transaction's calls,
// guarded and bounded by the call timeout like every call out. It waits
// for the transactions queued before it; ctx bounds the wait.
func (s *Scheduler) Southbound(ctx context.Context, descriptor string) ([]kv.Item[string, proto.Message, any], error) {
	if ctx == nil {
		return nil, errNilContext("southbound")
	}
	d, ok := s.view.State.Load().Descs[descriptor]
	if !ok {
		return nil, fmt.Errorf("scheduler: no descriptor %q", descriptor)
	}
	if !d.CanRetrieve() {
		return nil, fmt.Errorf("scheduler: descriptor %s cannot Retrieve", descriptor)
	}
	var items []kv.Item[string, proto.Message, any]
	var err error
	j := &job{kind: DownstreamResyncTxn, ctx: ctx, done: make(chan *Result, 1)}
	j.read = func() {
		var correlate []kv.Item[string, proto.Message, any]
		for key, n := range s.g.All() {
			if it, ok := expectedItem(key, n, true); ok && n.Desc == d {
				correlate = append(correlate, it)
			}
		}
		items, err = s.retrieveGuarded(ctx, d, "", correlate)
	}
	if err := s.enqueue(j); err != nil {
		return nil, err
	}
	select {
	case r := <-j.done:
		if r.Err != nil {
			return nil, r.Err
		}
		return items, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
