package scheduler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/guard"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/registry"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/view"
)

// Scheduler keeps a southbound in sync with the intended state of its
// values. Create one with New; it runs one worker goroutine until Close.
type Scheduler struct {
	// The scheduler's concerns: each a set of methods over it, and the
	// state that only they keep.
	caller
	executor
	jobs

	opts options

	// mu guards the graph and the descriptor index: the worker holds it
	// while it runs a job. Readers never take it: they read the view,
	// which the worker publishes into when a job ends.
	mu    sync.Mutex
	g     *graph.Graph
	descs map[string]kv.Descriptor
	index registry.Index
	seq   uint64
	view  *view.View
	// retrieveOrder lists the descriptors that can Retrieve, in
	// RetrieveDependencies order (set at registration).
	retrieveOrder []kv.Descriptor

	watchers watcherSet

	// panics collects what the descriptors' guards recovered.
	panics guard.PanicRecord
}

// job is one unit of work of the worker: a transaction of some kind, or a
// registration.
type job struct {
	kind     TxnKind
	ctx      context.Context
	opts     txnOptions
	items    []KeyValue
	retry    []retryItem
	register []kv.Descriptor
	// drift is a drift check's input and decisions (DriftCheckTxn).
	drift *driftJob
	// read, for a job that only reads (Southbound), runs on the worker
	// between transactions and changes nothing.
	read func()
	// done receives the result of a job that has a waiter (nil for
	// retries and periodic resyncs).
	done   chan *Result
	regErr chan error
	// finished is set once the job has its result; taken when a call of
	// its plan was given up on and another goroutine ended it (see
	// takeOver).
	finished bool
	taken    *callCtx
	// seq is the transaction's sequence number once it has started.
	seq atomic.Uint64
	// one holds the items of a job of one (see Txn.job).
	one [1]KeyValue
}

type retryItem struct {
	key       string
	intentSeq uint64
}

// New creates a scheduler and starts its worker.
func New(opts ...Option) (*Scheduler, error) {
	o := defaultOptions()
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("scheduler: new: option %d is nil", i+1)
		}
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.observer != nil {
		o.observer = &safeObserver{o: o.observer, logger: o.logger}
	}
	g := graph.NewGraph()
	s := &Scheduler{
		opts:   o,
		g:      g,
		descs:  map[string]kv.Descriptor{},
		index:  registry.New(),
		jobs:   jobs{wake: make(chan struct{}, 1), stopped: make(chan struct{}), timers: map[*time.Timer]struct{}{}},
		caller: caller{abandon: make(chan struct{}, 1)},
		view:   view.NewView(&g.Nodes, view.History{Max: o.historyRecords, MaxAge: o.historyAge}, o.maxCycle),
		seq:    o.seqAfter,
	}
	s.caller.Scheduler, s.executor.Scheduler, s.jobs.Scheduler = s, s, s
	s.panics.Logger = o.logger
	s.watchers.logger = o.logger
	s.preloadHistory()
	go s.worker()
	go s.watchdog()
	if o.resyncPeriod > 0 {
		s.schedulePeriodicResync()
	}
	if o.driftInterval > 0 {
		s.driftStep.Store(int64(o.driftInterval))
		s.scheduleDriftJob(o.driftInterval, &driftJob{sweep: true})
	}
	return s, nil
}

// Register adds descriptors. Names must be unique and key spaces must not
// overlap; the first problem is returned and nothing of the call is
// registered. Values that were UNIMPLEMENTED and that a new descriptor
// handles are applied right away, in a transaction of kind
// RegistrationTxn.
func (s *Scheduler) Register(ds ...kv.Descriptor) error {
	j := &job{kind: RegistrationTxn, ctx: context.Background(), register: ds, done: make(chan *Result, 1), regErr: make(chan error, 1)}
	if err := s.enqueue(j); err != nil {
		return err
	}
	return <-j.regErr
}

