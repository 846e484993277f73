package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"strings"

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
	nodes := map[string]GraphNode{}
	r.Each(func(key string, rec *graph.ViewRec) bool {
		n := GraphNode{State: rec.State, Value: rec.Intent(), Metadata: rec.M().Metadata, Origin: rec.Origin, Derived: rec.M().Base != "", Err: rec.M().LastErr}
		if n.Value == nil {
			n.Value = rec.Applied()
		}
		nodes[key] = n
		return true
	})
	r.Done()
	recs := r.St.Hist

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
		rewind(nodes, recs, seq)
	}
	if at != nil {
		snap.Time = at.Rec.End
		snap.Touched = slices.Sorted(maps.Keys(setOf(at.Executed, func(o *view.HistOp) string { return o.Key })))
	}
	buildSnapshot(snap, nodes, r.St.Index)
	return snap, nil
}

func exists(st State) bool { return st == CONFIGURED || st == OBTAINED || st == DISCOVERED }

// rewind turns nodes, the values now, into the values as of the end of
// transaction seq, from the retained records (oldest first): a value that
// an operation after seq changed is as its last operation up to seq left
// it, or, when the history has none, as it was before its first operation
// after seq.
func rewind(nodes map[string]GraphNode, recs []*view.HistEntry, seq uint64) {
	type then struct {
		n               GraphNode
		exists, settled bool
	}
	was := map[string]then{}
	for i := len(recs) - 1; i >= 0; i-- { // newest first
		e := recs[i]
		for j := len(e.Executed) - 1; j >= 0; j-- {
			h := &e.Executed[j]
			t, changed := was[h.Key]
			if e.Rec.Seq <= seq && (!changed || t.settled) {
				continue
			}
			o := e.Op(h)
			if e.Rec.Seq > seq {
				t.n, t.exists = beforeOp(&o)
			} else {
				t.n, t.exists = afterOp(&o)
				t.settled = true
			}
			was[h.Key] = t
		}
	}
	for key, t := range was {
		if t.exists {
			nodes[key] = t.n
		} else {
			delete(nodes, key)
		}
	}
}

// afterOp is a value as an operation left it; false when it no longer
// existed.
func afterOp(o *Op) (GraphNode, bool) {
	n := GraphNode{State: o.State, Value: o.Value, Metadata: o.Metadata, Derived: o.Flags&FlagDerived != 0, Err: o.Err, Origin: kv.OriginNB}
	if o.State == OBTAINED || o.State == DISCOVERED {
		n.Origin = kv.OriginSB
	}
	if n.Value == nil {
		n.Value = o.PrevValue // deleted and PENDING, or MISSING: the value stays intended
	}
	return n, o.State != REMOVED && o.State != NONEXISTENT
}

// beforeOp is a value as it was before an operation (the first the history
// has of it); false when it did not exist.
func beforeOp(o *Op) (GraphNode, bool) {
	n := GraphNode{Derived: o.Flags&FlagDerived != 0, Origin: kv.OriginNB}
	switch {
	case o.Kind == OpUpdate || o.Kind == OpDelete || o.Flags&FlagMissing != 0:
		n.State, n.Value = CONFIGURED, o.PrevValue
		if o.Flags&FlagObtained != 0 {
			n.State, n.Origin = OBTAINED, kv.OriginSB
		}
	case o.Flags&FlagNoop != 0:
		n.State, n.Value = CONFIGURED, o.Value
	case o.Flags&FlagWasPending != 0:
		n.State, n.Value = PENDING, o.Value
	default:
		return n, false
	}
	return n, true
}

// buildSnapshot fills the nodes and edges of snap from the values.
func buildSnapshot(snap *GraphSnapshot, nodes map[string]GraphNode, idx *registry.Index) {
	keys := slices.Sorted(maps.Keys(nodes))
	// The existing keys, sorted, resolve AnyOf dependencies.
	var existing []string
	for _, k := range keys {
		if exists(nodes[k].State) {
			existing = append(existing, k)
		}
	}
	placeholders := map[string]bool{}
	for _, key := range keys {
		e := nodes[key]
		e.Key, e.Label = key, key
		d := idx.Lookup(key)
		if d != nil {
			e.Descriptor, e.Label = d.Name(), d.Label(key)
		}
		snap.Nodes = append(snap.Nodes, e)
		if d == nil || e.Value == nil || e.State == INVALID || e.Origin == kv.OriginSB {
			continue
		}
		for _, dep := range d.Dependencies(key, e.Value) {
			if !dep.IsAnyOf() {
				t, known := nodes[dep.Key]
				if !known {
					placeholders[dep.Key] = true
				}
				snap.Edges = append(snap.Edges, GraphEdge{From: key, To: dep.Key, Label: dep.Label, Kind: EdgeDependency, Met: known && exists(t.State)})
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
		if exists(e.State) {
			for _, dv := range d.Derived(key, e.Value) {
				if _, known := nodes[dv.Key]; known {
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
