package nb

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// Change is one key's new value from a source; a nil Value deletes the key
// (from what the source intends).
type Change struct {
	Key   string
	Value proto.Message
}

// Update is one batch of changes from a source, applied as one
// transaction.
type Update struct {
	// Resync says that Changes are the source's whole state: its keys
	// that are not among them are deleted. A source's first update (its
	// initial load, or its state after a lost connection) is a resync.
	Resync bool
	// Changes are the keys that changed, or with Resync all of them.
	Changes []Change
	// Description says where the update comes from, for logs and the
	// history ("file /etc/agent/config.yaml", "etcd revision 42").
	Description string
}

// Sink receives the updates of one source.
type Sink interface {
	// Apply applies an update and returns once it is committed; its
	// error says why the update was not applied (the previous state of
	// the source stays).
	Apply(ctx context.Context, u Update) error
	// Problem reports a trouble of the source that is not an update: a
	// file that does not parse (naming file, line and key), a lost
	// connection. nil clears it. The last one is shown in the source's
	// state.
	Problem(err error)
}

// Source is a northbound source of intended configuration.
type Source interface {
	// Name identifies the source: the owner of the keys it sets.
	Name() string
	// Run feeds the source's updates to sink until ctx ends, its first
	// update a resync (the initial load). It returns nil when ctx ends,
	// or an error that stops the source for good.
	Run(ctx context.Context, sink Sink) error
}

// Models resolves keys to the message types of their models, so that a
// source decodes values without code of its own per model.
type Models interface {
	// MessageType returns the message type of key's values; ok is false
	// for a key that no model handles.
	MessageType(key string) (mt protoreflect.MessageType, ok bool)
}

// SchedulerModels resolves keys through the descriptors registered with s.
func SchedulerModels(s *scheduler.Scheduler) Models { return schedulerModels{s} }

type schedulerModels struct{ s *scheduler.Scheduler }

func (m schedulerModels) MessageType(key string) (protoreflect.MessageType, bool) {
	d, ok := m.s.DescriptorForKey(key)
	if !ok {
		return nil, false
	}
	return d.ValueType(), true
}

// Encoding is how a value is written.
type Encoding uint8

// The encodings of values.
const (
	// JSON is the protojson form of the key's model.
	JSON Encoding = iota
	// Binary is the protobuf wire form.
	Binary
)

// UnknownKeyError is the error of a key that no model handles.
type UnknownKeyError struct{ Key string }

func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("key %q: no model handles it (unknown key)", e.Key)
}

// Decode decodes the value of key, in encoding enc, as a message of key's
// model. Its errors name the key (and, for JSON, what protojson found
// wrong); a key that no model handles is an *UnknownKeyError.
func Decode(models Models, key string, data []byte, enc Encoding) (proto.Message, error) {
	mt, ok := models.MessageType(key)
	if !ok {
		return nil, &UnknownKeyError{Key: key}
	}
	m := mt.New().Interface()
	var err error
	switch enc {
	case Binary:
		err = proto.Unmarshal(data, m)
	default:
		err = protojson.Unmarshal(data, m)
	}
	if err != nil {
		return nil, fmt.Errorf("key %q: the value is not a %s: %w", key, mt.Descriptor().FullName(), err)
	}
	return m, nil
}
