package kv

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kvdescriptor/kvdescriptor/runtime/internal/kvaccess"
)

// Handler holds the CRUD bodies of a descriptor: the only code a plugin
// author writes by hand. K is the key type (the generated typed key of the
// model, or string), V the value's message type and M the metadata type
// (struct{} when values carry none). Keys reach the handler parsed: a text
// that does not parse as a key of the descriptor never reaches it.
type Handler[K any, V proto.Message, M any] interface {
	// Create creates the value in the southbound and returns its metadata.
	Create(ctx context.Context, key K, value V) (M, error)
	// Delete removes the value from the southbound. Returning ErrNotFound
	// (wrapped or not) counts as success.
	Delete(ctx context.Context, key K, value V, metadata M) error
}

// Updater is the optional in-place update capability of a Handler. Without
// it every change is applied as Delete followed by Create.
type Updater[K any, V proto.Message, M any] interface {
	Update(ctx context.Context, key K, oldValue, newValue V, oldMetadata M) (M, error)
}

// Retriever is the optional capability of reading the southbound's actual
// state. correlate holds the values the scheduler expects to exist (the
// intended ones at startup, the applied ones later), so that a handler can
// match what it finds to what it was asked for and mark it as ours.
type Retriever[K any, V proto.Message, M any] interface {
	Retrieve(ctx context.Context, correlate []Item[K, V, M]) ([]Item[K, V, M], error)
}

// Validator is the optional capability of checking a value beyond what the
// schema (Spec.Validate) checks. It runs after Spec.Validate and before any
// southbound call; errors should be *InvalidValueError naming the fields.
type Validator[K any, V proto.Message] interface {
	Validate(key K, value V) error
}

// Origin says who created a value in the southbound.
type Origin uint8

// The origins.
const (
	// OriginUnknown is for values whose origin was not reported.
	OriginUnknown Origin = iota
	// OriginNB marks values configured by us, from the northbound.
	OriginNB
	// OriginSB marks values created outside us and only observed.
	OriginSB
)

func (o Origin) String() string {
	switch o {
	case OriginNB:
		return "FROM_NB"
	case OriginSB:
		return "FROM_SB"
	}
	return "UNKNOWN"
}

// Item is a key with its value, metadata and origin, as exchanged with
// Retrieve.
type Item[K any, V proto.Message, M any] struct {
	Key      K
	Value    V
	Metadata M
	Origin   Origin
}

// Spec is the schema-derived part of a descriptor, normally generated from
// the model's annotations. Only Name and a key space (KeyTemplate or
// KeyPrefix) are required, and for a key type other than string ParseKey
// and KeyString; every function has a documented default. Its functions
// take key texts: they are the scheduler's, generated from the schema.
type Spec[K any, V proto.Message, M any] struct {
	// Name identifies the descriptor; unique within a scheduler.
	Name string
	// KeyTemplate is the key template, e.g. "vpp/arp/{interface}/{ip:ip}".
	// It gives the key prefix, the default key test and the exact key
	// space used to reject overlapping descriptors at registration.
	KeyTemplate string
	// KeyPrefix is the key space of a descriptor without KeyTemplate: every
	// key starting with it. Ignored when KeyTemplate is set.
	KeyPrefix string
	// ParseKey parses a key of the descriptor into K; ok is false for a
	// text that is not one of its keys. It is what recognises the
	// descriptor's keys. Required unless K is string; for string keys the
	// default is the template's Match (or the prefix test), with the key
	// passed on unchanged.
	ParseKey func(key string) (k K, ok bool)
	// KeyString writes a K as its key text (the keys of the items that
	// Retrieve returns). Required unless K is string.
	KeyString func(k K) string
	// Label returns the label of a key; default: the key without the prefix.
	Label func(key string) string
	// Dependencies lists what a value needs before it can be created. It
	// is a function of the key and the value only, and may be called from
	// several goroutines at once (readers of the scheduler call it too).
	// The list is never modified by its callers, so it may be shared
	// between values.
	Dependencies func(key string, value V) []Dependency
	// Derived lists the values derived from a value.
	Derived func(key string, value V) []Derived
	// BaseOf returns, for a model of derived values, the key of the base
	// value that derives key; "" when the key does not tell. The
	// generator emits it from the derive key template when that carries
	// every field of the base's key (linux/interface/{name}/address/{ip}
	// gives linux/interface/{name}). The scheduler calls it only to link
	// values that a refresh found, and that nothing intends, to their
	// base (a southbound may report a base without the field that
	// derives them), so that they are deleted before it; default: no
	// base is known.
	BaseOf func(key string) string
	// Equivalent tells whether two values of a key are equal for the
	// southbound; default proto.Equal. Equal values are never re-applied.
	Equivalent func(key string, a, b V) bool
	// NeedsRecreate tells whether changing oldValue to newValue needs Delete
	// followed by Create instead of Update; default false.
	NeedsRecreate func(key string, oldValue, newValue V) bool
	// Validate checks a value against the schema; errors should be
	// *InvalidValueError naming the fields.
	Validate func(key string, value V) error
	// IsRetriable classifies errors of this descriptor's operations;
	// default kv.IsRetriable.
	IsRetriable func(err error) bool
	// RetrieveDependencies names the descriptors whose Retrieve must run
	// before this one's.
	RetrieveDependencies []string
	// WithMetadata says that values carry metadata, kept in the descriptor's
	// MetadataMap.
	WithMetadata bool
	// MetadataIndexes are secondary indexes of the metadata map: each maps
	// metadata to index values, looked up with MetadataMap.Lookup.
	MetadataIndexes map[string]func(M) []string
	// DriftPolicy is what the scheduler does when the southbound changes
	// or loses a value of ours behind its back (option drift_policy);
	// default DriftRepair.
	DriftPolicy DriftPolicy
}

