package scheduler

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/internal/kvaccess"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/callctx"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/grouping"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/guard"
)

func init() {
	// The keys of a call are those of values whose descriptor lookup
	// found by matching the key (a misfit is not a guard): a typed
	// descriptor need not match them again to give its handler the key.
	kvaccess.KeysMatched = func(ctx context.Context, d any) bool {
		c, ok := ctx.(*callCtx)
		if !ok {
			return false
		}
		g, ok := c.desc.(*guard.Guard)
		return ok && any(g.Descriptor) == d
	}
}

// caller is the scheduler's southbound calls: their contexts and
// deadlines, the watchdog, batches and concurrent groups, read-backs.
type caller struct {
	*Scheduler

	// inFlight is the southbound call in progress (see calls.go); the
	// watchdog gives up on it at its deadline, or when Close gives up
	// (closing set, abandon signalled).
	inFlight atomic.Pointer[callCtx]
	closing  atomic.Bool
	abandon  chan struct{}
	// callSlab holds the call contexts not yet used (see newCallCtx).
	callSlab []callCtx
	// groupModes caches how the calls of descriptors without a guard
	// may be grouped, grouping is the group being formed, and batchOps
	// and groupNodes the buffers of the last group's operations and
	// nodes (see batch.go).
	groupModes map[kv.Descriptor]grouping.Info
	grouping   grouping.Group
	batchOps   []kv.BatchOp[string, proto.Message, any]
	groupNodes []*graph.Node
}

// Southbound calls have a deadline (see WithCallTimeout), and a handler
// that ignores it must not hold the scheduler. How a call is made depends
// on where:
//
//   - The calls of an executed plan (the hot path: every call when nothing
//     fails) are made on the transaction's goroutine, which costs a context
//     (taken from a slab, see newCallCtx), a clock read and a few atomic
//     operations. When one outlives its deadline, the
//     watchdog gives up on it and starts a goroutine that takes the
//     transaction over from there (takeOver): the call has failed, and the
//     transaction goes on as after any failed call. The blocked goroutine,
//     when the handler returns at last, finds it was given up on, logs and
//     drops the result, and unwinds without touching anything.
//   - The other calls (those the algorithm makes after a failure, a
//     read-back, a revert, a refresh's Retrieve) are deep inside the
//     algorithm, which cannot be taken over: each runs on a goroutine of
//     its own while the transaction waits for its result or for the
//     watchdog to give up on it.
//
// One call is in flight at a time (transactions do not overlap), held in
// Scheduler.inFlight. The watchdog is one long-lived goroutine on a reused
// timer: it sleeps until the deadline of the call in flight, or the
// shortest call timeout when there is none, so a call's deadline is met
// without a timer per call.

// callCtx is the context of one southbound call: the transaction's context
// values, the call's deadline, and what the watchdog needs to give up on
// it. Each call has one of its own, never reused, so that a handler that
// keeps its context sees it ended for good; they are allocated in slabs
// (see newCallCtx), so a call costs no allocation of its own.
type callCtx struct {
	callctx.Ctx
	desc kv.Descriptor
	key  string
	// st is the transaction of an inline call (one of the plan's), which
	// takeOver goes on with; nil for a call on a goroutine of its own.
	st *txnState
	// givenUp is closed when the watchdog gives up on a call on a
	// goroutine of its own; for an inline call, when the transaction that
	// took over has finished the job.
	givenUp chan struct{}
	op      OpKind
	// closing is set when the call was given up on because Close gave up
	// (written by the watchdog before it takes the call out of inFlight).
	closing bool
	// given is set once the watchdog gave up on the call.
	given atomic.Bool
	// group is the number of operations of a batch or group of concurrent
	// calls (see batch.go); 0 for one call.
	group int
	// span is the call's span (WithTracer), ended when the call is
	// observed (observe, or endCallSpan for a group).
	span Span
}

// callCtxSlab is the number of call contexts allocated at once.
const callCtxSlab = 32

