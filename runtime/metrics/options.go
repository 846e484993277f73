package metrics

import (
	"errors"
	"fmt"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Option configures a Metrics.
type Option func(*options)

type options struct {
	// constLabels are added to every metric, to tell apart the schedulers
	// sharing one registry.
	constLabels prometheus.Labels
	// opBuckets are the buckets, in seconds, of the southbound call
	// durations: one call takes microseconds in memory, milliseconds over
	// netlink or the VPP API, seconds when something is stuck.
	opBuckets []float64
	// txnBuckets are the buckets, in seconds, of the transaction
	// durations: from a no-op transaction to a resync of a large
	// southbound.
	txnBuckets []float64
}

// defaultBuckets spans 10µs to 10s, three buckets per decade.
var defaultBuckets = []float64{
	10e-6, 25e-6, 50e-6,
	100e-6, 250e-6, 500e-6,
	1e-3, 2.5e-3, 5e-3,
	10e-3, 25e-3, 50e-3,
	100e-3, 250e-3, 500e-3,
	1, 2.5, 5,
	10,
}

func defaultOptions() options {
	return options{
		opBuckets:  defaultBuckets,
		txnBuckets: defaultBuckets,
	}
}

func (o *options) validate() error {
	for _, b := range []struct {
		name    string
		buckets []float64
	}{{"operation", o.opBuckets}, {"transaction", o.txnBuckets}} {
		if len(b.buckets) == 0 {
			return fmt.Errorf("metrics: no %s duration buckets", b.name)
		}
		for i := 1; i < len(b.buckets); i++ {
			if b.buckets[i] <= b.buckets[i-1] {
				return fmt.Errorf("metrics: %s duration buckets %v are not strictly increasing", b.name, b.buckets)
			}
		}
	}
	for name := range o.constLabels {
		if slices.Contains(variableLabels, name) {
			return fmt.Errorf("metrics: constant label %q is also a label of the metrics", name)
		}
	}
	return nil
}

// variableLabels are the label names the metrics use.
var variableLabels = []string{"kind", "outcome", "descriptor", "op", "result", "state"}

// ErrAttached is returned by Attach when the Metrics already serves a
// scheduler.
var ErrAttached = errors.New("metrics: already attached to a scheduler")

// WithConstLabels adds labels with fixed values to every metric, so that
// several schedulers can share one registry (default none).
func WithConstLabels(l prometheus.Labels) Option {
	return func(o *options) { o.constLabels = l }
}

// WithOperationBuckets sets the histogram buckets, in seconds, of the
// southbound call durations (default 10µs to 10s).
func WithOperationBuckets(b ...float64) Option {
	return func(o *options) { o.opBuckets = b }
}

// WithTransactionBuckets sets the histogram buckets, in seconds, of the
// transaction durations (default 10µs to 10s).
func WithTransactionBuckets(b ...float64) Option {
	return func(o *options) { o.txnBuckets = b }
}
