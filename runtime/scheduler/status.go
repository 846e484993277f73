package scheduler

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
)

// UnmetDependency is a dependency of a PENDING value that is not satisfied.
type UnmetDependency struct {
	Label string
	// Key is the missing key of a plain dependency.
	Key string
	// AnyOf are the prefixes of an AnyOf dependency, and Match describes
	// its predicate.
	AnyOf []string
	Match string
}

func (u UnmetDependency) String() string {
	if u.Key != "" {
		return u.Label + " -> " + u.Key
	}
	s := u.Label + " -> any of " + strings.Join(u.AnyOf, ", ")
	if u.Match != "" {
		s += " (" + u.Match + ")"
	}
	return s
}

// Status returns the status of key (State NONEXISTENT when unknown), as
// the last finished transaction left it.
func (s *Scheduler) Status(key string) Status {
	r := s.view.read()
	defer r.done()
	return r.status(key, true)
}

// Statuses returns the statuses of the keys starting with prefix ("" for
// all), sorted by key.
func (s *Scheduler) Statuses(prefix string) []Status {
	return s.statuses(func(key string, _ *graph.ViewRec) bool { return strings.HasPrefix(key, prefix) })
}

// DescriptorStatuses returns the statuses of the keys of one descriptor,
// sorted by key.
func (s *Scheduler) DescriptorStatuses(name string) []Status {
	return s.statuses(func(_ string, r *graph.ViewRec) bool { return r.Desc != nil && r.Desc.Name() == name })
}

// statuses returns the statuses of the values keep accepts, sorted by
// key. The values are picked and sorted first, as keys and versions, and
// each status is built once, in its place: no second lookup of a key, and
// no moving of statuses around. (The read is released even if an AnyOf
// predicate panics.)
func (s *Scheduler) statuses(keep func(string, *graph.ViewRec) bool) []Status {
	r := s.view.read()
	defer r.done()
	var picked []graph.KeyRec
	r.each(func(k string, rec *graph.ViewRec) bool {
		if keep(k, rec) {
			picked = append(picked, graph.KeyRec{Key: k, Rec: rec})
		}
		return true
	})
	slices.SortFunc(picked, func(a, b graph.KeyRec) int { return strings.Compare(a.Key, b.Key) })
	out := make([]Status, len(picked))
	for i, p := range picked {
		out[i] = r.statusOf(p.Key, p.Rec, true)
	}
	return out
}

func describeUnmet(d *kv.Dependency) UnmetDependency {
	if d.IsAnyOf() {
		return UnmetDependency{Label: d.Label, AnyOf: d.AnyOf.Prefixes, Match: d.AnyOf.Describe}
	}
	return UnmetDependency{Label: d.Label, Key: d.Key}
}

// Origin is re-exported for callers that only import the scheduler.
type Origin = kv.Origin

// PendingReason explains why a value is PENDING: its unmet dependencies,
// each followed down to the root keys that are missing.
type PendingReason struct {
	Key   string
	State State
	Unmet []PendingDependency
	// Cycle lists the members of a dependency cycle the value is part of,
	// when that cycle cannot be created as a unit.
	Cycle []string
}

// PendingDependency is one unmet dependency and what is known of its target.
type PendingDependency struct {
	UnmetDependency
	// State is the state of the missing key (plain dependencies).
	State State
	// Intended tells whether the missing key (or, for AnyOf, some key under
	// its prefixes) is in the intended state at all.
	Intended bool
	// Providable tells whether a registered descriptor handles the key (or
	// keys under the prefixes): false means nothing could ever create it.
	Providable bool
	// Cause explains why the target is missing when it is itself PENDING.
	// A dependency with no Cause is a root of the chain.
	Cause *PendingReason
}

// WhyPending explains why key is PENDING. It returns false when key is not
// PENDING.
func (s *Scheduler) WhyPending(key string) (*PendingReason, bool) {
	v := s.view.read()
	defer v.done()
	r := v.whyPending(key)
	return r, r != nil
}

// whyPending explains why key is PENDING.
func (v viewRead) whyPending(key string) *PendingReason {
	return v.why(key, map[string]bool{})
}

func (v viewRead) why(key string, visiting map[string]bool) *PendingReason {
	n := v.get(key)
	if n == nil || n.State != PENDING {
		return nil
	}
	visiting[key] = true
	defer delete(visiting, key)
	r := &PendingReason{Key: key, State: n.State, Cycle: v.cycleThrough(key, n)}
	for _, d := range v.unmetDeps(key, n) {
		u := describeUnmet(d)
		pd := PendingDependency{UnmetDependency: u, Providable: v.providable(u)}
		if u.Key != "" {
			if t := v.get(u.Key); t != nil {
				pd.State = t.State
				pd.Intended = t.Intent() != nil
				if t.State == PENDING && !visiting[u.Key] {
					pd.Cause = v.why(u.Key, visiting)
				}
			}
		} else {
			pd.Intended = v.intendedUnder(&d.AnyOf)
		}
		r.Unmet = append(r.Unmet, pd)
	}
	return r
}

