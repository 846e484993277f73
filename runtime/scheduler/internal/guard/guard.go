package guard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/internal/kvaccess"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/grouping"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/registry"
)

// ErrPanicked is documented at its alias in the scheduler package.
var ErrPanicked = errors.New("panicked")

// PanicError is documented at its alias in the scheduler package.
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

// Guard wraps every registered descriptor: each call into its code
// recovers a panic. Functions that return an error return the panic as one;
// the others return a safe default (no dependencies, no derived values, not
// equal, no re-create, not retriable, the key as label, not a key of the
// descriptor) and report the panic to the scheduler's panic record, from
// which the transaction in progress turns it into an error of the key (see
// calling.panicked): a value whose dependencies cannot be computed is INVALID,
// one whose comparison panics FAILED, with no call either way.
type Guard struct {
	kv.Descriptor
	Rec *PanicRecord
	// Group is how the descriptor's calls may be grouped, once grouped
	// is set (see caller.groupMode): written and read by the
	// goroutine running the transaction only.
	Group   grouping.Info
	Grouped bool
}

// PanicRecord collects the panics that the guards recovered from functions
// without an error result, by key, until the transaction takes them. It is
// written by any goroutine (readers call Label and IsKey too) and read by
// the transaction; n lets the hot path skip the lock while it is empty.
type PanicRecord struct {
	Logger *slog.Logger
	N      atomic.Int32
	mu     sync.Mutex
	errs   map[string]error
}

func (p *PanicRecord) add(err *PanicError) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, had := p.errs[err.Key]; !had {
		p.N.Add(1)
	}
	put(&p.errs, err.Key, error(err))
}

// Take returns and forgets the panic recorded for key, or nil.
func (p *PanicRecord) Take(key string) error {
	if p.N.Load() == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	err, ok := p.errs[key]
	if ok {
		delete(p.errs, key)
		p.N.Add(-1)
	}
	return err
}

// Drain returns and forgets every recorded panic.
func (p *PanicRecord) Drain() map[string]error {
	if p.N.Load() == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.errs
	p.errs = nil
	p.N.Store(0)
	return out
}

// Unguard returns the descriptor that d guards (d itself otherwise).
func Unguard(d kv.Descriptor) kv.Descriptor {
	if g, ok := d.(*Guard); ok {
		return g.Descriptor
	}
	return d
}

// recovered turns a recovered panic value into a *PanicError, recording
// it when record is set.
func (g *Guard) recovered(p any, fn, key string, record bool) *PanicError {
	err := &PanicError{Descriptor: g.Descriptor.Name(), Func: fn, Key: key, Value: p}
	g.Rec.Logger.Error("recovered a panic of a descriptor", "descriptor", err.Descriptor, "func", fn, "key", key, "panic", fmt.Sprint(p))
	if record {
		g.Rec.add(err)
	}
	return err
}

// catch, deferred by a guarded function, recovers a panic of the
// descriptor's function fn on key (its results stay zero: nothing was
// assigned to them), recording it when record is set.
func (g *Guard) catch(fn, key string, record bool) {
	if p := recover(); p != nil {
		g.recovered(p, fn, key, record)
	}
}

// catchErr is catch for a function with an error result: the panic is
// that error.
func (g *Guard) catchErr(fn, key string, err *error) {
	if p := recover(); p != nil {
		*err = g.recovered(p, fn, key, false)
	}
}

func (g *Guard) IsKey(key string) (ok bool) {
	defer g.catch("IsKey", key, false)
	return g.Descriptor.IsKey(key)
}

func (g *Guard) Label(key string) (label string) {
	label = key // what a panic returns: the return below assigns no label
	defer g.catch("Label", key, false)
	return g.Descriptor.Label(key)
}

func (g *Guard) Dependencies(key string, value proto.Message) (deps []kv.Dependency) {
	defer g.catch("Dependencies", key, true)
	return g.Descriptor.Dependencies(key, value)
}

func (g *Guard) Derived(key string, value proto.Message) (ds []kv.Derived) {
	defer g.catch("Derived", key, true)
	return g.Descriptor.Derived(key, value)
}

func (g *Guard) Equivalent(key string, a, b proto.Message) (eq bool) {
	defer g.catch("Equivalent", key, true)
	return g.Descriptor.Equivalent(key, a, b)
}

func (g *Guard) NeedsRecreate(key string, oldValue, newValue proto.Message) (re bool) {
	defer g.catch("NeedsRecreate", key, true)
	return g.Descriptor.NeedsRecreate(key, oldValue, newValue)
}

func (g *Guard) Validate(key string, value proto.Message) (err error) {
	defer g.catchErr("Validate", key, &err)
	return g.Descriptor.Validate(key, value)
}

func (g *Guard) ValidateInput(key string, value proto.Message) (err error) {
	defer g.catchErr("Validate", key, &err)
	return kv.ValidateInput(g.Descriptor, key, value)
}

func (g *Guard) IsRetriable(err error) (retriable bool) {
	defer g.catch("IsRetriable", "", false)
	return g.Descriptor.IsRetriable(err)
}

func (g *Guard) Retrieve(ctx context.Context, correlate []kv.Item[string, proto.Message, any]) (items []kv.Item[string, proto.Message, any], err error) {
	defer g.catchErr("Retrieve", "", &err)
	return g.Descriptor.Retrieve(ctx, correlate)
}

// SetMetadata writes the metadata map of d; when d is guarded, a panic
// of one of its indexes becomes the label's error.
func SetMetadata(d kv.Descriptor, label string, metadata any) {
	if g, ok := d.(*Guard); ok {
		defer g.catch("SetMetadata (a metadata index)", label, false)
		d = g.Descriptor
	}
	kvaccess.SetMetadata(d, label, metadata)
}

// DeleteMetadata removes a label from the metadata map of d, guarded when
// d is.
func DeleteMetadata(d kv.Descriptor, label string) {
	if g, ok := d.(*Guard); ok {
		defer g.catch("DeleteMetadata (a metadata index)", label, false)
		d = g.Descriptor
	}
	kvaccess.DeleteMetadata(d, label)
}

// SyncMetadata sets key's entry in the metadata map of d, when d keeps
// one: to metadata while the value exists, else it is removed.
func SyncMetadata(d kv.Descriptor, key string, exists bool, metadata any) {
	switch {
	case d == nil || !d.WithMetadata():
	case exists:
		SetMetadata(d, d.Label(key), metadata)
	default:
		DeleteMetadata(d, d.Label(key))
	}
}

// BaseOf guards the descriptor's BaseOf like its other functions (guard.go):
// a panic is logged and names no base; only linkStale calls it.
func (g *Guard) BaseOf(key string) (base string) {
	defer g.catch("BaseOf", key, false)
	return g.Descriptor.BaseOf(key)
}

// put sets m[k] to v, making m first when it is nil.
func put[K comparable, V any](m *map[K]V, k K, v V) {
	if *m == nil {
		*m = map[K]V{}
	}
	(*m)[k] = v
}

// GuardOf returns the guard of a node's descriptor: d itself, or the guard
// a misfit wraps (whose values are INVALID, so only its name is read).
func GuardOf(d kv.Descriptor) *Guard {
	if g, ok := d.(*Guard); ok {
		return g
	}
	g, _ := registry.Unwrap(d).(*Guard)
	return g
}
