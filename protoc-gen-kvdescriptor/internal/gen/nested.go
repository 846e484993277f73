package gen

import (
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
)

// Field options at depth.
//
// The options of the fields of a nested message (a singular message field
// of a value, at any depth) apply there as they do on the value's own
// fields: format, compare hints, validation (checked only while the nested
// message is set; errors name the path, "vxlan.local_ip") and recreate.
// What cannot apply at depth is a generator error, never ignored: ref and
// derive on a nested message's fields, and any option on the fields of
// the elements of a repeated or map message field that derives nothing,
// but ref on the scalar fields of the elements of a model's own repeated
// message field (elemRefs): one dependency per element with a label.

// nestedMsg reports whether f is a nested message whose options apply at
// depth: a singular message field that derives nothing.
func nestedMsg(f *protogen.Field) bool {
	return f.Message != nil && !f.Desc.IsList() && !f.Desc.IsMap() && fieldOptions(f).GetDerive() == nil
}

// hasOptions reports whether a field of msg, or of the messages nested in
// it at any depth, carries a field option. on lists the messages on the
// path, so that a recursive message ends the walk.
func hasOptions(msg *protogen.Message, on []*protogen.Message) bool {
	for _, o := range on {
		if o == msg {
			return false
		}
	}
	for _, f := range msg.Fields {
		if proto.Size(fieldOptions(f)) > 0 {
			return true
		}
		if f.Message != nil && hasOptions(f.Message, append(on, msg)) {
			return true
		}
	}
	return false
}

// withOptions reports whether f is a nested message with options at
// depth: its comparison and validation are then generated field by field.
func withOptions(f *protogen.Field) bool {
	return nestedMsg(f) && hasOptions(f.Message, nil)
}

// elemRefs reports whether f, a field of a model's message, is a repeated
// message field that derives nothing: the refs on the fields of its
// elements apply, one dependency per element.
func elemRefs(f *protogen.Field) bool {
	return f.Message != nil && f.Desc.IsList() && fieldOptions(f).GetDerive() == nil
}

