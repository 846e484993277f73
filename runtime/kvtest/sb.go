// Package kvtest is an in-memory southbound for tests of the scheduler and
// of anything built on runtime/kv. It stores values, records every call,
// and fails calls on request (optionally after applying them, to simulate
// a partial failure). Its descriptors take harness values (see Value) whose
// tokens declare dependencies, derived values and attributes, so that a
// test can build any dependency schema without writing Go.
package kvtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// ErrExists is returned by Create for a key the southbound already holds.
var ErrExists = errors.New("kvtest: already exists")

// Call is one recorded southbound call.
type Call struct {
	Op    string // "create", "update" or "delete"
	Key   string
	Value string // the value created or updated to, or deleted
	Err   error
}

func (c Call) String() string {
	s := c.Op + " " + c.Key
	if c.Value != "" {
		s += " = " + c.Value
	}
	if c.Err != nil {
		s += " ! " + c.Err.Error()
	}
	return s
}

// Failure plans the failure of calls on one key.
type Failure struct {
	// Op is the operation to fail: "create", "update" or "delete"; or
	// "retrieve", planned on the descriptor's name instead of a key.
	Op string
	// Err is the error returned; default "injected failure".
	Err error
	// Partial applies the operation before failing.
	Partial bool
	// Times is the number of calls to fail; 0 means once, -1 forever.
	Times int
	// Terminal marks the error with kv.NonRetriable.
	Terminal bool
}

// SB is the in-memory southbound. It is safe for concurrent use.
type SB struct {
	mu       sync.Mutex
	values   map[string]string
	meta     map[string]int
	calls    []Call
	failures map[string][]*Failure
	index    int
	batches  [][]string
}

// NewSB returns an empty southbound.
func NewSB() *SB {
	return &SB{values: map[string]string{}, meta: map[string]int{}, failures: map[string][]*Failure{}}
}

// Fail plans a failure of calls on key.
func (sb *SB) Fail(key string, f Failure) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if f.Times == 0 {
		f.Times = 1
	}
	sb.failures[key] = append(sb.failures[key], &f)
}

// ClearFailures drops the planned failures not used yet.
func (sb *SB) ClearFailures() {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	clear(sb.failures)
}

// Values returns a copy of what the southbound holds.
func (sb *SB) Values() map[string]string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return maps.Clone(sb.values)
}

// Get returns the value text of key.
func (sb *SB) Get(key string) (string, bool) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	v, ok := sb.values[key]
	return v, ok
}

// Put changes the southbound behind the scheduler's back (no call recorded).
func (sb *SB) Put(key, text string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.values[key] = text
}

// Remove deletes key behind the scheduler's back (no call recorded).
func (sb *SB) Remove(key string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	delete(sb.values, key)
	delete(sb.meta, key)
}

// Calls returns the calls recorded so far.
func (sb *SB) Calls() []Call {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return slices.Clone(sb.calls)
}

// TakeCalls returns the calls recorded so far and forgets them.
func (sb *SB) TakeCalls() []Call {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	c := sb.calls
	sb.calls = nil
	return c
}

// Dump renders the southbound's values, one "key = text" line each, sorted.
func (sb *SB) Dump() string {
	vals := sb.Values()
	keys := slices.Sorted(maps.Keys(vals))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, vals[k])
	}
	return b.String()
}

// failure returns the planned failure of op on key, consuming it.
func (sb *SB) failure(key, op string) *Failure {
	for i, f := range sb.failures[key] {
		if f.Op != op {
			continue
		}
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				sb.failures[key] = slices.Delete(sb.failures[key], i, i+1)
			}
		}
		return f
	}
	return nil
}

func (f *Failure) err() error {
	err := f.Err
	if err == nil {
		err = errors.New("injected failure")
	}
	if f.Terminal {
		err = kv.NonRetriable(err)
	}
	return err
}

// apply performs one call under the lock, with planned failures.
func (sb *SB) apply(op, key, text string) (int, error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	f := sb.failure(key, op)
	var err error
	if f == nil || f.Partial {
		_, exists := sb.values[key]
		switch {
		case op == "create" && exists:
			err = fmt.Errorf("create %s: %w", key, ErrExists)
		case op != "create" && !exists:
			err = fmt.Errorf("%s %s: %w", op, key, kv.ErrNotFound)
		case op == "delete":
			delete(sb.values, key)
			delete(sb.meta, key)
		default:
			sb.values[key] = text
			if op == "create" {
				sb.index++
				sb.meta[key] = sb.index
			}
		}
	}
	if f != nil && err == nil {
		err = f.err()
	}
	sb.calls = append(sb.calls, Call{Op: op, Key: key, Value: text, Err: err})
	return sb.meta[key], err
}

