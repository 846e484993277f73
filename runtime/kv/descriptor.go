package kv

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Handler holds the CRUD bodies of a descriptor: the only code a plugin
// author writes by hand. V is the value's message type, M the metadata type
// (use struct{} when values carry none).
type Handler[V proto.Message, M any] interface {
	// Create creates the value in the southbound and returns its metadata.
	Create(ctx context.Context, key string, value V) (M, error)
	// Delete removes the value from the southbound. Returning ErrNotFound
	// (wrapped or not) counts as success.
	Delete(ctx context.Context, key string, value V, metadata M) error
}

// Updater is the optional in-place update capability of a Handler. Without
// it every change is applied as Delete followed by Create.
type Updater[V proto.Message, M any] interface {
	Update(ctx context.Context, key string, oldValue, newValue V, oldMetadata M) (M, error)
}

// Retriever is the optional capability of reading the southbound's actual
// state. correlate holds the values the scheduler expects to exist (the
// intended ones at startup, the applied ones later), so that a handler can
// match what it finds to what it was asked for and mark it as ours.
type Retriever[V proto.Message, M any] interface {
	Retrieve(ctx context.Context, correlate []Item[V, M]) ([]Item[V, M], error)
}

// Validator is the optional capability of checking a value beyond what the
// schema (Spec.Validate) checks. It runs after Spec.Validate and before any
// southbound call; errors should be *InvalidValueError naming the fields.
type Validator[V proto.Message] interface {
	Validate(key string, value V) error
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
type Item[V proto.Message, M any] struct {
	Key      string
	Value    V
	Metadata M
	Origin   Origin
}

// Spec is the schema-derived part of a descriptor, normally generated from
// the model's annotations. Only Name and a key space (KeyTemplate or
// KeyPrefix) are required; every function has a documented default.
type Spec[V proto.Message, M any] struct {
	// Name identifies the descriptor; unique within a scheduler.
	Name string
	// KeyTemplate is the key template, e.g. "vpp/arp/{interface}/{ip:ip}".
	// It gives the key prefix, the default IsKey and the exact key space
	// used to reject overlapping descriptors at registration.
	KeyTemplate string
	// KeyPrefix is the key space of a descriptor without KeyTemplate: every
	// key starting with it. Ignored when KeyTemplate is set.
	KeyPrefix string
	// IsKey refines the key space (a generated parser); default: the
	// template's Match, or the prefix test.
	IsKey func(key string) bool
	// Label returns the label of a key; default: the key without the prefix.
	Label func(key string) string
	// Dependencies lists what a value needs before it can be created. It
	// is a function of the key and the value only, and may be called from
	// several goroutines at once (readers of the scheduler call it too).
	// The list is never modified by its callers, so it may be shared
	// between values (see ShareDependencies).
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
}

// Descriptor is the type-erased descriptor that the scheduler works with.
// It is implemented only by *TypedDescriptor, built by NewDescriptor; plugin
// authors never implement it. Methods given a value of the wrong message type
// fail with ErrWrongType (or report nothing) instead of panicking.
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
	Retrieve(ctx context.Context, correlate []Item[proto.Message, any]) ([]Item[proto.Message, any], error)
	CanUpdate() bool
	CanRetrieve() bool
	IsRetriable(err error) bool
	RetrieveDependencies() []string
	WithMetadata() bool
	// SetMetadata and DeleteMetadata keep the metadata map in sync; only
	// the scheduler that registered the descriptor calls them.
	SetMetadata(label string, metadata any)
	DeleteMetadata(label string)
}

// TypedDescriptor is a descriptor built from a typed Spec and Handler.
type TypedDescriptor[V proto.Message, M any] struct {
	spec      Spec[V, M]
	template  *KeyTemplate
	prefix    string
	handler   Handler[V, M]
	updater   Updater[V, M]
	retriever Retriever[V, M]
	validator Validator[V]
	metadata  *metadataStore[M]
	valueType protoreflect.MessageType
	// noMeta: M has no data (struct{}), so Create and Update report nil
	// metadata rather than a boxed empty value kept with every value.
	noMeta bool
}

var _ Descriptor = (*TypedDescriptor[proto.Message, any])(nil)

