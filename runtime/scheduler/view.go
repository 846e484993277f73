package scheduler

import (
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/btree"
	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/guard"
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
	slots *nodeMap
	// readers hold the published numbers that readers read at, plus one
	// (0: free slot).
	readers [viewReaders]atomic.Uint64
	// reading counts the reads between read and done, so that a publish
	// with no reader skips looking at the slots.
	reading atomic.Int32

	// The worker's own: the history's buffer, the keys whose versions may
	// be trimmed at the next publish, and limits.
	hist   history
	retrim []*node
	// spare is the retrim list of the publish before, kept for its room.
	spare    []*node
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

// viewRec is one version of a value: the node's fields readers need,
// saved while the node changes, or copied out for a reader. It is kept
// small: the intended and the applied value are held once when they are
// the same message (a configured value), and what most values lack sits
// apart in more.
type viewRec struct {
	// desc is the value's descriptor (every registered one is a guard; a
	// pointer, so that a version is 64 bytes), nil when none handles it.
	desc *guard.Guard
	// val is the intended value, or the applied one when nothing is
	// intended (see flags).
	val  proto.Message
	more *viewMore
	// seq is the value's last change, pub the transaction that published
	// this version; prev is the version before (read and written under
	// the shard's lock).
	seq, pub uint64
	prev     *viewRec
	state    State
	origin   kv.Origin
	lastOp   OpKind
	flags    recFlags
}

// recFlags say which values a version holds, and where.
type recFlags uint8

const (
	recIntent  recFlags = 1 << iota // val is the intended value
	recApplied                      // something is applied: val, or more.applied
	recSplit                        // the applied value differs from the intended one: more.applied
	recGone                         // the value was removed in transaction pub
)

// viewMore is what a version holds that most values lack; versions share
// it while it does not change.
type viewMore struct {
	base    string
	derived []string
	lastErr error
	// applied is the applied value when it differs from the intended one.
	applied  proto.Message
	metadata any
}

func (r *viewRec) intent() proto.Message {
	if r.flags&recIntent == 0 {
		return nil
	}
	return r.val
}

func (r *viewRec) applied() proto.Message {
	switch {
	case r.flags&recApplied == 0:
		return nil
	case r.flags&recSplit != 0:
		return r.more.applied
	}
	return r.val
}

func (r *viewRec) gone() bool { return r.flags&recGone != 0 }

// deps returns the dependencies of the intended value of key while it
// does not exist or is PENDING (what readers look at: what is unmet,
// cycles), else nil. They are computed again from the value, as the
// graph did (the descriptor's Dependencies is a function of the key and
// the value), rather than kept with every version.
func (r *viewRec) deps(key string) []kv.Dependency {
	if r.desc == nil || r.flags&recIntent == 0 || r.state == INVALID || r.exists() && r.state != PENDING {
		return nil
	}
	return r.desc.Dependencies(key, r.val)
}

func (r *viewRec) exists() bool { return r.flags&recApplied != 0 }

func newView(slots *nodeMap, hist history, maxCycle int) *view {
	idx := registry.New()
	v := &view{slots: slots, hist: hist, maxCycle: maxCycle}
	v.state.Store(&viewState{descs: map[string]kv.Descriptor{}, index: &idx})
	return v
}

// setRec makes r a version of n published by transaction pub; old is its
// previous version (nil: none), whose viewMore is kept when nothing in it
// changed. A new viewMore comes from slab.
func setRec(r *viewRec, n *node, old *viewRec, pub uint64, slab *recSlab) {
	r.desc, r.flags = guard.GuardOf(n.desc), 0
	r.seq, r.pub, r.state, r.origin, r.lastOp = n.seq, pub, n.state, n.origin, n.lastOp
	var applied proto.Message // held in more: it differs from the intent
	switch {
	case n.intent != nil:
		r.val, r.flags = n.intent, recIntent
		if n.applied != nil {
			r.flags |= recApplied
			if n.applied != n.intent {
				r.flags |= recSplit
				applied = n.applied
			}
		}
	case n.applied != nil:
		r.val, r.flags = n.applied, recApplied
	}
	if n.base != "" || len(n.derived) > 0 || n.lastErr != nil || applied != nil || n.metadata != nil {
		if m := old.m(); m != &noMore && m.base == n.base && sameValue(m.lastErr, n.lastErr) &&
			sameKeys(m.derived, n.derived) && m.applied == applied && sameValue(m.metadata, n.metadata) {
			r.more = m
		} else {
			r.more = slab.nextMore()
			*r.more = viewMore{base: n.base, derived: n.derived, lastErr: n.lastErr, applied: applied, metadata: n.metadata}
		}
	}
}

// m returns what r holds in more (zero when it has no more).
func (r *viewRec) m() *viewMore {
	if r == nil || r.more == nil {
		return &noMore
	}
	return r.more
}

var noMore viewMore

// recSlab hands out versions, and their viewMores, from arrays of up
// to a few hundred: one allocation for many values.
type recSlab struct {
	free []viewRec
	left int // versions still to hand out, at most
	more []viewMore
}

// next returns a version; nextMore a viewMore for the version handed out
// last (not every version needs one: the arrays are sized for those still
// to come, the version being made included).
func (s *recSlab) next() *viewRec      { s.left--; return take(&s.free, s.left+1) }
func (s *recSlab) nextMore() *viewMore { return take(&s.more, s.left+1) }

// take hands out the first element of free, an array of n made when it
// is empty.
func take[T any](free *[]T, n int) *T {
	if len(*free) == 0 {
		*free = make([]T, max(1, min(n, 256)))
	}
	p := &(*free)[0]
	*free = (*free)[1:]
	return p
}

// sameKeys reports whether a and b are the same slice (a node's lists are
// replaced, never modified, when they change).
func sameKeys(a, b []string) bool { return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) }