// intendedUnder reports whether some intended value would satisfy the
// AnyOf dependency once it exists.
func (v viewRead) intendedUnder(a *kv.AnyOf) (found bool) {
	v.each(func(k string, r *graph.ViewRec) bool {
		found = r.Intent() != nil && a.Accepts(k)
		return !found
	})
	return found
}

// Roots returns the root dependencies of the chain: those with no Cause.
func (r *PendingReason) Roots() []PendingDependency {
	var out []PendingDependency
	for _, d := range r.Unmet {
		if d.Cause != nil {
			out = append(out, d.Cause.Roots()...)
		} else {
			out = append(out, d)
		}
	}
	return out
}

// String renders the chain as an indented tree, e.g.
//
//	route/r1 is PENDING
//	  interface -> iface/eth0: PENDING, intended
//	    iface/eth0 is PENDING
//	      bridge -> bd/b1: NONEXISTENT, not intended, a descriptor handles it
func (r *PendingReason) String() string {
	var b strings.Builder
	r.write(&b, "")
	return b.String()
}

func (r *PendingReason) write(b *strings.Builder, indent string) {
	fmt.Fprintf(b, "%s%s is %s", indent, r.Key, r.State)
	if len(r.Cycle) > 0 {
		fmt.Fprintf(b, " (dependency cycle: %s)", strings.Join(r.Cycle, " -> "))
	}
	b.WriteByte('\n')
	for _, d := range r.Unmet {
		b.WriteString(indent + "  " + d.UnmetDependency.String() + ": ")
		if d.Key != "" {
			b.WriteString(d.State.String() + ", ")
		}
		intended, handles := "intended", "a"
		if !d.Intended {
			intended = "not intended"
		}
		if !d.Providable {
			handles = "no"
		}
		fmt.Fprintf(b, "%s, %s descriptor handles it\n", intended, handles)
		if d.Cause != nil {
			d.Cause.write(b, indent+"    ")
		}
	}
}

// Watcher receives the status of matching values after every transaction
// that changed them. Delivery never blocks the scheduler: when the channel
// is full the update is dropped and counted in Dropped, so a watcher that
// sees Dropped grow should re-read what it needs with Status.
type Watcher struct {
	// C delivers the statuses; closed by Close and by Scheduler.Close.
	C       <-chan Status
	ch      chan Status
	sel     func(key string) bool
	dropped atomic.Uint64
	set     *watcherSet
}

// Dropped returns the number of updates dropped because C was full.
func (w *Watcher) Dropped() uint64 { return w.dropped.Load() }

// Close stops the watcher and closes C.
func (w *Watcher) Close() { w.set.remove(w) }

// Watch returns a watcher of the keys the selector accepts (nil: all keys;
// a selector that panics accepts nothing, and the panic is logged).
// buffer is the channel's capacity; 0 takes the scheduler's default.
func (s *Scheduler) Watch(selector func(key string) bool, buffer int) *Watcher {
	if buffer <= 0 {
		buffer = s.opts.watchBuffer
	}
	ch := make(chan Status, buffer)
	w := &Watcher{C: ch, ch: ch, sel: selector, set: &s.watchers}
	s.watchers.add(w)
	return w
}

// KeyPrefix returns a selector of the keys that start with prefix.
func KeyPrefix(prefix string) func(key string) bool {
	return func(key string) bool { return strings.HasPrefix(key, prefix) }
}

type watcherSet struct {
	logger *slog.Logger
	mu     sync.RWMutex
	list   []*Watcher
	n      atomic.Int32
	closed bool
}

func (ws *watcherSet) active() bool { return ws.n.Load() > 0 }

func (ws *watcherSet) add(w *Watcher) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		close(w.ch)
		return
	}
	ws.list = append(ws.list, w)
	ws.n.Add(1)
}

func (ws *watcherSet) remove(w *Watcher) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for i, x := range ws.list {
		if x == w {
			ws.list = append(ws.list[:i], ws.list[i+1:]...)
			ws.n.Add(-1)
			close(w.ch)
			return
		}
	}
}

func (ws *watcherSet) closeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, w := range ws.list {
		close(w.ch)
	}
	ws.list = nil
	ws.n.Store(0)
	ws.closed = true
}

// selects reports whether w's selector accepts key; a selector that
// panics accepts nothing (the panic is logged).
func (ws *watcherSet) selects(w *Watcher, key string) (ok bool) {
	defer func() {
		if p := recover(); p != nil { // ok stays false
			if ws.logger != nil {
				ws.logger.Error("recovered a panic of a watcher's selector; the update is not delivered to it", "key", key, "panic", fmt.Sprint(p))
			}
		}
	}()
	return w.sel(key)
}

// deliver sends statuses to the matching watchers without blocking.
func (ws *watcherSet) deliver(statuses []Status) {
	if len(statuses) == 0 {
		return
	}
	ws.mu.RLock()
	defer ws.mu.RUnlock()
	for _, w := range ws.list {
		for _, st := range statuses {
			if w.sel != nil && !ws.selects(w, st.Key) {
				continue
			}
			select {
			case w.ch <- st:
			default:
				w.dropped.Add(1)
			}
		}
	}
}
