package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/registry"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/view"
)

// GraphSnapshot returns the graph of values as of the end of transaction
// seq, or now for seq 0. A past graph is rebuilt from the history: each
// value as its last operation up to seq left it, or as it was before its
// first operation after seq; seq must be within the history's retention.
// Edges are computed from the values with their descriptors.
func (s *Scheduler) GraphSnapshot(seq uint64) (*GraphSnapshot, error) {
	// The values are copied out of the view at one published state; the
	// rewind and the edges are worked out from the copy.
	r := s.view.Read()
	last := r.St.Seq
	if seq > last {
		r.Done()
		return nil, fmt.Errorf("scheduler: no transaction %d yet (the last is %d)", seq, last)
	}
	if seq == 0 {
		seq = last
	}
	ents := map[string]snapEntry{}
	r.Each(func(key string, rec *graph.ViewRec) bool {
		e := snapEntry{state: rec.State, value: rec.Intent(), meta: rec.M().Metadata, origin: rec.Origin, derived: rec.M().Base != "", err: rec.M().LastErr}
		if e.value == nil {
			e.value = rec.Applied()
		}
		ents[key] = e
		return true
	})
	r.Done()
	recs, idx := r.St.Hist, r.St.Index

	snap := &GraphSnapshot{Seq: seq}
	at := view.FindEntry(recs, seq)
	if seq < last {
		if at == nil {
			oldest := "the history is empty or off"
			if len(recs) > 0 {
				oldest = fmt.Sprintf("the oldest kept is %d", recs[0].Rec.Seq)
			}
			return nil, fmt.Errorf("scheduler: transaction %d is out of the history's retention (%s)", seq, oldest)
		}
		rewind(ents, recs, seq)
	}
	if at != nil {
		snap.Time = at.Rec.End
		snap.Touched = slices.Sorted(maps.Keys(setOf(at.Executed, func(o *view.HistOp) string { return o.Key })))
	}
	buildSnapshot(snap, ents, idx)
	return snap, nil
}

// snapEntry is one value of a snapshot being built.
type snapEntry struct {
	state   State
	value   proto.Message
	meta    any
	origin  kv.Origin
	derived bool
	err     error
}

func (e snapEntry) exists() bool {
	return e.state == CONFIGURED || e.state == OBTAINED || e.state == DISCOVERED
}

// rewind turns ents, the values now, into the values as of the end of
// transaction seq, using the retained records (oldest first).
func rewind(ents map[string]snapEntry, recs []*view.HistEntry, seq uint64) {
	// The keys changed after seq, with their first operation after it.
	firstAfter := map[string]histRef{}
	for _, rec := range recs {
		if rec.Rec.Seq <= seq {
			continue
		}
		for i := range rec.Executed {
			if o := &rec.Executed[i]; firstAfter[o.Key].o == nil {
				firstAfter[o.Key] = histRef{rec, o}
			}
		}
	}
	// Their last operation up to seq, if the history has it.
	lastUpTo := map[string]histRef{}
	for _, rec := range recs {
		if rec.Rec.Seq > seq {
			break
		}
		for i := range rec.Executed {
			if o := &rec.Executed[i]; firstAfter[o.Key].o != nil {
				lastUpTo[o.Key] = histRef{rec, o}
			}
		}
	}
	for key, first := range firstAfter {
		var e snapEntry
		var ok bool
		if o := lastUpTo[key]; o.o != nil {
			op := o.e.Op(o.o)
			e, ok = afterOp(&op)
		} else {
			op := first.e.Op(first.o)
			e, ok = beforeOp(&op)
		}
		if ok {
			ents[key] = e
		} else {
			delete(ents, key)
		}
	}
}

// afterOp is a value as an operation left it; false when it no longer
// existed.
func afterOp(o *Op) (snapEntry, bool) {
	e := snapEntry{state: o.State, value: o.Value, meta: o.Metadata, derived: o.Flags&FlagDerived != 0, err: o.Err}
	if o.State == OBTAINED || o.State == DISCOVERED {
		e.origin = kv.OriginSB
	} else {
		e.origin = kv.OriginNB
	}
	switch {
	case o.State == REMOVED || o.State == NONEXISTENT:
		return e, false
	case e.value == nil:
		e.value = o.PrevValue // deleted and PENDING, or MISSING: the value stays intended
	}
	return e, true
}