// sameValue reports whether a and b are identical interface values (the
// same metadata or error, say); a value of a type that is not comparable
// is never the same, and comparing it does not panic.
func sameValue(a, b any) bool {
	if a == nil || b == nil {
		return a == b // no comparison that can panic
	}
	return sameNonNil(a, b)
}

func sameNonNil(a, b any) (eq bool) {
	defer func() { _ = recover() }() // incomparable: eq stays false
	return a == b
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
func (r viewRead) get(key string) *viewRec { return r.v.slots.load(key, r.st.seq) }

// each calls fn for each value as of the read's state, in no order, until
// fn returns false.
func (r viewRead) each(fn func(key string, rec *viewRec) bool) { r.v.slots.each(r.st.seq, fn) }

// status builds the status of key.
func (v viewRead) status(key string, detail bool) Status { return v.statusOf(key, v.get(key), detail) }

// statusOf builds the status of key from its version r (nil: none).
func (v viewRead) statusOf(key string, r *viewRec, detail bool) Status {
	if r == nil {
		return Status{Key: key, State: NONEXISTENT}
	}
	st := Status{
		Key: key, State: r.state, Origin: r.origin, Value: r.val, Applied: r.applied(), Metadata: r.m().metadata,
		Base: r.m().base, LastOp: r.lastOp, LastErr: r.m().lastErr, Seq: r.seq, Intended: r.flags&recIntent != 0,
	}
	if r.desc != nil {
		st.Descriptor = r.desc.Name()
	}
	if d := r.m().derived; len(d) > 0 {
		st.Derived = slices.Clone(d)
	}
	if de, ok := st.LastErr.(*DriftError); ok && (r.state == DRIFTED || r.state == MISSING) {
		st.Drift = de
	}
	if detail && r.state == PENDING {
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
func (v viewRead) unmet(key string, r *viewRec) []UnmetDependency {
	deps := v.unmetDeps(key, r)
	out := make([]UnmetDependency, len(deps))
	for i, d := range deps {
		out[i] = describeUnmet(d)
	}
	return out
}

// unmetDeps returns the dependencies of r, the version of key, that are
// not satisfied.
func (v viewRead) unmetDeps(key string, r *viewRec) []*kv.Dependency {
	var out []*kv.Dependency
	deps := r.deps(key)
	for i := range deps {
		d := &deps[i]
		if d.IsAnyOf() {
			if v.anyOfSatisfied(&d.AnyOf) == "" {
				out = append(out, d)
			}
		} else if t := v.get(d.Key); t == nil || !t.exists() {
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
		v.each(func(k string, r *viewRec) bool {
			if r.exists() && a.Accepts(k) {
				found = k
			}
			return found == ""
		})
		return found
	}
	return anyOfIn(v.st.existing, a)
}

// cycleThrough returns a dependency cycle through key over values that do
// not exist (key first and last), or nil.
func (v viewRead) cycleThrough(key string, r *viewRec) []string {
	seen := map[string]bool{key: true}
	var path []string
	var dfs func(k string, m *viewRec) bool
	dfs = func(k string, m *viewRec) bool {
		path = append(path, k)
		deps := m.deps(k)
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
			if t == nil || t.exists() || seen[d.Key] || len(seen) > v.v.maxCycle {
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
