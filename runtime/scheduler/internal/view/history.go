package view

import (
	"cmp"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/histring"
)

// Record is documented at its alias in the scheduler package.
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

// KeyValue is documented at its alias in the scheduler package.
type KeyValue struct {
	Key      string
	Value    proto.Message
	Metadata any // notifications only
}

// TimelineEntry is documented at its alias in the scheduler package.
type TimelineEntry struct {
	Seq  uint64
	Time time.Time
	Op   graph.OpKind
	// State is the value's state after the change.
	State graph.State
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

// EdgeKind is documented at its alias in the scheduler package.
type EdgeKind uint8

// GraphSnapshot is documented at its alias in the scheduler package.
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

// GraphNode is documented at its alias in the scheduler package.
type GraphNode struct {
	Key        string
	Label      string
	Descriptor string // empty when UNIMPLEMENTED or a placeholder
	State      graph.State
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

// GraphEdge is documented at its alias in the scheduler package.
type GraphEdge struct {
	From, To string
	Label    string
	Kind     EdgeKind
	// Met tells whether the dependency is satisfied (always true for a
	// derived edge).
	Met bool
}

// History keeps the records of the last transactions (see histring).
type History = histring.Ring[*HistEntry]

// HistEntry is a retained Record: its operations and input values in
// compact form (about half the size of Op and KeyValue), since a history
// holds as many operations as the values its transactions touched.
type HistEntry struct {
	Rec    histRec
	values []histValue
	// metas are the values' metadata, when any has some (notifications
	// only): held apart, so that the usual record fits a smaller size class.
	metas    *[]any
	planned  []HistOp
	Executed []HistOp // shares planned's array when executed as planned
	// more holds what some operations have apart (see histOp.more).
	more []histOpMore
	// Room for the usual single-value transaction, so that its record
	// is one allocation.
	oneOp   [1]HistOp
	oneMore [1]histOpMore
	oneVal  [1]histValue
}

// histRec is a Record without its values and operations, packed: the
// usual record (one value, one operation) fits a smaller size class.
type histRec struct {
	Seq         uint64
	description string
	errors      []KeyError
	start, End  time.Time
	// batches and batchedOps are Result's, which count the operations
	// of one transaction: 32 bits hold them.
	batches, batchedOps int32
	kind                TxnKind
	reverted, dryRun    bool
}

// End returns when the transaction ended.
func (e *HistEntry) End() time.Time { return e.Rec.End }

// Weight is the number of operations and values e holds.
func (e *HistEntry) Weight() int {
	w := len(e.values) + len(e.planned)
	if !sharesArray(e.planned, e.Executed) {
		w += len(e.Executed)
	}
	return w
}

// sharesArray reports whether b is a (non-empty) beginning of a.
func sharesArray[T any](a, b []T) bool {
	return len(b) > 0 && len(a) >= len(b) && &a[0] == &b[0]
}

// HistOp is an Op in 40 bytes; the fields most operations leave nil are
// held apart, in the entry's more (1 + the index; 0 when PrevValue,
// Metadata and Err are all nil), and Called is the flag histCalled.
type HistOp struct {
	Key   string
	value proto.Message
	more  int32
	kind  graph.OpKind
	state graph.State
	flags Flags
}

// HistCalled is histOp.flags' bit for Op.Called, one that no flag uses
// (TestFlagsNames).
const HistCalled Flags = 1 << 15

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
func (e *HistEntry) compactOps(ops []Op) []HistOp {
	if len(ops) == 0 {
		return nil
	}
	var out []HistOp
	if len(ops) == 1 && e.planned == nil {
		out, e.more = e.oneOp[:], e.oneMore[:0]
	} else {
		out = make([]HistOp, len(ops))
	}
	for i := range ops {
		o := &ops[i]
		out[i] = HistOp{Key: o.Key, value: o.Value, kind: o.Kind, state: o.State, flags: o.Flags}
		if o.Called {
			out[i].flags |= HistCalled
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

// Op returns h, one of e's operations, as an Op.
func (e *HistEntry) Op(h *HistOp) Op {
	o := Op{Key: h.Key, Value: h.value, Kind: h.kind, State: h.state, Flags: h.flags &^ HistCalled, Called: h.flags&HistCalled != 0}
	if h.more != 0 {
		m := &e.more[h.more-1]
		o.PrevValue, o.Metadata, o.Err = m.prev, m.meta, m.err
	}
	return o
}

func (e *HistEntry) expandOps(ops []HistOp) []Op {
	if ops == nil {
		return nil
	}
	out := make([]Op, len(ops))
	for i := range ops {
		out[i] = e.Op(&ops[i])
	}
	return out
}

// NewHistEntry compacts rec; operations executed as planned (rec.Executed
// the beginning of rec.Planned's array) are kept once.
func NewHistEntry(rec *Record) *HistEntry {
	e := &HistEntry{Rec: histRec{
		Seq: rec.Seq, description: rec.Description, errors: rec.Errors, start: rec.Start, End: rec.End,
		batches: int32(rec.Batches), batchedOps: int32(rec.BatchedOps),
		kind: rec.Kind, reverted: rec.Reverted, dryRun: rec.DryRun,
	}}
	e.planned = e.compactOps(rec.Planned)
	if sharesArray(rec.Planned, rec.Executed) {
		e.Executed = e.planned[:len(rec.Executed)]
	} else {
		e.Executed = e.compactOps(rec.Executed)
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

// Record expands the entry into the Record it was made from.
func (e *HistEntry) Record() Record {
	h := &e.Rec
	r := Record{
		Seq: h.Seq, Kind: h.kind, Description: h.description, Errors: h.errors,
		Reverted: h.reverted, DryRun: h.dryRun, Batches: int(h.batches), BatchedOps: int(h.batchedOps),
		Start: h.start, End: h.End,
	}
	r.Planned = e.expandOps(e.planned)
	if sharesArray(e.planned, e.Executed) {
		r.Executed = r.Planned[:len(e.Executed)]
	} else {
		r.Executed = e.expandOps(e.Executed)
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

// FindEntry returns the entry of transaction seq in recs, or nil.
func FindEntry(recs []*HistEntry, seq uint64) *HistEntry {
	i, ok := slices.BinarySearchFunc(recs, seq, func(e *HistEntry, seq uint64) int { return cmp.Compare(e.Rec.Seq, seq) })
	if !ok {
		return nil
	}
	return recs[i]
}