// newCallCtx returns the context of a call (of a group of that many
// operations, 0 for one call), with its span when traced. Only the
// goroutine that runs the job calls it (the worker, or the goroutine that
// took a transaction over), so the slab needs no lock.
func (s *caller) newCallCtx(parent context.Context, op OpKind, d kv.Descriptor, key string, group int) *callCtx {
	if len(s.callSlab) == 0 {
		s.callSlab = make([]callCtx, callCtxSlab)
	}
	c := &s.callSlab[0]
	s.callSlab = s.callSlab[1:]
	c.Parent, c.op, c.desc, c.key, c.group = parent, op, d, key, group
	c.Start = time.Now()
	c.Timeout = s.opts.callTimeout
	if len(s.opts.descCallTimeouts) > 0 && d != nil {
		if t, ok := s.opts.descCallTimeouts[d.Name()]; ok {
			c.Timeout = t // WithDescriptorCallTimeout
		}
	}
	if s.opts.tracer != nil {
		s.traceCall(c)
	}
	return c
}

// cause is the error of a call the scheduler gave up on (c.closing:
// because Close gave up).
func (c *callCtx) cause() error {
	return &CallTimeoutError{Op: c.op, Descriptor: c.name(), Key: c.key, Timeout: c.Timeout, Closed: c.closing, Group: c.group}
}

// name returns the name of the call's descriptor.
func (c *callCtx) name() string {
	if c.desc == nil {
		return "<nil>"
	}
	return c.desc.Name()
}

// describe says which call c is and how long it has run, for Close.
func (c *callCtx) describe(now time.Time) string {
	what := c.op.String()
	if c.key != "" {
		what += " of " + c.key
	}
	if c.group > 1 {
		what = fmt.Sprintf("a group of %d, %s and the next %d,", c.group, what, c.group-1)
	}
	return fmt.Sprintf("%s by descriptor %s, running for %s", what, c.name(), now.Sub(c.Start).Round(time.Millisecond))
}

// late logs the result of a call that the scheduler had given up on.
func (s *caller) late(c *callCtx, err error) {
	s.opts.logger.Warn("a southbound call the scheduler gave up on returned late; its result is dropped (the next resync repairs what it applied)",
		"descriptor", c.name(), "op", c.op.String(), "key", c.key, "took", time.Since(c.Start), "timeout", c.Timeout, "error", err)
}

// observe reports a call to the observer, and ends its span.
func (s *caller) observe(c *callCtx, err error) {
	endCallSpan(c, err)
	if s.opts.observer != nil {
		s.opts.observer.OpDone(c.name(), c.op, time.Since(c.Start), err)
	}
}

// callInline makes call i of the plan of st on the transaction's
// goroutine. taken is the call when the watchdog gave up on it meanwhile:
// the caller must then unwind at once, touching nothing (another
// goroutine has taken the transaction over).
func (s *caller) callInline(st *txnState, i int, ctx context.Context, kind OpKind, d kv.Descriptor, key string, prev, value proto.Message, meta any) (m any, taken *callCtx, err error) {
	c := s.newCallCtx(ctx, kind, d, key, 0)
	c.st = st
	st.callIndex = i
	s.inFlight.Store(c)
	if s.closing.Load() {
		// Close gave up: make no more calls (checked after publishing the
		// call, so that the watchdog either sees it or this sees Close).
		if s.inFlight.CompareAndSwap(c, nil) {
			c.closing = true
			endCallSpan(c, c.cause())
			return nil, nil, c.cause()
		}
		return nil, c, nil
	}
	m, err = callHandler(c, key, prev, value, meta)
	c.End(callctx.Returned)
	if !s.inFlight.CompareAndSwap(c, nil) {
		s.late(c, err)
		return nil, c, nil
	}
	s.observe(c, err)
	return m, nil, err
}

// doCall makes one southbound call outside the plan's execution, on a
// goroutine of its own, giving up on it at its deadline.
func (s *caller) doCall(ctx context.Context, kind OpKind, d kv.Descriptor, key string, prev, value proto.Message, meta any) (any, error) {
	var m any
	ok, err := s.callOut(ctx, kind, d, key, func(c *callCtx) error {
		var err error
		m, err = callHandler(c, key, prev, value, meta)
		return err
	})
	if !ok {
		return nil, err
	}
	return m, err
}

