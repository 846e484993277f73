package scheduler

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// Option configures a Scheduler.
type Option func(*options)

// options are the settings of a Scheduler, each set by the option named
// after it (WithLogger sets logger, WithDriftCheck driftInterval and
// driftSlice, ...), whose doc says what it means.
type options struct {
	logger                                       *slog.Logger
	txnLog                                       bool
	watchBuffer                                  int
	maxCycle                                     int // no option: a bound on the values a cycle search examines
	observer                                     Observer
	tracer                                       Tracer // nil: no tracing
	historyRecords                               int
	historyAge                                   time.Duration
	resyncPeriod                                 time.Duration
	callTimeout                                  time.Duration
	descCallTimeouts                             map[string]time.Duration // by descriptor name
	batchSize                                    int
	noConcurrency                                bool
	seqAfter                                     uint64
	preload                                      []Record // WithPreloadedHistory
	driftInterval, driftBackoff, driftBackoffMax time.Duration
	driftSlice                                   int
	driftPolicy                                  func(key, descriptor string) (kv.DriftPolicy, bool)
}

// defaultOptions are the settings of scheduler.New with no options.
func defaultOptions() options {
	return options{
		logger:      slog.Default(), // the process's logger
		txnLog:      true,           // like the reference, log every transaction
		watchBuffer: 1024,           // a watcher may lag this many updates
		maxCycle:    4096,           // plenty for veth pairs and rings of tunnels
		// An hour of a busy agent's transactions; a day at most.
		historyRecords:  10000,
		historyAge:      24 * time.Hour,
		callTimeout:     DefaultCallTimeout,
		batchSize:       DefaultBatchSize,
		driftSlice:      DefaultDriftSlice,
		driftBackoff:    time.Second,
		driftBackoffMax: 5 * time.Minute,
	}
}

func (o *options) validate() error {
	switch {
	case o.logger == nil:
		return errors.New("scheduler: nil logger")
	case o.watchBuffer < 1:
		return errors.New("scheduler: watch buffer must be at least 1")
	case o.historyRecords < 0 || o.historyAge < 0:
		return errors.New("scheduler: history retention must not be negative")
	case o.resyncPeriod < 0:
		return errors.New("scheduler: resync period must not be negative")
	case o.batchSize < 1:
		return fmt.Errorf("scheduler: batch size %d must be at least 1", o.batchSize)
	case o.callTimeout <= 0:
		return fmt.Errorf("scheduler: call timeout %s must be positive", o.callTimeout)
	case o.driftInterval < 0:
		return fmt.Errorf("scheduler: drift check interval %s must not be negative", o.driftInterval)
	case o.driftSlice < 1:
		return fmt.Errorf("scheduler: drift check slice %d must be at least 1", o.driftSlice)
	case o.driftBackoff <= 0 || o.driftBackoffMax < o.driftBackoff:
		return fmt.Errorf("scheduler: drift repair backoff %s..%s: the base must be positive and the maximum at least the base", o.driftBackoff, o.driftBackoffMax)
	}
	for name, d := range o.descCallTimeouts {
		if name == "" {
			return errors.New("scheduler: WithDescriptorCallTimeout names no descriptor (empty name)")
		}
		if d <= 0 {
			return fmt.Errorf("scheduler: call timeout %s of descriptor %s must be positive", d, name)
		}
	}
	return nil
}

// WithLogger sets the logger of the transaction log and of the scheduler's
// own messages (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithTxnLog turns the transaction log on (the default) or off. Turned off,
// nothing is formatted.
func WithTxnLog(on bool) Option { return func(o *options) { o.txnLog = on } }

// WithWatchBuffer sets the default channel buffer of watchers (default 1024).
func WithWatchBuffer(n int) Option { return func(o *options) { o.watchBuffer = n } }

// WithHistory sets the history's retention: at most records transaction
// records (0 turns the history off), none older than maxAge (0: no age
// bound). Default: 10000 records, 24 hours.
func WithHistory(records int, maxAge time.Duration) Option {
	return func(o *options) { o.historyRecords, o.historyAge = records, maxAge }
}

// WithPeriodicResync runs a downstream resync every period (0, the
// default: never), each recorded as a transaction of kind
// DownstreamResyncTxn.
func WithPeriodicResync(period time.Duration) Option {
	return func(o *options) { o.resyncPeriod = period }
}

