package scheduler

import (
	"maps"
	"slices"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
)

// publish makes visible what the job that is ending changed: the values
// the graph marked dirty, the index of existing keys, the history record
// e (nil: none), as transaction seq (0: the published number stays, and
// so do the values: a dry run changes none, its nodes are back as they
// were). It returns the statuses of the values that changed, for the
// watchers (nil when there are none). The caller holds s.mu.
func (s *jobs) publish(e *histEntry, seq uint64) []Status {
	g, v := s.g, s.view
	old := v.state.Load()
	st := *old
	pub := max(seq, old.seq)
	changed := s.publishDirty(pub, pub > old.seq && s.watchers.active())
	switch {
	case !g.ExistingOn:
		st.existing = nil
	case st.existing == nil || st.gen != g.ExistingGen:
		st.existing, st.gen = g.Existing.Clone(), g.ExistingGen
	}
	if e != nil {
		st.hist = v.hist.Add(e)
	}
	st.seq = pub
	v.state.Store(&st)
	v.trimAll(pub)

	g.Dirty.Reset() // keeps a few chunks for the next job
	if len(changed) == 0 {
		return nil
	}
	slices.Sort(changed)
	changed = slices.Compact(changed)
	r := v.read()
	defer r.done()
	out := make([]Status, len(changed))
	for i, key := range changed {
		st := r.status(key, true)
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
			olds, diff := v.slots.Publish(n, pub, watch)
			if diff {
				changed = append(changed, n.Key)
			}
			if olds {
				v.retrim = append(v.retrim, n)
			}
		}
	}
	return changed
}

// trimAll trims the keys with old versions, once pub is the published
// state. A reader that registers from then on reads at pub (read checks
// the state after registering), so only the registered readers can need a
// version older than pub's.
func (v *view) trimAll(pub uint64) {
	if len(v.retrim) == 0 {
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
	retrim := v.retrim
	v.retrim = v.spare[:0]
	for _, n := range retrim {
		if v.slots.Trim(n, oldest) {
			v.retrim = append(v.retrim, n)
		}
	}
	clear(retrim)
	if cap(retrim) > 4096 {
		retrim = nil // a large job's: not kept
	}
	v.spare = retrim
}

// publishDescriptors makes the registered descriptors visible. The caller
// holds s.mu.
func (s *jobs) publishDescriptors() {
	idx := s.index.Clone()
	st := *s.view.state.Load()
	st.descs, st.index = maps.Clone(s.descs), &idx
	s.view.state.Store(&st)
}
