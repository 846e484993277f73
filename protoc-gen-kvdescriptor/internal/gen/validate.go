package gen

import (
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// emitValidate writes the Validate of the model: key fields set and in
// format, formats and checks of the other fields, the key fields of the
// derived values' elements, and finally the key matching the value.
func (e *emitter) emitValidate(v jen.Code) {
	m := e.m
	var body []jen.Code
	body = append(body, jen.Var().Id("errs").Op("*").Qual(kvPkg, "InvalidValueError"))
	// keyFields are the paths of the key fields in the value message.
	keyFields := map[string]bool{}
	src := depSource{e: e}
	for _, h := range m.key.holders {
		if m.base != nil && !h.elem {
			continue // carried by the key, checked by parsing it
		}
		path := h.path
		if m.base != nil && m.elem != nil {
			path = strings.TrimPrefix(path, string(m.field.Desc.Name())+".")
		}
		if m.base == nil || m.elem != nil {
			keyFields[path] = true
		}
		body = append(body, checkKeyField(h, src.raw(h), jen.Lit(path), true)...)
	}
	if msg := m.valueMsg(); msg != nil {
		body = append(body, checkMessage(msg, jen.Id("v"), "", keyFields)...)
	}
	for _, d := range m.derived {
		body = append(body, checkDerivedElements(d)...)
	}
	body = append(body, e.checkKeyMatches()...)
	body = append(body, jen.Return(jen.Id("errs").Dot("OrNil").Call()))
	e.f.Commentf("%s validates a value of %s, naming every invalid field.", e.lid("Validate"), m.name)
	e.f.Func().Id(e.lid("Validate")).Params(jen.Id("key").String(), jen.Id("v").Add(v)).Error().Block(body...)
}

func add(path jen.Code, format string, args ...jen.Code) jen.Code {
	return jen.Id("errs").Op("=").Id("errs").Dot("Add").Call(append([]jen.Code{path, jen.Lit(format)}, args...)...)
}

// checkKeyField checks a key field's raw value: set (unless the caller
// checks only set values: set is false), in format.
func checkKeyField(h *placeholder, raw *jen.Statement, path jen.Code, set bool) []jen.Code {
	k := h.kind()
	if k == protoreflect.StringKind {
		// Names too: one with a control character makes a key that
		// matches no template, and the error names the field.
		wrong := jen.If(jen.Id("r").Op(":=").Qual(kvPkg, "CheckFormat").Call(jen.Qual(kvPkg, formatConst(h.format)), raw.Clone()), jen.Id("r").Op("!=").Lit("")).Block(add(path, "%s", jen.Id("r")))
		if !set {
			return []jen.Code{wrong}
		}
		return []jen.Code{jen.If(raw.Clone().Op("==").Lit("")).Block(add(path, "must be set: it is part of the key")).Else().Add(wrong)}
	}
	if isSignedKind(k) {
		return []jen.Code{jen.If(raw.Clone().Op("<").Lit(0)).Block(add(path, "must not be negative: it is part of the key"))}
	}
	return nil
}

// checkMessage renders the checks of the fields of msg, the message x at
// prefix in the value, and of the messages nested in it while they are
// set (see nested.go). keyFields holds the paths of the key fields.
func checkMessage(msg *protogen.Message, x *jen.Statement, prefix string, keyFields map[string]bool) []jen.Code {
	var out []jen.Code
	for _, f := range msg.Fields {
		path := prefix + string(f.Desc.Name())
		// A key field's presence and format are checked with the key;
		// its validate options still apply.
		out = append(out, checkField(f, x, path, keyFields[path])...)
		if withOptions(f) {
			get := x.Clone().Dot("Get" + f.GoName).Call()
			if inner := checkMessage(f.Message, get, path+".", keyFields); len(inner) > 0 {
				out = append(out, jen.If(get.Clone().Op("!=").Nil()).Block(inner...))
			}
		}
	}
	return out
}

// checkField renders the checks of field f of message x, at path in the
// value: its format (for each element of a repeated field) and its
// validate options. For a key field (checked as such: set, in format) only
// the other options.
func checkField(f *protogen.Field, x *jen.Statement, name string, keyField bool) []jen.Code {
	var out []jen.Code
	get := x.Clone().Dot("Get" + f.GoName).Call()
	o := validateOf(f)
	path := jen.Lit(name)
	// A field that derives values has its elements checked as key fields
	// of the derived values (checkDerivedElements): not twice.
	if fo := fieldOptions(f); !keyField && fo.GetFormat() != 0 && fo.GetDerive() == nil && f.Desc.Kind() == protoreflect.StringKind && !f.Desc.IsMap() {
		if format, err := fieldFormat(f); err == nil && format != kv.FormatName {
			check := func(val jen.Code, p jen.Code) jen.Code {
				return jen.If(jen.Id("r").Op(":=").Qual(kvPkg, "CheckFormat").Call(jen.Qual(kvPkg, formatConst(format)), val), jen.Id("r").Op("!=").Lit("")).Block(add(p, "%s", jen.Id("r")))
			}
			if f.Desc.IsList() {
				out = append(out, jen.For(jen.List(jen.Id("i"), jen.Id("x")).Op(":=").Range().Add(get.Clone())).Block(
					check(jen.Id("x"), jen.Qual("fmt", "Sprintf").Call(jen.Lit(name+"[%d]"), jen.Id("i")))))
			} else {
				out = append(out, check(get.Clone(), path))
			}
		}
	}
	if o == nil {
		return out
	}
	if o.GetRequired() && !keyField {
		var empty jen.Code
		switch {
		case f.Desc.IsList() || f.Desc.IsMap() || f.Desc.Kind() == protoreflect.BytesKind:
			empty = jen.Len(get.Clone()).Op("==").Lit(0)
		case f.Message != nil:
			empty = get.Clone().Op("==").Nil()
		case f.Desc.Kind() == protoreflect.StringKind:
			empty = get.Clone().Op("==").Lit("")
		case f.Desc.Kind() == protoreflect.BoolKind:
			empty = jen.Op("!").Add(get.Clone())
		default:
			empty = get.Clone().Op("==").Lit(0)
		}
		out = append(out, jen.If(empty).Block(add(path, "must be set")))
	}
	if o.GetUnique() && f.Desc.IsList() && f.Message == nil && f.Desc.Kind() != protoreflect.BytesKind {
		dup := jen.Qual(kvimplPkg, "FirstDuplicate").Call(get.Clone())
		if formatted(f) {
			// Equal in key form is equal: two spellings of one address
			// would derive the same key.
			fm, _ := fieldFormat(f)
			dup = jen.Qual(kvimplPkg, "FirstDuplicateFormatted").Call(jen.Qual(kvPkg, formatConst(fm)), get.Clone())
		}
		out = append(out, jen.If(jen.List(jen.Id("i"), jen.Id("j"), jen.Id("dup")).Op(":=").Add(dup), jen.Id("dup")).Block(
			add(path, "elements %d and %d are equal; they must be unique", jen.Id("i"), jen.Id("j"))))
	}
	if (o.GetHasMin() || o.GetHasMax()) && !f.Desc.IsList() && (isIntegerKind(f.Desc.Kind()) || f.Desc.Kind() == protoreflect.FloatKind || f.Desc.Kind() == protoreflect.DoubleKind) {
		if o.GetHasMin() {
			out = append(out, jen.If(get.Clone().Op("<").Id(itoa(o.GetMin()))).Block(add(path, "%v is below the minimum "+itoa(o.GetMin()), get.Clone())))
		}
		if o.GetHasMax() {
			out = append(out, jen.If(get.Clone().Op(">").Id(itoa(o.GetMax()))).Block(add(path, "%v is above the maximum "+itoa(o.GetMax()), get.Clone())))
		}
	}
	if sub := o.GetAtMostOne(); sub != "" && f.Desc.IsList() && f.Message != nil {
		out = append(out, jen.Block(
			jen.Id("first").Op(":=").Lit(-1),
			jen.For(jen.List(jen.Id("i"), jen.Id("e")).Op(":=").Range().Add(get.Clone())).Block(
				jen.If(jen.Op("!").Id("e").Dot("Get"+goFieldName(f.Message, sub)).Call()).Block(jen.Continue()),
				jen.If(jen.Id("first").Op(">=").Lit(0)).Block(
					add(path, "elements %d and %d both have "+sub+" set; at most one may", jen.Id("first"), jen.Id("i")),
					jen.Break(),
				),
				jen.Id("first").Op("=").Id("i"),
			),
		))
	}
	if sub := o.GetUniqueBy(); sub != "" && f.Desc.IsList() && f.Message != nil {
		out = append(out, jen.Block(
			jen.Id("seen").Op(":=").Map(jen.Any()).Int().Values(),
			jen.For(jen.List(jen.Id("i"), jen.Id("e")).Op(":=").Range().Add(get.Clone())).Block(
				jen.Id("x").Op(":=").Id("e").Dot("Get"+goFieldName(f.Message, sub)).Call(),
				jen.If(jen.List(jen.Id("j"), jen.Id("ok")).Op(":=").Id("seen").Index(jen.Id("x")), jen.Id("ok")).Block(
					add(path, "elements %d and %d have the same "+sub+"; it must be unique", jen.Id("j"), jen.Id("i")),
					jen.Break(),
				),
				jen.Id("seen").Index(jen.Id("x")).Op("=").Id("i"),
			),
		))
	}
	return out
}

// itoa renders n as an untyped constant, which compares with a field of
// any numeric type (checkFields made sure it fits).
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func goFieldName(msg *protogen.Message, name string) string {
	for _, f := range msg.Fields {
		if string(f.Desc.Name()) == name {
			return f.GoName
		}
	}
	return name
}

// checkDerivedElements checks the key fields of the elements of a field
// that derives values, in the base's Validate: a base whose elements could
// not be keyed is INVALID, and no derived value is ever made of it.
func checkDerivedElements(d *model) []jen.Code {
	name := string(d.field.Desc.Name())
	var inner []jen.Code
	for _, h := range d.key.holders {
		if !h.elem {
			continue
		}
		raw := rawValue(d, h, jen.Id("v"), jen.Id("e"), false)
		var path jen.Code = jen.Lit(h.path)
		if d.field.Desc.IsList() {
			suffix := strings.TrimPrefix(h.path, name)
			path = jen.Qual("fmt", "Sprintf").Call(jen.Lit(name+"[%d]"+suffix), jen.Id("i"))
		}
		// A singular scalar derives a value only when set (see below).
		set := d.field.Desc.IsList() || d.elem != nil
		inner = append(inner, checkKeyField(h, raw, path, set)...)
	}
	if len(inner) == 0 {
		return nil
	}
	x := jen.Id("v").Dot("Get" + d.field.GoName).Call()
	switch {
	case d.field.Desc.IsList():
		return []jen.Code{jen.For(jen.List(jen.Id("i"), jen.Id("e")).Op(":=").Range().Add(x)).Block(inner...)}
	case d.elem != nil:
		return []jen.Code{jen.If(jen.Id("e").Op(":=").Add(x), jen.Id("e").Op("!=").Nil()).Block(inner...)}
	}
	return []jen.Code{jen.If(jen.Id("e").Op(":=").Add(x), nonZero(d.field.Desc.Kind(), jen.Id("e"))).Block(inner...)}
}

// checkKeyMatches renders the check that the key is the value's own key.
func (e *emitter) checkKeyMatches() []jen.Code {
	m := e.m
	var want jen.Code
	var pre []jen.Code
	if m.base == nil {
		// Compared in a buffer on the stack: no string is built unless
		// the key is wrong.
		return []jen.Code{jen.If(jen.Id("errs").Op("==").Nil()).Block(
			jen.Var().Id("buf").Index(jen.Lit(128)).Byte(),
			jen.If(jen.Id("want").Op(":=").Id(e.lid("AppendKey")).Call(jen.Id("buf").Index(jen.Op(":").Lit(0)), jen.Id("v")), jen.String().Call(jen.Id("want")).Op("!=").Id("key")).Block(
				add(jen.Lit("(key)"), "%q is not the key of this value, which is %q", jen.Id("key"), jen.String().Call(jen.Id("want"))),
			))}
	} else {
		pre = append(pre, jen.List(jen.Id("k"), jen.Id("_")).Op(":=").Id("Parse"+e.id("Key")).Call(jen.Id("key")))
		want = jen.Id(e.lid("Key")).CallFunc(func(g *jen.Group) {
			for _, h := range m.key.holders {
				if h.elem {
					g.Add(depSource{e: e}.raw(h))
				} else {
					g.Add(typedRaw(h, jen.Id("k").Dot(h.goName)))
				}
			}
		})
	}
	return []jen.Code{jen.If(jen.Id("errs").Op("==").Nil()).Block(append(pre,
		jen.If(jen.Id("want").Op(":=").Add(want), jen.Id("want").Op("!=").Id("key")).Block(
			add(jen.Lit("(key)"), "%q is not the key of this value, which is %q", jen.Id("key"), jen.Id("want")),
		))...)}
}
