package scheduler

import (
	"cmp"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/histring"
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
	// Batches and BatchedOps are as in Result.
	Batches, BatchedOps int
	Start, End          time.Time
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

// history keeps the records of the last transactions (see histring).
type history = histring.Ring[*histEntry]

// histEntry is a retained Record: its operations and input values in
// compact form (about half the size of Op and KeyValue), since a history
// holds as many operations as the values its transactions touched.
type histEntry struct {
	rec    histRec
	values []histValue
	// metas are the values' metadata, when any has some (notifications
	// only): held apart, so that the usual record fits a smaller size class.
	metas    *[]any
	planned  []histOp
	executed []histOp // shares planned's array when executed as planned
	// more holds what some operations have apart (see histOp.more).
	more []histOpMore
	// Room for the usual single-value transaction, so that its record
	// is one allocation.
	oneOp   [1]histOp
	oneMore [1]histOpMore
	oneVal  [1]histValue
}

// histRec is a Record without its values and operations, packed: the
// usual record (one value, one operation) fits a smaller size class.
type histRec struct {
	seq         uint64
	description string
	errors      []KeyError
	start, end  time.Time
	// batches and batchedOps are Result's, which count the operations
	// of one transaction: 32 bits hold them.
	batches, batchedOps int32
	kind                TxnKind
	reverted, dryRun    bool
}

// End returns when the transaction ended.
func (e *histEntry) End() time.Time { return e.rec.end }

// Weight is the number of operations and values e holds.
func (e *histEntry) Weight() int {
	w := len(e.values) + len(e.planned)
	if len(e.executed) > 0 && (len(e.planned) == 0 || &e.executed[0] != &e.planned[0]) {
		w += len(e.executed)
	}
	return w
}

// histOp is an Op in 40 bytes; the fields most operations leave nil are
// held apart, in the entry's more (1 + the index; 0 when PrevValue,
// Metadata and Err are all nil), and Called is the flag histCalled.
type histOp struct {
	key   string
	value proto.Message
	more  int32
	kind  OpKind
	state State
	flags Flags
}

// histCalled is histOp.flags' bit for Op.Called, one that no flag uses
// (TestFlagsNames).
const histCalled Flags = 1 << 15

type histOpMore struct {
	prev proto.Message
	meta any
	err  error
}

type histValue struct {
	key   string
	value proto.Message
}

// compactOps compacts ops into e's room when they fit, else into new
// arrays.
func (e *histEntry) compactOps(ops []Op) []histOp {
	if len(ops) == 0 {
		return nil
	}
	var out []histOp
	if len(ops) == 1 && e.planned == nil {
		out, e.more = e.oneOp[:], e.oneMore[:0]
	} else {
		out = make([]histOp, len(ops))
	}
	for i := range ops {
		o := &ops[i]
		out[i] = histOp{key: o.Key, value: o.Value, kind: o.Kind, state: o.State, flags: o.Flags}
		if o.Called {
			out[i].flags |= histCalled
		}
		if o.PrevValue != nil || o.Metadata != nil || o.Err != nil {
			if len(e.more) == cap(e.more) { // one array for the record's operations that need one
				e.more = slices.Grow(e.more, countMore(ops[i:]))
			}
			e.more = append(e.more, histOpMore{prev: o.PrevValue, meta: o.Metadata, err: o.Err})
			out[i].more = int32(len(e.more))
		}
	}
	return out
}

// countMore counts the operations of ops that need a histOpMore.
func countMore(ops []Op) int {
	n := 0
	for i := range ops {
		if o := &ops[i]; o.PrevValue != nil || o.Metadata != nil || o.Err != nil {
			n++
		}
	}
	return n
}

// op returns h, one of e's operations, as an Op.
func (e *histEntry) op(h *histOp) Op {
	o := Op{Key: h.key, Value: h.value, Kind: h.kind, State: h.state, Flags: h.flags &^ histCalled, Called: h.flags&histCalled != 0}
	if h.more != 0 {
		m := &e.more[h.more-1]
		o.PrevValue, o.Metadata, o.Err = m.prev, m.meta, m.err
	}
	return o
}

func (e *histEntry) expandOps(ops []histOp) []Op {
	if ops == nil {
		return nil
	}
	out := make([]Op, len(ops))
	for i := range ops {
		out[i] = e.op(&ops[i])
	}
	return out
}

// newHistEntry compacts rec; executedAsPlanned says that rec.Executed is
// rec.Planned (or its beginning).
func newHistEntry(rec *Record, executedAsPlanned bool) *histEntry {
	e := &histEntry{rec: histRec{
		seq: rec.Seq, description: rec.Description, errors: rec.Errors, start: rec.Start, end: rec.End,
		batches: int32(rec.Batches), batchedOps: int32(rec.BatchedOps),
		kind: rec.Kind, reverted: rec.Reverted, dryRun: rec.DryRun,
	}}
	e.planned = e.compactOps(rec.Planned)
	if executedAsPlanned {
		e.executed = e.planned[:len(rec.Executed)]
	} else {
		e.executed = e.compactOps(rec.Executed)
	}
	if len(rec.Values) > 0 {
		e.values = e.oneVal[:]
		if len(rec.Values) > 1 {
			e.values = make([]histValue, len(rec.Values))
		}
		for i, kv := range rec.Values {
			e.values[i] = histValue{key: kv.Key, value: kv.Value}
			if kv.Metadata != nil {
				if e.metas == nil {
					metas := make([]any, len(rec.Values))
					e.metas = &metas
				}
				(*e.metas)[i] = kv.Metadata
			}
		}
	}
	return e
}

// record expands the entry into the Record it was made from.
func (e *histEntry) record() Record {
	h := &e.rec
	r := Record{
		Seq: h.seq, Kind: h.kind, Description: h.description, Errors: h.errors,
		Reverted: h.reverted, DryRun: h.dryRun, Batches: int(h.batches), BatchedOps: int(h.batchedOps),
		Start: h.start, End: h.end,
	}
	r.Planned = e.expandOps(e.planned)
	if len(e.executed) > 0 && len(e.planned) > 0 && &e.executed[0] == &e.planned[0] {
		r.Executed = r.Planned[:len(e.executed)]
	} else {
		r.Executed = e.expandOps(e.executed)
	}
	if e.values != nil {
		r.Values = make([]KeyValue, len(e.values))
		for i, v := range e.values {
			r.Values[i] = KeyValue{Key: v.key, Value: v.value}
			if e.metas != nil {
				r.Values[i].Metadata = (*e.metas)[i]
			}
		}
	}
	return r
}

// findEntry returns the entry of transaction seq in recs, or nil.
func findEntry(recs []*histEntry, seq uint64) *histEntry {
	i, ok := slices.BinarySearchFunc(recs, seq, func(e *histEntry, seq uint64) int { return cmp.Compare(e.rec.seq, seq) })
	if !ok {
		return nil
	}
	return recs[i]
}

// History returns the retained transaction records, oldest first.
func (s *Scheduler) History() []Record {
	recs := s.view.history()
	out := make([]Record, len(recs))
	for i, e := range recs {
		out[i] = e.record()
	}
	return out
}

// history returns the retained entries, oldest first (entries are never
// modified once added, nor is the slice).
func (v *view) history() []*histEntry { return v.state.Load().hist }

// Record returns the record of transaction seq, if the history still
// holds it.
func (s *Scheduler) Record(seq uint64) (Record, bool) {
	e := findEntry(s.view.state.Load().hist, seq)
	if e == nil {
		return Record{}, false
	}
	return e.record(), true
}

// Timeline returns the changes of key recorded by the retained history,
// oldest first: each operation executed on it, with the value, its state
// after the change, its metadata and its dependencies.
func (s *Scheduler) Timeline(key string) []TimelineEntry {
	st := s.view.state.Load()
	recs := st.hist
	var out []TimelineEntry
	d := st.index.Lookup(key)
	for _, rec := range recs {
		for i := range rec.executed {
			if rec.executed[i].key != key {
				continue
			}
			o := rec.op(&rec.executed[i])
			e := TimelineEntry{Seq: rec.rec.seq, Time: rec.rec.end, Op: o.Kind, State: o.State, Flags: o.Flags,
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
