package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/trace"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/metrics"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/boltstore"
	nbetcd "github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd"
	nbfile "github.com/kvdescriptor/kvdescriptor/runtime/nb/file"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
	"github.com/kvdescriptor/kvdescriptor/runtime/tracing"
)

// Agent is a network agent: plugins' descriptors under a scheduler, fed
// by northbound sources (a file, etcd, the API's) through a nb.Mux,
// served by its API (runtime/api), with what outlives a process kept in
// its state directory. New makes one from a Config; Run runs it.
type Agent struct {
	cfg     Config
	plugins []Plugin
	level   *slog.LevelVar
	logger  *slog.Logger
	ran     sync.Once

	mu      sync.Mutex
	s       *scheduler.Scheduler
	addrs   map[string]string // listener ("http", "grpc") -> address bound
	started chan struct{}
}

// New checks cfg and returns an agent of plugins; nothing runs (nor is
// opened) until Run.
func New(cfg Config, plugins ...Plugin) (*Agent, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	for i, p := range plugins {
		if p == nil {
			return nil, fmt.Errorf("agent: plugin %d is nil", i+1)
		}
	}
	level := new(slog.LevelVar)
	l, _ := parseLevel(cfg.Log.Level) // checked
	level.Set(l)
	out := cfg.LogOutput
	if out == nil {
		out = os.Stderr
	}
	var h slog.Handler
	if cfg.Log.Format == "json" {
		h = slog.NewJSONHandler(out, &slog.HandlerOptions{Level: level})
	} else {
		h = scheduler.NewLogHandler(out, level)
	}
	return &Agent{
		cfg: cfg, plugins: slices.Clone(plugins), level: level,
		logger: slog.New(h).With("agent", cfg.Name), started: make(chan struct{}),
	}, nil
}

// LogLevel is the agent's log level, which may be changed while it runs.
func (a *Agent) LogLevel() *slog.LevelVar { return a.level }

// Logger is the agent's logger.
func (a *Agent) Logger() *slog.Logger { return a.logger }

// Config returns the agent's configuration.
func (a *Agent) Config() Config { return a.cfg }

// Started is closed once the agent's startup resync has run.
func (a *Agent) Started() <-chan struct{} { return a.started }

// Scheduler returns the agent's scheduler, nil before Run made it.
func (a *Agent) Scheduler() *scheduler.Scheduler {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.s
}

// Address returns the address the API's listener ("http" or "grpc")
// listens on, once Started is closed: a TCP address with its port bound
// (port 0 in the configuration gets a free one), or a Unix socket's
// path. It is empty for a listener that is off.
func (a *Agent) Address(listener string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.addrs[listener]
}

// Run runs the agent until ctx ends, then finishes the transaction in
// flight and returns, tearing nothing down (a restart does not flap the
// southbound). It runs once: a second call fails.
func (a *Agent) Run(ctx context.Context) (err error) {
	err = errors.New("agent: Run called twice")
	a.ran.Do(func() {
		r := &run{a: a, cfg: a.cfg, logger: a.logger, resync: make(chan string, 1), startTime: time.Now()}
		defer func() {
			if cerr := r.cleanup(); cerr != nil && err == nil {
				err = cerr
			}
		}()
		err = r.run(ctx)
	})
	return err
}

// run is one run of an agent: what it made, and the cleanups of it.
type run struct {
	a      *Agent
	cfg    Config
	logger *slog.Logger

	descs    []kv.Descriptor
	watchers []Watcher
	resync   chan string

	startTime time.Time
	reg       *prometheus.Registry
	store     *boltstore.Store
	s         *scheduler.Scheduler
	mux       *nb.Mux
	// muxForDrift is mux for the drift policy, read on the scheduler's
	// worker (set once the Mux is made).
	muxForDrift atomic.Pointer[nb.Mux]
	models      nb.Models
	sources     []nb.Source
	fileSource  *nbfile.Source
	// tracing: the scheduler traces, so the API reads requests' trace
	// context.
	tracing bool

	cleanups []func() error // run last first
}

