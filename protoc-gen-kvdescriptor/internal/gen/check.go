package gen

import (
	"slices"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
)

// checkOverlaps reports two models whose key spaces overlap: a key that
// both could parse would be ambiguous at run time.
func checkOverlaps(models []*model) []error {
	var errs []error
	for i, a := range models {
		for _, b := range models[i+1:] {
			pa, pb := a.key.parsed.Prefix(), b.key.parsed.Prefix()
			if !strings.HasPrefix(pa, pb) && !strings.HasPrefix(pb, pa) {
				continue
			}
			if example, ok := a.key.parsed.Overlaps(b.key.parsed); ok {
				errs = append(errs, errorf(b.keyPos(), "the key %q of %s overlaps the key %q of %s (%s): both match %q",
					b.key.text, b.name, a.key.text, a.name, a.keyPos().String(), example))
			}
		}
	}
	return errs
}

func (m *model) keyPos() position {
	if m.base != nil {
		return locate(m.file, optionPath(m.field.Location.Path, 8, 3, 1), "option (kvdescriptor.v1.field).derive.key")
	}
	return locate(m.file, optionPath(m.msg.Location.Path, 7, 1), "option (kvdescriptor.v1.model).key")
}

// checkCycles reports dependencies that no set of values could ever
// satisfy. Cycles between values of models (a veth pair, each end
// depending on the other) are legal: the scheduler creates them as a unit.
// What is not: a value depending on its own key, and a base depending on
// one of its own derived values, which exists only once the base does.
func checkCycles(models []*model) []error {
	var errs []error
	for _, m := range models {
		for _, d := range m.deps {
			if d.key == nil {
				continue
			}
			if sameTemplate(d.key, m.key, nil) {
				errs = append(errs, errorf(d.pos, "dependency %q is the value's own key %q: a value cannot wait for itself", d.label, d.key.text))
				continue
			}
			for _, x := range m.derived {
				if sameTemplate(d.key, x.key, func(h *placeholder) bool { return !h.elem }) {
					errs = append(errs, errorf(d.pos, "dependency %q is on a value derived from this very value (%s, key %q), which exists only once this value does", d.label, x.name, x.key.text))
				}
			}
		}
		if m.base != nil {
			for _, d := range m.deps {
				if d.key != nil && sameTemplate(d.key, m.base.key, func(*placeholder) bool { return true }) {
					errs = append(errs, errorf(d.pos, "dependency %q of a derived value is on its own base %q, which it lives and dies with anyway", d.label, d.key.text))
				}
			}
		}
	}
	return errs
}

// sameTemplate reports whether dep builds keys of t from the same fields:
// the same literals, and the same field paths for the placeholders of t
// that match (nil: all).
func sameTemplate(dep, t *keyTemplate, match func(*placeholder) bool) bool {
	if !slices.Equal(dep.literals, t.literals) || len(dep.holders) != len(t.holders) {
		return false
	}
	for i, h := range t.holders {
		if match != nil && !match(h) {
			continue
		}
		if dep.holders[i].path != h.path {
			return false
		}
	}
	return true
}

// checkCompare reports comparison hints that do not fit their fields.
func checkCompare(file *protogen.File, msg *protogen.Message) []error {
	var errs []error
	for _, f := range msg.Fields {
		if d := fieldOptions(f).GetCompare().GetZeroEquals(); d != "" {
			if why := checkZeroEquals(f, d); why != "" {
				errs = append(errs, errorf(locate(file, optionPath(f.Location.Path, 8, 5, 2), "option (kvdescriptor.v1.field).compare.zero_equals"), "%s: %s", f.Desc.FullName(), why))
			}
		}
		v := validateOf(f)
		pos := locate(file, optionPath(f.Location.Path, 8, 6), "option (kvdescriptor.v1.field).validate")
		for _, sub := range []string{v.GetAtMostOne(), v.GetUniqueBy()} {
			if sub == "" {
				continue
			}
			if !f.Desc.IsList() || f.Message == nil {
				errs = append(errs, errorf(pos, "%s: at_most_one and unique_by apply to repeated message fields", f.Desc.FullName()))
				break
			}
			if goFieldName(f.Message, sub) == sub && !hasField(f.Message, sub) {
				errs = append(errs, errorf(pos, "%s: %q is not a field of %s", f.Desc.FullName(), sub, f.Message.Desc.FullName()))
			}
		}
	}
	return errs
}

func hasField(msg *protogen.Message, name string) bool {
	for _, f := range msg.Fields {
		if string(f.Desc.Name()) == name {
			return true
		}
	}
	return false
}