// beforeOp is a value as it was before an operation (the first the history
// has of it); false when it did not exist.
func beforeOp(o *Op) (snapEntry, bool) {
	e := snapEntry{derived: o.Flags&FlagDerived != 0, origin: kv.OriginNB}
	switch {
	case o.Kind == OpUpdate || o.Kind == OpDelete || o.Flags&FlagMissing != 0:
		e.state, e.value = CONFIGURED, o.PrevValue
		if o.Flags&FlagObtained != 0 {
			e.state, e.origin = OBTAINED, kv.OriginSB
		}
	case o.Flags&FlagNoop != 0:
		e.state, e.value = CONFIGURED, o.Value
	case o.Flags&FlagWasPending != 0:
		e.state, e.value = PENDING, o.Value
	default:
		return e, false
	}
	return e, true
}

// histRef is an operation of a history entry.
type histRef struct {
	e *view.HistEntry
	o *view.HistOp
}

// buildSnapshot fills the nodes and edges of snap from the values.
func buildSnapshot(snap *GraphSnapshot, ents map[string]snapEntry, idx *registry.Index) {
	keys := slices.Sorted(maps.Keys(ents))
	// The existing keys, sorted, resolve AnyOf dependencies.
	var existing []string
	for _, k := range keys {
		if ents[k].exists() {
			existing = append(existing, k)
		}
	}
	placeholders := map[string]bool{}
	for _, key := range keys {
		e := ents[key]
		d := idx.Lookup(key)
		gn := GraphNode{Key: key, Label: key, State: e.state, Origin: e.origin, Value: e.value, Metadata: e.meta,
			Derived: e.derived, Err: e.err}
		if d != nil {
			gn.Descriptor, gn.Label = d.Name(), d.Label(key)
		}
		snap.Nodes = append(snap.Nodes, gn)
		if d == nil || e.value == nil || e.state == INVALID || e.origin == kv.OriginSB {
			continue
		}
		for _, dep := range d.Dependencies(key, e.value) {
			if !dep.IsAnyOf() {
				t, known := ents[dep.Key]
				if !known {
					placeholders[dep.Key] = true
				}
				snap.Edges = append(snap.Edges, GraphEdge{From: key, To: dep.Key, Label: dep.Label, Kind: EdgeDependency, Met: known && t.exists()})
				continue
			}
			found := false
			for _, p := range dep.AnyOf.Prefixes {
				i, _ := slices.BinarySearch(existing, p)
				for ; i < len(existing) && strings.HasPrefix(existing[i], p); i++ {
					if dep.AnyOf.Match == nil || dep.AnyOf.Match(existing[i]) {
						found = true
						snap.Edges = append(snap.Edges, GraphEdge{From: key, To: existing[i], Label: dep.Label, Kind: EdgeAnyOf, Met: true})
					}
				}
			}
			if !found {
				ph := "any of " + strings.Join(dep.AnyOf.Prefixes, ", ")
				if dep.AnyOf.Describe != "" {
					ph += " (" + dep.AnyOf.Describe + ")"
				}
				placeholders[ph] = true
				snap.Edges = append(snap.Edges, GraphEdge{From: key, To: ph, Label: dep.Label, Kind: EdgeAnyOf})
			}
		}
		if e.exists() {
			for _, dv := range d.Derived(key, e.value) {
				if _, known := ents[dv.Key]; known {
					snap.Edges = append(snap.Edges, GraphEdge{From: key, To: dv.Key, Label: "derived", Kind: EdgeDerived, Met: true})
				}
			}
		}
	}
	for ph := range placeholders {
		snap.Nodes = append(snap.Nodes, GraphNode{Key: ph, Label: ph, State: NONEXISTENT, Placeholder: true})
	}
	slices.SortFunc(snap.Nodes, func(a, b GraphNode) int { return strings.Compare(a.Key, b.Key) })
	slices.SortStableFunc(snap.Edges, func(a, b GraphEdge) int {
		if c := strings.Compare(a.From, b.From); c != 0 {
			return c
		}
		return strings.Compare(a.To, b.To)
	})
}
