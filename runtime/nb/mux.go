package nb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// DefaultLoadDeadline is how long the Mux waits, by default, for every
// source's initial load before its startup resync.
const DefaultLoadDeadline = 30 * time.Second

// ErrMuxClosed is the error of an update or plan after Close.
var ErrMuxClosed = errors.New("nb: the mux is closed")

// ErrNotStarted is the error of a plan before the startup resync.
var ErrNotStarted = errors.New("nb: the startup resync has not run yet (some sources have not loaded)")

// MuxOption configures a Mux.
type MuxOption func(*muxOptions)

type muxOptions struct {
	logger   *slog.Logger
	priority map[string]int
	deadline time.Duration
	store    Store
	sources  []string
	// txnOpts and startupOpts: WithTxnOptions, WithStartupTxnOptions.
	txnOpts, startupOpts []scheduler.TxnOption
}

// WithPriority sets the priority of sources: when several set the same
// key, the value of the source with the highest number wins. Sources not
// listed have priority 0; ties are broken by name (the smaller wins).
func WithPriority(p map[string]int) MuxOption {
	return func(o *muxOptions) { o.priority = maps.Clone(p) }
}

// WithPriorityOrder sets the priority of sources as a list, the first the
// highest. Sources not listed come after all of them, by name.
func WithPriorityOrder(names ...string) MuxOption {
	return func(o *muxOptions) {
		o.priority = make(map[string]int, len(names))
		for i, n := range names {
			o.priority[n] = len(names) - i
		}
	}
}

// WithLoadDeadline sets how long the Mux waits for every source's initial
// load before its startup resync (default DefaultLoadDeadline). The values
// of a source that has not loaded by then are kept as they were applied
// before the restart (see WithStore). Zero or less waits for every source.
func WithLoadDeadline(d time.Duration) MuxOption {
	return func(o *muxOptions) { o.deadline = d }
}

// WithStore makes the Mux remember what it applied in st (write-ahead), and
// use the records at startup: values of ours no source wants any more are
// removed, values of a source not loaded yet are kept. The caller closes
// st after the Mux.
func WithStore(st Store) MuxOption { return func(o *muxOptions) { o.store = st } }

// WithSources declares the sources the startup waits for, beyond those
// given a Sink or run by Run. Declare every source before the first one
// loads when sinks are taken one by one: the startup resync happens as soon
// as every known source has loaded.
func WithSources(names ...string) MuxOption {
	return func(o *muxOptions) { o.sources = append(o.sources, names...) }
}

// WithMuxLogger sets the logger of conflicts and source problems (default
// slog.Default()).
func WithMuxLogger(l *slog.Logger) MuxOption { return func(o *muxOptions) { o.logger = l } }

// SourceState is the state of one source, for health and readiness pages.
type SourceState struct {
	Name string
	// Loaded is set once the source's initial load (its first resync)
	// arrived.
	Loaded bool
	// Keys is the number of keys the source sets (stand-ins included
	// before it has loaded).
	Keys int
	// Problem is the source's last reported problem, or the error of its
	// last update; nil when none.
	Problem error
	// LastUpdate is when its last update arrived (zero: none yet).
	LastUpdate time.Time
}

// Mux merges several sources into the scheduler's intended state. Each
// source has its own desired map; for each key the value of the source of
// highest priority that sets it is intended, and the others are reported
// as overridden (Owner). An update of one source becomes one transaction
// with the difference of the merged state; a resync of one source replaces
// that source's keys only, never another's.
//
// The first transaction is a full resync, once every source has loaded or
// when the load deadline passes; until then updates are only recorded.
// The sources it waits for are those declared (WithSources), given a Sink
// or run by Run. With a Store, the values recorded for a known source that
// has not loaded by then are kept as they were applied (stand-ins, until
// its first resync replaces them); recorded values that no source wants,
// a source no longer known included, are removed; values never recorded
// are not touched. A value leaves the record once its delete has
// succeeded: one whose delete failed stays recorded, still ours.
// A Mux is safe for concurrent use; updates are applied one at a time.
type Mux struct {
	s      *scheduler.Scheduler
	opts   muxOptions
	logger *slog.Logger
	timer  *time.Timer

	// mu serialises the writers (updates, problems, the deadline),
	// commits included; rmu guards what readers see (the sources' maps
	// and states, started), taken by writers only around their changes,
	// so that Owner, Ready and Sources never wait for a transaction.
	mu      sync.Mutex
	rmu     sync.RWMutex
	sources map[string]*source
	// applied is the merged state sent to the scheduler: key -> winner.
	applied map[string]entry
	// started is set once the startup resync has run; startedCh is
	// closed then.
	started   bool
	startedCh chan struct{}
	// waitAll is set when the startup must wait for every source (the
	// store could not be read, so stand-ins are unknown).
	waitAll bool
	closed  bool
}

