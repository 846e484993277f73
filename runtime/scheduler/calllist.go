package scheduler

import (
	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// callList holds the calls of a plan in chunks of callChunk, so that a
// plan that grows large copies nothing and leaves no outgrown arrays to
// the collector; the first chunk grows as a slice up to callChunk. A
// group of calls (see groupCall) never spans two chunks: it is one slice.
type callList struct {
	chunks [][]plannedCall
	n      int
	// size is the number of calls the plan was sized for (see start).
	size int
}

// callChunk is the number of calls of a chunk (about 400 kB): four
// batches of the default size.
const callChunk = 4096

// start makes the list ready for a plan of about size calls.
func (l *callList) start(size int) {
	if l.n > 0 {
		l.reset()
	}
	l.size = size
	if len(l.chunks) == 0 {
		l.chunks = append(l.chunks, make([]plannedCall, 0, min(max(size, planScratchMax), callChunk)))
	} else if size > cap(l.chunks[0]) {
		l.chunks[0] = make([]plannedCall, 0, min(size, callChunk))
	}
}

func (l *callList) len() int { return l.n }

func (l *callList) at(i int) *plannedCall { return &l.chunks[i/callChunk][i%callChunk] }

// add appends c, and returns it.
func (l *callList) add(c plannedCall) *plannedCall {
	k := l.n / callChunk
	if k == len(l.chunks) {
		// Sized for what the plan was expected to hold beyond the chunks
		// before, or small when it holds more than expected (it doubles).
		size := l.size - l.n
		if size <= 0 {
			size = planScratchMax
		}
		l.chunks = append(l.chunks, make([]plannedCall, 0, min(size, callChunk)))
	}
	ch := &l.chunks[k]
	if len(*ch) == cap(*ch) {
		// The first chunk, started small: it doubles, up to callChunk.
		bigger := make([]plannedCall, len(*ch), min(max(2*cap(*ch), 8), callChunk))
		copy(bigger, *ch)
		*ch = bigger
	}
	*ch = append(*ch, c)
	l.n++
	return &(*ch)[len(*ch)-1]
}

// firstOfChunk reports whether call i starts a chunk.
func firstOfChunk(i int) bool { return i%callChunk == 0 }

// group returns the calls [i, end), which are in one chunk.
func (l *callList) group(i, end int) []plannedCall {
	o := i % callChunk
	return l.chunks[i/callChunk][o : o+end-i]
}

// reset empties the list, keeping its first chunk unless it grew beyond
// planScratchMax.
func (l *callList) reset() {
	if len(l.chunks) == 0 {
		return
	}
	first := l.chunks[0]
	clear(l.chunks)
	if cap(first) > planScratchMax {
		l.chunks, l.n = l.chunks[:0], 0
		return
	}
	clear(first)
	l.chunks, l.n = append(l.chunks[:0], first[:0]), 0
}

// plannedCall is a southbound call that the plan makes.
type plannedCall struct {
	key  string
	desc kv.Descriptor
	// n is the node the call was planned on: the graph's node of key at
	// execution too, unless it was taken out later in the plan (see
	// graph.current).
	n           *node
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

// node returns the graph's node of the call's key once the plan ran.
func (c *plannedCall) node(g *graph) *node {
	if c.n.state != REMOVED {
		return c.n
	}
	return g.node(c.key)
}

// callResult is the outcome of a call, replayed after a failure.
type callResult struct {
	kind OpKind
	key  string
	// value is the value created or updated to (a call of a group only:
	// see settleLeftovers).
	value proto.Message
	meta  any
	err   error
	// used is set once the run replayed it.
	used bool
}

// holdsMeta reports whether the operation c.op of ops records the call c,
// and so holds the metadata it returned.
func (c *plannedCall) holdsMeta(ops []Op) bool {
	return int(c.op) < len(ops) && ops[c.op].Key == c.key
}
