package scheduler

import (
	"maps"
	"slices"
)

// publish makes visible what the job that is ending changed: the values
// the graph marked dirty, the index of existing keys, the history record
// e (nil: none), as transaction seq (0: the published number stays, and
// so do the values: a dry run changes none). It returns the statuses of
// the values that changed, for the watchers (nil when there are none).
// The caller holds s.mu.
func (s *jobs) publish(e *histEntry, seq uint64) []Status {
	g, v := s.g, s.view
	old := v.state.Load()
	st := *old
	pub := max(seq, old.seq)
	watch := s.watchers.active()
	var changed []string
	if pub > old.seq {
		changed = s.publishDirty(pub, watch)
	}
	switch {
	case !g.existingOn:
		st.existing = nil
	case st.existing == nil || st.gen != g.existingGen:
		st.existing, st.gen = g.existing.Clone(), g.existingGen
	}
	if e != nil {
		st.hist = v.hist.Add(e)
	}
	st.seq = pub
	v.state.Store(&st)
	v.trimAll(pub)

	g.dirty.Reset() // keeps a few chunks for the next job
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

// publishDirty publishes version pub of the nodes that the job changed,
// and returns the keys whose status changed (when watch is set).
func (s *jobs) publishDirty(pub uint64, watch bool) (changed []string) {
	g, v := s.g, s.view
	slab := recSlab{left: g.dirty.Len()}
	for _, dirty := range g.dirty.Chunks() {
		for _, n := range dirty {
			// A node in the graph holds its key's versions; for one
			// taken out, the key may have another node now, or none.
			key, slot := n.key, n.slot
			if n.state == REMOVED {
				slot, n = v.slots.entry(key)
			}
			var head *viewRec
			if slot != nil {
				head = slot.head.Load()
			}
			if head != nil && head.pub == pub {
				continue // listed twice
			}
			var rec *viewRec
			switch {
			case n != nil:
				rec = slab.next()
				setRec(rec, n, head, pub, &slab)
				if watch && (head == nil || head.gone() || rec.seq != head.seq || rec.state != head.state ||
					rec.applied() != head.applied() || rec.intent() != head.intent() || rec.lastOp != head.lastOp ||
					!sameValue(rec.lastErr(), head.lastErr())) {
					changed = append(changed, key)
				}
			case head != nil && !head.gone():
				rec = slab.next()
				rec.pub, rec.flags = pub, recGone
				if watch {
					changed = append(changed, key)
				}
			default:
				continue
			}
			if head == nil {
				slot.head.Store(rec) // the first version
				continue
			}
			rec.prev.Store(head)
			slot.head.Store(rec)
			v.retrim = append(v.retrim, retrimSlot{key, slot})
		}
	}
	return changed
}

// trimAll trims the keys with older versions, once pub is the published
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
	for _, t := range retrim {
		v.trim(t.key, t.slot, oldest)
	}
	clear(retrim)
	if cap(retrim) > 4096 {
		retrim = nil // a large job's: not kept
	}
	v.spare = retrim
}

// trim unlinks the versions of key that no reader at oldest or later
// needs, and takes the key out when all that is left is its deletion. A
// key whose versions are not down to one is trimmed again at the next
// publish.
func (v *view) trim(key string, slot *viewSlot, oldest uint64) {
	head := slot.head.Load()
	rec := head
	for rec != nil && rec.pub > oldest {
		rec = rec.prev.Load()
	}
	if rec != nil {
		rec.prev.Store(nil) // what is older than what oldest sees
	}
	switch {
	case rec == head && head.gone():
		v.slots.dropSlot(key, slot)
	case rec != head:
		v.retrim = append(v.retrim, retrimSlot{key, slot})
	}
}

// retrimSlot is a key whose older versions are to be trimmed again.
type retrimSlot struct {
	key  string
	slot *viewSlot
}

// publishDescriptors makes the registered descriptors visible. The caller
// holds s.mu.
func (s *jobs) publishDescriptors() {
	idx := s.index.Clone()
	st := *s.view.state.Load()
	st.descs, st.index = maps.Clone(s.descs), &idx
	s.view.state.Store(&st)
}