type source struct {
	name    string
	desired map[string]proto.Message
	// loadNote is the description of the source's initial load when it
	// came before the startup resync, which names it.
	loadNote   string
	loaded     bool
	problem    error
	lastUpdate time.Time
}

type entry struct {
	owner string
	value proto.Message
}

// NewMux returns a Mux applying to s. The load deadline starts now.
func NewMux(s *scheduler.Scheduler, opts ...MuxOption) *Mux {
	o := muxOptions{deadline: DefaultLoadDeadline}
	for _, opt := range opts {
		opt(&o)
	}
	m := &Mux{s: s, opts: o, logger: o.logger, sources: map[string]*source{}, applied: map[string]entry{}, startedCh: make(chan struct{})}
	if m.logger == nil {
		m.logger = slog.Default()
	}
	for _, n := range o.sources {
		m.source(n)
	}
	if o.deadline > 0 {
		// Under the lock: the deadline's goroutine reads m.timer under it
		// (startup), and may run before AfterFunc has returned.
		m.mu.Lock()
		m.timer = time.AfterFunc(o.deadline, m.deadlinePassed)
		m.mu.Unlock()
	}
	return m
}

// Close stops the load deadline; updates after it are refused. It does not
// close the scheduler nor the store.
func (m *Mux) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	if m.timer != nil {
		m.timer.Stop()
	}
}

// source returns the state of name, made known if it was not; m.mu held.
func (m *Mux) source(name string) *source {
	src, ok := m.sources[name]
	if !ok {
		src = &source{name: name, desired: map[string]proto.Message{}}
		m.set(func() { m.sources[name] = src })
	}
	return src
}

// Sink returns the sink of the source name, which becomes a source the
// startup waits for.
func (m *Mux) Sink(name string) Sink {
	m.mu.Lock()
	m.source(name)
	m.mu.Unlock()
	return sink{m: m, name: name}
}

type sink struct {
	m    *Mux
	name string
}

func (k sink) Apply(ctx context.Context, u Update) error {
	_, err := k.m.apply(ctx, k.name, u, nil)
	return err
}

func (k sink) Problem(err error) { k.m.problem(k.name, err) }

// ApplyWith applies an update of the source name as its sink's Apply does,
// the transaction made with opts too (Revert, Retry: a source of remote
// transactions passes its client's options), and returns the transaction's
// result: nil when the update changed nothing in the merged state (a key
// another source overrides, say) or was only recorded (before the startup
// resync). A transaction the scheduler reverted (Revert, and a failure)
// leaves the source's values as they were before the update: what it
// intends, and what the store records. The source becomes known, as with
// Sink.
func (m *Mux) ApplyWith(ctx context.Context, name string, u Update, opts ...scheduler.TxnOption) (*scheduler.Result, error) {
	return m.apply(ctx, name, u, nil, opts...)
}

// precomputed is the state of a source after an update, computed by the
// caller from the state from (a Remote's): apply takes it instead of
// computing it again when the source's state is still from itself. Both
// are never changed in place.
type precomputed struct{ from, next map[string]proto.Message }

// applyNext is ApplyWith whose caller computed the source's next state
// (nextDesired(from, u)).
func (m *Mux) applyNext(ctx context.Context, name string, u Update, from, next map[string]proto.Message, opts ...scheduler.TxnOption) (*scheduler.Result, error) {
	return m.apply(ctx, name, u, &precomputed{from: from, next: next}, opts...)
}

// desiredShared is Desired without the copy: the Mux's own map, which
// the caller must not change (the Mux changes a loaded source's map only
// by replacing it).
func (m *Mux) desiredShared(name string) map[string]proto.Message {
	m.rmu.RLock()
	defer m.rmu.RUnlock()
	if src, ok := m.sources[name]; ok {
		return src.desired
	}
	return nil
}