// Config configures a harness descriptor.
type Config struct {
	Name string
	// KeyTemplate or KeyPrefix: the key space.
	KeyTemplate, KeyPrefix string
	// NoUpdate leaves Update out: every change is a re-create.
	NoUpdate bool
	// WithMetadata keeps the southbound's index of each value (an int) as
	// metadata.
	WithMetadata bool
	// RetrieveDependencies are passed through to the spec.
	RetrieveDependencies []string
	// NoRetrieve leaves Retrieve out.
	NoRetrieve bool
	// Claim makes Retrieve report as ours (OriginNB) the values that
	// carry the token note:CLAIM, like routes with an agent's protocol
	// marker. Without it, only the values given to correlate are ours;
	// with it, correlate does not matter.
	Claim string
	// Batch makes the handler apply batches (kv.Batcher): each operation
	// of a batch is applied in turn as its own call would be, with the
	// planned failures, and the batch's size is recorded (SB.Batches).
	// Concurrent, above 1, declares that many concurrent calls
	// (kv.Concurrent). Neither applies with NoRetrieve.
	Batch      bool
	Concurrent int
	// DriftPolicy is passed through to the spec.
	DriftPolicy kv.DriftPolicy
}

// Meta is the metadata of harness values: the southbound's index.
type Meta = int

type handler struct {
	sb    *SB
	name  string
	claim string
	match func(string) bool
}

func (h *handler) Create(_ context.Context, key string, v *wrapperspb.StringValue) (Meta, error) {
	return h.sb.apply("create", key, v.GetValue())
}

func (h *handler) Delete(_ context.Context, key string, v *wrapperspb.StringValue, _ Meta) error {
	_, err := h.sb.apply("delete", key, v.GetValue())
	return err
}

// Retrieve reports the values of the descriptor's key space. It is
// recorded as a call "retrieve NAME" whose value lists the keys of
// correlate (and fails as planned for the key NAME, op "retrieve").
func (h *handler) Retrieve(_ context.Context, correlate []kv.Item[string, *wrapperspb.StringValue, Meta]) ([]kv.Item[string, *wrapperspb.StringValue, Meta], error) {
	ours := map[string]bool{}
	keys := make([]string, 0, len(correlate))
	for _, it := range correlate {
		ours[it.Key] = true
		keys = append(keys, it.Key+"="+it.Value.GetValue())
	}
	h.sb.mu.Lock()
	defer h.sb.mu.Unlock()
	slices.Sort(keys) // correlate comes in no particular order
	call := Call{Op: "retrieve", Key: h.name, Value: "[" + strings.Join(keys, " ") + "]"}
	if f := h.sb.failure(h.name, "retrieve"); f != nil {
		call.Err = f.err()
		h.sb.calls = append(h.sb.calls, call)
		return nil, call.Err
	}
	h.sb.calls = append(h.sb.calls, call)
	var out []kv.Item[string, *wrapperspb.StringValue, Meta]
	for _, k := range slices.Sorted(maps.Keys(h.sb.values)) {
		if !h.match(k) {
			continue
		}
		origin := kv.OriginSB
		if h.claim != "" {
			if spec, _ := Parse(h.sb.values[k]); slices.Contains(spec.Notes, h.claim) {
				origin = kv.OriginNB
			}
		} else if ours[k] {
			origin = kv.OriginNB
		}
		out = append(out, kv.Item[string, *wrapperspb.StringValue, Meta]{Key: k, Value: Value(h.sb.values[k]), Metadata: h.sb.meta[k], Origin: origin})
	}
	return out, nil
}

// bareHandler has Create and Delete only (no Retrieve).
type bareHandler struct{ h *handler }

func (b bareHandler) Create(ctx context.Context, key string, v *wrapperspb.StringValue) (Meta, error) {
	return b.h.Create(ctx, key, v)
}

func (b bareHandler) Delete(ctx context.Context, key string, v *wrapperspb.StringValue, m Meta) error {
	return b.h.Delete(ctx, key, v, m)
}

type updatingBareHandler struct{ bareHandler }

func (h updatingBareHandler) Update(_ context.Context, key string, _, v *wrapperspb.StringValue, _ Meta) (Meta, error) {
	return h.h.sb.apply("update", key, v.GetValue())
}

type updatingHandler struct{ *handler }

func (h updatingHandler) Update(_ context.Context, key string, _, v *wrapperspb.StringValue, _ Meta) (Meta, error) {
	return h.sb.apply("update", key, v.GetValue())
}

// batch applies a batch's operations one by one.
func (h *handler) batch(kind kv.BatchKind, ops []kv.BatchOp[string, *wrapperspb.StringValue, Meta]) {
	keys := make([]string, len(ops))
	for i := range ops {
		keys[i] = ops[i].Key
	}
	h.sb.mu.Lock()
	h.sb.batches = append(h.sb.batches, keys)
	h.sb.mu.Unlock()
	for i := range ops {
		op := &ops[i]
		switch kind {
		case kv.BatchCreate:
			op.Metadata, op.Err = h.sb.apply("create", op.Key, op.Value.GetValue())
		case kv.BatchUpdate:
			op.Metadata, op.Err = h.sb.apply("update", op.Key, op.Value.GetValue())
		default:
			_, op.Err = h.sb.apply("delete", op.Key, op.Value.GetValue())
		}
	}
}