// NewDescriptor builds a descriptor from its spec and handler. The handler's
// optional capabilities (Updater, Retriever, Validator) are discovered here.
func NewDescriptor[V proto.Message, M any](spec Spec[V, M], handler Handler[V, M]) (*TypedDescriptor[V, M], error) {
	if spec.Name == "" {
		return nil, errors.New("kv.NewDescriptor: Spec.Name is empty")
	}
	if handler == nil {
		return nil, fmt.Errorf("kv.NewDescriptor %s: handler is nil", spec.Name)
	}
	d := &TypedDescriptor[V, M]{spec: spec, handler: handler, prefix: spec.KeyPrefix}
	d.noMeta = reflect.TypeFor[M]().Kind() == reflect.Struct && reflect.TypeFor[M]().Size() == 0
	if spec.KeyTemplate != "" {
		t, err := ParseKeyTemplate(spec.KeyTemplate)
		if err != nil {
			return nil, fmt.Errorf("kv.NewDescriptor %s: %w", spec.Name, err)
		}
		d.template, d.prefix = t, t.Prefix()
	}
	if d.prefix == "" {
		return nil, fmt.Errorf("kv.NewDescriptor %s: the key space has no literal prefix (set KeyTemplate or KeyPrefix)", spec.Name)
	}
	d.updater, _ = handler.(Updater[V, M])
	d.retriever, _ = handler.(Retriever[V, M])
	d.validator, _ = handler.(Validator[V])
	var zero V
	if any(zero) == nil {
		// An interface type such as proto.Message has no message type to
		// report or to check values against.
		return nil, fmt.Errorf("kv.NewDescriptor %s: the value type %v is not a concrete message type", spec.Name, reflect.TypeFor[V]())
	}
	d.metadata = newMetadataStore(spec.MetadataIndexes)
	d.valueType = zero.ProtoReflect().Type()
	return d, nil
}

// Metadata returns the read-only view of the descriptor's metadata map.
func (d *TypedDescriptor[V, M]) Metadata() MetadataMap[M] { return d.metadata }

// Handler returns the handler the descriptor was built from.
func (d *TypedDescriptor[V, M]) Handler() Handler[V, M] { return d.handler }

func (d *TypedDescriptor[V, M]) Name() string                        { return d.spec.Name }
func (d *TypedDescriptor[V, M]) KeyPrefix() string                   { return d.prefix }
func (d *TypedDescriptor[V, M]) KeyTemplate() *KeyTemplate           { return d.template }
func (d *TypedDescriptor[V, M]) ValueType() protoreflect.MessageType { return d.valueType }
func (d *TypedDescriptor[V, M]) CanUpdate() bool                     { return d.updater != nil }
func (d *TypedDescriptor[V, M]) CanRetrieve() bool                   { return d.retriever != nil }
func (d *TypedDescriptor[V, M]) WithMetadata() bool                  { return d.spec.WithMetadata }

func (d *TypedDescriptor[V, M]) RetrieveDependencies() []string {
	return append([]string(nil), d.spec.RetrieveDependencies...)
}

func (d *TypedDescriptor[V, M]) IsKey(key string) bool {
	if !strings.HasPrefix(key, d.prefix) {
		return false
	}
	switch {
	case d.spec.IsKey != nil:
		return d.spec.IsKey(key)
	case d.template != nil:
		return d.template.Match(key)
	}
	return len(key) > len(d.prefix)
}

func (d *TypedDescriptor[V, M]) Label(key string) string {
	if d.spec.Label != nil {
		return d.spec.Label(key)
	}
	return strings.TrimPrefix(key, d.prefix)
}

// typed converts an erased value; ok is false for a wrong type.
func (d *TypedDescriptor[V, M]) typed(m proto.Message) (V, bool) {
	v, ok := m.(V)
	return v, ok
}

func (d *TypedDescriptor[V, M]) wrongType(key string, m proto.Message) error {
	return fmt.Errorf("%s: %w: %s", key, ErrWrongType, d.typeMismatch(m))
}

func (d *TypedDescriptor[V, M]) typeMismatch(m proto.Message) string {
	got := "nil"
	if m != nil {
		got = string(m.ProtoReflect().Descriptor().FullName())
	}
	return fmt.Sprintf("got %s, descriptor %s takes %s", got, d.spec.Name, d.valueType.Descriptor().FullName())
}

func (d *TypedDescriptor[V, M]) Dependencies(key string, value proto.Message) []Dependency {
	v, ok := d.typed(value)
	if !ok || d.spec.Dependencies == nil {
		return nil
	}
	return d.spec.Dependencies(key, v)
}

func (d *TypedDescriptor[V, M]) Derived(key string, value proto.Message) []Derived {
	v, ok := d.typed(value)
	if !ok || d.spec.Derived == nil {
		return nil
	}
	return d.spec.Derived(key, v)
}