// sameMap says whether a and b are the same map (not merely equal).
func sameMap(a, b map[string]proto.Message) bool {
	return a != nil && b != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// Plan plans, as a scheduler dry run, the transaction that the update of
// the source name would make of the merged state (the other sources'
// values and priorities included), and changes nothing. It runs the code
// that applies the update (ApplyWith, a sink's Apply), in a dry run: the
// plan is what applying would do. Its result is nil when the update would
// change nothing; before the startup resync it fails.
func (m *Mux) Plan(ctx context.Context, name string, u Update, opts ...scheduler.TxnOption) (*scheduler.Result, error) {
	if err := checkUpdate(u); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrMuxClosed
	}
	if !m.started {
		return nil, ErrNotStarted
	}
	var prev map[string]proto.Message
	if src, ok := m.sources[name]; ok {
		prev = src.desired
	}
	// The very commit an apply of the update makes, as a dry run.
	return m.commit(ctx, updateKeys(prev, u), "plan of "+describe(name, u), what{name: name, desired: nextDesired(prev, u), dryRun: true}, append(slices.Clip(opts), scheduler.Source(name))...)
}

// Desired returns a copy of what the source name intends (nil for a source
// not known).
func (m *Mux) Desired(name string) map[string]proto.Message {
	m.rmu.RLock()
	defer m.rmu.RUnlock()
	src, ok := m.sources[name]
	if !ok {
		return nil
	}
	return maps.Clone(src.desired)
}

