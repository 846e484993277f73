package scheduler

import (
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// jobs is the scheduler's queue and worker: jobs run one at a time, under
// the lock, each ending with its changes published to the view.
type jobs struct {
	*Scheduler

	qmu   sync.Mutex
	queue []*job
	// busy is set while a job runs: jobs never overlap. Jobs run on the
	// worker only, never on a committer's goroutine: a southbound call
	// that blocks past its timeout holds its goroutine, and a committer
	// must get its result once the transaction has one.
	busy    bool
	wake    chan struct{}
	closed  bool
	stopped chan struct{}
	timers  map[*time.Timer]struct{}

	// locked is set while the job in progress holds mu (see lock).
	locked bool
}

// lock takes the graph for the job in progress; unlock releases it. The
// flag tells the safety net (safely) whether the lock is to be released.
func (s *jobs) lock() {
	s.mu.Lock()
	s.locked = true
}

func (s *jobs) unlock() {
	s.locked = false
	s.mu.Unlock()
}

// safely runs fn, a step of job j, and recovers a panic in it (a bug of
// the scheduler, or of a function given to it that is not recovered
// where it is called): the job fails with an error naming the panic, a
// transaction in planning is rolled back, and the graph is released, so
// the scheduler stays usable. (What calls the transaction made stay made:
// the next resync repairs the difference.)
func (s *jobs) safely(j *job, fn func()) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		seq := j.seq.Load()
		err := fmt.Errorf("scheduler: %s job (transaction #%d) panicked: %v", j.kind, seq, p)
		s.opts.logger.Error("recovered a panic of a scheduler job; the job failed", "kind", j.kind.String(), "seq", seq,
			"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		if s.locked {
			if s.g.Open {
				s.g.Rollback()
			}
			s.panics.Drain()
			s.publish(nil, s.seq) // what the graph holds now, rolled back or not
			s.unlock()
		}
		j.finish(&Result{Seq: seq, Kind: j.kind, Err: err}, err)
	}()
	fn()
}
