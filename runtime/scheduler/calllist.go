package scheduler

import (
	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/chunked"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
)

// callList holds the calls of a plan (see chunked.Growing): a group of
// calls (see groupCall) never spans two chunks, it is one slice.
type callList = chunked.Growing[plannedCall]

// plannedCall is a southbound call that the plan makes.
type plannedCall struct {
	key  string
	desc kv.Descriptor
	// n is the node the call was planned on: the graph's node of key at
	// execution too, unless it was taken out later in the plan (see
	// graph.current).
	n           *graph.Node
	prev, value proto.Message
	// meta is the value's metadata when the plan made the call: right for
	// the first call on a value in the transaction (later ones get what
	// the call before returned).
	meta any
	// op is the index in the plan of the operation that records the call
	// (it follows the call): its metadata is filled in on execution.
	op    int32
	kind  OpKind
	first bool
	// joins is set when the call is made together with the call before
	// it, in one batch or group of concurrent calls (see batch.go).
	joins bool
}

// node returns the graph's node of the call's key once the plan ran: none
// when the plan removed the call's node and added no node at all.
func (c *plannedCall) node(g *graph.Graph) *graph.Node {
	switch {
	case c.n.State != REMOVED:
		return c.n
	case g.Added == g.Began:
		return nil
	}
	return g.Node(c.key)
}

// callResult is the outcome of a call, replayed after a failure.
type callResult struct {
	kind OpKind
	key  string
	// value is the value created or updated to: what the southbound holds
	// when the run after the failure does not make the call again (see
	// settleLeftovers).
	value proto.Message
	meta  any
	err   error
	// used is set once the run replayed it.
	used bool
}

// holdsMeta reports whether the operation c.op of ops records the call c,
// and so holds the metadata it returned.
func (c *plannedCall) holdsMeta(ops []Op) bool { return int(c.op) < len(ops) && ops[c.op].Key == c.key }
