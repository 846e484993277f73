package main

import (
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	// The shipped models: each registers its schema (kv.RegisterSchema)
	// when linked. TestLocalModelsComplete fails if a package of
	// generated/linux or generated/vpp is missing here.
	_ "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/linux/nftables/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/abf/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/acl/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/dns/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipfix/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipsec/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/nat/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/punt/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/stn/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/wireguard/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

// localModels are the models kvctl is built with (Linux and VPP), as
// schema descriptors (kv.SchemaDescriptors: generated from their schema,
// over a handler that touches nothing): they decode and validate values
// as the agent does before it applies them. A key resolves as in the
// agent's scheduler (the longest key prefix first, the key parsed by its
// model's template), so a key that no model handles is refused with the
// agent's own error (*nb.UnknownKeyError), and Validate is the
// descriptor's, the schema's checks the scheduler runs (a value they
// refuse is INVALID there). What a plugin checks beyond its schema (the
// Linux plugin's namespace allow-list, say) is the running agent's alone.
type localModels struct {
	ds []kv.Descriptor // longest key prefix first
}

var _ nb.Models = (*localModels)(nil)

// localModelPrefixes are the model names kvctl takes from the linked
// schemas.
var localModelPrefixes = []string{"linux.", "vpp."}

// newLocalModels builds the descriptors of the models kvctl is built
// with.
func newLocalModels() (*localModels, error) {
	ds, err := kv.SchemaDescriptors(localModelPrefixes...)
	slices.SortStableFunc(ds, func(a, b kv.Descriptor) int { return len(b.KeyPrefix()) - len(a.KeyPrefix()) })
	return &localModels{ds: ds}, err
}

// descriptor returns the descriptor of key, or nil.
func (m *localModels) descriptor(key string) kv.Descriptor {
	for _, d := range m.ds {
		if len(key) >= len(d.KeyPrefix()) && key[:len(d.KeyPrefix())] == d.KeyPrefix() && d.IsKey(key) {
			return d
		}
	}
	return nil
}

// MessageType returns the message type of key's values.
func (m *localModels) MessageType(key string) (protoreflect.MessageType, bool) {
	d := m.descriptor(key)
	if d == nil {
		return nil, false
	}
	return d.ValueType(), true
}

// validate checks the value of key as the agent's scheduler does.
func (m *localModels) validate(key string, v proto.Message) error {
	d := m.descriptor(key)
	if d == nil {
		return &nb.UnknownKeyError{Key: key}
	}
	return d.Validate(key, v)
}
