package scheduler

import "github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/view"

// Record is the history's record of one transaction.
type Record = view.Record

// KeyValue is a key with its value (nil: deleted).
type KeyValue = view.KeyValue

// TimelineEntry is one change of a value, as recorded by an operation of
// a transaction.
type TimelineEntry = view.TimelineEntry

// EdgeKind tells what an edge of a graph snapshot stands for.
type EdgeKind = view.EdgeKind

// The edge kinds.
const (
	// EdgeDependency: From needs the value To (a plain dependency).
	EdgeDependency EdgeKind = iota
	// EdgeAnyOf: From needs any value under some prefixes; To is one that
	// satisfies it, or, when none does, a placeholder node named after
	// the prefixes (GraphNode.Placeholder).
	EdgeAnyOf
	// EdgeDerived: To is derived from From.
	EdgeDerived
)

// GraphSnapshot is the graph of values as of the end of one transaction.
type GraphSnapshot = view.GraphSnapshot

// GraphNode is one value of a graph snapshot.
type GraphNode = view.GraphNode

// GraphEdge is one edge of a graph snapshot.
type GraphEdge = view.GraphEdge

// History returns the retained transaction records, oldest first.
func (s *Scheduler) History() []Record {
	recs := s.view.State.Load().Hist
	out := make([]Record, len(recs))
	for i, e := range recs {
		out[i] = e.Record()
	}
	return out
}

// Record returns the record of transaction seq, if the history still
// holds it.
func (s *Scheduler) Record(seq uint64) (Record, bool) {
	e := view.FindEntry(s.view.State.Load().Hist, seq)
	if e == nil {
		return Record{}, false
	}
	return e.Record(), true
}

// Timeline returns the changes of key recorded by the retained history,
// oldest first: each operation executed on it, with the value, its state
// after the change, its metadata and its dependencies.
func (s *Scheduler) Timeline(key string) []TimelineEntry {
	st := s.view.State.Load()
	recs := st.Hist
	var out []TimelineEntry
	d := st.Index.Lookup(key)
	for _, rec := range recs {
		for i := range rec.Executed {
			if rec.Executed[i].Key != key {
				continue
			}
			o := rec.Op(&rec.Executed[i])
			e := TimelineEntry{Seq: rec.Rec.Seq, Time: rec.Rec.End, Op: o.Kind, State: o.State, Flags: o.Flags,
				Value: o.Value, Metadata: o.Metadata, Err: o.Err}
			if e.Value == nil {
				e.Value = o.PrevValue
			}
			if d != nil && e.Value != nil {
				e.Dependencies = d.Dependencies(key, e.Value)
			}
			out = append(out, e)
		}
	}
	return out
}
