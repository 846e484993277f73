package scheduler

import (
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/btree"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/registry"
)

// view is what readers see: the values as the last finished job left
// them, the retained history and the registered descriptors. Readers
// never wait for a transaction: the only lock they take is one shard of
// the key map (nodeMap) at a time, for reading, to look at a value or to
// copy a shard's values out; the worker takes a shard only to add or
// remove a key, or to mark a node as changing or published, so it waits
// at most for that.
//
// Readers see the graph's nodes themselves: no value is copied while it
// does not change. Before the worker first changes a node in a job, it
// saves what readers see of it as a version of its key and marks the node
// as changing (nodeMap.freeze); the job's publish marks each node it
// changed as seen from the job's transaction on (node.live), then one
// atomic store publishes that transaction, with its history and index of
// existing keys (viewState). A reader registers the number it reads at
// (read) and sees, for each key, its node if published at or before that
// number, else the newest saved version not newer: a transaction's values
// appear at once, and a read sees one state. Saved versions are dropped
// once no registered reader needs them (trim).
type view struct {
	state atomic.Pointer[viewState]
	// slots is the graph's map of nodes, which holds the saved versions
	// too.
	slots *graph.NodeMap
	// readers hold the published numbers that readers read at, plus one
	// (0: free slot).
	readers [viewReaders]atomic.Uint64
	// reading counts the reads between read and done, so that a publish
	// with no reader skips looking at the slots.
	reading atomic.Int32

	// The worker's own: the history's buffer, the keys whose versions may
	// be trimmed at the next publish, and limits.
	hist   history
	retrim []*graph.Node
	// spare is the retrim list of the publish before, kept for its room.
	spare    []*graph.Node
	maxCycle int
}

// viewReaders is the number of reads that run at once without waiting
// (see read).
const viewReaders = 64

// viewState is what one publish makes visible at once.
type viewState struct {
	seq uint64
	// hist are the retained history entries, oldest first (never modified:
	// a later publish appends beyond len, or copies).
	hist []*histEntry
	// existing is the graph's index of existing keys (a lazy copy-on-write
	// clone, read while the worker changes the original); nil while the
	// graph keeps none (no AnyOf dependency). gen is the graph's
	// existingGen it was cloned at.
	existing *btree.BTreeG[string]
	gen      uint64
	descs    map[string]kv.Descriptor
	index    *registry.Index
}

func newView(slots *graph.NodeMap, hist history, maxCycle int) *view {
	idx := registry.New()
	v := &view{slots: slots, hist: hist, maxCycle: maxCycle}
	v.state.Store(&viewState{descs: map[string]kv.Descriptor{}, index: &idx})
	return v
}

// viewRead is a registered read of the view at one published state.
type viewRead struct {
	v    *view
	st   *viewState
	slot int
}

// read registers a read at the published state; the caller calls done
// when it no longer looks at the view's versions. Until then no version
// the read may need is unlinked.
func (v *view) read() viewRead {
	// Counted before registering: a publish that sees no read counted
	// after its store knows that every read to come reads its state.
	v.reading.Add(1)
	for spins := 0; ; spins++ {
		st := v.state.Load()
		for i := range v.readers {
			if !v.readers[i].CompareAndSwap(0, st.seq+1) {
				continue
			}
			// Registered; valid if st is still the published state (a
			// publish that started before this store could not see it).
			for {
				now := v.state.Load()
				if now == st {
					return viewRead{v: v, st: st, slot: i}
				}
				st = now
				v.readers[i].Store(st.seq + 1)
			}
		}
		if spins > 8 {
			time.Sleep(time.Microsecond) // all slots taken: wait for one
		} else {
			runtime.Gosched()
		}
	}
}

func (r viewRead) done() {
	r.v.readers[r.slot].Store(0)
	r.v.reading.Add(-1)
}

// get returns the version of key as of the read's state, or nil.
func (r viewRead) get(key string) *graph.ViewRec { return r.v.slots.Load(key, r.st.seq) }

// each calls fn for each value as of the read's state, in no order, until
// fn returns false.
func (r viewRead) each(fn func(key string, rec *graph.ViewRec) bool) { r.v.slots.Each(r.st.seq, fn) }

// status builds the status of key.
func (v viewRead) status(key string, detail bool) Status { return v.statusOf(key, v.get(key), detail) }