// Descriptor is the type-erased descriptor that the scheduler works with.
// It is implemented only by *TypedDescriptor, built by NewDescriptor (the
// interface is sealed); plugin authors never implement it. Methods given a
// value of the wrong message type fail with ErrWrongType (or report nothing)
// instead of panicking. Keys are texts here; the typed key is the handler's.
type Descriptor interface {
	Name() string
	KeyPrefix() string
	// KeyTemplate returns the parsed key template, or nil.
	KeyTemplate() *KeyTemplate
	IsKey(key string) bool
	Label(key string) string
	// ValueType is the message type of the descriptor's values.
	ValueType() protoreflect.MessageType
	Dependencies(key string, value proto.Message) []Dependency
	Derived(key string, value proto.Message) []Derived
	// BaseOf returns the key of the base value that derives key (a key
	// of a derived model), or "" (Spec.BaseOf).
	BaseOf(key string) string
	Equivalent(key string, a, b proto.Message) bool
	NeedsRecreate(key string, oldValue, newValue proto.Message) bool
	Validate(key string, value proto.Message) error
	Create(ctx context.Context, key string, value proto.Message) (any, error)
	Update(ctx context.Context, key string, oldValue, newValue proto.Message, oldMetadata any) (any, error)
	Delete(ctx context.Context, key string, value proto.Message, metadata any) error
	Retrieve(ctx context.Context, correlate []Item[string, proto.Message, any]) ([]Item[string, proto.Message, any], error)
	CanUpdate() bool
	CanRetrieve() bool
	// CanBatch reports whether the handler applies batches (Batcher), and
	// Batch applies one; ConcurrentCalls is the number of calls of
	// independent values that may run at once (Concurrent), at least 1.
	CanBatch() bool
	Batch(ctx context.Context, kind BatchKind, ops []BatchOp[string, proto.Message, any])
	ConcurrentCalls() int
	IsRetriable(err error) bool
	RetrieveDependencies() []string
	WithMetadata() bool
	// DriftPolicy is the model's policy for drift (Spec.DriftPolicy).
	DriftPolicy() DriftPolicy

	// metadataWriter seals the interface: the metadata map is written
	// only by the scheduler that registered the descriptor, through
	// runtime/internal/kvaccess.
	metadataWriter() metadataWriter
}

// metadataWriter keeps a descriptor's metadata map in sync.
type metadataWriter interface {
	setMetadata(label string, metadata any)
	deleteMetadata(label string)
}

