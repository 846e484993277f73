package scheduler

import (
	"cmp"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// Record is the history's record of one transaction.
type Record struct {
	Seq         uint64
	Kind        TxnKind
	Description string
	// Values are the transaction's input: the values set (Value nil for a
	// delete), or the notified ones.
	Values []KeyValue
	// Planned and Executed are the operations, as in Result. They are
	// shared with the Result and with other readers: do not modify them.
	Planned, Executed []Op
	Errors            []KeyError
	Reverted          bool
	DryRun            bool
	Start, End        time.Time
}

// KeyValue is a key with its value (nil: deleted).
type KeyValue struct {
	Key      string
	Value    proto.Message
	Metadata any // notifications only
}

// TimelineEntry is one change of a value, as recorded by an operation of
// a transaction.
type TimelineEntry struct {
	Seq  uint64
	Time time.Time
	Op   OpKind
	// State is the value's state after the change.
	State State
	Flags Flags
	// Value is the value the change concerns: the one created or updated
	// to, or the one deleted (for a delete); the intended one for a change
	// of state with no call.
	Value    proto.Message
	Metadata any
	// Dependencies are those of Value.
	Dependencies []kv.Dependency
	Err          error
}

// EdgeKind tells what an edge of a graph snapshot stands for.
type EdgeKind uint8

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
type GraphSnapshot struct {
	// Seq is the transaction the snapshot is as of (the last one, for the
	// current graph).
	Seq  uint64
	Time time.Time
	// Nodes are sorted by key; Edges by From, then To.
	Nodes []GraphNode
	Edges []GraphEdge
	// Touched lists the keys that transaction Seq changed, sorted.
	Touched []string
}

// GraphNode is one value of a graph snapshot.
type GraphNode struct {
	Key        string
	Label      string
	Descriptor string // empty when UNIMPLEMENTED or a placeholder
	State      State
	Origin     kv.Origin
	// Value is the intended value, or the applied one when nothing is
	// intended (an OBTAINED value).
	Value    proto.Message
	Metadata any
	Derived  bool // a derived value
	Err      error
	// Placeholder marks a node that stands for a missing dependency
	// target: a key nothing has, or the prefixes of an unmet AnyOf.
	Placeholder bool
}

// GraphEdge is one edge of a graph snapshot.
type GraphEdge struct {
	From, To string
	Label    string
	Kind     EdgeKind
	// Met tells whether the dependency is satisfied (always true for a
	// derived edge).
	Met bool
}

// history keeps the records of the last transactions, bounded by count and
// age. Records are appended by the worker with s.mu held, and read with it.
type history struct {
	// buf[head:] are the records, oldest first; dropped ones before head
	// are nil, and compacted away once they are half of buf.
	buf    []*Record
	head   int
	max    int
	maxAge time.Duration
}

func (h *history) live() []*Record { return h.buf[h.head:] }

func (h *history) add(rec *Record) {
	if h.max <= 0 {
		return
	}
	h.buf = append(h.buf, rec)
	over := len(h.buf) - h.head - h.max
	cut := rec.End.Add(-h.maxAge)
	for h.head < len(h.buf)-1 && (over > 0 || h.maxAge > 0 && h.buf[h.head].End.Before(cut)) {
		h.buf[h.head] = nil
		h.head++
		over--
	}
	if h.head > 64 && h.head >= len(h.buf)/2 {
		n := copy(h.buf, h.buf[h.head:])
		clear(h.buf[n:])
		h.buf, h.head = h.buf[:n], 0
	}
}

// find returns the record seq, or nil.
func (h *history) find(seq uint64) *Record {
	recs := h.live()
	i, ok := slices.BinarySearchFunc(recs, seq, func(r *Record, seq uint64) int { return cmp.Compare(r.Seq, seq) })
	if !ok {
		return nil
	}
	return recs[i]
}

// History returns the retained transaction records, oldest first.
func (s *Scheduler) History() []Record {
	s.mu.RLock()
	defer s.mu.RUnlock()
	recs := s.hist.live()
	out := make([]Record, len(recs))
	for i, r := range recs {
		out[i] = *r
	}
	return out
}

// Record returns the record of transaction seq, if the history still
// holds it.
func (s *Scheduler) Record(seq uint64) (Record, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if r := s.hist.find(seq); r != nil {
		return *r, true
	}
	return Record{}, false
}

// Timeline returns the changes of key recorded by the retained history,
// oldest first: each operation executed on it, with the value, its state
// after the change, its metadata and its dependencies.
func (s *Scheduler) Timeline(key string) []TimelineEntry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []TimelineEntry
	d := s.lookup(key)
	for _, rec := range s.hist.live() {
		for i := range rec.Executed {
			o := &rec.Executed[i]
			if o.Key != key {
				continue
			}
			e := TimelineEntry{Seq: rec.Seq, Time: rec.End, Op: o.Kind, State: o.State, Flags: o.Flags,
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
