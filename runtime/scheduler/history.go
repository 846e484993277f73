package scheduler

import (
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