// TypedDescriptor is a descriptor built from a typed Spec and Handler.
type TypedDescriptor[K any, V proto.Message, M any] struct {
	spec      Spec[K, V, M]
	template  *KeyTemplate
	prefix    string
	handler   Handler[K, V, M]
	updater   Updater[K, V, M]
	retriever Retriever[K, V, M]
	validator Validator[K, V]
	batcher   Batcher[K, V, M]
	// batchBufs pools the typed operations of batches (see Batch).
	batchBufs sync.Pool
	// concurrent is the handler when it is Concurrent.
	concurrent Concurrent
	metadata   *metadataStore[M]
	valueType  protoreflect.MessageType
	// noMeta: M has no data (struct{}), so Create and Update report nil
	// metadata rather than a boxed empty value kept with every value.
	noMeta bool
}

var _ Descriptor = (*TypedDescriptor[string, proto.Message, any])(nil)

// NewDescriptor builds a descriptor from its spec and handler. The handler's
// optional capabilities (Updater, Retriever, Validator, Batcher, Concurrent)
// are discovered here; a handler with a method named Update, Retrieve,
// Validate, Batch or ConcurrentCalls that does not
// have the capability's signature is refused, so that a mistyped method
// (an Update without its old metadata) is an error here rather than a
// capability silently missing (every change applied as delete + create).
func NewDescriptor[K any, V proto.Message, M any](spec Spec[K, V, M], handler Handler[K, V, M]) (*TypedDescriptor[K, V, M], error) {
	if spec.Name == "" {
		return nil, errors.New("kv.NewDescriptor: Spec.Name is empty")
	}
	if handler == nil || (reflect.ValueOf(handler).Kind() == reflect.Pointer && reflect.ValueOf(handler).IsNil()) {
		return nil, fmt.Errorf("kv.NewDescriptor %s: handler is nil", spec.Name)
	}
	if int(spec.DriftPolicy) >= len(driftPolicyNames) {
		return nil, fmt.Errorf("kv.NewDescriptor %s: Spec.DriftPolicy: %v is not a policy (repair, report or adopt)", spec.Name, spec.DriftPolicy)
	}
	d := &TypedDescriptor[K, V, M]{spec: spec, handler: handler, prefix: spec.KeyPrefix}
	d.noMeta = reflect.TypeFor[M]().Kind() == reflect.Struct && reflect.TypeFor[M]().Size() == 0
	if spec.KeyTemplate != "" {
		t, err := ParseKeyTemplate(spec.KeyTemplate)
		if err != nil {
			return nil, fmt.Errorf("kv.NewDescriptor %s: %w", spec.Name, err)
		}
		if err := t.CheckDescriptorKeySpace(); err != nil {
			return nil, fmt.Errorf("kv.NewDescriptor %s: %w", spec.Name, err)
		}
		d.template, d.prefix = t, t.Prefix()
	}
	if d.prefix == "" {
		return nil, fmt.Errorf("kv.NewDescriptor %s: the key space has no literal prefix (set KeyTemplate or KeyPrefix)", spec.Name)
	}
	if _, isString := any(*new(K)).(string); !isString && (spec.ParseKey == nil || spec.KeyString == nil) {
		return nil, fmt.Errorf("kv.NewDescriptor %s: the key type %v needs Spec.ParseKey and Spec.KeyString", spec.Name, reflect.TypeFor[K]())
	}
	var zero V
	if any(zero) == nil {
		// An interface type such as proto.Message has no message type to
		// report or to check values against.
		return nil, fmt.Errorf("kv.NewDescriptor %s: the value type %v is not a concrete message type", spec.Name, reflect.TypeFor[V]())
	}
	var err error
	if d.updater, err = capability[Updater[K, V, M]](spec.Name, handler, "Update"); err != nil {
		return nil, err
	}
	if d.retriever, err = capability[Retriever[K, V, M]](spec.Name, handler, "Retrieve"); err != nil {
		return nil, err
	}
	if d.validator, err = capability[Validator[K, V]](spec.Name, handler, "Validate"); err != nil {
		return nil, err
	}
	if d.batcher, err = capability[Batcher[K, V, M]](spec.Name, handler, "Batch"); err != nil {
		return nil, err
	}
	d.batchBufs.New = func() any { return new([]BatchOp[K, V, M]) }
	if d.concurrent, err = capability[Concurrent](spec.Name, handler, "ConcurrentCalls"); err != nil {
		return nil, err
	}
	d.metadata = newMetadataStore(spec.MetadataIndexes)
	d.valueType = zero.ProtoReflect().Type()
	return d, nil
}

