package scheduler

import (
	"maps"
	"slices"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/view"
)

// publish makes visible what the job that is ending changed: the values
// the graph marked dirty, the index of existing keys, the history record
// e (nil: none), as transaction seq (0: the published number stays, and
// so do the values: a dry run changes none, its nodes are back as they
// were). It returns the statuses of the values that changed, for the
// watchers (nil when there are none). The caller holds s.mu.
func (s *jobs) publish(e *view.HistEntry, seq uint64) []Status {
	g, v := s.g, s.view
	old := v.State.Load()
	st := *old
	pub := max(seq, old.Seq)
	changed := s.publishDirty(pub, pub > old.Seq && s.watchers.active())
	switch {
	case !g.ExistingOn:
		st.Existing = nil
	case st.Existing == nil || st.Gen != g.ExistingGen:
		st.Existing, st.Gen = g.Existing.Clone(), g.ExistingGen
	}
	if e != nil {
		st.Hist = v.Hist.Add(e)
	}
	st.Seq = pub
	v.State.Store(&st)
	v.TrimAll(pub)

	g.Dirty.Reset() // keeps a few chunks for the next job
	if len(changed) == 0 {
		return nil
	}
	slices.Sort(changed)
	changed = slices.Compact(changed)
	r := v.Read()
	defer r.Done()
	out := make([]Status, len(changed))
	for i, key := range changed {
		st := r.Status(key, r.Get(key), true)
		if st.State == NONEXISTENT {
			st.State = REMOVED
		}
		out[i] = st
	}
	return out
}

// publishDirty publishes the nodes that the job changed as of
// transaction pub, and returns the keys whose status changed (when watch
// is set).
func (s *jobs) publishDirty(pub uint64, watch bool) (changed []string) {
	g, v := s.g, s.view
	for _, dirty := range g.Dirty.Chunks() {
		for _, n := range dirty {
			if n.Live.Load() != graph.InFlux {
				continue // listed twice
			}
			olds, diff := v.Slots.Publish(n, pub, watch)
			if diff {
				changed = append(changed, n.Key)
			}
			if olds {
				v.Retrim = append(v.Retrim, n)
			}
		}
	}
	return changed
}

// publishDescriptors makes the registered descriptors visible. The caller
// holds s.mu.
func (s *jobs) publishDescriptors() {
	idx := s.index.Clone()
	st := *s.view.State.Load()
	st.Descs, st.Index = maps.Clone(s.descs), &idx
	s.view.State.Store(&st)
}