// DefaultCallTimeout is the call timeout of a scheduler created without
// WithCallTimeout: 30 seconds. A working southbound answers far sooner
// (a netlink request takes microseconds to milliseconds, a VPP binary API
// reply comes within its client's usual one-second reply timeout, a
// Retrieve that dumps a large table a few seconds), so the bound never
// trips on a slow but healthy call; yet a wedged call frees the scheduler
// within the time after which an operator (or a liveness probe: 3 failures
// 10 seconds apart by default in Kubernetes) takes the agent for hung.
const DefaultCallTimeout = 30 * time.Second

// WithCallTimeout bounds every southbound call (Create, Update, Delete,
// Retrieve) to d (default DefaultCallTimeout). The handler's context
// carries the deadline and is cancelled at it; a handler that ignores it
// and blocks is given up on: the transaction goes on, the call fails with
// a retriable error wrapping ErrCallTimeout, and what the call returns
// later is logged and dropped.
func WithCallTimeout(d time.Duration) Option { return func(o *options) { o.callTimeout = d } }

// WithDescriptorCallTimeout sets the call timeout of the descriptor named
// name, in place of WithCallTimeout's (for a southbound known to be slow,
// or one expected to answer at once). New refuses an empty name;
// descriptors are registered after New, so a name that is still not
// registered when a northbound transaction is committed fails the commit,
// naming it (a misspelt name would otherwise leave the descriptor with
// the default timeout, silently).
func WithDescriptorCallTimeout(name string, d time.Duration) Option {
	return func(o *options) {
		put(&o.descCallTimeouts, name, d)
	}
}

// minCallTimeout is the shortest call timeout of any descriptor.
func (o *options) minCallTimeout() time.Duration {
	m := o.callTimeout
	for _, d := range o.descCallTimeouts {
		m = min(m, d)
	}
	return m
}

// TxnOption configures one transaction.
type TxnOption func(*txnOptions)

type txnOptions struct {
	description string
	revert      bool
	dryRun      bool
	retry       RetryPolicy
	// resync is NBTxn for an ordinary transaction, or a resync kind.
	resync TxnKind
	// rare holds the options few transactions take, so that the others
	// carry one pointer for them (a Txn and its job are copied per
	// commit). Never changed once set: an option makes a new one.
	rare *txnRare
}

// txnRare are the options of txnOptions.rare.
type txnRare struct {
	// remembered are values applied before a restart (Remembered).
	remembered []KeyValue
	// source names the northbound source, for traces (Source).
	source string
}

// withRare returns a copy of o.rare changed by change.
func (o *txnOptions) withRare(change func(*txnRare)) {
	var r txnRare
	if o.rare != nil {
		r = *o.rare
	}
	change(&r)
	o.rare = &r
}

// rareOr returns the rare options (noRare when none is set: read only).
func (o *txnOptions) rareOr() *txnRare {
	if o.rare == nil {
		return &noRare
	}
	return o.rare
}

var noRare txnRare

// RetryPolicy says how failed operations of a transaction are retried: after
// Period, then with the period doubled (when Backoff is set) up to MaxPeriod,
// at most MaxAttempts times. Only errors the descriptor calls retriable are
// retried; a retry is dropped when a newer value for the key has arrived.
type RetryPolicy struct {
	Period      time.Duration
	MaxAttempts int
	Backoff     bool
	MaxPeriod   time.Duration
}

func (p RetryPolicy) enabled() bool { return p.MaxAttempts > 0 }

// delay returns the wait before retry number attempt (1-based).
func (p RetryPolicy) delay(attempt int) time.Duration {
	d := p.Period
	if d <= 0 {
		d = time.Second
	}
	for i := 1; p.Backoff && i < attempt && (p.MaxPeriod <= 0 || d < p.MaxPeriod); i++ {
		d *= 2
	}
	if p.MaxPeriod > 0 && d > p.MaxPeriod {
		d = p.MaxPeriod
	}
	return d
}

// Description describes the transaction in logs and results.
func Description(text string) TxnOption { return func(o *txnOptions) { o.description = text } }

// Revert makes the transaction undo everything it applied on its first
// failure (in dependency order), so that the southbound ends as before it.
// Without it a transaction is best-effort: it applies all it can.
func Revert() TxnOption { return func(o *txnOptions) { o.revert = true } }

// DryRun plans the transaction without executing it: Result.Planned is the
// plan preview, nothing is called and nothing changes.
func DryRun() TxnOption { return func(o *txnOptions) { o.dryRun = true } }

// Retry retries the transaction's failed operations per policy.
func Retry(policy RetryPolicy) TxnOption { return func(o *txnOptions) { o.retry = policy } }