// capability returns the handler as the optional capability C, nil when it
// has no method of that name, and an error when it has one of another
// signature.
func capability[C any](name string, handler any, method string) (C, error) {
	c, ok := handler.(C)
	if ok {
		return c, nil
	}
	if m := reflect.ValueOf(handler).MethodByName(method); m.IsValid() {
		want, _ := reflect.TypeFor[C]().MethodByName(method)
		return c, fmt.Errorf("kv.NewDescriptor %s: the handler %T has a method %s that is not the optional %s of the model: it is %v, want %v",
			name, handler, method, method, m.Type(), want.Type)
	}
	return c, nil
}

// Metadata returns the read-only view of the descriptor's metadata map.
func (d *TypedDescriptor[K, V, M]) Metadata() MetadataMap[M] { return d.metadata }

// Handler returns the handler the descriptor was built from.
func (d *TypedDescriptor[K, V, M]) Handler() Handler[K, V, M] { return d.handler }

func (d *TypedDescriptor[K, V, M]) Name() string                        { return d.spec.Name }
func (d *TypedDescriptor[K, V, M]) KeyPrefix() string                   { return d.prefix }
func (d *TypedDescriptor[K, V, M]) KeyTemplate() *KeyTemplate           { return d.template }
func (d *TypedDescriptor[K, V, M]) ValueType() protoreflect.MessageType { return d.valueType }
func (d *TypedDescriptor[K, V, M]) CanUpdate() bool                     { return d.updater != nil }
func (d *TypedDescriptor[K, V, M]) CanRetrieve() bool                   { return d.retriever != nil }
func (d *TypedDescriptor[K, V, M]) WithMetadata() bool                  { return d.spec.WithMetadata }
func (d *TypedDescriptor[K, V, M]) DriftPolicy() DriftPolicy            { return d.spec.DriftPolicy }
func (d *TypedDescriptor[K, V, M]) metadataWriter() metadataWriter      { return d }

func (d *TypedDescriptor[K, V, M]) RetrieveDependencies() []string {
	return append([]string(nil), d.spec.RetrieveDependencies...)
}

func (d *TypedDescriptor[K, V, M]) IsKey(key string) bool {
	if !strings.HasPrefix(key, d.prefix) {
		return false
	}
	switch {
	case d.spec.ParseKey != nil:
		_, ok := d.spec.ParseKey(key)
		return ok
	case d.template != nil:
		return d.template.Match(key)
	}
	return len(key) > len(d.prefix)
}

// parseKey gives the handler's key of a key text; ok is false for a text
// that does not parse. Without a parser (K is string, NewDescriptor
// checks) the text is the key when IsKey accepts it (the template's Match,
// or the prefix test): Spec.ParseKey's documented default, kept by every
// type-erased call, whoever makes it.
func (d *TypedDescriptor[K, V, M]) parseKey(key string) (K, bool) {
	if d.spec.ParseKey != nil {
		return d.spec.ParseKey(key)
	}
	k, _ := any(key).(K)
	return k, d.IsKey(key)
}

// keyString is the text of a handler's key.
func (d *TypedDescriptor[K, V, M]) keyString(k K) string {
	if d.spec.KeyString != nil {
		return d.spec.KeyString(k)
	}
	s, _ := any(k).(string)
	return s
}

// callKey gives the handler's key of a key text for a call with ctx: a
// call of the scheduler, whose keys it matched to d already (see
// kvaccess.KeysMatched), is not matched again, unless a parser makes the
// key.
func (d *TypedDescriptor[K, V, M]) callKey(ctx context.Context, key string) (K, bool) {
	if d.spec.ParseKey == nil && kvaccess.KeysMatched != nil && kvaccess.KeysMatched(ctx, d) {
		k, ok := any(key).(K)
		return k, ok
	}
	return d.parseKey(key)
}

