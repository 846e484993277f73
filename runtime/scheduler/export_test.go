package scheduler

// Idle reports whether no job runs or waits and no timer (a retry, a drift
// check) is set: nothing happens until a caller asks. A timer's job is
// queued before the timer is forgotten, so a due job is never missed.
func (s *Scheduler) Idle() bool {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	return len(s.queue) == 0 && !s.busy && len(s.timers) == 0
}
