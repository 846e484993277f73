package metrics

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

const namespace = "kvdescriptor_scheduler_"

// The outcomes of a transaction, as the outcome label says them.
const (
	OutcomeOK       = "ok"
	OutcomeError    = "error"
	OutcomeReverted = "reverted"
	OutcomeDryRun   = "dry_run"
)

var outcomes = [...]string{OutcomeOK, OutcomeError, OutcomeReverted, OutcomeDryRun}

// The results of a southbound call, as the result label says them.
const (
	ResultOK    = "ok"
	ResultError = "error"
)

// kindLabels are the kind label values of the transaction kinds, indexed
// by scheduler.TxnKind.
var kindLabels = [...]string{
	scheduler.NBTxn:               "nb",
	scheduler.SBNotification:      "sb_notification",
	scheduler.RetryTxn:            "retry",
	scheduler.RegistrationTxn:     "registration",
	scheduler.FullResyncTxn:       "full_resync",
	scheduler.UpstreamResyncTxn:   "upstream_resync",
	scheduler.DownstreamResyncTxn: "downstream_resync",
	scheduler.DriftCheckTxn:       "drift_check",
}

// KindLabel returns the kind label value of a transaction kind ("unknown"
// for a kind this package does not know).
func KindLabel(k scheduler.TxnKind) string {
	if int(k) < len(kindLabels) {
		return kindLabels[k]
	}
	return "unknown"
}

// OpLabel returns the op label value of an operation kind: create, update,
// delete, retrieve ("none" for OpNone, "unknown" beyond).
func OpLabel(k scheduler.OpKind) string {
	switch k {
	case scheduler.OpNone:
		return "none"
	case scheduler.OpCreate:
		return "create"
	case scheduler.OpUpdate:
		return "update"
	case scheduler.OpDelete:
		return "delete"
	case scheduler.OpRetrieve:
		return "retrieve"
	}
	return "unknown"
}

// Outcome returns the outcome label value of a transaction record: dry_run,
// reverted, error or ok, the first that applies.
func Outcome(rec *scheduler.Record) string {
	switch {
	case rec.DryRun:
		return OutcomeDryRun
	case rec.Reverted:
		return OutcomeReverted
	case len(rec.Errors) > 0:
		return OutcomeError
	}
	return OutcomeOK
}

// Source is what an attached Metrics reads at scrape time.
// *scheduler.Scheduler implements it.
type Source interface {
	QueueLen() int
	StateCounts() map[scheduler.State]int
}

var (
	_ Source                  = (*scheduler.Scheduler)(nil)
	_ scheduler.Observer      = (*Metrics)(nil)
	_ scheduler.BatchObserver = (*Metrics)(nil)
)

// Metrics holds the metrics of one scheduler. It is the scheduler's
// Observer (pass it to scheduler.WithObserver) and, once attached, reads
// the scheduler's queue length and values per state when scraped. It is
// safe for concurrent use.
type Metrics struct {
	reg prometheus.Registerer

	txns    *prometheus.CounterVec
	txnDur  *prometheus.HistogramVec
	ops     *prometheus.CounterVec
	opDur   *prometheus.HistogramVec
	retries prometheus.Counter
	// drifts counts the drift found (by kind: changed, missing; and
	// policy), repairs the calls made to repair it.
	drifts  *prometheus.CounterVec
	repairs prometheus.Counter
	// batchOps is the size of each batch (and group of concurrent calls)
	// by descriptor and operation; its count is the number of batches.
	batchOps *prometheus.HistogramVec

	// txnSeries are the series of the known kinds, resolved once.
	txnSeries [len(kindLabels)]struct {
		byOutcome [len(outcomes)]prometheus.Counter
		dur       prometheus.Observer
	}
	// opSeries maps an opKey to its *opSeries, resolved on first use:
	// OpDone runs with the scheduler's graph locked, so it avoids hashing
	// label values on every call.
	opSeries sync.Map

	queueDesc, valuesDesc *prometheus.Desc

	mu       sync.Mutex
	attached prometheus.Collector
}

type opKey struct {
	descriptor string
	op         scheduler.OpKind
}

type opSeries struct {
	ok, failed prometheus.Counter
	dur        prometheus.Observer
}

