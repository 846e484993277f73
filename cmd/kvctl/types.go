package main

import (
	"fmt"
	"sync"

	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// types resolves the message types of values: first among those compiled
// into kvctl, then among those of the agent's schema (the .proto files of
// its models, ModelsResponse.schema), so that kvctl reads and writes the
// values of any model the agent serves. The schema is fetched once, when
// a type is first missing: commands on models kvctl knows never ask for
// it. A types is a protojson and proto resolver.
type types struct {
	// fetch asks the agent for its schema.
	fetch func() (*descriptorpb.FileDescriptorSet, error)

	once  sync.Once
	agent *protoregistry.Types
	err   error
}

// load fetches the agent's schema and makes its types, once.
func (t *types) load() (*protoregistry.Types, error) {
	t.once.Do(func() {
		set, err := t.fetch()
		if err != nil {
			t.err = fmt.Errorf("reading the agent's schema: %w", err)
			return
		}
		t.agent, t.err = dynamicTypes(set)
	})
	return t.agent, t.err
}

// dynamicTypes returns the message, enum and extension types of the files
// of set, as dynamicpb makes them.
func dynamicTypes(set *descriptorpb.FileDescriptorSet) (*protoregistry.Types, error) {
	files, err := protodesc.NewFiles(set)
	if err != nil {
		return nil, fmt.Errorf("the agent's schema: %w", err)
	}
	reg := &protoregistry.Types{}
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		err = registerTypes(reg, fd.Messages(), fd.Enums(), fd.Extensions())
		return err == nil
	})
	if err != nil {
		return nil, fmt.Errorf("the agent's schema: %w", err)
	}
	return reg, nil
}

// registerTypes registers the messages (and the types nested in them),
// enums and extensions with reg.
func registerTypes(reg *protoregistry.Types, msgs protoreflect.MessageDescriptors, enums protoreflect.EnumDescriptors, exts protoreflect.ExtensionDescriptors) error {
	for i := range enums.Len() {
		if err := reg.RegisterEnum(dynamicpb.NewEnumType(enums.Get(i))); err != nil {
			return err
		}
	}
	for i := range exts.Len() {
		if err := reg.RegisterExtension(dynamicpb.NewExtensionType(exts.Get(i))); err != nil {
			return err
		}
	}
	for i := range msgs.Len() {
		md := msgs.Get(i)
		if md.IsMapEntry() {
			continue
		}
		if err := reg.RegisterMessage(dynamicpb.NewMessageType(md)); err != nil {
			return err
		}
		if err := registerTypes(reg, md.Messages(), md.Enums(), md.Extensions()); err != nil {
			return err
		}
	}
	return nil
}

// FindMessageByName returns the compiled message type of name, or the
// agent's.
func (t *types) FindMessageByName(name protoreflect.FullName) (protoreflect.MessageType, error) {
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(name); err == nil {
		return mt, nil
	}
	agent, err := t.load()
	if err != nil {
		return nil, err
	}
	return agent.FindMessageByName(name)
}

// FindMessageByURL returns the compiled message type of a type URL, or
// the agent's.
func (t *types) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	if mt, err := protoregistry.GlobalTypes.FindMessageByURL(url); err == nil {
		return mt, nil
	}
	agent, err := t.load()
	if err != nil {
		return nil, err
	}
	return agent.FindMessageByURL(url)
}

// FindExtensionByName returns the compiled extension type of field, or
// the agent's.
func (t *types) FindExtensionByName(field protoreflect.FullName) (protoreflect.ExtensionType, error) {
	if xt, err := protoregistry.GlobalTypes.FindExtensionByName(field); err == nil {
		return xt, nil
	}
	agent, err := t.load()
	if err != nil {
		return nil, err
	}
	return agent.FindExtensionByName(field)
}

// FindExtensionByNumber returns the compiled extension type of message's
// field number, or the agent's.
func (t *types) FindExtensionByNumber(message protoreflect.FullName, field protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	if xt, err := protoregistry.GlobalTypes.FindExtensionByNumber(message, field); err == nil {
		return xt, nil
	}
	agent, err := t.load()
	if err != nil {
		return nil, err
	}
	return agent.FindExtensionByNumber(message, field)
}
