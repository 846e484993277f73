package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/internal/kvaccess"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/grouping"
)

// ErrPanicked marks the error of a call into a descriptor's code (its
// handler, or the functions of its Spec) that panicked.
var ErrPanicked = errors.New("panicked")

// PanicError is the error a recovered panic becomes: it names the
// descriptor, the function and the key, and wraps ErrPanicked.
type PanicError struct {
	Descriptor string
	Func       string
	Key        string
	Value      any
}

func (e *PanicError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s of descriptor %s panicked: %v", e.Func, e.Descriptor, e.Value)
	}
	return fmt.Sprintf("%s of descriptor %s panicked on %s: %v", e.Func, e.Descriptor, e.Key, e.Value)
}

// Unwrap returns ErrPanicked.
func (e *PanicError) Unwrap() error { return ErrPanicked }

// guard wraps every registered descriptor: each call into its code
// recovers a panic. Functions that return an error return the panic as one;
// the others return a safe default (no dependencies, no derived values, not
// equal, no re-create, not retriable, the key as label, not a key of the
// descriptor) and report the panic to the scheduler's panic record, from
// which the transaction in progress turns it into an error of the key (see
// calling.panicked): a value whose dependencies cannot be computed is INVALID,
// one whose comparison panics FAILED, with no call either way.
type guard struct {
	kv.Descriptor
	rec *panicRecord
	// group is how the descriptor's calls may be grouped, once grouped
	// is set (see caller.groupMode): written and read by the
	// goroutine running the transaction only.
	group   grouping.Info
	grouped bool
}

// panicRecord collects the panics that the guards recovered from functions
// without an error result, by key, until the transaction takes them. It is
// written by any goroutine (readers call Label and IsKey too) and read by
// the transaction; n lets the hot path skip the lock while it is empty.
type panicRecord struct {
	logger *slog.Logger
	n      atomic.Int32
	mu     sync.Mutex
	errs   map[string]error
}

func (p *panicRecord) add(err *PanicError) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, had := p.errs[err.Key]; !had {
		p.n.Add(1)
	}
	put(&p.errs, err.Key, error(err))
}

// take returns and forgets the panic recorded for key, or nil.
func (p *panicRecord) take(key string) error {
	if p.n.Load() == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	err, ok := p.errs[key]
	if ok {
		delete(p.errs, key)
		p.n.Add(-1)
	}
	return err
}

// drain returns and forgets every recorded panic.
func (p *panicRecord) drain() map[string]error {
	if p.n.Load() == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.errs
	p.errs = nil
	p.n.Store(0)
	return out
}

// unguard returns the descriptor that d guards (d itself otherwise).
func unguard(d kv.Descriptor) kv.Descriptor {
	if g, ok := d.(*guard); ok {
		return g.Descriptor
	}
	return d
}

// recovered turns a recovered panic value into a *PanicError, recording
// it when record is set.
func (g *guard) recovered(p any, fn, key string, record bool) *PanicError {
	err := &PanicError{Descriptor: g.Descriptor.Name(), Func: fn, Key: key, Value: p}
	g.rec.logger.Error("recovered a panic of a descriptor", "descriptor", err.Descriptor, "func", fn, "key", key, "panic", fmt.Sprint(p))
	if record {
		g.rec.add(err)
	}
	return err
}

// catch, deferred by a guarded function, recovers a panic of the
// descriptor's function fn on key (its results stay zero: nothing was
// assigned to them), recording it when record is set.
func (g *guard) catch(fn, key string, record bool) {
	if p := recover(); p != nil {
		g.recovered(p, fn, key, record)
	}
}

// catchErr is catch for a function with an error result: the panic is
// that error.
func (g *guard) catchErr(fn, key string, err *error) {
	if p := recover(); p != nil {
		*err = g.recovered(p, fn, key, false)
	}
}

func (g *guard) IsKey(key string) (ok bool) {
	defer g.catch("IsKey", key, false)
	return g.Descriptor.IsKey(key)
}

func (g *guard) Label(key string) (label string) {
	label = key // what a panic returns: the return below assigns no label
	defer g.catch("Label", key, false)
	return g.Descriptor.Label(key)
}

func (g *guard) Dependencies(key string, value proto.Message) (deps []kv.Dependency) {
	defer g.catch("Dependencies", key, true)
	return g.Descriptor.Dependencies(key, value)
}

func (g *guard) Derived(key string, value proto.Message) (ds []kv.Derived) {
	defer g.catch("Derived", key, true)
	return g.Descriptor.Derived(key, value)
}

func (g *guard) Equivalent(key string, a, b proto.Message) (eq bool) {
	defer g.catch("Equivalent", key, true)
	return g.Descriptor.Equivalent(key, a, b)
}

func (g *guard) NeedsRecreate(key string, oldValue, newValue proto.Message) (re bool) {
	defer g.catch("NeedsRecreate", key, true)
	return g.Descriptor.NeedsRecreate(key, oldValue, newValue)
}

func (g *guard) Validate(key string, value proto.Message) (err error) {
	defer g.catchErr("Validate", key, &err)
	return g.Descriptor.Validate(key, value)
}

func (g *guard) ValidateInput(key string, value proto.Message) (err error) {
	defer g.catchErr("Validate", key, &err)
	return kv.ValidateInput(g.Descriptor, key, value)
}

func (g *guard) IsRetriable(err error) (retriable bool) {
	defer g.catch("IsRetriable", "", false)
	return g.Descriptor.IsRetriable(err)
}

func (g *guard) Retrieve(ctx context.Context, correlate []kv.Item[string, proto.Message, any]) (items []kv.Item[string, proto.Message, any], err error) {
	defer g.catchErr("Retrieve", "", &err)
	return g.Descriptor.Retrieve(ctx, correlate)
}

// setMetadata writes the metadata map of d; when d is guarded, a panic
// of one of its indexes becomes the label's error.
func setMetadata(d kv.Descriptor, label string, metadata any) {
	if g, ok := d.(*guard); ok {
		defer g.catch("SetMetadata (a metadata index)", label, false)
		d = g.Descriptor
	}
	kvaccess.SetMetadata(d, label, metadata)
}

// deleteMetadata removes a label from the metadata map of d, guarded when
// d is.
func deleteMetadata(d kv.Descriptor, label string) {
	if g, ok := d.(*guard); ok {
		defer g.catch("DeleteMetadata (a metadata index)", label, false)
		d = g.Descriptor
	}
	kvaccess.DeleteMetadata(d, label)
}

// panicked returns the error of a panic recovered from a function of key's
// descriptor since the last look, or nil.
func (r *calling) panicked(key string) error { return r.s.panics.take(key) }

// reportPanics makes the panics recovered during the run that the
// algorithm did not take up (a Dependencies call on a version other than
// the intent, say) errors of their keys, in key order.
func (r *calling) reportPanics() {
	errs := r.s.panics.drain()
	for _, key := range slices.Sorted(maps.Keys(errs)) {
		r.keyErr(key, OpNone, errs[key])
	}
}

// BaseOf guards the descriptor's BaseOf like its other functions (guard.go):
// a panic is logged and names no base; only linkStale calls it.
func (g *guard) BaseOf(key string) (base string) {
	defer g.catch("BaseOf", key, false)
	return g.Descriptor.BaseOf(key)
}