// handlerKey parses a key for a handler call; the scheduler calls the
// handler only with keys that IsKey accepts, so an error means a caller
// that skipped that test (it is not retriable).
func (d *TypedDescriptor[K, V, M]) handlerKey(ctx context.Context, key string) (K, error) {
	k, ok := d.callKey(ctx, key)
	if !ok {
		return k, NonRetriable(fmt.Errorf("%s: %w of %s", key, errNotKey, d.spec.Name))
	}
	return k, nil
}

// errNotKey is the error of a handler call with a text that is not a key of
// the descriptor.
var errNotKey = errors.New("not a key")

func (d *TypedDescriptor[K, V, M]) Label(key string) string {
	if d.spec.Label != nil {
		return d.spec.Label(key)
	}
	return strings.TrimPrefix(key, d.prefix)
}

// typed converts an erased value; ok is false for a wrong type.
func (d *TypedDescriptor[K, V, M]) typed(m proto.Message) (V, bool) {
	v, ok := m.(V)
	return v, ok
}

func (d *TypedDescriptor[K, V, M]) wrongType(key string, m proto.Message) error {
	return fmt.Errorf("%s: %w: %s", key, ErrWrongType, d.typeMismatch(m))
}

func (d *TypedDescriptor[K, V, M]) typeMismatch(m proto.Message) string {
	got := "nil"
	if m != nil {
		got = string(m.ProtoReflect().Descriptor().FullName())
	}
	return fmt.Sprintf("got %s, descriptor %s takes %s", got, d.spec.Name, d.valueType.Descriptor().FullName())
}

func (d *TypedDescriptor[K, V, M]) Dependencies(key string, value proto.Message) []Dependency {
	v, ok := d.typed(value)
	if !ok || d.spec.Dependencies == nil {
		return nil
	}
	return d.spec.Dependencies(key, v)
}

func (d *TypedDescriptor[K, V, M]) Derived(key string, value proto.Message) []Derived {
	v, ok := d.typed(value)
	if !ok || d.spec.Derived == nil {
		return nil
	}
	return d.spec.Derived(key, v)
}

func (d *TypedDescriptor[K, V, M]) BaseOf(key string) string {
	if d.spec.BaseOf == nil {
		return ""
	}
	return d.spec.BaseOf(key)
}

func (d *TypedDescriptor[K, V, M]) Equivalent(key string, a, b proto.Message) bool {
	va, okA := d.typed(a)
	vb, okB := d.typed(b)
	if !okA || !okB {
		return false
	}
	if d.spec.Equivalent != nil {
		return d.spec.Equivalent(key, va, vb)
	}
	return proto.Equal(va, vb)
}

func (d *TypedDescriptor[K, V, M]) NeedsRecreate(key string, oldValue, newValue proto.Message) bool {
	vo, okO := d.typed(oldValue)
	vn, okN := d.typed(newValue)
	if !okO || !okN {
		return true
	}
	return d.spec.NeedsRecreate != nil && d.spec.NeedsRecreate(key, vo, vn)
}

// Validate checks the type, then the schema, then the handler's Validator,
// and merges the invalid fields they report into one *InvalidValueError.
// The handler's Validator runs on every value whose key parses, so that
// one error names every invalid field. A value they all accept is checked
// last for what the spec computes from it: a dependency with neither a
// key nor AnyOf prefixes, or a derived value with an empty key or no
// value, makes it invalid (fields "(dependencies)" and "(derived)"; see
// CheckDependencies and CheckDerived).
func (d *TypedDescriptor[K, V, M]) Validate(key string, value proto.Message) error {
	if err := d.ValidateInput(key, value); err != nil {
		return err
	}
	if err := d.checkSpecOutput(key, value); err != nil {
		return err
	}
	return nil
}

