package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

// DefaultAgent is the agent name of the default prefixes.
const DefaultAgent = "agent"

// Source is the etcd northbound source. Run it once at a time.
type Source struct {
	client *clientv3.Client
	models nb.Models
	opts   options
}

var _ nb.Source = (*Source)(nil)

type options struct {
	name           string
	agent          string
	prefix         string
	statusPrefix   string
	logger         *slog.Logger
	requestTimeout time.Duration
	probeInterval  time.Duration
	retryMin       time.Duration
	retryMax       time.Duration
	statusInterval time.Duration
	statusBuffer   int
	statusOwner    func(key string) string
	fleetPrefix    string
	aliveTTL       time.Duration
}

// Option configures a Source.
type Option func(*options)

// WithName sets the source's name, the owner of its keys (default "etcd").
func WithName(name string) Option { return func(o *options) { o.name = name } }

// WithAgent sets the agent name of the default prefixes
// (/kvdescriptor/<agent>/config/ and /kvdescriptor/<agent>/status/).
func WithAgent(agent string) Option { return func(o *options) { o.agent = agent } }

// WithPrefix sets the prefix of the configuration keys.
func WithPrefix(prefix string) Option { return func(o *options) { o.prefix = prefix } }

// WithStatusPrefix sets the prefix of the status keys.
func WithStatusPrefix(prefix string) Option { return func(o *options) { o.statusPrefix = prefix } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithRequestTimeout bounds each request to etcd: the load, a probe, a
// batch of status writes (default 5s).
func WithRequestTimeout(d time.Duration) Option { return func(o *options) { o.requestTimeout = d } }

// WithProbe sets how often a watching source checks that etcd answers
// (default 5s); a probe that fails is a lost connection. A watch that
// answered within the interval is not probed; a silent one is asked for a
// progress notification on its stream, and etcd is read only when that
// does not come (see run.probe).
func WithProbe(interval time.Duration) Option { return func(o *options) { o.probeInterval = interval } }

// WithRetry sets the delays between attempts to load while etcd does not
// answer: a step of min, doubling up to max (default 200ms to 10s); each
// delay is drawn at random between half the step and the step (jitter:
// agents that lost etcd together do not retry in lockstep).
func WithRetry(min, max time.Duration) Option {
	return func(o *options) { o.retryMin, o.retryMax = min, max }
}

// WithStatusInterval sets how often WriteStatus writes: each key at most
// once per interval, the changed keys of an interval in batches (default 1s).
func WithStatusInterval(d time.Duration) Option { return func(o *options) { o.statusInterval = d } }

// WithStatusOwner gives WriteStatus the owner of a key (the source that
// set it), written when not empty.
func WithStatusOwner(owner func(key string) string) Option {
	return func(o *options) { o.statusOwner = owner }
}

// DefaultFleetPrefix is the default prefix of the fleet's keys, shared by
// every agent: <prefix>summary/<agent> and <prefix>alive/<agent>.
const DefaultFleetPrefix = "/kvdescriptor-fleet/"

// WithFleetPrefix sets the prefix under which WriteStatus writes the
// agent's summary and keeps its presence (default DefaultFleetPrefix).
func WithFleetPrefix(prefix string) Option { return func(o *options) { o.fleetPrefix = prefix } }

// WithAliveTTL sets the time to live of the agent's presence key (default
// 15s): an agent that etcd has not heard from for that long is absent.
func WithAliveTTL(d time.Duration) Option { return func(o *options) { o.aliveTTL = d } }

// New returns a source of the configuration under the prefix, decoded with
// models. The client stays the caller's (Run does not close it).
func New(client *clientv3.Client, models nb.Models, opts ...Option) *Source {
	o := options{
		name:           "etcd",
		agent:          DefaultAgent,
		requestTimeout: 5 * time.Second,
		probeInterval:  5 * time.Second,
		retryMin:       200 * time.Millisecond,
		retryMax:       10 * time.Second,
		statusInterval: time.Second,
		statusBuffer:   4096,
		fleetPrefix:    DefaultFleetPrefix,
		aliveTTL:       15 * time.Second,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.prefix == "" {
		o.prefix = "/kvdescriptor/" + o.agent + "/config/"
	}
	if o.statusPrefix == "" {
		o.statusPrefix = "/kvdescriptor/" + o.agent + "/status/"
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	if o.aliveTTL < 2*time.Second {
		o.aliveTTL = 2 * time.Second // etcd's leases count in seconds
	}
	if o.retryMin <= 0 {
		o.retryMin = 200 * time.Millisecond
	}
	if o.retryMax < o.retryMin {
		o.retryMax = o.retryMin
	}
	return &Source{client: client, models: models, opts: o}
}

// Name returns the source's name.
func (s *Source) Name() string { return s.opts.name }

// Prefix returns the prefix of the configuration keys.
func (s *Source) Prefix() string { return s.opts.prefix }

// SummaryKey returns the key of the agent's summary (FleetSummary).
func (s *Source) SummaryKey() string { return s.opts.fleetPrefix + "summary/" + s.opts.agent }

// AliveKey returns the agent's presence key, which lives while the agent
// keeps its lease.
func (s *Source) AliveKey() string { return s.opts.fleetPrefix + "alive/" + s.opts.agent }

// StatusPrefix returns the prefix of the status keys.
func (s *Source) StatusPrefix() string { return s.opts.statusPrefix }

// resyncError ends a watch that must be followed by a resync.
type resyncError struct{ why error }

func (e *resyncError) Error() string { return e.why.Error() }
func (e *resyncError) Unwrap() error { return e.why }

// run is the state of one Run.
type run struct {
	s    *Source
	sink nb.Sink
	// applied is what the sink holds from us: the last good value of each
	// key, as of the last update it accepted.
	applied map[string]proto.Message
	// bad are the keys whose value is skipped, by etcd key.
	bad map[string]error
	// conn is the trouble of the connection (or an update the sink did
	// not apply), nil when etcd answers and the sink took our state.
	conn error
	// reported is the text of the last problem reported ("" for none).
	reported string
	// cluster and rev are the cluster id and the last revision seen.
	cluster uint64
	revMu   sync.Mutex // rev and heard are read by the probe too
	rev     int64
	// heard is when the watch last answered (events or a progress
	// notification), header its answer's header; answered gets a token
	// on each answer.
	heard    time.Time
	header   watchHeader
	answered chan struct{}
}

// watchHeader is what the probe checks of a watch answer's header.
type watchHeader struct {
	cluster uint64
	rev     int64
}

// Run feeds the configuration under the prefix to sink until ctx ends; it
// returns an error only when the client is closed under it.
func (s *Source) Run(ctx context.Context, sink nb.Sink) error {
	r := &run{s: s, sink: sink, applied: map[string]proto.Message{}, bad: map[string]error{}, answered: make(chan struct{}, 1)}
	delay := &backoff{min: s.opts.retryMin, max: s.opts.retryMax}
	for ctx.Err() == nil {
		if err := s.client.Ctx().Err(); err != nil {
			return fmt.Errorf("etcd source %s: the etcd client was closed: %w", s.opts.name, err)
		}
		err := r.load(ctx)
		if err == nil {
			delay.reset()
			err = r.watch(ctx)
		}
		if ctx.Err() != nil {
			break
		}
		s.opts.logger.Warn("etcd source: resync", "source", s.opts.name, "why", err)
		if !sleep(ctx, delay.next()) {
			break
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// report sends the current problem to the sink when it changed.
func (r *run) report() {
	var errs []error
	if r.conn != nil {
		errs = append(errs, r.conn)
	}
	for _, k := range slices.Sorted(maps.Keys(r.bad)) {
		errs = append(errs, r.bad[k])
	}
	err := errors.Join(errs...)
	text := ""
	if err != nil {
		text = err.Error()
	}
	if text == r.reported {
		return
	}
	r.reported = text
	r.sink.Problem(err)
}

func (r *run) lost(err error) {
	r.conn = fmt.Errorf("etcd %v: %w", r.s.client.Endpoints(), err)
	r.report()
}

// decode decodes the value at an etcd key; a bad one is recorded.
func (r *run) decode(etcdKey, data []byte) (key string, v proto.Message, ok bool) {
	ek := string(etcdKey)
	key = strings.TrimPrefix(ek, r.s.opts.prefix)
	delete(r.bad, ek)
	if key == "" {
		r.bad[ek] = fmt.Errorf("etcd key %q: no key after the prefix", ek)
		return key, nil, false
	}
	enc := nb.Binary
	if json.Valid(data) {
		enc = nb.JSON
	}
	v, err := nb.Decode(r.s.models, key, data, enc)
	if err != nil {
		r.bad[ek] = fmt.Errorf("etcd key %q: skipped: %w", ek, err)
		return key, nil, false
	}
	return key, v, true
}

// load reads the prefix and applies it as a resync.
func (r *run) load(ctx context.Context) error {
	o := r.s.opts
	gctx, cancel := context.WithTimeout(ctx, o.requestTimeout)
	resp, err := r.s.client.Get(gctx, o.prefix, clientv3.WithPrefix())
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			r.lost(fmt.Errorf("load of %q: %w", o.prefix, err))
		}
		return err
	}
	clear(r.bad)
	state := make(map[string]proto.Message, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		key, v, ok := r.decode(kv.Key, kv.Value)
		if !ok {
			if old, had := r.applied[key]; had {
				state[key] = old
			}
			continue
		}
		state[key] = v
	}
	changes := make([]nb.Change, 0, len(state))
	for _, k := range slices.Sorted(maps.Keys(state)) {
		changes = append(changes, nb.Change{Key: k, Value: state[k]})
	}
	rev := resp.Header.Revision
	u := nb.Update{Resync: true, Changes: changes, Description: fmt.Sprintf("etcd revision %d (full load of %s)", rev, o.prefix)}
	if err := r.sink.Apply(ctx, u); err != nil {
		if ctx.Err() == nil {
			r.conn = fmt.Errorf("etcd revision %d was not applied: %w", rev, err)
			r.report()
		}
		return err
	}
	r.applied = state
	r.cluster = resp.Header.ClusterId
	r.revMu.Lock()
	r.rev = rev
	r.revMu.Unlock()
	r.conn = nil
	r.report()
	return nil
}

// watch applies the changes after r.rev until the watch must be resynced.
func (r *run) watch(ctx context.Context) error {
	o := r.s.opts
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	ch := r.s.client.Watch(wctx, o.prefix, clientv3.WithPrefix(), clientv3.WithRev(r.loadRev()+1))

	probeErr := make(chan error, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	if o.probeInterval > 0 {
		wg.Add(1)
		r.hear(r.cluster, r.loadRev()) // the load's answer
		go func() {
			defer wg.Done()
			probeErr <- r.probe(wctx)
		}()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-probeErr:
			if ctx.Err() != nil {
				return nil
			}
			r.lost(err)
			return err
		case resp, ok := <-ch:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return &resyncError{errors.New("the watch ended")}
			}
			r.hear(resp.Header.ClusterId, resp.Header.Revision)
			if err := resp.Err(); err != nil {
				if errors.Is(err, rpctypes.ErrCompacted) || resp.CompactRevision != 0 {
					return &resyncError{fmt.Errorf("revision %d compacted (compact revision %d): %w", r.loadRev()+1, resp.CompactRevision, err)}
				}
				r.lost(fmt.Errorf("watch: %w", err))
				return &resyncError{err}
			}
			if resp.Canceled {
				return &resyncError{errors.New("the watch was canceled")}
			}
			if err := r.events(ctx, resp); err != nil {
				return err
			}
		}
	}
}

// hear records an answer of the watch.
func (r *run) hear(cluster uint64, rev int64) {
	r.revMu.Lock()
	r.heard = time.Now()
	r.header = watchHeader{cluster: cluster, rev: rev}
	r.revMu.Unlock()
	select {
	case r.answered <- struct{}{}:
	default:
	}
}

// lastHeard returns when the watch last answered.
func (r *run) lastHeard() time.Time {
	r.revMu.Lock()
	defer r.revMu.Unlock()
	return r.heard
}

// probe returns once etcd does not answer or answers as another store.
//
// A watch that answered within the probe interval needs no probe. A
// silent one (a quiet prefix: the fleet at rest) is asked for a progress
// notification on its own stream, which etcd answers with its current
// revision and cluster id, reading nothing; only when that answer does
// not come within the request timeout, or shows another cluster or a
// revision lower than the one watched, does the probe read (a
// serializable, keys-only, limit-1 Range of the prefix) and decide from
// that read. At rest, a source costs etcd one progress request per probe
// interval on the watch stream it already has, and no read.
func (r *run) probe(ctx context.Context) error {
	o := r.s.opts
	t := time.NewTicker(o.probeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if time.Since(r.lastHeard()) < o.probeInterval {
			continue
		}
		if r.progress(ctx) {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, o.requestTimeout)
		resp, err := r.s.client.Get(pctx, o.prefix, clientv3.WithKeysOnly(), clientv3.WithLimit(1), clientv3.WithSerializable())
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return &resyncError{fmt.Errorf("lost connection: %w", err)}
		}
		// A store that went back in time, or another cluster, was
		// replaced: the watch would wait for revisions that mean
		// something else.
		if resp.Header.ClusterId != r.cluster {
			return &resyncError{fmt.Errorf("etcd cluster id changed from %x to %x", r.cluster, resp.Header.ClusterId)}
		}
		if resp.Header.Revision < r.loadRev() {
			return &resyncError{fmt.Errorf("etcd revision went back to %d", resp.Header.Revision)}
		}
	}
}

// progress asks the watch (its stream is ctx's) for a progress
// notification and reports whether one came within the request timeout
// showing the same cluster and no revision lower than the one watched.
func (r *run) progress(ctx context.Context) bool {
	select {
	case <-r.answered: // an earlier answer's token
	default:
	}
	// The request's context keeps the watch's metadata (which names its
	// stream); its timeout bounds the send too, which waits while the
	// client reconnects the stream.
	pctx, cancel := context.WithTimeout(ctx, r.s.opts.requestTimeout)
	defer cancel()
	if r.s.client.RequestProgress(pctx) != nil {
		return false
	}
	select {
	case <-pctx.Done():
		return ctx.Err() != nil // when ctx ended, the probe returns at its next check
	case <-r.answered:
	}
	r.revMu.Lock()
	h, rev := r.header, r.rev
	r.revMu.Unlock()
	return h.cluster == r.cluster && h.rev >= rev
}

// events applies the events of one watch response as one update.
func (r *run) events(ctx context.Context, resp clientv3.WatchResponse) error {
	if len(resp.Events) == 0 {
		r.setRev(resp.Header.Revision)
		return nil
	}
	latest := map[string]*mvccpb.KeyValue{}
	var order []string
	for _, ev := range resp.Events {
		k := string(ev.Kv.Key)
		if _, seen := latest[k]; !seen {
			order = append(order, k)
		}
		if ev.Type == clientv3.EventTypeDelete {
			latest[k] = nil
		} else {
			latest[k] = ev.Kv
		}
	}
	next := maps.Clone(r.applied)
	var changes []nb.Change
	for _, ek := range order {
		kv := latest[ek]
		var key string
		var v proto.Message
		if kv == nil {
			delete(r.bad, ek)
			key = strings.TrimPrefix(ek, r.s.opts.prefix)
		} else {
			var ok bool
			key, v, ok = r.decode(kv.Key, kv.Value)
			if !ok {
				continue
			}
		}
		old, had := next[key]
		if v == nil {
			if !had {
				continue
			}
			delete(next, key)
		} else {
			if had && proto.Equal(old, v) {
				continue
			}
			next[key] = v
		}
		changes = append(changes, nb.Change{Key: key, Value: v})
	}
	rev := resp.Header.Revision
	if len(changes) > 0 {
		u := nb.Update{Changes: changes, Description: fmt.Sprintf("etcd revision %d", rev)}
		if err := r.sink.Apply(ctx, u); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.conn = fmt.Errorf("etcd revision %d was not applied: %w", rev, err)
			r.report()
			return &resyncError{err}
		}
		r.applied = next
	}
	r.setRev(rev)
	r.report()
	return nil
}

func (r *run) setRev(rev int64) {
	r.revMu.Lock()
	defer r.revMu.Unlock()
	if rev > r.rev {
		r.rev = rev
	}
}

func (r *run) loadRev() int64 {
	r.revMu.Lock()
	defer r.revMu.Unlock()
	return r.rev
}
