// Package callctx holds the context of one southbound call: the values of
// the transaction's context, the call's deadline, and its end, which the
// first of the call's return and the scheduler giving up on it decides.
package callctx

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Ctx is the context of one call. Each call has one of its own, never
// reused, so that a handler that keeps its context sees it ended for good.
// The zero Ctx with Parent, Start and Timeout set is ready.
type Ctx struct {
	// Parent is the transaction's context, of which only the values are
	// used.
	Parent  context.Context
	Start   time.Time
	Timeout time.Duration

	// mu guards done, made when Done is first called.
	mu   sync.Mutex
	done chan struct{}
	// ended is why the call may not go on (live while it may).
	ended atomic.Uint32
}

// The ends of a call (see End).
const (
	live     = iota
	Returned // the call returned: context.Canceled
	Expired  // given up on: context.DeadlineExceeded
)

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// At returns the call's deadline.
func (c *Ctx) At() time.Time { return c.Start.Add(c.Timeout) }

// Deadline returns the call's deadline.
func (c *Ctx) Deadline() (time.Time, bool) { return c.At(), true }

// Done returns a channel closed at the deadline, when the scheduler gives
// up on the call, or once the call has returned.
func (c *Ctx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		if c.ended.Load() != live {
			return closedChan
		}
		c.done = make(chan struct{})
	}
	return c.done
}

// Err returns nil while the call may go on, then why it may not.
func (c *Ctx) Err() error {
	switch c.ended.Load() {
	case Returned:
		return context.Canceled
	case Expired:
		return context.DeadlineExceeded
	}
	return nil
}

// Value returns the transaction context's value for key.
func (c *Ctx) Value(key any) any { return c.Parent.Value(key) }

// End ends the context: why is Returned or Expired; the first end stands.
func (c *Ctx) End(why uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended.CompareAndSwap(live, why) && c.done != nil {
		close(c.done)
	}
}
