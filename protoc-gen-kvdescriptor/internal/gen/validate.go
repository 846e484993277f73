package gen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kvdescriptor/kvdescriptor/options/kvdescriptorv1"
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
	e.doc("%s validates a value of %s, naming every invalid field.", e.lid("Validate"), m.name)
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
		check := jen.Qual(kvPkg, "CheckFormat").Call(jen.Qual(kvPkg, formatConst(h.format)), raw.Clone())
		if len(h.fields) > 0 && nameCheck(h.fields[len(h.fields)-1]) != "" {
			fn := nameCheck(h.fields[len(h.fields)-1])
			// A plain or interface name: its rules include a key name's.
			check = jen.Qual(kvPkg, fn).Call(raw.Clone())
		}
		wrong := jen.If(jen.Id("r").Op(":=").Add(check), jen.Id("r").Op("!=").Lit("")).Block(add(path, "%s", jen.Id("r")))
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
// set (see nested.go). keyFields holds the paths of the key fields; on
// lists the messages on the path, so that a recursive message ends the
// walk.
func checkMessage(msg *protogen.Message, x *jen.Statement, prefix string, keyFields map[string]bool, on ...*protogen.Message) []jen.Code {
	var out []jen.Code
	on = append(on, msg)
	for _, f := range msg.Fields {
		path := prefix + string(f.Desc.Name())
		// A key field's presence and format are checked with the key;
		// its validate options still apply.
		out = append(out, checkField(f, x, prefix, keyFields[path])...)
		if validatedAtDepth(f) && !slices.Contains(on, f.Message) {
			get := x.Clone().Dot("Get" + f.GoName).Call()
			if inner := checkMessage(f.Message, get, path+".", keyFields, on...); len(inner) > 0 {
				out = append(out, jen.If(get.Clone().Op("!=").Nil()).Block(inner...))
			}
		}
	}
	return out
}

// validatedAtDepth reports whether Validate checks the fields of f, a
// nested message: one with options at depth, or with enum fields (whose
// values must be known).
func validatedAtDepth(f *protogen.Field) bool {
	return nestedMsg(f) && (hasOptions(f.Message, nil) || hasEnums(f.Message, nil))
}

// hasEnums reports whether msg, or a message nested in it, has an enum
// field that Validate checks. on lists the messages on the path.
func hasEnums(msg *protogen.Message, on []*protogen.Message) bool {
	if slices.Contains(on, msg) {
		return false
	}
	for _, f := range msg.Fields {
		if f.Enum != nil && !f.Desc.IsMap() {
			return true
		}
		if nestedMsg(f) && hasEnums(f.Message, append(on, msg)) {
			return true
		}
	}
	return false
}

// isSet renders "field f (read with get) is set": not empty, not zero.
// isEmpty is its negation.
func isSet(f *protogen.Field, get *jen.Statement) *jen.Statement {
	switch {
	case f.Desc.IsList() || f.Desc.IsMap() || f.Desc.Kind() == protoreflect.BytesKind:
		return jen.Len(get.Clone()).Op(">").Lit(0)
	case f.Message != nil:
		return get.Clone().Op("!=").Nil()
	case f.Desc.Kind() == protoreflect.StringKind:
		return get.Clone().Op("!=").Lit("")
	case f.Desc.Kind() == protoreflect.BoolKind:
		return get.Clone()
	}
	return get.Clone().Op("!=").Lit(0)
}

func isEmpty(f *protogen.Field, get *jen.Statement) *jen.Statement {
	switch {
	case f.Desc.IsList() || f.Desc.IsMap() || f.Desc.Kind() == protoreflect.BytesKind:
		return jen.Len(get.Clone()).Op("==").Lit(0)
	case f.Message != nil:
		return get.Clone().Op("==").Nil()
	case f.Desc.Kind() == protoreflect.StringKind:
		return get.Clone().Op("==").Lit("")
	case f.Desc.Kind() == protoreflect.BoolKind:
		return jen.Op("!").Add(get.Clone())
	}
	return get.Clone().Op("==").Lit(0)
}

// condition is a Condition resolved against the annotated field's message
// (checkFields made sure it resolves).
type condition struct {
	field  *protogen.Field
	values []*protogen.EnumValue
}

// resolveCondition resolves c on the fields of msg, for the field named
// self.
func resolveCondition(msg *protogen.Message, self string, c *kvdescriptorv1.Condition) (condition, error) {
	var r condition
	r.field = elemField(msg, c.GetField())
	switch {
	case c.GetField() == "":
		return r, fmt.Errorf("the condition names no field")
	case r.field == nil:
		return r, fmt.Errorf("%q is not a field of %s", c.GetField(), msg.Desc.FullName())
	case c.GetField() == self:
		return r, fmt.Errorf("the condition is on the field itself")
	case r.field.Enum == nil || r.field.Desc.IsList() || r.field.Desc.IsMap():
		return r, fmt.Errorf("the condition's field %s must be a single enum field, it is %s", c.GetField(), kindName(r.field))
	case len(c.GetIn()) == 0:
		return r, fmt.Errorf("the condition on %s lists no value (in)", c.GetField())
	}
	for _, name := range c.GetIn() {
		var found *protogen.EnumValue
		for _, v := range r.field.Enum.Values {
			if string(v.Desc.Name()) == name {
				found = v
			}
		}
		if found == nil {
			return r, fmt.Errorf("%q is not a value of %s (the enum of %s)", name, r.field.Enum.Desc.FullName(), c.GetField())
		}
		r.values = append(r.values, found)
	}
	return r, nil
}