// Run runs every source with its sink until ctx ends, and returns when all
// have returned: nil, or the errors of the sources that stopped with one
// (each also reported as the source's problem and logged). A source that
// stops is not restarted.
func (m *Mux) Run(ctx context.Context, sources ...Source) error {
	seen := map[string]bool{}
	for _, src := range sources {
		if seen[src.Name()] {
			return fmt.Errorf("nb: two sources named %q", src.Name())
		}
		seen[src.Name()] = true
	}
	sinks := make([]Sink, len(sources))
	for i, src := range sources {
		sinks[i] = m.Sink(src.Name())
	}
	var wg sync.WaitGroup
	errs := make([]error, len(sources))
	for i, src := range sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := src.Run(ctx, sinks[i]); err != nil {
				errs[i] = fmt.Errorf("source %s: %w", src.Name(), err)
				m.logger.Error("northbound source stopped", "source", src.Name(), "err", err)
				m.problem(src.Name(), err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (m *Mux) problem(name string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	src := m.source(name)
	m.set(func() { src.problem = err })
	if err != nil {
		m.logger.Warn("northbound source problem", "source", name, "err", err)
	}
}

// Ready reports whether every source has loaded and the startup resync has
// run.
func (m *Mux) Ready() bool {
	m.rmu.RLock()
	defer m.rmu.RUnlock()
	return m.started && m.allLoaded()
}

// Started returns a channel closed once the startup resync has run. Until
// then the scheduler knows nothing of what the sources and the store say
// is ours: a southbound watcher that notifies before it would have values
// of ours taken for another program's (OBTAINED). An agent starts its
// watchers once it is closed.
func (m *Mux) Started() <-chan struct{} { return m.startedCh }

func (m *Mux) allLoaded() bool {
	for _, src := range m.sources {
		if !src.loaded {
			return false
		}
	}
	return true
}

// Sources returns the state of each source, by name.
func (m *Mux) Sources() []SourceState {
	m.rmu.RLock()
	defer m.rmu.RUnlock()
	out := make([]SourceState, 0, len(m.sources))
	for _, src := range m.sources {
		out = append(out, SourceState{Name: src.name, Loaded: src.loaded, Keys: len(src.desired), Problem: src.problem, LastUpdate: src.lastUpdate})
	}
	slices.SortFunc(out, func(a, b SourceState) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Owner returns the source whose value of key is intended, and the sources
// that set the key too and were overridden, the highest priority first.
// owner is empty when no source sets key.
func (m *Mux) Owner(key string) (owner string, overridden []string) {
	m.rmu.RLock()
	defer m.rmu.RUnlock()
	setters := m.setters(key)
	if len(setters) == 0 {
		return "", nil
	}
	if len(setters) == 1 {
		return setters[0], nil
	}
	return setters[0], setters[1:]
}

// setters returns the sources that set key, the winner first; m.mu or
// m.rmu held.
func (m *Mux) setters(key string) []string {
	var names []string
	for name, src := range m.sources {
		if _, ok := src.desired[key]; ok {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, m.compare)
	return names
}

// compare orders sources by priority, the highest first, then by name.
func (m *Mux) compare(a, b string) int {
	if pa, pb := m.opts.priority[a], m.opts.priority[b]; pa != pb {
		if pa > pb {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// winner returns the intended entry of key; m.mu held.
func (m *Mux) winner(key string) (entry, bool) { return m.winnerWith(key, "", nil) }

// winnerWith is winner with the source name intending desired instead of
// what it does (a plan); name "" changes nothing; m.mu held.
func (m *Mux) winnerWith(key, name string, desired map[string]proto.Message) (entry, bool) {
	best := entry{}
	found := false
	consider := func(n string, d map[string]proto.Message) {
		v, ok := d[key]
		if !ok {
			return
		}
		if !found || m.compare(n, best.owner) < 0 {
			best, found = entry{owner: n, value: v}, true
		}
	}
	for _, src := range m.sources {
		if src.name != name || name == "" {
			consider(src.name, src.desired)
		}
	}
	if name != "" {
		consider(name, desired)
	}
	return best, found
}

// nextDesired returns a source's desired map after u.
func nextDesired(prev map[string]proto.Message, u Update) map[string]proto.Message {
	next := maps.Clone(prev)
	if u.Resync || next == nil {
		next = make(map[string]proto.Message, len(u.Changes))
	}
	for _, c := range u.Changes {
		if c.Value == nil {
			delete(next, c.Key)
		} else {
			next[c.Key] = c.Value
		}
	}
	return next
}

// updateKeys returns the keys that u may change, sorted.
func updateKeys(prev map[string]proto.Message, u Update) []string {
	keys := map[string]struct{}{}
	for _, c := range u.Changes {
		keys[c.Key] = struct{}{}
	}
	if u.Resync {
		for k := range prev {
			keys[k] = struct{}{}
		}
	}
	return slices.Sorted(maps.Keys(keys))
}

// checkUpdate returns the error of an update that cannot be applied.
func checkUpdate(u Update) error {
	for _, c := range u.Changes {
		if c.Key == "" {
			return errors.New("nb: a change with an empty key")
		}
		if c.Value != nil && !c.Value.ProtoReflect().IsValid() {
			return fmt.Errorf("nb: key %q: a nil %T message (a nil Value deletes the key)", c.Key, c.Value)
		}
	}
	return nil
}

func (m *Mux) apply(ctx context.Context, name string, u Update, pre *precomputed, opts ...scheduler.TxnOption) (*scheduler.Result, error) {
	if err := checkUpdate(u); err != nil {
		m.problem(name, err)
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrMuxClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	src := m.source(name)
	prev := src.desired
	prevLoaded := src.loaded
	var next map[string]proto.Message
	if pre != nil && sameMap(pre.from, prev) {
		next = pre.next
	} else {
		next = nextDesired(prev, u)
	}
	m.set(func() {
		src.desired = next
		src.lastUpdate = time.Now()
		if u.Resync {
			src.loaded = true
			if !m.started {
				src.loadNote = u.Description
			}
		}
	})
	undo := func(err error) {
		m.set(func() { src.desired, src.loaded, src.problem = prev, prevLoaded, err })
	}
	if !m.started {
		// Recorded only, until the startup resync.
		if m.allLoaded() {
			if err := m.startup(ctx, "every source has loaded"); err != nil {
				undo(err)
				return nil, err
			}
		}
		m.set(func() { src.problem = nil })
		return nil, nil
	}
	res, err := m.commit(ctx, updateKeys(prev, u), describe(name, u), what{}, append(slices.Clip(opts), scheduler.Source(name))...)
	if err != nil {
		undo(err)
		return nil, err
	}
	if res != nil && res.Reverted {
		// The source intends what it did before the update.
		m.set(func() { src.desired, src.loaded = prev, prevLoaded })
		return res, nil
	}
	m.set(func() { src.problem = nil })
	return res, nil
}

// set makes a change that readers see; m.mu held.
func (m *Mux) set(change func()) {
	m.rmu.Lock()
	defer m.rmu.Unlock()
	change()
}

func describe(name string, u Update) string {
	d := "source " + name
	if u.Resync {
		d += " (resync)"
	}
	if u.Description != "" {
		d += ": " + u.Description
	}
	return d
}

// what is what a commit is of: the merged state as it is (the zero
// what), or, for a plan, with the source name intending desired instead,
// as a dry run that changes nothing.
type what struct {
	name    string
	desired map[string]proto.Message
	dryRun  bool
}

// commit sends the difference of the merged state on keys to the scheduler
// as one transaction, recording it in the store around it; m.mu held. Its
// error says that nothing was applied (m.applied and the store are as
// before). A dry run (w.dryRun) returns the plan of the same transaction
// and records nothing.
func (m *Mux) commit(ctx context.Context, keys []string, description string, w what, opts ...scheduler.TxnOption) (*scheduler.Result, error) {
	txn := m.s.Txn(m.txnOptions(opts)...).With(scheduler.Description(description))
	if w.dryRun {
		txn.With(scheduler.DryRun())
	}
	next := map[string]entry{}
	var puts []Applied
	var deletes []string
	var undoPuts []Applied
	var undoDeletes []string
	for _, k := range keys {
		old, had := m.applied[k]
		e, ok := m.winnerWith(k, w.name, w.desired)
		if !w.dryRun {
			m.reportConflict(k)
		}
		switch {
		case !ok && had:
			txn.Delete(k)
			deletes = append(deletes, k)
		case ok && (!had || old.owner != e.owner || !proto.Equal(old.value, e.value)):
			if !had || !proto.Equal(old.value, e.value) {
				txn.Set(k, e.value)
			}
			next[k] = e
			puts = append(puts, Applied{Key: k, Source: e.owner, Value: e.value})
			if had {
				undoPuts = append(undoPuts, Applied{Key: k, Source: old.owner, Value: old.value})
			} else {
				undoDeletes = append(undoDeletes, k)
			}
		}
	}
	if len(puts) == 0 && len(deletes) == 0 {
		return nil, nil
	}
	if w.dryRun {
		if txn.Len() == 0 {
			// Only owners change: no transaction.
			return nil, nil
		}
		return txn.Commit(ctx)
	}
	if m.opts.store != nil && len(puts) > 0 {
		if err := m.opts.store.Record(puts, nil); err != nil {
			return nil, fmt.Errorf("nb: recording the values before applying them: %w", err)
		}
	}
	var res *scheduler.Result
	if txn.Len() > 0 {
		var err error
		res, err = txn.Commit(ctx)
		var te *scheduler.TxnError
		if err != nil && !errors.As(err, &te) && (res == nil || res.Seq == 0) {
			// Not applied: forget what was written ahead.
			if m.opts.store != nil && (len(undoPuts) > 0 || len(undoDeletes) > 0) {
				if uerr := m.opts.store.Record(undoPuts, undoDeletes); uerr != nil {
					m.logger.Error("nb: undoing the record of a transaction not applied", "err", uerr)
				}
			}
			return nil, err
		}
		if err != nil && !errors.As(err, &te) {
			m.logger.Warn("nb: transaction still running when its context ended", "description", description, "err", err)
		}
		if res != nil && res.Reverted {
			// Reverted (the Revert option): the scheduler intends
			// what it did before, and so does the Mux; nothing of the
			// transaction stays recorded.
			if m.opts.store != nil && (len(undoPuts) > 0 || len(undoDeletes) > 0) {
				if uerr := m.opts.store.Record(undoPuts, undoDeletes); uerr != nil {
					m.logger.Error("nb: undoing the record of a reverted transaction", "err", uerr)
				}
			}
			return res, nil
		}
	}
	for k, e := range next {
		m.applied[k] = e
	}
	for _, k := range deletes {
		delete(m.applied, k)
	}
	if m.opts.store != nil && len(deletes) > 0 {
		if err := m.opts.store.Record(nil, m.gone(deletes)); err != nil {
			// Harmless but for the next startup, which asks about them.
			m.logger.Error("nb: removing deleted values from the store", "err", err)
		}
	}
	return res, nil
}

// gone returns the keys, of those deleted from the intended state, whose
// values the scheduler no longer holds as applied by us: those whose
// delete failed stay recorded, for the next startup to delete them. The
// record is what says a value is ours: one dropped from it while still
// in the southbound would be taken for another program's after a
// restart, and left behind.
func (m *Mux) gone(keys []string) []string {
	out := keys[:0:0]
	for _, k := range keys {
		if st := m.s.Status(k); st.Applied != nil && st.Origin == kv.OriginNB {
			continue
		}
		out = append(out, k)
	}
	return out
}

// reportConflict logs a key that several sources set; m.mu held.
func (m *Mux) reportConflict(key string) {
	setters := m.setters(key)
	if len(setters) > 1 {
		m.logger.Warn("nb: key set by several sources", "key", key, "owner", setters[0], "overridden", setters[1:])
	}
}

func (m *Mux) deadlinePassed() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started || m.closed || m.waitAll {
		return
	}
	var missing []string
	for _, src := range m.sources {
		if !src.loaded {
			missing = append(missing, src.name)
		}
	}
	slices.Sort(missing)
	m.logger.Warn("nb: load deadline passed; starting without some sources (their values stay as applied before)", "not loaded", missing)
	if err := m.startup(context.Background(), "load deadline passed"); err != nil {
		m.logger.Error("nb: startup resync", "err", err)
		if !errors.Is(err, scheduler.ErrClosed) {
			// Try again after another deadline (or once every
			// source has loaded).
			m.timer = time.AfterFunc(m.opts.deadline, m.deadlinePassed)
		}
	}
}

// startup runs the first transaction, a full resync of the merged state
// with the values remembered in the store; m.mu held.
func (m *Mux) startup(ctx context.Context, why string) error {
	var records []Applied
	if m.opts.store != nil {
		var err error
		records, err = m.opts.store.Load()
		if err != nil {
			if !m.allLoaded() {
				// Without the records, the values of the sources
				// not loaded cannot be kept: wait for all of them.
				m.waitAll = true
				m.logger.Error("nb: the store of applied values cannot be read; waiting for every source before the startup resync", "err", err)
				return nil
			}
			m.logger.Error("nb: the store of applied values cannot be read entirely; stale values of ours may be left behind", "err", err)
		}
	}
	// Stand-ins: the values of a source not loaded, as applied before.
	standIns := 0
	m.set(func() {
		for _, r := range records {
			src, ok := m.sources[r.Source]
			if !ok || src.loaded || r.Value == nil {
				continue
			}
			if _, set := src.desired[r.Key]; !set {
				src.desired[r.Key] = r.Value
				standIns++
			}
		}
	})
	keys := map[string]struct{}{}
	for _, src := range m.sources {
		for k := range src.desired {
			keys[k] = struct{}{}
		}
	}
	merged := make(map[string]entry, len(keys))
	puts := make([]Applied, 0, len(keys))
	txn := m.s.Txn(append(slices.Clip(m.opts.startupOpts), scheduler.FullResync())...)
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		e, _ := m.winner(k)
		m.reportConflict(k)
		merged[k] = e
		puts = append(puts, Applied{Key: k, Source: e.owner, Value: e.value})
		txn.Set(k, e.value)
	}
	remembered := make([]scheduler.KeyValue, 0, len(records))
	var stale []string
	for _, r := range records {
		if r.Value != nil {
			remembered = append(remembered, scheduler.KeyValue{Key: r.Key, Value: r.Value})
		}
		if _, ok := merged[r.Key]; !ok {
			stale = append(stale, r.Key)
		}
	}
	txn.With(scheduler.Remembered(remembered...))
	var names []string
	for _, src := range m.sources {
		n := src.name
		if !src.loaded {
			n += " (not loaded)"
		}
		names = append(names, n)
	}
	slices.Sort(names)
	desc := fmt.Sprintf("startup (%s): full resync of sources %s", why, strings.Join(names, ", "))
	var notes []string
	for _, src := range m.sources {
		if src.loaded && src.loadNote != "" {
			notes = append(notes, "source "+src.name+": "+src.loadNote)
		}
	}
	slices.Sort(notes)
	if len(notes) > 0 {
		desc += "; " + strings.Join(notes, "; ")
	}
	if standIns > 0 {
		desc += fmt.Sprintf("; %d values of sources not loaded kept as applied before", standIns)
	}
	txn.With(scheduler.Description(desc))
	if m.opts.store != nil && len(puts) > 0 {
		if err := m.opts.store.Record(puts, nil); err != nil {
			return fmt.Errorf("nb: recording the values before the startup resync: %w", err)
		}
	}
	res, err := txn.Commit(ctx)
	var te *scheduler.TxnError
	if err != nil && !errors.As(err, &te) && (res == nil || res.Seq == 0) {
		return fmt.Errorf("nb: startup resync: %w", err)
	}
	m.set(func() { m.started = true })
	close(m.startedCh)
	m.applied = merged
	if m.timer != nil {
		m.timer.Stop()
	}
	if m.opts.store != nil && len(stale) > 0 {
		if err := m.opts.store.Record(nil, m.gone(stale)); err != nil {
			m.logger.Error("nb: removing stale values from the store", "err", err)
		}
	}
	return nil
}