// batchingHandler and batchingUpdHandler apply batches.
type batchingHandler struct{ *handler }

func (h batchingHandler) Batch(_ context.Context, kind kv.BatchKind, ops []kv.BatchOp[string, *wrapperspb.StringValue, Meta]) {
	h.batch(kind, ops)
}

type batchingUpdHandler struct{ updatingHandler }

func (h batchingUpdHandler) Batch(_ context.Context, kind kv.BatchKind, ops []kv.BatchOp[string, *wrapperspb.StringValue, Meta]) {
	h.batch(kind, ops)
}

// concurrentHandler and concurrentUpdHandler take concurrent calls.
type concurrentHandler struct {
	*handler
	n int
}

func (h concurrentHandler) ConcurrentCalls() int { return h.n }

type concurrentUpdHandler struct {
	updatingHandler
	n int
}

func (h concurrentUpdHandler) ConcurrentCalls() int { return h.n }

// Batches returns the sizes of the batches applied so far, in order.
func (sb *SB) Batches() []int {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sizes := make([]int, len(sb.batches))
	for i, b := range sb.batches {
		sizes[i] = len(b)
	}
	return sizes
}

// BatchKeys returns the keys of each batch applied so far, in order.
func (sb *SB) BatchKeys() [][]string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return slices.Clone(sb.batches)
}

// Descriptor returns a descriptor of harness values stored in sb.
func (sb *SB) Descriptor(c Config) (*kv.TypedDescriptor[string, *wrapperspb.StringValue, Meta], error) {
	spec := kv.Spec[string, *wrapperspb.StringValue, Meta]{
		Name:                 c.Name,
		KeyTemplate:          c.KeyTemplate,
		KeyPrefix:            c.KeyPrefix,
		WithMetadata:         c.WithMetadata,
		RetrieveDependencies: c.RetrieveDependencies,
		DriftPolicy:          c.DriftPolicy,
		Dependencies: func(_ string, v *wrapperspb.StringValue) []kv.Dependency {
			s, _ := Parse(v.GetValue())
			return s.Deps
		},
		Derived: func(_ string, v *wrapperspb.StringValue) []kv.Derived {
			s, _ := Parse(v.GetValue())
			return s.Derived
		},
		Equivalent: func(_ string, a, b *wrapperspb.StringValue) bool {
			sa, _ := Parse(a.GetValue())
			sb, _ := Parse(b.GetValue())
			return slices.Equal(sa.comparable(), sb.comparable())
		},
		NeedsRecreate: func(_ string, a, b *wrapperspb.StringValue) bool {
			sa, _ := Parse(a.GetValue())
			sb, _ := Parse(b.GetValue())
			return !slices.Equal(sa.Recreate, sb.Recreate)
		},
		Validate: func(_ string, v *wrapperspb.StringValue) error {
			s, err := Parse(v.GetValue())
			if err != nil {
				return kv.Invalid("value", "%v", err)
			}
			var inv *kv.InvalidValueError
			for _, f := range s.Invalid {
				inv = inv.Add(f, "marked invalid")
			}
			return inv.OrNil()
		},
	}
	h := &handler{sb: sb, name: c.Name, claim: c.Claim}
	var d *kv.TypedDescriptor[string, *wrapperspb.StringValue, Meta]
	var err error
	switch {
	case c.Batch && c.NoUpdate:
		d, err = kv.NewDescriptor[string, *wrapperspb.StringValue, Meta](spec, batchingHandler{h})
	case c.Batch:
		d, err = kv.NewDescriptor[string, *wrapperspb.StringValue, Meta](spec, batchingUpdHandler{updatingHandler{h}})
	case c.Concurrent > 1 && c.NoUpdate:
		d, err = kv.NewDescriptor[string, *wrapperspb.StringValue, Meta](spec, concurrentHandler{h, c.Concurrent})
	case c.Concurrent > 1:
		d, err = kv.NewDescriptor[string, *wrapperspb.StringValue, Meta](spec, concurrentUpdHandler{updatingHandler{h}, c.Concurrent})
	case c.NoUpdate && c.NoRetrieve:
		d, err = kv.NewDescriptor[string, *wrapperspb.StringValue, Meta](spec, bareHandler{h})
	case c.NoUpdate:
		d, err = kv.NewDescriptor[string, *wrapperspb.StringValue, Meta](spec, h)
	case c.NoRetrieve:
		d, err = kv.NewDescriptor[string, *wrapperspb.StringValue, Meta](spec, updatingBareHandler{bareHandler{h}})
	default:
		d, err = kv.NewDescriptor[string, *wrapperspb.StringValue, Meta](spec, updatingHandler{h})
	}
	if err != nil {
		return nil, err
	}
	h.match = d.IsKey
	return d, nil
}