// ValidateInput is Validate without the checks of what the spec computes
// from the value (its dependencies and derived values), for a caller that
// computes them anyway and checks them itself with CheckDependencies and
// CheckDerived, so that the spec's functions run once per value.
func (d *TypedDescriptor[K, V, M]) ValidateInput(key string, value proto.Message) error {
	v, ok := d.typed(value)
	if !ok || value == nil {
		return &InvalidValueError{Key: key, Fields: []FieldError{{Field: "(message type)", Reason: d.typeMismatch(value)}}, Err: ErrWrongType}
	}
	var merged *InvalidValueError
	if d.spec.Validate != nil {
		if err := d.spec.Validate(key, v); err != nil {
			merged = mergeInvalid(merged, err)
		}
	}
	if d.spec.ParseKey == nil && d.validator == nil {
		// Nothing to parse the key for: the scheduler matches keys to the
		// template and reports a misfit itself.
		return merged.withKey(key)
	}
	k, isKey := d.parseKey(key)
	if !isKey && d.spec.ParseKey != nil && merged == nil {
		// The schema's errors come first: they name the field that makes
		// the key wrong (an address out of format), where the parser
		// could only say that it is.
		merged = merged.Add("(key)", "%q is not a key of %s", key, d.spec.Name)
	}
	if d.validator != nil && isKey {
		if err := d.validator.Validate(k, v); err != nil {
			merged = mergeInvalid(merged, err)
		}
	}
	return merged.withKey(key)
}

// ValidateInput is d's ValidateInput when it has one (a TypedDescriptor),
// or else its Validate: for a caller that computes a value's dependencies
// and derived values itself and checks them with CheckDependencies and
// CheckDerived.
func ValidateInput(d Descriptor, key string, value proto.Message) error {
	if v, ok := d.(interface {
		ValidateInput(string, proto.Message) error
	}); ok {
		return v.ValidateInput(key, value)
	}
	return d.Validate(key, value)
}

// mergeInvalid adds the invalid fields of err to merged, or err itself as
// the field "(value)".
func mergeInvalid(merged *InvalidValueError, err error) *InvalidValueError {
	var inv *InvalidValueError
	if errors.As(err, &inv) {
		// inv may be a typed nil or empty: a check that returned its
		// collector without OrNil found nothing wrong.
		if inv != nil && len(inv.Fields) > 0 {
			if merged == nil {
				merged = &InvalidValueError{}
			}
			merged.Fields = append(merged.Fields, inv.Fields...)
		}
		return merged
	}
	merged = merged.Add("(value)", "%s", err)
	if merged.Err == nil {
		merged.Err = err
	}
	return merged
}

// withKey returns e with its Key set, or a nil error when e is nil.
func (e *InvalidValueError) withKey(key string) error {
	if e == nil {
		return nil
	}
	e.Key = key
	return e
}

// checkSpecOutput checks what the spec computes from a valid value (see
// CheckDependencies and CheckDerived). A malformed one is the value's
// error, naming it: the scheduler would otherwise wait for it forever (a
// dependency on nothing) or drop it unseen (a derived value without key or
// value).
//
// A function that panics here is left to the call its caller makes itself,
// which reports the panic as that function's: this check finds nothing.
func (d *TypedDescriptor[K, V, M]) checkSpecOutput(key string, value proto.Message) (err error) {
	defer func() {
		if recover() != nil {
			err = nil
		}
	}()
	if err := CheckDependencies(key, d.Dependencies(key, value)); err != nil {
		return err
	}
	return CheckDerived(key, d.Derived(key, value))
}

// CheckDependencies reports, as an *InvalidValueError of key (field
// "(dependencies)"), the dependencies of deps with neither a key nor AnyOf
// prefixes: a value waiting for one would wait forever. It allocates
// nothing when they are all well formed.
func CheckDependencies(key string, deps []Dependency) error {
	var errs *InvalidValueError
	for i := range deps {
		if dep := &deps[i]; dep.Key == "" && len(dep.AnyOf.Prefixes) == 0 {
			errs = errs.Add("(dependencies)", "dependency %d (%q) has neither a key nor AnyOf prefixes", i+1, dep.Label)
		}
	}
	return errs.withKey(key)
}