// holds renders "the condition holds" on the message x; fails its
// negation.
func (c condition) holds(x *jen.Statement) jen.Code {
	get := x.Clone().Dot("Get" + c.field.GoName).Call()
	var ors []jen.Code
	for _, v := range c.values {
		ors = append(ors, get.Clone().Op("==").Qual(string(v.GoIdent.GoImportPath), v.GoIdent.GoName))
	}
	if len(ors) == 1 {
		return ors[0]
	}
	return jen.Parens(jen.Add(ors[0]).Do(func(s *jen.Statement) {
		for _, o := range ors[1:] {
			s.Op("||").Add(o)
		}
	}))
}

func (c condition) fails(x *jen.Statement) jen.Code {
	get := x.Clone().Dot("Get" + c.field.GoName).Call()
	var ands []jen.Code
	for _, v := range c.values {
		ands = append(ands, get.Clone().Op("!=").Qual(string(v.GoIdent.GoImportPath), v.GoIdent.GoName))
	}
	return jen.Add(ands[0]).Do(func(s *jen.Statement) {
		for _, a := range ands[1:] {
			s.Op("&&").Add(a)
		}
	})
}

// describe is the condition in words: "type is TYPE_MACVLAN or TYPE_VLAN",
// the field at prefix.
func (c condition) describe(prefix string) string {
	var names []string
	for _, v := range c.values {
		names = append(names, string(v.Desc.Name()))
	}
	list := names[0]
	if n := len(names); n > 1 {
		list = strings.Join(names[:n-1], ", ") + " or " + names[n-1]
	}
	return prefix + string(c.field.Desc.Name()) + " is " + list
}