// checkNested reports the field options of the messages nested in msg (the
// value message of model) that cannot apply where they are, and checks
// that the others fit their fields (checkFields). With elemRefs, the refs
// on the elements of msg's own repeated message fields apply (a base
// model's; not a derived value's element's).
func checkNested(model string, msg *protogen.Message, withElemRefs bool) []error {
	var errs []error
	var walk func(msg *protogen.Message, path string, on []*protogen.Message)
	walk = func(msg *protogen.Message, path string, on []*protogen.Message) {
		on = append(on, msg)
		for _, f := range msg.Fields {
			if f.Message == nil || fieldOptions(f).GetDerive() != nil {
				continue
			}
			p := joinPath(path, string(f.Desc.Name()))
			recursive := false
			for _, o := range on {
				recursive = recursive || o == f.Message
			}
			switch {
			case recursive:
				if hasOptions(f.Message, nil) {
					errs = append(errs, rejectAll(f.Message, model, p+".", "its message is recursive, and options apply at a bounded depth only")...)
				}
			case !nestedMsg(f):
				// Elements of a repeated or map message field: compared
				// with proto.Equal, never validated one by one.
				elem := f.Message
				if f.Desc.IsMap() {
					elem = f.Message.Fields[1].Message
					if elem == nil {
						continue
					}
				}
				why := "options do not apply to the fields of the elements of a repeated or map field (derive the field to give its elements a model of their own)"
				if withElemRefs && path == "" && elemRefs(f) {
					why = "of the options, only ref applies to the fields of the elements of a repeated message field (derive the field to give its elements a model of their own)"
					errs = append(errs, rejectAll(elem, model, p+"[].", why, "ref")...)
					for _, ef := range elem.Fields {
						if ef.Message != nil {
							errs = append(errs, rejectAllDeep(ef.Message, model, p+"[]."+string(ef.Desc.Name())+".", why, []*protogen.Message{elem})...)
						}
					}
					continue
				}
				errs = append(errs, rejectAllDeep(elem, model, p+"[].", why, nil)...)
			default:
				errs = append(errs, rejectAt(f.Message, model, p+".")...)
				errs = append(errs, checkFields(f.Message)...)
				walk(f.Message, p, on)
			}
		}
	}
	walk(msg, "", nil)
	return errs
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// rejectAt reports the options of the fields of msg, nested in a value at
// prefix, that apply to a value's own fields only: ref and derive.
func rejectAt(msg *protogen.Message, model, prefix string) []error {
	var errs []error
	for _, f := range msg.Fields {
		o := fieldOptions(f)
		p := prefix + string(f.Desc.Name())
		if o.GetRef() != nil {
			errs = append(errs, errorf(fieldOptionPos(f, "ref", 2), "%s (%s of %s): ref applies to the fields of a model's message or of a derived value's element, not to the fields of a nested message", f.Desc.FullName(), p, model))
		}
		if o.GetDerive() != nil {
			errs = append(errs, errorf(fieldOptionPos(f, "derive", 3), "%s (%s of %s): derive applies to the fields of a model's message, not to the fields of a nested message", f.Desc.FullName(), p, model))
		}
	}
	return errs
}

// rejectAll reports every option of the fields of msg at prefix, for why,
// but those named in keep.
func rejectAll(msg *protogen.Message, model, prefix, why string, keep ...string) []error {
	var errs []error
	for _, f := range msg.Fields {
		o := fieldOptions(f)
		for _, opt := range []struct {
			name string
			num  int32
			set  bool
		}{
			{"format", 1, o.GetFormat() != 0},
			{"ref", 2, o.GetRef() != nil},
			{"derive", 3, o.GetDerive() != nil},
			{"recreate", 4, o.GetRecreate()},
			{"compare", 5, o.GetCompare() != nil},
			{"validate", 6, o.GetValidate() != nil},
			{"sensitive", 7, o.GetSensitive()},
		} {
			if opt.set && !slices.Contains(keep, opt.name) {
				errs = append(errs, errorf(fieldOptionPos(f, opt.name, opt.num), "%s (%s%s of %s): %s", f.Desc.FullName(), prefix, f.Desc.Name(), model, why))
			}
		}
	}
	return errs
}

// rejectAllDeep is rejectAll for msg and the messages nested in it.
func rejectAllDeep(msg *protogen.Message, model, prefix, why string, on []*protogen.Message) []error {
	for _, o := range on {
		if o == msg {
			return nil
		}
	}
	errs := rejectAll(msg, model, prefix, why)
	for _, f := range msg.Fields {
		if f.Message != nil {
			errs = append(errs, rejectAllDeep(f.Message, model, prefix+string(f.Desc.Name())+".", why, append(on, msg))...)
		}
	}
	return errs
}

// fieldOptionPos is the place of option what (field number num of
// FieldOptions) of field f.
func fieldOptionPos(f *protogen.Field, what string, num int32) position {
	return locate(f.Desc.ParentFile(), optionPath(f.Location.Path, 8, num), "option (kvdescriptor.v1.field)."+what)
}

// nestedEqualName is the name of the generated comparison of the nested
// message at path (Go field names from the value message).
func (e *emitter) nestedEqualName(path []*protogen.Field) string {
	var b strings.Builder
	b.WriteString(e.lid("Equal"))
	for _, f := range path {
		b.WriteString(f.GoName)
	}
	return b.String()
}

// emitNestedEqual writes the comparison of the nested message at path, and
// of the messages nested in it, one condition per line. A set and an
// unset message differ, as they do for proto.Equal.
func (e *emitter) emitNestedEqual(path []*protogen.Field) {
	f := path[len(path)-1]
	t := jen.Op("*").Qual(string(f.Message.GoIdent.GoImportPath), f.Message.GoIdent.GoName)
	conds := e.comparedConds(f.Message, path)
	var inner [][]*protogen.Field
	for _, c := range compared(f.Message) {
		if withOptions(c) {
			inner = append(inner, append(append([]*protogen.Field(nil), path...), c))
		}
	}
	result := jen.True()
	if len(conds) > 0 {
		result = jen.Add(conjunctionCode(conds))
	}
	e.doc("%s compares the %s of two values of %s.", e.nestedEqualName(path), dotted(path), e.m.name)
	nils := jen.If(jen.Id("a").Op("==").Nil().Op("||").Id("b").Op("==").Nil()).Block(jen.Return(jen.Id("a").Op("==").Id("b")))
	if fieldOptions(f).GetCompare().GetUnsetEqualsEmpty() {
		// An unset message compares as an empty one.
		empty := jen.Op("&").Qual(string(f.Message.GoIdent.GoImportPath), f.Message.GoIdent.GoName).Values()
		nils = jen.List(jen.Id("a"), jen.Id("b")).Op("=").List(jen.Qual("cmp", "Or").Call(jen.Id("a"), empty), jen.Qual("cmp", "Or").Call(jen.Id("b"), empty))
	}
	e.f.Func().Id(e.nestedEqualName(path)).Params(jen.List(jen.Id("a"), jen.Id("b")).Add(t)).Bool().Block(
		nils,
		jen.Return(result),
	)
	for _, p := range inner {
		e.emitNestedEqual(p)
	}
}

// comparedConds renders the comparison of the compared fields of msg, the
// message at path (nil: the value's), between a and b.
func (e *emitter) comparedConds(msg *protogen.Message, path []*protogen.Field) []jen.Code {
	var conds []jen.Code
	oneofs := map[*protogen.Oneof]bool{}
	for _, f := range compared(msg) {
		if o := f.Oneof; o != nil && !o.Desc.IsSynthetic() && !oneofs[o] {
			oneofs[o] = true
			conds = append(conds, jen.Qual(kvimplPkg, "SameType").Call(
				jen.Id("a").Dot("Get"+o.GoName).Call(), jen.Id("b").Dot("Get"+o.GoName).Call()))
		}
		conds = append(conds, e.fieldEqual(f, jen.Id("a"), jen.Id("b"), path))
	}
	return conds
}

// fieldEqual renders the comparison of field f of a and b (messages at
// path): by the generated comparison of a nested message with options.
func (e *emitter) fieldEqual(f *protogen.Field, a, b *jen.Statement, path []*protogen.Field) jen.Code {
	if withOptions(f) {
		name := e.nestedEqualName(append(append([]*protogen.Field(nil), path...), f))
		return jen.Id(name).Call(a.Clone().Dot("Get"+f.GoName).Call(), b.Clone().Dot("Get"+f.GoName).Call())
	}
	if follows(f) && f.Desc.ParentFile().Path() == e.m.file.Desc.Path() {
		// The generated accessor of unset_follows (follows.go).
		acc := followField{f: f}.methodName()
		return a.Clone().Dot(acc).Call().Op("==").Add(b.Clone().Dot(acc).Call())
	}
	if fieldOptions(f).GetCompare().GetZeroEquals() != "" && f.Desc.ParentFile().Path() == e.m.file.Desc.Path() {
		// The generated accessor of the default (defaults.go): the
		// message is declared in the file generated with the model.
		acc := defaultField{f: f}.methodName()
		return a.Clone().Dot(acc).Call().Op("==").Add(b.Clone().Dot(acc).Call())
	}
	return fieldEqual(f, a, b)
}

// nestedRecreate lists the fields marked recreate inside the nested
// messages of msg (not inside one marked recreate as a whole, which
// recreateFields covers), with their paths.
func nestedRecreate(msg *protogen.Message) [][]*protogen.Field {
	var out [][]*protogen.Field
	var walk func(msg *protogen.Message, path []*protogen.Field)
	walk = func(msg *protogen.Message, path []*protogen.Field) {
		for _, f := range msg.Fields {
			p := append(append([]*protogen.Field(nil), path...), f)
			switch {
			case len(path) > 0 && fieldOptions(f).GetRecreate():
				out = append(out, p)
			case withOptions(f) && !fieldOptions(f).GetRecreate():
				walk(f.Message, p)
			}
		}
	}
	walk(msg, nil)
	return out
}

// dotted is the proto path of fields: "vxlan.local_ip".
func dotted(path []*protogen.Field) string {
	var names []string
	for _, f := range path {
		names = append(names, string(f.Desc.Name()))
	}
	return strings.Join(names, ".")
}
