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
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/view"
)

// UnmetDependency is a dependency of a PENDING value that is not satisfied.
type UnmetDependency = view.UnmetDependency

// Status returns the status of key (State NONEXISTENT when unknown), as
// the last finished transaction left it.
func (s *Scheduler) Status(key string) Status {
	r := s.view.Read()
	defer r.Done()
	return r.Status(key, r.Get(key), true)
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
	r := s.view.Read()
	defer r.Done()
	var picked []graph.KeyRec
	r.Each(func(k string, rec *graph.ViewRec) bool {
		if keep(k, rec) {
			picked = append(picked, graph.KeyRec{Key: k, Rec: rec})
		}
		return true
	})
	slices.SortFunc(picked, func(a, b graph.KeyRec) int { return strings.Compare(a.Key, b.Key) })
	out := make([]Status, len(picked))
	for i, p := range picked {
		out[i] = r.Status(p.Key, p.Rec, true)
	}
	return out
}

// Origin is re-exported for callers that only import the scheduler.
type Origin = kv.Origin

// PendingReason explains why a value is PENDING: its unmet dependencies,
// each followed down to the root keys that are missing.
type PendingReason = view.PendingReason

// PendingDependency is one unmet dependency and what is known of its target.
type PendingDependency = view.PendingDependency

// WhyPending explains why key is PENDING. It returns false when key is not
// PENDING.
func (s *Scheduler) WhyPending(key string) (*PendingReason, bool) {
	v := s.view.Read()
	defer v.Done()
	r := v.WhyPending(key)
	return r, r != nil
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