// checkField renders the checks of field f of message x, at prefix in the
// value: its format (for each element of a repeated field), its enum
// values and its validate options. For a key field (checked as such: set,
// in format) only the other options.
func checkField(f *protogen.Field, x *jen.Statement, prefix string, keyField bool) []jen.Code {
	var out []jen.Code
	get := x.Clone().Dot("Get" + f.GoName).Call()
	o := validateOf(f)
	name := prefix + string(f.Desc.Name())
	path := jen.Lit(name)
	if f.Enum != nil && !f.Desc.IsMap() && !o.GetAllowUnknown() {
		known := jen.Qual(string(f.Enum.GoIdent.GoImportPath), f.Enum.GoIdent.GoName+"_name")
		check := func(val jen.Code, p jen.Code) jen.Code {
			return jen.If(jen.List(jen.Id("_"), jen.Id("ok")).Op(":=").Add(known.Clone()).Index(jen.Int32().Call(val)), jen.Op("!").Id("ok")).Block(
				add(p, "%d is not a value of "+string(f.Enum.Desc.FullName()), val))
		}
		if f.Desc.IsList() {
			out = append(out, jen.For(jen.List(jen.Id("i"), jen.Id("x")).Op(":=").Range().Add(get.Clone())).Block(
				check(jen.Id("x"), jen.Qual("fmt", "Sprintf").Call(jen.Lit(name+"[%d]"), jen.Id("i")))))
		} else {
			out = append(out, check(get.Clone(), path))
		}
	}
	// A field that derives values has its elements checked as key fields
	// of the derived values (checkDerivedElements): not twice.
	if fo := fieldOptions(f); !keyField && fo.GetFormat() != 0 && fo.GetDerive() == nil && f.Desc.Kind() == protoreflect.StringKind && !f.Desc.IsMap() {
		if format, err := fieldFormat(f); err == nil && (format != kv.FormatName || nameCheck(f) != "") {
			check := func(val jen.Code, p jen.Code) jen.Code {
				c := jen.Qual(kvPkg, "CheckFormat").Call(jen.Qual(kvPkg, formatConst(format)), val)
				if fn := nameCheck(f); fn != "" {
					c = jen.Qual(kvPkg, fn).Call(val)
				}
				return jen.If(jen.Id("r").Op(":=").Add(c), jen.Id("r").Op("!=").Lit("")).Block(add(p, "%s", jen.Id("r")))
			}
			if f.Desc.IsList() {
				out = append(out, jen.For(jen.List(jen.Id("i"), jen.Id("x")).Op(":=").Range().Add(get.Clone())).Block(
					check(jen.Id("x"), jen.Qual("fmt", "Sprintf").Call(jen.Lit(name+"[%d]"), jen.Id("i")))))
			} else {
				out = append(out, check(get.Clone(), path))
			}
		}
	}
	if other := fieldOptions(f).GetSameFamilyAs(); other != "" && sameFamilyFits(f.Parent, f, other) == "" {
		a, b := effectiveValue(f, x), effectiveValue(elemField(f.Parent, other), x)
		out = append(out, jen.If(jen.Qual(kvimplPkg, "OtherFamily").Call(a, b)).Block(
			add(path, "%s is not of the IP family of "+prefix+other+" (%s)", a.Clone(), b.Clone())))
	}
	if o == nil {
		return out
	}
	if o.GetRequired() && !keyField {
		out = append(out, jen.If(isEmpty(f, get)).Block(add(path, "must be set")))
	}
	msg := f.Parent
	if c := o.GetRequiredIf(); c != nil && !keyField {
		if cond, err := resolveCondition(msg, string(f.Desc.Name()), c); err == nil {
			out = append(out, jen.If(isEmpty(f, get).Op("&&").Add(cond.holds(x))).Block(
				add(path, "must be set when "+cond.describe(prefix))))
		}
	}
	if c := o.GetOnlyIf(); c != nil {
		if cond, err := resolveCondition(msg, string(f.Desc.Name()), c); err == nil {
			out = append(out, jen.If(isSet(f, get).Op("&&").Add(cond.fails(x))).Block(
				add(path, "must be empty unless "+cond.describe(prefix)+" (it is %v)", x.Clone().Dot("Get"+cond.field.GoName).Call())))
		}
	}
	if other := o.GetNotEqualTo(); other != "" {
		if g := elemField(msg, other); g != nil && notEqualFits(f, g) == "" {
			verb := "%v"
			if f.Desc.Kind() == protoreflect.StringKind {
				verb = "%q"
			}
			out = append(out, jen.If(isSet(f, get).Op("&&").Add(get.Clone()).Op("==").Add(x.Clone().Dot("Get"+g.GoName).Call())).Block(
				add(path, verb+" must differ from "+prefix+other, get.Clone())))
		}
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
		// With zero_allowed, zero (the default) is in range. A member of
		// a oneof is bounded while it is the member set.
		bound := func(op string, n int64) []jen.Code {
			c := get.Clone().Op(op).Id(itoa(n))
			if o.GetZeroAllowed() {
				c = get.Clone().Op("!=").Lit(0).Op("&&").Add(c)
			}
			if f.Oneof != nil && !f.Oneof.Desc.IsSynthetic() {
				member := x.Clone().Dot("Get" + f.Oneof.GoName).Call().Assert(jen.Op("*").Qual(string(f.GoIdent.GoImportPath), f.GoIdent.GoName))
				return []jen.Code{jen.List(jen.Id("_"), jen.Id("ok")).Op(":=").Add(member), jen.Id("ok").Op("&&").Add(c)}
			}
			return []jen.Code{c}
		}
		orZero := ""
		if o.GetZeroAllowed() {
			orZero = " (or 0, the default)"
		}
		if o.GetHasMin() {
			out = append(out, jen.If(bound("<", o.GetMin())...).Block(add(path, "%v is below the minimum "+itoa(o.GetMin())+orZero, get.Clone())))
		}
		if o.GetHasMax() {
			out = append(out, jen.If(bound(">", o.GetMax())...).Block(add(path, "%v is above the maximum "+itoa(o.GetMax())+orZero, get.Clone())))
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
		want = jen.Id(e.lid("Key")).CallFunc(func(g *jen.Group) {
			for _, h := range m.key.holders {
				if h.elem {
					g.Add(depSource{e: e}.raw(h))
					continue
				}
				// The base's fields come from the key (parsed once; a base
				// whose key has no placeholder carries none).
				if len(pre) == 0 {
					pre = append(pre, jen.List(jen.Id("k"), jen.Id("_")).Op(":=").Id("Parse"+e.id("Key")).Call(jen.Id("key")))
				}
				g.Add(typedRaw(h, jen.Id("k").Dot(h.goName)))
			}
		})
	}
	return []jen.Code{jen.If(jen.Id("errs").Op("==").Nil()).Block(append(pre,
		jen.If(jen.Id("want").Op(":=").Add(want), jen.Id("want").Op("!=").Id("key")).Block(
			add(jen.Lit("(key)"), "%q is not the key of this value, which is %q", jen.Id("key"), jen.Id("want")),
		))...)}
}

// effectiveValue is the value of single field f of message x as it
// compares: through its Effective accessor when it has a zero_equals
// default.
func effectiveValue(f *protogen.Field, x *jen.Statement) *jen.Statement {
	if d := fieldOptions(f).GetCompare().GetZeroEquals(); d != "" && checkZeroEquals(f, d) == "" {
		return x.Clone().Dot("Effective" + f.GoName).Call()
	}
	return x.Clone().Dot("Get" + f.GoName).Call()
}