// FullResync makes the transaction a full resync: its values replace the
// whole intended state (keys it does not set are deleted), and the view of
// the southbound is refreshed through each descriptor's Retrieve first, so
// that only what differs is changed.
func FullResync() TxnOption { return func(o *txnOptions) { o.resync = FullResyncTxn } }

// Remembered gives a full resync the values that were applied before a
// restart (an agent keeps a record of them): Retrieve is asked
// about them as about intended values, so that a value of ours that
// nothing intends any more is found and removed, where a southbound that
// reports only what it is asked about (an interface is found by its name)
// would leave it behind. Values that the transaction sets are asked about
// as intended; the others, found, are removed as stale; values that are
// not found are forgotten. A southbound's own values are never among them,
// so a full resync still leaves those alone. It has no effect on other
// kinds of transaction.
func Remembered(values ...KeyValue) TxnOption {
	return func(o *txnOptions) {
		o.withRare(func(r *txnRare) { r.remembered = append(slices.Clip(r.remembered), values...) })
	}
}

// UpstreamResync makes the transaction an upstream resync: its values
// replace the whole intended state, and the scheduler's view of the
// southbound is trusted as it is (no Retrieve).
func UpstreamResync() TxnOption { return func(o *txnOptions) { o.resync = UpstreamResyncTxn } }

// DownstreamResync makes the transaction a downstream resync: the view of
// the southbound is refreshed through Retrieve and brought back to the
// intended state, which is kept. It takes no values: committing one with
// Set or Delete fails.
func DownstreamResync() TxnOption { return func(o *txnOptions) { o.resync = DownstreamResyncTxn } }

// DefaultBatchSize is the default bound of a batch (see WithBatchSize).
const DefaultBatchSize = 1000

// WithBatchSize bounds the number of operations the scheduler gives at
// once to a descriptor that applies batches (kv.Batcher), and the number
// of calls of a group that a kv.Concurrent descriptor runs at once (the
// group's size; its handler's ConcurrentCalls bounds how many are in
// flight). Default DefaultBatchSize; 1 turns batching and concurrent
// calls off: every operation is then its own call, made one at a time.
//
// Batching is an execution detail: plans, the transaction log, history
// and statuses read the same with it or without, and each operation of a
// batch succeeds or fails on its own. A transaction with Revert does not
// batch (its first failure ends it, and a batch would have applied what
// follows).
func WithBatchSize(n int) Option { return func(o *options) { o.batchSize = n } }

// WithConcurrentCalls turns concurrent calls of kv.Concurrent descriptors
// on (the default) or off; batches are not affected.
func WithConcurrentCalls(on bool) Option { return func(o *options) { o.noConcurrency = !on } }

// DefaultDriftSlice is the number of values the periodic drift check reads
// back at a time (WithDriftCheck).
const DefaultDriftSlice = 4096

// WithDriftCheck runs the periodic drift check: every value of ours whose
// descriptor can Retrieve is read back once per interval (0, the default:
// never), a slice of at most slice values of one descriptor at a time
// (0: DefaultDriftSlice), the slices spread evenly over the interval; what
// changed or went behind our back is handled as CheckDrift handles it.
// It is for southbounds that do not notify their changes (VPP).
func WithDriftCheck(interval time.Duration, slice int) Option {
	return func(o *options) {
		o.driftInterval = interval
		if slice != 0 {
			o.driftSlice = slice
		}
	}
}

// WithDriftBackoff sets the backoff of the repairs of a value that
// something keeps undoing: after k repairs in a row, each soon after the
// one before, the next waits base*2^(k-1), at most maximum (default 1 s
// and 5 minutes).
func WithDriftBackoff(base, maximum time.Duration) Option {
	return func(o *options) { o.driftBackoff, o.driftBackoffMax = base, maximum }
}

// WithDriftPolicy overrides the descriptors' drift policies: policy is
// asked for each drifted value, by key and descriptor name, and its
// answer taken when ok (an agent's per-prefix or per-source settings).
// It is called on the worker and must be quick.
func WithDriftPolicy(policy func(key, descriptor string) (p kv.DriftPolicy, ok bool)) Option {
	return func(o *options) { o.driftPolicy = policy }
}

// WithSeqAfter numbers the scheduler's transactions after seq: the first
// is seq+1 (default 0: the first is 1). A program that restarts its
// scheduler passes the last number it gave (or one it reserved, see the
// agent's state store), so that a number given before the restart, to a
// confirmation or a rollback, never names another transaction after it.
func WithSeqAfter(seq uint64) Option { return func(o *options) { o.seqAfter = seq } }