// New creates the metrics and registers them with reg. Attach a scheduler
// for its queue length and values per state.
func New(reg prometheus.Registerer, opts ...Option) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("metrics: nil registerer")
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	m := &Metrics{
		reg: reg,
		txns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        namespace + "transactions_total",
			Help:        "Transactions that ran, by kind and outcome (ok, error, reverted, dry_run).",
			ConstLabels: o.constLabels,
		}, []string{"kind", "outcome"}),
		txnDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        namespace + "transaction_duration_seconds",
			Help:        "Duration of transactions, from the start of planning to the end of execution, by kind.",
			Buckets:     o.txnBuckets,
			ConstLabels: o.constLabels,
		}, []string{"kind"}),
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        namespace + "operations_total",
			Help:        "Southbound calls (create, update, delete, retrieve) by descriptor, operation and result (ok, error).",
			ConstLabels: o.constLabels,
		}, []string{"descriptor", "op", "result"}),
		opDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        namespace + "operation_duration_seconds",
			Help:        "Duration of southbound calls by descriptor and operation.",
			Buckets:     o.opBuckets,
			ConstLabels: o.constLabels,
		}, []string{"descriptor", "op"}),
		batchOps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        namespace + "batch_operations",
			Help:        "Operations per batch (or group of concurrent calls) sent to a descriptor, by descriptor and operation; the count is the number of batches.",
			Buckets:     []float64{2, 8, 32, 128, 512, 1024, 4096},
			ConstLabels: o.constLabels,
		}, []string{"descriptor", "op"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        namespace + "retries_total",
			Help:        "Southbound calls of retry transactions (operations flagged RETRY).",
			ConstLabels: o.constLabels,
		}),
		drifts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        namespace + "drift_total",
			Help:        "Values of ours found changed (kind changed) or gone (kind missing) behind our back by drift checks, by kind and drift policy (repair, report, adopt).",
			ConstLabels: o.constLabels,
		}, []string{"kind", "policy"}),
		repairs: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        namespace + "drift_repairs_total",
			Help:        "Southbound calls made to repair drift (operations of drift check transactions).",
			ConstLabels: o.constLabels,
		}),
		queueDesc: prometheus.NewDesc(namespace+"queue_length",
			"Transactions and notifications waiting to run.", nil, o.constLabels),
		valuesDesc: prometheus.NewDesc(namespace+"values",
			"Values known to the scheduler, by state.", []string{"state"}, o.constLabels),
	}
	// Every kind and outcome starts at zero, so that rates and alerts see
	// the series before the first event.
	for k := range kindLabels {
		for i, out := range outcomes {
			m.txnSeries[k].byOutcome[i] = m.txns.WithLabelValues(kindLabels[k], out)
		}
		m.txnSeries[k].dur = m.txnDur.WithLabelValues(kindLabels[k])
	}
	registered := make([]prometheus.Collector, 0, 6)
	for _, kind := range []string{"changed", "missing"} {
		for _, p := range []kv.DriftPolicy{kv.DriftRepair, kv.DriftReport, kv.DriftAdopt} {
			m.drifts.WithLabelValues(kind, p.String())
		}
	}
	for _, c := range []prometheus.Collector{m.txns, m.txnDur, m.ops, m.opDur, m.retries, m.batchOps, m.drifts, m.repairs} {
		if err := reg.Register(c); err != nil {
			for _, r := range registered {
				reg.Unregister(r)
			}
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
		registered = append(registered, c)
	}
	return m, nil
}

// TxnDone counts and times a transaction that ran, and counts its retried
// calls. It implements scheduler.Observer.
func (m *Metrics) TxnDone(rec *scheduler.Record) {
	if rec == nil {
		return
	}
	outcome := Outcome(rec)
	var took float64
	if !rec.Start.IsZero() && rec.End.After(rec.Start) {
		took = rec.End.Sub(rec.Start).Seconds()
	}
	if int(rec.Kind) < len(kindLabels) {
		s := &m.txnSeries[rec.Kind]
		for i, out := range outcomes {
			if out == outcome {
				s.byOutcome[i].Inc()
			}
		}
		s.dur.Observe(took)
	} else {
		kind := KindLabel(rec.Kind)
		m.txns.WithLabelValues(kind, outcome).Inc()
		m.txnDur.WithLabelValues(kind).Observe(took)
	}
	var retried int
	for i := range rec.Executed {
		if op := &rec.Executed[i]; op.Flags&scheduler.FlagRetry != 0 && op.Kind != scheduler.OpNone {
			retried++
		}
	}
	if retried > 0 {
		m.retries.Add(float64(retried))
	}
	if rec.Kind == scheduler.DriftCheckTxn {
		m.driftDone(rec)
	}
}

// driftDone counts the drift a drift check found, and its repairs.
func (m *Metrics) driftDone(rec *scheduler.Record) {
	repairs := 0
	for i := range rec.Executed {
		op := &rec.Executed[i]
		if op.Called {
			repairs++
		}
		var de *scheduler.DriftError
		if op.Flags&scheduler.FlagDrifted == 0 || !errors.As(op.Err, &de) {
			continue
		}
		kind := "changed"
		if de.Missing {
			kind = "missing"
		}
		m.drifts.WithLabelValues(kind, de.Policy.String()).Inc()
	}
	if repairs > 0 {
		m.repairs.Add(float64(repairs))
	}
}

// BatchDone records the size of one batch (or group of concurrent
// calls). It implements scheduler.BatchObserver; each operation of the
// batch is counted by OpDone as well.
func (m *Metrics) BatchDone(descriptor string, op scheduler.OpKind, ops int, _ time.Duration) {
	m.batchOps.WithLabelValues(descriptor, OpLabel(op)).Observe(float64(ops))
}

// OpDone counts and times one southbound call. It implements
// scheduler.Observer.
func (m *Metrics) OpDone(descriptor string, op scheduler.OpKind, took time.Duration, err error) {
	k := opKey{descriptor, op}
	v, ok := m.opSeries.Load(k)
	if !ok {
		label := OpLabel(op)
		v, _ = m.opSeries.LoadOrStore(k, &opSeries{
			ok:     m.ops.WithLabelValues(descriptor, label, ResultOK),
			failed: m.ops.WithLabelValues(descriptor, label, ResultError),
			dur:    m.opDur.WithLabelValues(descriptor, label),
		})
	}
	s := v.(*opSeries)
	s.dur.Observe(max(took, 0).Seconds())
	if err != nil {
		s.failed.Inc()
	} else {
		s.ok.Inc()
	}
}