// statusOf builds the status of key from its version r (nil: none).
func (v viewRead) statusOf(key string, r *graph.ViewRec, detail bool) Status {
	if r == nil {
		return Status{Key: key, State: NONEXISTENT}
	}
	st := Status{
		Key: key, State: r.State, Origin: r.Origin, Value: r.Val, Applied: r.Applied(), Metadata: r.M().Metadata,
		Base: r.M().Base, LastOp: r.LastOp, LastErr: r.M().LastErr, Seq: r.Seq, Intended: r.Flags&graph.RecIntent != 0,
	}
	if r.Desc != nil {
		st.Descriptor = r.Desc.Name()
	}
	if d := r.M().Derived; len(d) > 0 {
		st.Derived = slices.Clone(d)
	}
	if de, ok := st.LastErr.(*DriftError); ok && (r.State == DRIFTED || r.State == MISSING) {
		st.Drift = de
	}
	if detail && r.State == PENDING {
		st.Unmet = v.unmet(key, r)
		st.Details = v.unprovidable(st.Unmet)
		if cycle := v.cycleThrough(key, r); len(cycle) > 0 {
			st.Details = append(st.Details, "dependency cycle: "+strings.Join(cycle, " -> "))
		}
	}
	return st
}

// unprovidable says, for each unmet dependency that no registered
// descriptor could ever provide, that nothing can create it until such a
// descriptor is registered (a typo in a key, or a missing plugin): the
// value would wait for it forever.
func (v viewRead) unprovidable(unmet []UnmetDependency) []string {
	var out []string
	for _, u := range unmet {
		switch {
		case v.providable(u):
		case u.Key != "":
			out = append(out, "no registered descriptor handles "+u.Key+": nothing can create it until one is registered")
		default:
			out = append(out, "no registered descriptor handles keys under "+strings.Join(u.AnyOf, ", ")+": nothing can satisfy "+u.Label+" until one is registered")
		}
	}
	return out
}

// providable reports whether a registered descriptor could provide u: its
// key is in a descriptor's key space, or a key space reaches under one of
// its AnyOf prefixes.
func (v viewRead) providable(u UnmetDependency) bool {
	if u.Key != "" {
		return v.st.index.Lookup(u.Key) != nil
	}
	return slices.ContainsFunc(u.AnyOf, v.st.index.Covers)
}

// unmet lists the unmet dependencies of r.
func (v viewRead) unmet(key string, r *graph.ViewRec) []UnmetDependency {
	deps := v.unmetDeps(key, r)
	out := make([]UnmetDependency, len(deps))
	for i, d := range deps {
		out[i] = describeUnmet(d)
	}
	return out
}

// unmetDeps returns the dependencies of r, the version of key, that are
// not satisfied.
func (v viewRead) unmetDeps(key string, r *graph.ViewRec) []*kv.Dependency {
	var out []*kv.Dependency
	deps := r.Deps(key)
	for i := range deps {
		d := &deps[i]
		if d.IsAnyOf() {
			if v.anyOfSatisfied(&d.AnyOf) == "" {
				out = append(out, d)
			}
		} else if t := v.get(d.Key); t == nil || !t.Exists() {
			out = append(out, d)
		}
	}
	return out
}

// anyOfSatisfied returns an existing key that satisfies the AnyOf
// dependency, or "".
func (v viewRead) anyOfSatisfied(a *kv.AnyOf) (found string) {
	if v.st.existing == nil {
		// No index (the graph keeps one from the first AnyOf dependency
		// on): scan.
		v.each(func(k string, r *graph.ViewRec) bool {
			if r.Exists() && a.Accepts(k) {
				found = k
			}
			return found == ""
		})
		return found
	}
	return graph.AnyOfIn(v.st.existing, a)
}

// cycleThrough returns a dependency cycle through key over values that do
// not exist (key first and last), or nil.
func (v viewRead) cycleThrough(key string, r *graph.ViewRec) []string {
	seen := map[string]bool{key: true}
	var path []string
	var dfs func(k string, m *graph.ViewRec) bool
	dfs = func(k string, m *graph.ViewRec) bool {
		path = append(path, k)
		deps := m.Deps(k)
		for i := range deps {
			d := &deps[i]
			if d.IsAnyOf() {
				continue
			}
			if d.Key == key {
				path = append(path, key)
				return true
			}
			t := v.get(d.Key)
			if t == nil || t.Exists() || seen[d.Key] || len(seen) > v.v.maxCycle {
				continue
			}
			seen[d.Key] = true
			if dfs(d.Key, t) {
				return true
			}
		}
		path = path[:len(path)-1]
		return false
	}
	if dfs(key, r) {
		return path
	}
	return nil
}