// Descriptors returns the names of the registered descriptors, sorted.
func (s *Scheduler) Descriptors() []string {
	return slices.Sorted(maps.Keys(s.view.State.Load().Descs))
}

// Descriptor returns the registered descriptor with the given name.
func (s *Scheduler) Descriptor(name string) (kv.Descriptor, bool) {
	d, ok := s.view.State.Load().Descs[name]
	return guard.Unguard(d), ok
}

// DescriptorForKey returns the descriptor that handles key.
func (s *Scheduler) DescriptorForKey(key string) (kv.Descriptor, bool) {
	d := s.view.State.Load().Index.Lookup(key)
	return guard.Unguard(d), d != nil
}

// lookup returns the descriptor of a new value's key (see registry.Index.resolve).
func (s *Scheduler) lookup(key string) kv.Descriptor { return s.index.Resolve(key) }

// checkRegistration validates ds against the registered descriptors and
// each other.
func (s *Scheduler) checkRegistration(ds []kv.Descriptor) error {
	pending := map[string]kv.Descriptor{}
	all := make([]kv.Descriptor, 0, len(s.descs)+len(ds))
	for _, d := range s.descs {
		all = append(all, d)
	}
	for _, d := range ds {
		if d == nil {
			return &RegistrationError{Descriptor: "<nil>", Reason: "nil descriptor"}
		}
		name := d.Name()
		if _, dup := s.descs[name]; dup {
			return &RegistrationError{Descriptor: name, Reason: "a descriptor with this name is already registered"}
		}
		if _, dup := pending[name]; dup {
			return &RegistrationError{Descriptor: name, Reason: "the name is given twice"}
		}
		for _, other := range all {
			if reason := overlap(d, other); reason != "" {
				return &RegistrationError{Descriptor: name, Reason: reason}
			}
		}
		pending[name] = d
		all = append(all, d)
	}
	for _, d := range ds {
		for _, dep := range d.RetrieveDependencies() {
			if s.descs[dep] == nil && pending[dep] == nil {
				return &RegistrationError{Descriptor: d.Name(), Reason: fmt.Sprintf("RetrieveDependencies names descriptor %q, which is not registered (register it first, or in the same call)", dep)}
			}
		}
	}
	if _, err := registry.RetrieveOrder(all); err != nil {
		return &RegistrationError{Descriptor: ds[len(ds)-1].Name(), Reason: err.Error()}
	}
	return nil
}

// overlap explains why the key spaces of a and b overlap, or returns "".
func overlap(a, b kv.Descriptor) string {
	pa, pb := a.KeyPrefix(), b.KeyPrefix()
	if !strings.HasPrefix(pa, pb) && !strings.HasPrefix(pb, pa) {
		return ""
	}
	ta, tb := a.KeyTemplate(), b.KeyTemplate()
	if ta == nil || tb == nil {
		return fmt.Sprintf("its key prefix %q and the prefix %q of descriptor %s nest, and without key templates on both the key spaces cannot be told apart", pa, pb, b.Name())
	}
	if example, ok := ta.Overlaps(tb); ok {
		return fmt.Sprintf("its key template %q overlaps the template %q of descriptor %s: both match %q", ta, tb, b.Name(), example)
	}
	return ""
}

// enqueue adds a job to the queue, or fails when the scheduler is closed.
func (s *jobs) enqueue(j *job) error {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.queue = append(s.queue, j)
	signal(s.wake)
	return nil
}

// QueueLen returns the number of jobs waiting for the worker.
func (s *Scheduler) QueueLen() int {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	return len(s.queue)
}

