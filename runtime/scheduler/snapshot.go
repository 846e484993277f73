package scheduler

import (
	"cmp"
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
	r := s.view.Read() // the values copied out at one published state
	last := r.St.Seq
	if seq > last {
		r.Done()
		return nil, fmt.Errorf("scheduler: no transaction %d yet (the last is %d)", seq, last)
	}
	if seq == 0 {
		seq = last
	}
	var now []graph.KeyRec
	r.Each(func(key string, rec *graph.ViewRec) bool {
		now = append(now, graph.KeyRec{Key: key, Rec: rec})
		return true
	})
	r.Done()
	recs := r.St.Hist
	snap := &GraphSnapshot{Seq: seq}
	at := view.FindEntry(recs, seq)
	if seq < last && at == nil {
		oldest := "the history is empty or off"
		if len(recs) > 0 {
			oldest = fmt.Sprintf("the oldest kept is %d", recs[0].Rec.Seq)
		}
		return nil, fmt.Errorf("scheduler: transaction %d is out of the history's retention (%s)", seq, oldest)
	}
	nodes := rewind(now, recs, seq)
	if at != nil {
		snap.Time = at.Rec.End
		snap.Touched = slices.Sorted(maps.Keys(setOf(at.Executed, func(o *view.HistOp) string { return o.Key })))
	}
	slices.SortFunc(nodes, byKey)
	buildSnapshot(snap, nodes, r.St.Index)
	return snap, nil
}

func exists(st State) bool { return st == CONFIGURED || st == OBTAINED || st == DISCOVERED }

// rewind returns the values as of the end of transaction seq from now,
// the values now, and the retained records (oldest first): a value that
// an operation after seq changed is as its last operation up to seq left
// it, or, when the history has none, as it was before its first operation
// after seq.
func rewind(now []graph.KeyRec, recs []*view.HistEntry, seq uint64) []GraphNode {
	type then struct { // the operation that decides the value; settled: up to seq
		rec, op int32
		settled bool
	}
	was := map[string]then{}
	for i := len(recs) - 1; i >= 0; i-- { // newest first
		e := recs[i]
		if e.Rec.Seq <= seq && len(was) == 0 {
			break
		}
		for j := len(e.Executed) - 1; j >= 0; j-- {
			key := e.Executed[j].Key
			t, changed := was[key]
			if e.Rec.Seq <= seq && (!changed || t.settled) {
				continue
			}
			was[key] = then{int32(i), int32(j), e.Rec.Seq <= seq}
		}
	}
	valueOf := func(t then) (GraphNode, bool) {
		o := recs[t.rec].Op(&recs[t.rec].Executed[t.op])
		return opValue(&o, t.settled)
	}
	out := make([]GraphNode, 0, len(now))
	for _, kr := range now {
		if t, changed := was[kr.Key]; changed {
			delete(was, kr.Key)
			if n, exists := valueOf(t); exists {
				out = append(out, n)
			}
			continue
		}
		r, m := kr.Rec, kr.Rec.M() // Val: the intended value, or the applied one
		out = append(out, GraphNode{Key: kr.Key, State: r.State, Value: r.Val, Metadata: m.Metadata, Origin: r.Origin, Derived: m.Base != "", Err: m.LastErr})
	}
	for _, t := range was {
		if n, exists := valueOf(t); exists {
			out = append(out, n)
		}
	}
	return out
}

// opValue is a value as operation o left it (after), or as it was before
// o, the first operation the history has of it; false when it did not
// exist then.
func opValue(o *Op, after bool) (GraphNode, bool) {
	n := GraphNode{Key: o.Key, Derived: o.Flags&FlagDerived != 0, Origin: kv.OriginNB}
	switch {
	case after:
		n.State, n.Value, n.Metadata, n.Err = o.State, o.Value, o.Metadata, o.Err
		if o.State == OBTAINED || o.State == DISCOVERED {
			n.Origin = kv.OriginSB
		}
		if n.Value == nil {
			n.Value = o.PrevValue // deleted and PENDING, or MISSING: the value stays intended
		}
		return n, o.State != REMOVED && o.State != NONEXISTENT
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

func byKey(a, b GraphNode) int         { return strings.Compare(a.Key, b.Key) }
func keyCmp(n GraphNode, k string) int { return strings.Compare(n.Key, k) }

// buildSnapshot fills the nodes and edges of snap from the sorted values.
func buildSnapshot(snap *GraphSnapshot, nodes []GraphNode, idx *registry.Index) {
	placeholders := map[string]bool{}
	for i := range nodes {
		e := &nodes[i]
		key := e.Key
		e.Label = key
		d := idx.Lookup(key)
		if d != nil {
			e.Descriptor, e.Label = d.Name(), d.Label(key)
		}
		if d == nil || e.Value == nil || e.State == INVALID || e.Origin == kv.OriginSB {
			continue
		}
		for _, dep := range d.Dependencies(key, e.Value) {
			if dep.IsAnyOf() {
				anyOfEdges(snap, nodes, key, dep, placeholders)
				continue
			}
			t, known := slices.BinarySearchFunc(nodes, dep.Key, keyCmp)
			if !known {
				placeholders[dep.Key] = true
			}
			snap.Edges = append(snap.Edges, GraphEdge{From: key, To: dep.Key, Label: dep.Label, Kind: EdgeDependency, Met: known && exists(nodes[t].State)})
		}
		if exists(e.State) {
			for _, dv := range d.Derived(key, e.Value) {
				if _, known := slices.BinarySearchFunc(nodes, dv.Key, keyCmp); known {
					snap.Edges = append(snap.Edges, GraphEdge{From: key, To: dv.Key, Label: "derived", Kind: EdgeDerived, Met: true})
				}
			}
		}
	}
	for ph := range placeholders {
		nodes = append(nodes, GraphNode{Key: ph, Label: ph, State: NONEXISTENT, Placeholder: true})
	}
	if len(placeholders) > 0 {
		slices.SortFunc(nodes, byKey)
	}
	snap.Nodes = nodes
	slices.SortStableFunc(snap.Edges, func(a, b GraphEdge) int { return cmp.Or(strings.Compare(a.From, b.From), strings.Compare(a.To, b.To)) })
}

// anyOfEdges adds the edges of key's AnyOf dependency dep: one to each
// existing value it matches, or one to a placeholder naming its prefixes.
func anyOfEdges(snap *GraphSnapshot, nodes []GraphNode, key string, dep kv.Dependency, placeholders map[string]bool) {
	found := false
	for _, p := range dep.AnyOf.Prefixes {
		i, _ := slices.BinarySearchFunc(nodes, p, keyCmp)
		for ; i < len(nodes) && strings.HasPrefix(nodes[i].Key, p); i++ {
			if exists(nodes[i].State) && (dep.AnyOf.Match == nil || dep.AnyOf.Match(nodes[i].Key)) {
				found = true
				snap.Edges = append(snap.Edges, GraphEdge{From: key, To: nodes[i].Key, Label: dep.Label, Kind: EdgeAnyOf, Met: true})
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
