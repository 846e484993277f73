package scheduler

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
)

// Observer receives the scheduler's events, for metrics. Its methods are
// called on the goroutine running the transaction, some with the graph
// locked: they must be quick, must not block and must not call the
// scheduler. Scrape-time figures (queue length, values per state) are read
// with QueueLen and StateCounts instead.
type Observer interface {
	// TxnDone is called once per transaction that ran (a dry run
	// included), after it ended.
	TxnDone(rec *Record)
	// OpDone is called after each southbound call: Create, Update and
	// Delete of executions, and Retrieve of refreshes.
	OpDone(descriptor string, op OpKind, took time.Duration, err error)
}

// WithObserver sets an observer of transactions and southbound calls
// (default none; without one the calls are not timed). A panic in one of
// its methods is recovered and logged.
func WithObserver(o Observer) Option { return func(opts *options) { opts.observer = o } }

// safeObserver recovers and logs the panics of an observer.
type safeObserver struct {
	o      Observer
	logger *slog.Logger
}

func (s *safeObserver) recovered(method string) {
	if p := recover(); p != nil {
		s.logger.Error("recovered a panic of the observer", "method", method, "panic", fmt.Sprint(p))
	}
}

func (s *safeObserver) TxnDone(rec *Record) {
	defer s.recovered("TxnDone")
	s.o.TxnDone(rec)
}

func (s *safeObserver) OpDone(descriptor string, op OpKind, took time.Duration, err error) {
	defer s.recovered("OpDone")
	s.o.OpDone(descriptor, op, took, err)
}

// batchDone tells the observer of a group when it is a BatchObserver.
func (s *safeObserver) batchDone(descriptor string, op OpKind, ops int, took time.Duration) {
	if bo, ok := s.o.(BatchObserver); ok {
		defer s.recovered("BatchDone")
		bo.BatchDone(descriptor, op, ops, took)
	}
}

// StateCounts returns the number of values in each state.
func (s *Scheduler) StateCounts() map[State]int {
	r := s.view.Read()
	defer r.Done()
	counts := map[State]int{}
	r.Each(func(_ string, rec *graph.ViewRec) bool {
		counts[rec.State]++
		return true
	})
	return counts
}