// callOut runs fn on a goroutine of its own and waits for it, or for the
// watchdog to give up on it: then ok is false, and what fn writes must not
// be read.
func (s *caller) callOut(ctx context.Context, kind OpKind, d kv.Descriptor, key string, fn func(c *callCtx) error) (ok bool, err error) {
	c := s.newCallCtx(ctx, kind, d, key, 0)
	c.givenUp = make(chan struct{})
	done := make(chan error, 1)
	s.inFlight.Store(c)
	if s.closing.Load() {
		// Close gave up: make no more calls.
		if s.inFlight.CompareAndSwap(c, nil) {
			c.closing = true
		} else {
			<-c.givenUp
		}
		endCallSpan(c, c.cause())
		return false, c.cause()
	}
	go func() {
		err := fn(c)
		c.End(callctx.Returned)
		if c.given.Load() {
			s.late(c, err)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if s.inFlight.CompareAndSwap(c, nil) {
			s.observe(c, err)
			return true, err
		}
		// Given up on while it returned: the watchdog's word stands.
		<-c.givenUp
	case <-c.givenUp:
	}
	cause := c.cause()
	s.observe(c, cause)
	return false, cause
}

// watchdog gives up on the call in flight at its deadline, or at once when
// Close gives up (abandon). It ends with the worker.
func (s *caller) watchdog() {
	idle := s.opts.minCallTimeout()
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		closing := false
		select {
		case <-s.stopped:
			return
		case <-t.C:
		case <-s.abandon:
			closing = true
		}
		next := idle
		if c := s.inFlight.Load(); c != nil {
			now := time.Now()
			switch deadline := c.At(); {
			case closing || !now.Before(deadline):
				s.giveUp(c, closing)
			default:
				next = deadline.Sub(now)
			}
		}
		t.Reset(next)
	}
}

// giveUp gives up on call c, failing it with a *CallTimeoutError (closing:
// because Close gave up): the goroutine waiting for it goes on, or (for a
// call of the plan, whose goroutine is the one blocked) a new goroutine
// takes the transaction over. Only the watchdog calls it.
func (s *caller) giveUp(c *callCtx, closing bool) {
	c.closing = closing
	if c.st != nil {
		c.givenUp = make(chan struct{})
	}
	if !s.inFlight.CompareAndSwap(c, nil) {
		return // it has just returned
	}
	c.given.Store(true)
	c.End(callctx.Expired)
	s.opts.logger.Error("gave up on a southbound call at its deadline; the transaction goes on without it",
		"descriptor", c.name(), "op", c.op.String(), "key", c.key, "timeout", c.Timeout, "error", c.cause())
	if c.st == nil {
		close(c.givenUp)
		return
	}
	go s.takeOver(c)
}

// txnState is what a transaction's goroutine hands over to takeOver when a
// call of its plan is given up on.
type txnState struct {
	j           *job
	res         *Result
	plan        *run
	view        *sbView
	unsure      []unsureFact
	refreshErrs []KeyError
	ctx         context.Context
	seq         uint64
	// callIndex is the plan's call in flight; unheld the metadata of the
	// calls made whose operation does not hold it (see executePlan).
	callIndex int
	unheld    map[int]any
	// groupEnd ends the group of calls in flight from callIndex (see
	// execGroup); 0 for one call.
	groupEnd int
}

// takeOver ends the job of a transaction whose call c was given up on,
// in place of its blocked goroutine: the call failed, and the transaction
// goes on as after any failed call. Then it goes on as the worker, in
// place of the blocked one.
func (s *caller) takeOver(c *callCtx) {
	st, j := c.st, c.st.j
	cause := c.cause()
	s.observe(c, cause)
	results := st.plan.resultsUpTo(st.callIndex, nil, cause, st.unheld)
	// Every operation of a group given up on failed with it: the
	// algorithm's read-back finds what was applied.
	for i := st.callIndex + 1; i < st.groupEnd; i++ {
		c := st.plan.calls.At(i)
		results = append(results, callResult{kind: c.kind, key: c.key, value: c.value, err: cause})
	}
	s.safely(j, func() {
		out := s.finishTxn(st, results, false)
		s.endJob(j, out)
	})
	s.idle()
	close(c.givenUp)
	s.worker()
}
