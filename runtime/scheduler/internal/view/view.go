package view

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

// TrimAll trims the keys with old versions, once pub is the published
// state. A reader that registers from then on reads at pub (read checks
// the state after registering), so only the registered readers can need a
// version older than pub's.
func (v *View) TrimAll(pub uint64) {
	if len(v.Retrim) == 0 {
		return
	}
	oldest := pub
	if v.reading.Load() != 0 {
		for i := range v.readers {
			if r := v.readers[i].Load(); r != 0 && r-1 < oldest {
				oldest = r - 1
			}
		}
	}
	retrim := v.Retrim
	v.Retrim = v.spare[:0]
	for _, n := range retrim {
		if v.Slots.Trim(n, oldest) {
			v.Retrim = append(v.Retrim, n)
		}
	}
	clear(retrim)
	if cap(retrim) > 4096 {
		retrim = nil // a large job's: not kept
	}
	v.spare = retrim
}

// View is what readers see: the values as the last finished job left
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
type View struct {
	State atomic.Pointer[viewState]
	// Slots is the graph's map of nodes, which holds the saved versions
	// too.
	Slots *graph.NodeMap
	// readers hold the published numbers that readers read at, plus one
	// (0: free slot).
	readers [viewReaders]atomic.Uint64
	// reading counts the reads between read and done, so that a publish
	// with no reader skips looking at the slots.
	reading atomic.Int32

	// The worker's own: the history's buffer, the keys whose versions may
	// be trimmed at the next publish, and limits.
	Hist   History
	Retrim []*graph.Node
	// spare is the retrim list of the publish before, kept for its room.
	spare    []*graph.Node
	maxCycle int
}

// viewReaders is the number of reads that run at once without waiting
// (see read).
const viewReaders = 64

// viewState is what one publish makes visible at once.
type viewState struct {
	Seq uint64
	// Hist are the retained history entries, oldest first (never modified:
	// a later publish appends beyond len, or copies).
	Hist []*HistEntry
	// Existing is the graph's index of existing keys (a lazy copy-on-write
	// clone, read while the worker changes the original); nil while the
	// graph keeps none (no AnyOf dependency). gen is the graph's
	// existingGen it was cloned at.
	Existing *btree.BTreeG[string]
	Gen      uint64
	Descs    map[string]kv.Descriptor
	Index    *registry.Index
}

func NewView(slots *graph.NodeMap, hist History, maxCycle int) *View {
	idx := registry.New()
	v := &View{Slots: slots, Hist: hist, maxCycle: maxCycle}
	v.State.Store(&viewState{Descs: map[string]kv.Descriptor{}, Index: &idx})
	return v
}

// viewRead is a registered read of the view at one published state.
type viewRead struct {
	v    *View
	St   *viewState
	slot int
}

// Read registers a read at the published state; the caller calls done
// when it no longer looks at the view's versions. Until then no version
// the read may need is unlinked.
func (v *View) Read() viewRead {
	// Counted before registering: a publish that sees no read counted
	// after its store knows that every read to come reads its state.
	v.reading.Add(1)
	for spins := 0; ; spins++ {
		st := v.State.Load()
		for i := range v.readers {
			if !v.readers[i].CompareAndSwap(0, st.Seq+1) {
				continue
			}
			// Registered; valid if st is still the published state (a
			// publish that started before this store could not see it).
			for {
				now := v.State.Load()
				if now == st {
					return viewRead{v: v, St: st, slot: i}
				}
				st = now
				v.readers[i].Store(st.Seq + 1)
			}
		}
		if spins > 8 {
			time.Sleep(time.Microsecond) // all slots taken: wait for one
		} else {
			runtime.Gosched()
		}
	}
}

func (r viewRead) Done() {
	r.v.readers[r.slot].Store(0)
	r.v.reading.Add(-1)
}

// Get returns the version of key as of the read's state, or nil.
func (r viewRead) Get(key string) *graph.ViewRec { return r.v.Slots.Load(key, r.St.Seq) }

// Each calls fn for each value as of the read's state, in no order, until
// fn returns false.
func (r viewRead) Each(fn func(key string, rec *graph.ViewRec) bool) { r.v.Slots.Each(r.St.Seq, fn) }

// Status builds the status of key from its version r (nil: none); detail
// adds what a PENDING value waits for.
func (v viewRead) Status(key string, r *graph.ViewRec, detail bool) Status {
	if r == nil {
		return Status{Key: key, State: graph.NONEXISTENT}
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
	if de, ok := st.LastErr.(*DriftError); ok && (r.State == graph.DRIFTED || r.State == graph.MISSING) {
		st.Drift = de
	}
	if detail && r.State == graph.PENDING {
		deps := v.unmetDeps(key, r)
		st.Unmet = make([]UnmetDependency, len(deps))
		for i, d := range deps {
			u := describeUnmet(d)
			st.Unmet[i] = u
			// Nothing can create what no registered descriptor could
			// provide (a typo in a key, or a missing plugin): the value
			// would wait for it forever.
			switch {
			case v.providable(u):
			case u.Key != "":
				st.Details = append(st.Details, "no registered descriptor handles "+u.Key+": nothing can create it until one is registered")
			default:
				st.Details = append(st.Details, "no registered descriptor handles keys under "+strings.Join(u.AnyOf, ", ")+": nothing can satisfy "+u.Label+" until one is registered")
			}
		}
		if cycle := v.cycleThrough(key, r); len(cycle) > 0 {
			st.Details = append(st.Details, "dependency cycle: "+strings.Join(cycle, " -> "))
		}
	}
	return st
}

// providable reports whether a registered descriptor could provide u: its
// key is in a descriptor's key space, or a key space reaches under one of
// its AnyOf prefixes.
func (v viewRead) providable(u UnmetDependency) bool {
	if u.Key != "" {
		return v.St.Index.Lookup(u.Key) != nil
	}
	return slices.ContainsFunc(u.AnyOf, v.St.Index.Covers)
}

// unmetDeps returns the dependencies of r, the version of key, that are
// not satisfied.
func (v viewRead) unmetDeps(key string, r *graph.ViewRec) []*kv.Dependency {
	var out []*kv.Dependency
	deps := r.Deps(key)
	for i := range deps {
		d := &deps[i]
		switch {
		case !d.IsAnyOf():
			if t := v.Get(d.Key); t == nil || !t.Exists() {
				out = append(out, d)
			}
		case v.St.Existing != nil: // the graph keeps an index from the first AnyOf dependency on
			if graph.AnyOfInExcept(v.St.Existing, &d.AnyOf, nil) == "" {
				out = append(out, d)
			}
		case !v.someUnder(&d.AnyOf, (*graph.ViewRec).Exists):
			out = append(out, d)
		}
	}
	return out
}

// someUnder reports whether a value that ok accepts satisfies the AnyOf
// dependency a (a scan).
func (v viewRead) someUnder(a *kv.AnyOf, ok func(*graph.ViewRec) bool) (found bool) {
	v.Each(func(k string, r *graph.ViewRec) bool {
		found = ok(r) && a.Accepts(k)
		return !found
	})
	return found
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
			t := v.Get(d.Key)
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