// CheckDerived reports, as an *InvalidValueError of key (field
// "(derived)"), the derived values of ds with an empty key or no value. It
// allocates nothing when they are all well formed.
func CheckDerived(key string, ds []Derived) error {
	var errs *InvalidValueError
	for i := range ds {
		switch dv := &ds[i]; {
		case dv.Key == "":
			errs = errs.Add("(derived)", "derived value %d has an empty key", i+1)
		case dv.Value == nil || !dv.Value.ProtoReflect().IsValid():
			errs = errs.Add("(derived)", "derived value %d (%s) has no value", i+1, dv.Key)
		}
	}
	return errs.withKey(key)
}

func (d *TypedDescriptor[K, V, M]) meta(m any) M {
	typed, _ := m.(M)
	return typed
}

func (d *TypedDescriptor[K, V, M]) Create(ctx context.Context, key string, value proto.Message) (any, error) {
	v, ok := d.typed(value)
	if !ok {
		return nil, d.wrongType(key, value)
	}
	k, err := d.handlerKey(ctx, key)
	if err != nil {
		return nil, err
	}
	m, err := d.handler.Create(ctx, k, v)
	if err != nil || d.noMeta {
		return nil, err
	}
	return m, nil
}

func (d *TypedDescriptor[K, V, M]) Update(ctx context.Context, key string, oldValue, newValue proto.Message, oldMetadata any) (any, error) {
	if d.updater == nil {
		return nil, fmt.Errorf("%s: descriptor %s has no Update", key, d.spec.Name)
	}
	vo, okO := d.typed(oldValue)
	vn, okN := d.typed(newValue)
	if !okO {
		return nil, d.wrongType(key, oldValue)
	}
	if !okN {
		return nil, d.wrongType(key, newValue)
	}
	k, err := d.handlerKey(ctx, key)
	if err != nil {
		return nil, err
	}
	m, err := d.updater.Update(ctx, k, vo, vn, d.meta(oldMetadata))
	if err != nil || d.noMeta {
		return nil, err
	}
	return m, nil
}

func (d *TypedDescriptor[K, V, M]) Delete(ctx context.Context, key string, value proto.Message, metadata any) error {
	v, ok := d.typed(value)
	if !ok {
		return d.wrongType(key, value)
	}
	k, err := d.handlerKey(ctx, key)
	if err != nil {
		return err
	}
	err = d.handler.Delete(ctx, k, v, d.meta(metadata))
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// Retrieve gives the handler the correlated items with parsed keys (items
// of another message type or with a text that is not a key of the
// descriptor are left out) and returns what it found with key texts.
func (d *TypedDescriptor[K, V, M]) Retrieve(ctx context.Context, correlate []Item[string, proto.Message, any]) ([]Item[string, proto.Message, any], error) {
	if d.retriever == nil {
		return nil, fmt.Errorf("descriptor %s has no Retrieve", d.spec.Name)
	}
	typed := make([]Item[K, V, M], 0, len(correlate))
	for _, it := range correlate {
		v, ok := d.typed(it.Value)
		if !ok {
			continue
		}
		k, ok := d.callKey(ctx, it.Key)
		if !ok {
			continue
		}
		typed = append(typed, Item[K, V, M]{Key: k, Value: v, Metadata: d.meta(it.Metadata), Origin: it.Origin})
	}
	got, err := d.retriever.Retrieve(ctx, typed)
	if err != nil {
		return nil, err
	}
	out := make([]Item[string, proto.Message, any], len(got))
	for i, it := range got {
		out[i] = Item[string, proto.Message, any]{Key: d.keyString(it.Key), Value: it.Value, Origin: it.Origin}
		if !d.noMeta {
			// Metadata of no data is nil, as Create and Update report it.
			out[i].Metadata = it.Metadata
		}
	}
	return out, nil
}

func (d *TypedDescriptor[K, V, M]) IsRetriable(err error) bool {
	if d.spec.IsRetriable != nil {
		return d.spec.IsRetriable(err)
	}
	return IsRetriable(err)
}

func (d *TypedDescriptor[K, V, M]) setMetadata(label string, metadata any) {
	if !d.spec.WithMetadata {
		return
	}
	if m, ok := metadata.(M); ok {
		d.metadata.put(label, m)
		return
	}
	d.metadata.remove(label)
}

func (d *TypedDescriptor[K, V, M]) deleteMetadata(label string) {
	if d.spec.WithMetadata {
		d.metadata.remove(label)
	}
}