// worker runs the queued jobs until Close. When a call of a job's plan is
// given up on, the goroutine that takes the job over goes on as the worker
// (see takeOver) and this one ends once the call returns.
func (s *Scheduler) worker() {
	for {
		s.qmu.Lock()
		if len(s.queue) == 0 || s.busy {
			// Every field is read under the lock: Close takes the queue
			// over under it. Not busy here means the queue is empty.
			stop := s.closed && !s.busy
			s.qmu.Unlock()
			if stop {
				s.watchers.closeAll()
				close(s.stopped)
				return
			}
			<-s.wake
			continue
		}
		j := s.queue[0]
		s.queue = slices.Delete(s.queue, 0, 1) // its array takes the next jobs
		s.busy = true
		s.qmu.Unlock()
		s.safely(j, func() { s.process(j) })
		if j.taken != nil {
			return
		}
		s.idle()
	}
}

// idle ends a job and lets the worker look at the queue again.
func (s *jobs) idle() {
	s.qmu.Lock()
	s.busy = false
	// The worker needs waking only for queued work or to stop: one that
	// waits with nothing to do costs a futex wake per transaction.
	wake := len(s.queue) > 0 || s.closed
	s.qmu.Unlock()
	if wake {
		signal(s.wake)
	}
}

// signal sends on ch, a channel of one, unless a signal is pending there.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Close stops the scheduler. Queued work is drained until ctx ends; what
// is still queued then is rejected with ErrClosed, and pending retries are
// dropped. Commits after Close fail with ErrClosed. When ctx ends while a
// transaction still runs, Close returns at once with an error naming the
// southbound call in flight (its descriptor, operation, key and how long
// it has run): that call is given up on (it fails with a *CallTimeoutError
// wrapping ErrClosed), the transaction makes no further call, and the
// worker ends once it has recorded the transaction.
func (s *Scheduler) Close(ctx context.Context) error {
	if ctx == nil {
		return errNilContext("close")
	}
	s.qmu.Lock()
	if s.closed {
		s.qmu.Unlock()
		select {
		case <-s.stopped:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("scheduler: close: a transaction still runs: %w", ctx.Err())
		}
	}
	s.closed = true
	for t := range s.timers {
		t.Stop()
	}
	clear(s.timers)
	signal(s.wake)
	s.qmu.Unlock()

	select {
	case <-s.stopped:
		return nil
	case <-ctx.Done():
	}
	s.qmu.Lock()
	rejected := s.queue
	s.queue = nil
	s.qmu.Unlock()
	for _, j := range rejected {
		j.finish(&Result{Kind: j.kind, Err: ErrClosed}, ErrClosed)
	}
	// Give up on the call in flight, and on every later one.
	s.closing.Store(true)
	c := s.inFlight.Load()
	signal(s.abandon)
	var reasons []string
	if c != nil {
		reasons = append(reasons, "a southbound call was in flight: "+c.describe(time.Now()))
	}
	if len(rejected) > 0 {
		reasons = append(reasons, fmt.Sprintf("%d queued jobs rejected", len(rejected)))
	}
	select {
	case <-s.stopped:
		if len(reasons) == 0 {
			return nil
		}
	default:
		if len(reasons) == 0 {
			reasons = append(reasons, "a transaction was still running")
		}
	}
	return fmt.Errorf("scheduler: close: %s: %w", strings.Join(reasons, "; "), ctx.Err())
}

func (j *job) finish(r *Result, regErr error) {
	if j.finished {
		return
	}
	j.finished = true
	if j.regErr != nil {
		j.regErr <- regErr
	}
	if j.done != nil {
		j.done <- r
	}
}