func (d *TypedDescriptor[V, M]) BaseOf(key string) string {
	if d.spec.BaseOf == nil {
		return ""
	}
	return d.spec.BaseOf(key)
}

func (d *TypedDescriptor[V, M]) Equivalent(key string, a, b proto.Message) bool {
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

func (d *TypedDescriptor[V, M]) NeedsRecreate(key string, oldValue, newValue proto.Message) bool {
	vo, okO := d.typed(oldValue)
	vn, okN := d.typed(newValue)
	if !okO || !okN {
		return true
	}
	return d.spec.NeedsRecreate != nil && d.spec.NeedsRecreate(key, vo, vn)
}

// Validate checks the type, then the schema, then the handler's Validator,
// and merges the invalid fields they report into one *InvalidValueError.
func (d *TypedDescriptor[V, M]) Validate(key string, value proto.Message) error {
	v, ok := d.typed(value)
	if !ok || value == nil {
		return &InvalidValueError{Key: key, Fields: []FieldError{{Field: "(message type)", Reason: d.typeMismatch(value)}}, Err: ErrWrongType}
	}
	var merged *InvalidValueError
	for _, check := range []func(string, V) error{d.spec.Validate, d.validateByHandler} {
		if check == nil {
			continue
		}
		err := check(key, v)
		if err == nil {
			continue
		}
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
		} else {
			merged = merged.Add("(value)", "%s", err)
			if merged.Err == nil {
				merged.Err = err
			}
		}
	}
	if merged == nil {
		return nil
	}
	merged.Key = key
	return merged
}

func (d *TypedDescriptor[V, M]) validateByHandler(key string, v V) error {
	if d.validator == nil {
		return nil
	}
	return d.validator.Validate(key, v)
}

func (d *TypedDescriptor[V, M]) meta(m any) M {
	typed, _ := m.(M)
	return typed
}

func (d *TypedDescriptor[V, M]) Create(ctx context.Context, key string, value proto.Message) (any, error) {
	v, ok := d.typed(value)
	if !ok {
		return nil, d.wrongType(key, value)
	}
	m, err := d.handler.Create(ctx, key, v)
	if err != nil || d.noMeta {
		return nil, err
	}
	return m, nil
}

func (d *TypedDescriptor[V, M]) Update(ctx context.Context, key string, oldValue, newValue proto.Message, oldMetadata any) (any, error) {
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
	m, err := d.updater.Update(ctx, key, vo, vn, d.meta(oldMetadata))
	if err != nil || d.noMeta {
		return nil, err
	}
	return m, nil
}

func (d *TypedDescriptor[V, M]) Delete(ctx context.Context, key string, value proto.Message, metadata any) error {
	v, ok := d.typed(value)
	if !ok {
		return d.wrongType(key, value)
	}
	err := d.handler.Delete(ctx, key, v, d.meta(metadata))
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

func (d *TypedDescriptor[V, M]) Retrieve(ctx context.Context, correlate []Item[proto.Message, any]) ([]Item[proto.Message, any], error) {
	if d.retriever == nil {
		return nil, fmt.Errorf("descriptor %s has no Retrieve", d.spec.Name)
	}
	typed := make([]Item[V, M], 0, len(correlate))
	for _, it := range correlate {
		if v, ok := d.typed(it.Value); ok {
			typed = append(typed, Item[V, M]{Key: it.Key, Value: v, Metadata: d.meta(it.Metadata), Origin: it.Origin})
		}
	}
	got, err := d.retriever.Retrieve(ctx, typed)
	if err != nil {
		return nil, err
	}
	out := make([]Item[proto.Message, any], len(got))
	for i, it := range got {
		out[i] = Item[proto.Message, any]{Key: it.Key, Value: it.Value, Metadata: it.Metadata, Origin: it.Origin}
	}
	return out, nil
}

func (d *TypedDescriptor[V, M]) IsRetriable(err error) bool {
	if d.spec.IsRetriable != nil {
		return d.spec.IsRetriable(err)
	}
	return IsRetriable(err)
}

func (d *TypedDescriptor[V, M]) SetMetadata(label string, metadata any) {
	if !d.spec.WithMetadata {
		return
	}
	if m, ok := metadata.(M); ok {
		d.metadata.put(label, m)
		return
	}
	d.metadata.remove(label)
}

func (d *TypedDescriptor[V, M]) DeleteMetadata(label string) {
	if d.spec.WithMetadata {
		d.metadata.remove(label)
	}
}