// atEnd runs f when the run ends, before what was given earlier; its
// error becomes Run's if Run has none.
func (r *run) atEnd(f func() error) { r.cleanups = append(r.cleanups, f) }

func (r *run) cleanup() error {
	var first error
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		if err := r.cleanups[i](); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (r *run) run(ctx context.Context) error {
	for _, step := range []func(context.Context) error{
		r.startPlugins, r.openState, r.newMux, r.migrate, r.newSources, r.startAPI, r.startWatchers,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	go r.resyncs(ctx)
	go func() {
		select {
		case <-r.mux.Started():
			close(r.a.started)
		case <-ctx.Done():
		}
	}()
	r.logger.Info("agent started", "sources", len(r.sources), "state", r.cfg.StateDir)
	var err error
	if len(r.sources) > 0 {
		err = r.mux.Run(ctx, r.sources...)
	} else {
		<-ctx.Done() // the API's source is the only one
	}
	r.logger.Info("agent stopping: finishing the transaction in flight, tearing nothing down")
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// startPlugins starts the plugins, in order, and collects their
// descriptors; a plugin that is an io.Closer is closed at the end.
func (r *run) startPlugins(context.Context) error {
	env := Env{Config: r.cfg, Logger: r.logger, Resync: r.requestResync, CheckDrift: r.checkDrift}
	for _, p := range r.a.plugins {
		ds, err := p.Start(env)
		if c, ok := p.(io.Closer); ok {
			r.atEnd(func() error { _ = c.Close(); return nil })
		}
		if err != nil {
			return fmt.Errorf("plugin %s: %w", p.Name(), err)
		}
		r.descs = append(r.descs, ds...)
		if w, ok := p.(Watcher); ok {
			r.watchers = append(r.watchers, w)
		}
	}
	return nil
}

// requestResync queues a downstream resync (Env.Resync).
// driftPolicy is the policy of a drifted value by the configuration's
// rules (drift.policies): the first whose prefix and source match.
func (r *run) driftPolicy(key, _ string) (kv.DriftPolicy, bool) {
	owner := ""
	ownerKnown := false
	for _, rule := range r.cfg.Drift.Policies {
		if !strings.HasPrefix(key, rule.Prefix) {
			continue
		}
		if rule.Source != "" {
			if !ownerKnown {
				if m := r.muxForDrift.Load(); m != nil {
					owner, _ = m.Owner(key)
				}
				ownerKnown = true
			}
			if owner != rule.Source {
				continue
			}
		}
		p, err := kv.ParseDriftPolicy(rule.Policy)
		return p, err == nil // checked with the configuration
	}
	return 0, false
}

// checkDrift is Env.CheckDrift.
func (r *run) checkDrift(ctx context.Context, descriptors ...string) error {
	if r.s == nil {
		return errors.New("agent: drift check before the scheduler started")
	}
	_, err := r.s.CheckDrift(ctx, scheduler.DriftCheck{Descriptors: descriptors})
	return err
}

func (r *run) requestResync(why string) {
	select {
	case r.resync <- why:
	default: // one is queued already
	}
}

func (r *run) resyncs(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case why := <-r.resync:
			r.logger.Warn(why + ": downstream resync")
			if _, err := r.s.Txn(scheduler.DownstreamResync(), scheduler.Description(why)).Commit(ctx); err != nil && ctx.Err() == nil {
				r.logger.Error("downstream resync", "why", why, "error", err)
			}
		}
	}
}

// openState opens the state directory's store and makes the scheduler
// over it: what it applied, the transaction numbers and the history of
// earlier runs, all in state.db, opened before the scheduler and closed
// after it.
func (r *run) openState(context.Context) error {
	r.reg = prometheus.NewRegistry()
	m, err := metrics.New(r.reg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(r.cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	store, err := boltstore.Open(filepath.Join(r.cfg.StateDir, "state.db"))
	if err != nil {
		return err
	}
	r.store = store
	r.atEnd(func() error { _ = store.Close(); return nil })
	seqs, lastSeq, err := newSeqKeeper(store, r.logger)
	if err != nil {
		return err
	}
	obs := &observer{Metrics: m, seqs: seqs}
	sopts := []scheduler.Option{
		scheduler.WithLogger(r.logger),
		scheduler.WithObserver(obs),
		scheduler.WithSeqAfter(lastSeq),
		scheduler.WithHistory(r.cfg.History.Records, r.cfg.History.MaxAge),
	}
	if r.cfg.History.Records > 0 {
		recs, hist, err := loadHistory(store, r.logger, r.cfg.History.Records, r.cfg.History.MaxAge, r.reg)
		if err != nil {
			return err
		}
		r.atEnd(func() error { hist.close(); return nil })
		obs.hist = hist
		sopts = append(sopts, scheduler.WithPreloadedHistory(recs))
		if len(recs) > 0 {
			r.logger.Info("history of earlier runs", "records", len(recs), "from", recs[0].Seq, "to", recs[len(recs)-1].Seq)
		}
	}
	if r.cfg.ResyncInterval > 0 {
		sopts = append(sopts, scheduler.WithPeriodicResync(r.cfg.ResyncInterval))
	}
	if r.cfg.Drift.CheckInterval > 0 {
		sopts = append(sopts, scheduler.WithDriftCheck(r.cfg.Drift.CheckInterval, 0))
	}
	if len(r.cfg.Drift.Policies) > 0 {
		sopts = append(sopts, scheduler.WithDriftPolicy(r.driftPolicy))
	}
	if tp, err := r.tracerProvider(); err != nil {
		return err
	} else if tp != nil {
		r.tracing = true
		sopts = append(sopts, scheduler.WithTracer(tracing.NewTracer(tp.Tracer(tracing.InstrumentationName))))
	}
	s, err := scheduler.New(sopts...)
	if err != nil {
		return err
	}
	r.s = s
	r.a.mu.Lock()
	r.a.s = s
	r.a.mu.Unlock()
	r.atEnd(func() error {
		// Finish the transaction in flight; tear nothing down.
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return s.Close(cctx)
	})
	if err := s.Register(r.descs...); err != nil {
		return err
	}
	return m.Attach(s)
}

// tracerProvider returns the provider of the scheduler's traces: the
// configuration's own (Config.TracerProvider), or an exporter to
// tracing.endpoint, shut down (its last spans sent) after the scheduler
// is closed; nil when tracing is off.
func (r *run) tracerProvider() (trace.TracerProvider, error) {
	if r.cfg.TracerProvider != nil {
		return r.cfg.TracerProvider, nil
	}
	if r.cfg.Tracing.Endpoint == "" {
		return nil, nil
	}
	p, err := tracing.Start(r.cfg.tracing())
	if err != nil {
		return nil, err
	}
	r.atEnd(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			r.logger.Warn("tracing: the last spans were not all exported", "endpoint", r.cfg.Tracing.Endpoint, "error", err)
		}
		return nil
	})
	r.logger.Info("tracing", "endpoint", r.cfg.Tracing.Endpoint, "sample_ratio", r.cfg.Tracing.SampleRatio)
	return p, nil
}

// observer passes the scheduler's events to the metrics, the keeper of
// transaction numbers and the history's.
type observer struct {
	*metrics.Metrics
	seqs *seqKeeper
	hist *historyKeeper
}

func (o *observer) TxnDone(rec *scheduler.Record) {
	o.Metrics.TxnDone(rec)
	o.seqs.txnDone(rec)
	if o.hist != nil {
		o.hist.txnDone(rec)
	}
}

// txnOptions returns the transaction options of the policy: those of the
// sources' updates, and those of the startup resync.
func (p TxnPolicy) txnOptions() (update, startup []scheduler.TxnOption) {
	if p.Retry.MaxAttempts > 0 {
		retry := scheduler.Retry(scheduler.RetryPolicy{
			MaxAttempts: p.Retry.MaxAttempts, Period: p.Retry.Period, Backoff: p.Retry.Backoff, MaxPeriod: p.Retry.MaxPeriod,
		})
		update, startup = append(update, retry), append(startup, retry)
	}
	if p.Revert {
		update = append(update, scheduler.Revert())
	}
	return update, startup
}

// newMux makes the northbound's Mux, with the store and the policy.
func (r *run) newMux(context.Context) error {
	r.models = nb.SchedulerModels(r.s)
	update, startup := r.cfg.Transactions.txnOptions()
	r.mux = nb.NewMux(r.s,
		nb.WithStore(r.store),
		nb.WithPriorityOrder(priority(r.cfg.Sources.Priority)...),
		nb.WithLoadDeadline(r.cfg.LoadDeadline),
		nb.WithMuxLogger(r.logger),
		nb.WithTxnOptions(update...),
		nb.WithStartupTxnOptions(startup...),
	)
	r.muxForDrift.Store(r.mux)
	r.atEnd(func() error { r.mux.Close(); return nil })
	return nil
}

// priority returns the sources' priority order, "grpc" (the API source's
// former name) read as "api".
func priority(order []string) []string {
	out := slices.Clone(order)
	for i, p := range out {
		if p == "grpc" {
			out[i] = nb.DefaultRemoteSource
		}
	}
	return out
}

// migrate imports the state of the former gRPC API (migrateGRPCState).
func (r *run) migrate(context.Context) error { return r.migrateGRPCState() }

// newSources makes the file and etcd sources that cfg configures.
func (r *run) newSources(ctx context.Context) error {
	if p := r.cfg.Sources.File.Path; p != "" {
		r.fileSource = nbfile.New(p, r.models, nbfile.WithLogger(r.logger), nbfile.WithMaxSize(r.cfg.Sources.File.MaxSize))
		r.sources = append(r.sources, r.fileSource)
	}
	if eps := r.cfg.Sources.Etcd.Endpoints; len(eps) > 0 {
		client, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: nil})
		if err != nil {
			return fmt.Errorf("etcd: %w", err)
		}
		r.atEnd(func() error { _ = client.Close(); return nil })
		eopts := []nbetcd.Option{
			nbetcd.WithAgent(r.cfg.Name),
			nbetcd.WithLogger(r.logger),
			nbetcd.WithStatusOwner(func(key string) string { owner, _ := r.mux.Owner(key); return owner }),
		}
		if p := r.cfg.Sources.Etcd.Prefix; p != "" {
			eopts = append(eopts, nbetcd.WithPrefix(p))
		}
		src := nbetcd.New(client, r.models, eopts...)
		r.sources = append(r.sources, src)
		if r.cfg.Sources.Etcd.Status {
			go func() {
				if err := src.WriteStatus(ctx, r.s); err != nil && ctx.Err() == nil {
					r.logger.Error("etcd status write-back stopped", "error", err)
				}
			}()
		}
	}
	return nil
}

// startWatchers starts the plugins' watchers once the startup resync has
// run: before, a value of ours that a previous run left (one the sources
// still want, or a stale one to remove) is not known as ours yet, and a
// notification would have it taken for another program's.
func (r *run) startWatchers(ctx context.Context) error {
	if len(r.watchers) == 0 {
		return nil
	}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	notify := func(ctx context.Context, ns ...scheduler.Notification) error {
		_, err := r.s.Notify(ctx, ns...)
		return err
	}
	for _, w := range r.watchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-r.mux.Started():
			case <-wctx.Done():
				return
			}
			r.logger.Debug("a watcher starts: the startup resync has run")
			if err := w.Watch(wctx, notify); err != nil && wctx.Err() == nil {
				r.logger.Error("a watcher stopped", "error", err)
			}
		}()
	}
	r.atEnd(func() error { cancel(); wg.Wait(); return nil })
	return nil
}
