package kv

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"google.golang.org/protobuf/proto"
)

// KeyedHandler is a Handler that receives keys already parsed into K, the
// typed key of its model (generated), so that a handler never parses key
// strings: the fields of a derived value's key (the interface name and the
// address of an interface address) reach it typed.
type KeyedHandler[K any, V proto.Message, M any] interface {
	Create(ctx context.Context, key K, value V) (M, error)
	Delete(ctx context.Context, key K, value V, metadata M) error
}

// KeyedUpdater is the optional Update capability of a KeyedHandler.
type KeyedUpdater[K any, V proto.Message, M any] interface {
	Update(ctx context.Context, key K, oldValue, newValue V, oldMetadata M) (M, error)
}

// KeyedValidator is the optional Validate capability of a KeyedHandler.
type KeyedValidator[K any, V proto.Message] interface {
	Validate(key K, value V) error
}

// NewKeyedDescriptor builds a descriptor from a spec, a key parser and a
// keyed handler. Its optional capabilities (KeyedUpdater, Retriever,
// KeyedValidator) are discovered here. A key that does not parse never
// reaches the handler: with spec.IsKey nil, the parser is what recognises
// the descriptor's keys (an unparsable key is not one of them); with an
// IsKey of its own, validation fails first, naming the key.
func NewKeyedDescriptor[K any, V proto.Message, M any](spec Spec[V, M], parse func(string) (K, bool), h KeyedHandler[K, V, M]) (*TypedDescriptor[V, M], error) {
	if parse == nil {
		return nil, fmt.Errorf("kv.NewKeyedDescriptor %s: nil key parser", spec.Name)
	}
	if h == nil || (reflect.ValueOf(h).Kind() == reflect.Pointer && reflect.ValueOf(h).IsNil()) {
		return nil, fmt.Errorf("kv.NewKeyedDescriptor %s: handler is nil", spec.Name)
	}
	a := &keyedAdapter[K, V, M]{h: h, parse: parse}
	a.updater, _ = h.(KeyedUpdater[K, V, M])
	a.validator, _ = h.(KeyedValidator[K, V])
	schema := spec.Validate
	if spec.IsKey == nil {
		// The parser recognises the keys: a key that reaches the
		// descriptor parses, and validation need not parse it again.
		spec.IsKey = func(key string) bool {
			_, ok := parse(key)
			return ok
		}
	} else {
		spec.Validate = func(key string, v V) error {
			// The schema first: it names the field that makes the key
			// wrong (an address out of format), where the parse could
			// only say that the key is.
			if schema != nil {
				if err := schema(key, v); err != nil {
					return err
				}
			}
			if _, ok := parse(key); !ok {
				return Invalid("(key)", "%q is not a key of %s", key, spec.Name)
			}
			return nil
		}
	}
	d, err := NewDescriptor[V, M](spec, a)
	if err != nil {
		return nil, err
	}
	// The adapter implements every optional method; keep only those the
	// keyed handler has.
	if a.updater == nil {
		d.updater = nil
	}
	d.retriever, _ = h.(Retriever[V, M])
	if a.validator == nil {
		d.validator = nil
	}
	return d, nil
}

// errKeyParse is returned for a key that does not parse: validation stops
// such keys before any handler call, so it means a bug.
var errKeyParse = errors.New("key does not parse")

type keyedAdapter[K any, V proto.Message, M any] struct {
	h         KeyedHandler[K, V, M]
	updater   KeyedUpdater[K, V, M]
	validator KeyedValidator[K, V]
	parse     func(string) (K, bool)
}

func (a *keyedAdapter[K, V, M]) key(s string) (K, error) {
	k, ok := a.parse(s)
	if !ok {
		return k, NonRetriable(fmt.Errorf("%s: %w", s, errKeyParse))
	}
	return k, nil
}

func (a *keyedAdapter[K, V, M]) Create(ctx context.Context, key string, v V) (M, error) {
	k, err := a.key(key)
	if err != nil {
		var zero M
		return zero, err
	}
	return a.h.Create(ctx, k, v)
}

func (a *keyedAdapter[K, V, M]) Delete(ctx context.Context, key string, v V, m M) error {
	k, err := a.key(key)
	if err != nil {
		return err
	}
	return a.h.Delete(ctx, k, v, m)
}

func (a *keyedAdapter[K, V, M]) Update(ctx context.Context, key string, old, v V, m M) (M, error) {
	k, err := a.key(key)
	if err != nil {
		var zero M
		return zero, err
	}
	return a.updater.Update(ctx, k, old, v, m)
}

func (a *keyedAdapter[K, V, M]) Validate(key string, v V) error {
	k, err := a.key(key)
	if err != nil {
		return Invalid("(key)", "%q does not parse", key)
	}
	return a.validator.Validate(k, v)
}
