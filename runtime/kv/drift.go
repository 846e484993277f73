package kv

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// DriftPolicy says what the scheduler does with a value of ours that the
// southbound changed or lost behind its back (drift), once it notices.
type DriftPolicy uint8

// The drift policies.
const (
	// DriftRepair applies the value again (the default): created again
	// when it is gone, updated back when its contents differ. Repairs of a
	// value that something keeps undoing back off exponentially.
	DriftRepair DriftPolicy = iota
	// DriftReport leaves the southbound as it is: the value is flagged
	// DRIFTED (other contents) or MISSING (gone), with what differs, until
	// a resync or a new intent brings it back.
	DriftReport
	// DriftAdopt takes the southbound's contents as the new intended and
	// applied value (reported in the history and the log). A value that
	// is gone stays MISSING, not created again: its absence is adopted
	// until a resync or a new intent.
	DriftAdopt
)

var driftPolicyNames = [...]string{"repair", "report", "adopt"}

func (p DriftPolicy) String() string {
	if int(p) < len(driftPolicyNames) {
		return driftPolicyNames[p]
	}
	return fmt.Sprintf("DriftPolicy(%d)", uint8(p))
}

// ParseDriftPolicy returns the policy named name (repair, report, adopt).
func ParseDriftPolicy(name string) (DriftPolicy, error) {
	for i, n := range driftPolicyNames {
		if n == name {
			return DriftPolicy(i), nil
		}
	}
	return 0, fmt.Errorf("unknown drift policy %q (want one of %s)", name, strings.Join(driftPolicyNames[:], ", "))
}

// FieldDiff is one field that differs between two values of a key: its
// path (proto names joined by dots) and its text in each (empty: not set).
// Sensitive fields show RedactedText.
type FieldDiff struct {
	Path        string
	Want, Found string
}

func (d FieldDiff) String() string {
	return fmt.Sprintf("%s: %s -> %s", d.Path, orUnset(d.Want), orUnset(d.Found))
}

func orUnset(s string) string {
	if s == "" {
		return "(unset)"
	}
	return s
}

// Diff lists, field by field, how found differs from want (two values of
// one message type), by protobuf reflection. Singular message fields are
// compared field by field; lists and maps as a whole. equivalent, when
// not nil, is the descriptor's comparison: a field is listed only when
// taking found's version of it into want makes a value that is not
// equivalent to want (a field the comparison leaves out is not a
// difference). The texts are those of the redacted values (Redact): a
// sensitive field that differs is listed, its contents are not shown.
func Diff(want, found proto.Message, equivalent func(a, b proto.Message) bool) []FieldDiff {
	if want == nil || found == nil || !want.ProtoReflect().IsValid() || !found.ProtoReflect().IsValid() ||
		want.ProtoReflect().Descriptor().FullName() != found.ProtoReflect().Descriptor().FullName() {
		return nil
	}
	var out []FieldDiff
	shownW, shownF := Redact(want).ProtoReflect(), Redact(found).ProtoReflect()
	diffMsg(want.ProtoReflect(), found.ProtoReflect(), shownW, shownF, "", &out)
	if equivalent == nil || len(out) == 0 {
		return out
	}
	kept := out[:0]
	for _, d := range out {
		probe := proto.Clone(want)
		if copyPath(probe.ProtoReflect(), found.ProtoReflect(), strings.Split(d.Path, ".")) && !equivalent(want, probe) {
			kept = append(kept, d)
		}
	}
	return kept
}

func diffMsg(w, f, sw, sf protoreflect.Message, prefix string, out *[]FieldDiff) {
	fields := w.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		path := prefix + string(fd.Name())
		hw, hf := w.Has(fd), f.Has(fd)
		if !hw && !hf {
			continue
		}
		if hw && hf && w.Get(fd).Equal(f.Get(fd)) {
			continue
		}
		if hw && hf && fd.Message() != nil && !fd.IsList() && !fd.IsMap() {
			diffMsg(w.Get(fd).Message(), f.Get(fd).Message(), sw.Get(fd).Message(), sf.Get(fd).Message(), path+".", out)
			continue
		}
		*out = append(*out, FieldDiff{Path: path, Want: fieldText(sw, fd), Found: fieldText(sf, fd)})
	}
}

// copyPath sets the field at path of dst to src's (clearing it when src
// has none); false when the path does not fit.
func copyPath(dst, src protoreflect.Message, path []string) bool {
	fd := dst.Descriptor().Fields().ByName(protoreflect.Name(path[0]))
	if fd == nil {
		return false
	}
	if len(path) > 1 {
		if fd.Message() == nil || fd.IsList() || fd.IsMap() || !src.Has(fd) {
			return false
		}
		return copyPath(dst.Mutable(fd).Message(), src.Get(fd).Message(), path[1:])
	}
	if !src.Has(fd) {
		dst.Clear(fd)
		return true
	}
	dst.Set(fd, src.Get(fd))
	return true
}

// fieldText writes a field of m as text ("" when not set).
func fieldText(m protoreflect.Message, fd protoreflect.FieldDescriptor) string {
	if !m.Has(fd) {
		return ""
	}
	v := m.Get(fd)
	switch {
	case fd.IsList():
		l := v.List()
		parts := make([]string, l.Len())
		for i := range parts {
			parts[i] = valueText(fd, l.Get(i))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case fd.IsMap():
		var parts []string
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			parts = append(parts, k.String()+": "+valueText(fd.MapValue(), mv))
			return true
		})
		slices.Sort(parts)
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return valueText(fd, v)
}

func valueText(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return fmt.Sprint(v.Enum())
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return "{" + strings.TrimSpace(prototext.MarshalOptions{}.Format(v.Message().Interface())) + "}"
	case protoreflect.StringKind:
		return fmt.Sprintf("%q", v.String())
	case protoreflect.BytesKind:
		return fmt.Sprintf("%q", v.Bytes())
	}
	return v.String()
}
