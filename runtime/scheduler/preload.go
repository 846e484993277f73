package scheduler

import (
	"cmp"
	"slices"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/view"
)

// WithPreloadedHistory starts the history with recs, the records of
// transactions that an earlier run of the program made (an agent keeps
// its history in its state directory): History, Record, Timeline and
// GraphSnapshot answer for them as for the scheduler's own. They are
// taken in the order of their numbers, which must be below the first this
// scheduler gives (WithSeqAfter); those that are not, dry runs, numbers
// given twice and what the history's retention drops are left out. The
// records become the history's: do not modify them.
func WithPreloadedHistory(recs []Record) Option {
	return func(o *options) { o.preload = recs }
}

// preloadHistory adds the preloaded records to the history; called by New
// before the worker starts.
func (s *Scheduler) preloadHistory() {
	recs := slices.Clone(s.opts.preload)
	s.opts.preload = nil
	if len(recs) == 0 || s.view.Hist.Max <= 0 {
		return
	}
	slices.SortStableFunc(recs, func(a, b Record) int { return cmp.Compare(a.Seq, b.Seq) })
	var live []*view.HistEntry
	var last uint64
	for i := range recs {
		rec := &recs[i]
		if rec.DryRun || rec.Seq == 0 || rec.Seq > s.opts.seqAfter || rec.Seq == last {
			continue
		}
		last = rec.Seq
		live = s.view.Hist.Add(view.NewHistEntry(rec))
	}
	st := *s.view.State.Load()
	st.Hist = live
	s.view.State.Store(&st)
}
