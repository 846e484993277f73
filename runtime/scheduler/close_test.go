package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// workerGoneCtx is a context that has ended, but whose Done waits (up to
// a generous bound) until the scheduler's worker goroutine has ended.
// Close reads Done once it has told the worker to stop, so the worker's
// last look at the queue comes before Close's own work after its context
// ended, and nothing orders the two for the race detector: the goroutine
// list is read without synchronising with the worker.
type workerGoneCtx struct {
	context.Context
	t    *testing.T
	s    *scheduler.Scheduler
	done chan struct{}
}

func (c *workerGoneCtx) Done() <-chan struct{} {
	frame := fmt.Sprintf(".(*Scheduler).worker(%p", c.s)
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if !strings.Contains(string(buf[:runtime.Stack(buf, true)]), frame) {
			return c.done
		}
		runtime.Gosched()
	}
	c.t.Error("the worker did not end in 30s")
	return c.done
}

func (c *workerGoneCtx) Err() error { return context.Canceled }

// TestCloseWhenItsContextHasEnded closes idle schedulers with a context
// that has ended. Close then takes the queue over under the queue's lock,
// while the worker, stopping, looks at the queue: the race detector sees
// any look outside the lock. Close picks at random between the worker's
// end and its context's, so the test closes several.
func TestCloseWhenItsContextHasEnded(t *testing.T) {
	t.Parallel()
	for range 32 {
		s, err := scheduler.New(scheduler.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		ctx := &workerGoneCtx{Context: context.Background(), t: t, s: s, done: make(chan struct{})}
		close(ctx.done)
		// Nothing was queued or running: Close either saw the worker end
		// or reports only the context's end.
		if err := s.Close(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Close = %v, want nil or context.Canceled", err)
		}
		if _, err := s.Txn().Set("x", nil).Commit(context.Background()); !errors.Is(err, scheduler.ErrClosed) {
			t.Fatalf("Commit after Close = %v, want ErrClosed", err)
		}
	}
}

// TestNilArguments: a nil option or context is an error naming it, never a
// panic (issue 28, defect 7).
func TestNilArguments(t *testing.T) {
	t.Parallel()
	if _, err := scheduler.New(scheduler.WithLogger(quiet), nil); err == nil || !strings.Contains(err.Error(), "option 2 is nil") {
		t.Errorf("New with a nil option: %v, want an error naming option 2", err)
	}
	s := newScheduler(t)
	var nilCtx context.Context
	for name, call := range map[string]func() error{
		"Commit": func() error { _, err := s.Txn().Set("x", nil).Commit(nilCtx); return err },
		"CommitAsync": func() error {
			return (<-s.Txn().Set("x", nil).CommitAsync(nilCtx)).Err
		},
		"CommitAndWait": func() error { _, err := s.Txn().Set("x", nil).CommitAndWait(nilCtx); return err },
		"Notify":        func() error { _, err := s.Notify(nilCtx, scheduler.Notification{Key: "x"}); return err },
		"Southbound":    func() error { _, err := s.Southbound(nilCtx, "nosuch"); return err },
		"Close":         func() error { return s.Close(nilCtx) },
	} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s(nil context) panicked: %v", name, p)
				}
			}()
			if err := call(); err == nil || !strings.Contains(err.Error(), "nil context") {
				t.Errorf("%s(nil context) = %v, want an error saying the context is nil", name, err)
			}
		}()
	}
}
