package kv

import (
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// RedactedText replaces the text of a sensitive field (option
// (kvdescriptor.v1.field).sensitive) wherever a value is shown: a string
// field holds it as it is, a bytes field as its bytes.
const RedactedText = "REDACTED"

// Redactor is implemented by the messages that have sensitive fields: the
// generator emits their Redacted method.
type Redactor interface {
	// Redacted returns the message with its sensitive fields that are
	// set replaced by RedactedText: a copy when one is set, the message
	// itself otherwise. The message is never modified.
	Redacted() proto.Message
}

// Redact returns m as it may be shown (logged, recorded in a history,
// served by an API): m itself, or, for a message with sensitive fields
// set, a copy of it with those fields redacted (Redactor). Redact(nil) is
// nil. Comparison and southbound calls use the value itself, never this.
func Redact(m proto.Message) proto.Message {
	if r, ok := m.(Redactor); ok {
		return r.Redacted()
	}
	return m
}

// RedactPaths is the body of a generated Redacted method: it returns m,
// or a copy of m with the non-empty string or bytes fields at paths
// replaced by RedactedText. A path names fields by their proto names,
// separated by dots ("wireguard.private_key"); a path through a repeated
// message field reaches the field in each element. Fields that are not
// there (an unset message, a path that does not fit m's type) are left
// alone.
func RedactPaths(m proto.Message, paths ...string) proto.Message {
	if m == nil || !m.ProtoReflect().IsValid() {
		return m
	}
	found := false
	for _, p := range paths {
		if redactPath(m.ProtoReflect(), strings.Split(p, "."), false) {
			found = true
			break
		}
	}
	if !found {
		return m
	}
	c := proto.Clone(m)
	for _, p := range paths {
		redactPath(c.ProtoReflect(), strings.Split(p, "."), true)
	}
	return c
}

// redactPath reports whether msg has a non-empty field at path, and with
// write replaces each one by RedactedText.
func redactPath(msg protoreflect.Message, path []string, write bool) bool {
	fd := msg.Descriptor().Fields().ByName(protoreflect.Name(path[0]))
	if fd == nil || fd.IsMap() || !msg.Has(fd) {
		return false
	}
	if len(path) > 1 {
		if fd.Message() == nil {
			return false
		}
		if !fd.IsList() {
			return redactPath(msg.Get(fd).Message(), path[1:], write)
		}
		found := false
		list := msg.Get(fd).List()
		for i := 0; i < list.Len() && (write || !found); i++ {
			found = redactPath(list.Get(i).Message(), path[1:], write) || found
		}
		return found
	}
	var redacted protoreflect.Value
	switch fd.Kind() {
	case protoreflect.StringKind:
		redacted = protoreflect.ValueOfString(RedactedText)
	case protoreflect.BytesKind:
		redacted = protoreflect.ValueOfBytes([]byte(RedactedText))
	default:
		return false
	}
	if !write {
		return true // Has: a non-empty scalar, or a non-empty list
	}
	if fd.IsList() {
		list := msg.Mutable(fd).List()
		for i := 0; i < list.Len(); i++ {
			list.Set(i, redacted)
		}
		return true
	}
	msg.Set(fd, redacted)
	return true
}

// Unredact returns m with the sensitive fields that read RedactedText
// given back their value in current (the value m replaces), so that a
// value read back redacted (from the API, a dump) and sent again keeps its
// secrets: m itself when there is nothing to give back, else a copy.
// Elements of repeated message fields are matched by their index. A
// field that current does not hold stays RedactedText (and is refused by
// validation, as any value that is not a key).
func Unredact(m, current proto.Message) proto.Message {
	if _, ok := m.(Redactor); !ok || current == nil || !current.ProtoReflect().IsValid() ||
		m.ProtoReflect().Descriptor() != current.ProtoReflect().Descriptor() {
		return m
	}
	shown := Redact(current)
	if shown == current {
		return m // current has no secret to give
	}
	c := proto.Clone(m)
	restore(c.ProtoReflect(), shown.ProtoReflect(), current.ProtoReflect())
	return c
}

// restore sets each field of m that reads RedactedText where shown (the
// redacted current value) does too to its value in cur.
func restore(m, shown, cur protoreflect.Message) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.IsMap() || !m.Has(fd) || !shown.Has(fd) {
			continue
		}
		switch {
		case fd.Message() != nil && !fd.IsList():
			restore(m.Mutable(fd).Message(), shown.Get(fd).Message(), cur.Get(fd).Message())
		case fd.Message() != nil:
			l, sl, cl := m.Mutable(fd).List(), shown.Get(fd).List(), cur.Get(fd).List()
			for j := 0; j < l.Len() && j < sl.Len(); j++ {
				restore(l.Get(j).Message(), sl.Get(j).Message(), cl.Get(j).Message())
			}
		case fd.IsList():
			l, sl, cl := m.Mutable(fd).List(), shown.Get(fd).List(), cur.Get(fd).List()
			for j := 0; j < l.Len() && j < sl.Len(); j++ {
				if isRedacted(l.Get(j)) && isRedacted(sl.Get(j)) {
					l.Set(j, cl.Get(j))
				}
			}
		case isRedacted(m.Get(fd)) && isRedacted(shown.Get(fd)):
			m.Set(fd, cur.Get(fd))
		}
	}
}

func isRedacted(v protoreflect.Value) bool {
	switch x := v.Interface().(type) {
	case string:
		return x == RedactedText
	case []byte:
		return string(x) == RedactedText
	}
	return false
}