// process runs one job on the worker.
func (s *jobs) process(j *job) {
	if j.ctx.Err() != nil {
		j.finish(&Result{Kind: j.kind, Err: j.ctx.Err()}, j.ctx.Err())
		return
	}
	if j.read != nil {
		s.lock()
		j.read()
		s.unlock()
		j.finish(&Result{Kind: j.kind}, nil)
		return
	}
	s.lock()
	// skip ends a job with no transaction to run.
	skip := func(err error) {
		s.unlock()
		j.finish(&Result{Kind: j.kind, Err: err}, err)
	}
	if j.register != nil {
		if err := s.checkRegistration(j.register); err != nil {
			skip(err)
			return
		}
		for _, d := range j.register {
			g := &guard.Guard{Descriptor: d, Rec: &s.panics}
			s.descs[d.Name()] = g
			s.index.Add(g)
			s.g.KeySpaces = append(s.g.KeySpaces, g.KeyPrefix())
		}
		s.retrieveOrder, _ = registry.RetrieveOrder(slices.Collect(maps.Values(s.descs))) // checked above
		s.publishDescriptors()
		j.items = s.newlyImplemented(j.register)
		if len(j.items) == 0 {
			skip(nil)
			return
		}
	}
	if j.kind == DriftCheckTxn {
		if err := s.prepareDrift(j); err != nil || len(j.drift.items) == 0 {
			skip(err) // nothing drifted: no transaction
			return
		}
	}
	res := s.runTxn(j)
	if j.taken != nil {
		return // another goroutine ends the job (see takeOver)
	}
	s.endJob(j, res)
}

// endJob records a transaction's result, releases the graph and delivers
// the result.
func (s *jobs) endJob(j *job, res *Result) {
	var entry *view.HistEntry
	if !res.DryRun && s.view.Hist.Max > 0 {
		// The history keeps a compact copy of the record: this one need
		// not outlive the call.
		rec := record(res, j)
		entry = view.NewHistEntry(&rec)
	}
	var seq uint64
	if !res.DryRun {
		seq = res.Seq
	}
	if s.txnSpan != nil {
		s.endTxnSpan(res)
	}
	statuses := s.publish(entry, seq)
	s.unlock()
	s.watchers.deliver(statuses)
	if s.opts.observer != nil {
		// The observer may keep its record: it gets one of its own, with
		// its own copy of the values (a Txn may change after its commit).
		rec := record(res, j)
		s.opts.observer.TxnDone(&rec)
	}
	j.finish(res, nil)
}

// record returns the record of res, the result of job j.
func record(res *Result, j *job) Record {
	return Record{Seq: res.Seq, Kind: res.Kind, Description: res.Description, Values: j.items,
		Planned: res.Planned, Executed: res.Executed, Errors: res.Errors, Reverted: res.Reverted,
		DryRun: res.DryRun, Batches: res.Batches, BatchedOps: res.BatchedOps, Start: res.Start, End: res.End}
}

// schedulePeriodicResync queues a downstream resync after the resync
// period, and again after each one, until Close.
func (s *jobs) schedulePeriodicResync() {
	s.after(s.opts.resyncPeriod, func() {
		j := &job{kind: DownstreamResyncTxn, ctx: context.Background(),
			opts: txnOptions{description: "periodic", resync: DownstreamResyncTxn}}
		if s.enqueue(j) == nil {
			s.schedulePeriodicResync()
		}
	})
}

// newlyImplemented lists the keys that the new descriptors handle: those
// UNIMPLEMENTED, and those given to another descriptor as misfits (a scan
// of the graph, but registration is rare and mostly happens before any
// value exists).
func (s *Scheduler) newlyImplemented(ds []kv.Descriptor) []KeyValue {
	var items []KeyValue
	handled := func(key string) bool {
		for _, d := range ds {
			if d.IsKey(key) {
				return true
			}
		}
		return false
	}
	for key := range s.g.Unimplemented {
		if handled(key) {
			items = append(items, KeyValue{Key: key})
		}
	}
	for key, n := range s.g.All() {
		if registry.IsMisfit(n.Desc) && handled(key) {
			items = append(items, KeyValue{Key: key})
		}
	}
	sort.Slice(items, func(a, b int) bool { return items[a].Key < items[b].Key })
	return items
}

// after runs fn after delay, unless the scheduler has closed by then (its
// timers are stopped at Close).
func (s *jobs) after(delay time.Duration, fn func()) {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if s.closed {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(delay, func() {
		fn() // (queued before its timer goes: see Idle)
		s.qmu.Lock()
		delete(s.timers, t)
		s.qmu.Unlock()
	})
	s.timers[t] = struct{}{}
}
