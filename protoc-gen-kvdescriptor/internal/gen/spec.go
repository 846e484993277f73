package gen

import (
	"fmt"
	"go/token"
	"math"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kvdescriptor/kvdescriptor/options/kvdescriptorv1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// emitSpec writes the schema-derived functions and the Spec constructor.
func (e *emitter) emitSpec() {
	m := e.m
	v := e.valueType()
	spec := jen.Dict{
		jen.Id("Name"):        jen.Id(e.id("ModelName")),
		jen.Id("KeyTemplate"): jen.Id(e.id("KeyTemplate")),
		jen.Id("ParseKey"):    jen.Id("Parse" + e.id("Key")),
		jen.Id("KeyString"):   jen.Id(e.id("Key")).Dot("String"),
	}
	if m.label != nil && (len(m.key.holders) > 1 || m.label.format == kv.FormatName) {
		e.doc("%s returns the label of a key of %s: its %s.", e.lid("Label"), m.name, m.label.path)
		e.f.Func().Id(e.lid("Label")).Params(jen.Id("key").String()).String().Block(
			jen.If(jen.List(jen.Id("k"), jen.Id("ok")).Op(":=").Id("Parse"+e.id("Key")).Call(jen.Id("key")), jen.Id("ok")).Block(
				jen.Return(labelString(m.label, jen.Id("k").Dot(m.label.goName))),
			),
			jen.Return(jen.Qual("strings", "TrimPrefix").Call(jen.Id("key"), jen.Id(e.id("KeyPrefix")))),
		)
		spec[jen.Id("Label")] = jen.Id(e.lid("Label"))
	}
	if len(m.refs) > 0 || len(m.deps) > 0 {
		e.emitDependencies(v)
		var deps jen.Code = jen.Id(e.lid("Dependencies"))
		if inputs, ok := e.dependencyInputs(); ok {
			deps = e.emitSharedDependencies(v, inputs)
		}
		spec[jen.Id("Dependencies")] = deps
	}
	if len(m.derived) > 0 {
		e.emitDerived(v)
		spec[jen.Id("Derived")] = jen.Id(e.lid("Derived"))
	}
	if m.base != nil && baseCarried(m) {
		e.doc("%s returns the key of the %s that derives a key of %s.", e.lid("BaseOf"), m.base.name, m.name)
		e.f.Var().Id(e.lid("BaseOf")).Op("=").Qual(kvimplPkg, "MustBaseKeyOf").Call(
			jen.Id(e.lid("KeyTemplate")), jen.Id((&emitter{m: m.base}).lid("KeyTemplate")))
		spec[jen.Id("BaseOf")] = jen.Id(e.lid("BaseOf"))
	}
	if msg := m.valueMsg(); msg != nil {
		e.emitEqual(msg, v)
		spec[jen.Id("Equivalent")] = jen.Func().Params(jen.Id("_").String(), jen.List(jen.Id("a"), jen.Id("b")).Add(v)).Bool().Block(
			jen.Return(jen.Id(e.lid("Equal")).Call(jen.Id("a"), jen.Id("b"))))
		if rec, deep := recreateFields(msg), nestedRecreate(msg); len(rec) > 0 || len(deep) > 0 {
			var conds []jen.Code
			for _, f := range rec {
				conds = append(conds, e.fieldEqual(f, jen.Id("a"), jen.Id("b"), nil))
			}
			for _, p := range deep {
				parent := p[:len(p)-1]
				conds = append(conds, e.fieldEqual(p[len(p)-1], getter(jen.Id("a"), parent), getter(jen.Id("b"), parent), parent))
			}
			e.doc("%s reports whether changing a to b needs a re-create.", e.lid("NeedsRecreate"))
			e.f.Func().Id(e.lid("NeedsRecreate")).Params(jen.List(jen.Id("a"), jen.Id("b")).Add(v)).Bool().Block(
				jen.Return(jen.Op("!").Parens(conjunctionCode(conds))),
			)
			spec[jen.Id("NeedsRecreate")] = jen.Func().Params(jen.Id("_").String(), jen.List(jen.Id("a"), jen.Id("b")).Add(v)).Bool().Block(
				jen.Return(jen.Id(e.lid("NeedsRecreate")).Call(jen.Id("a"), jen.Id("b"))))
		}
	}
	e.emitValidate(v)
	spec[jen.Id("Validate")] = jen.Id(e.lid("Validate"))
	if m.meta {
		spec[jen.Id("WithMetadata")] = jen.True()
	}
	switch m.drift {
	case kvdescriptorv1.DriftPolicy_DRIFT_REPORT:
		spec[jen.Id("DriftPolicy")] = jen.Qual(kvPkg, "DriftReport")
	case kvdescriptorv1.DriftPolicy_DRIFT_ADOPT:
		spec[jen.Id("DriftPolicy")] = jen.Qual(kvPkg, "DriftAdopt")
	}
	if len(m.after) > 0 {
		spec[jen.Id("RetrieveDependencies")] = jen.Index().String().ValuesFunc(func(g *jen.Group) {
			for _, a := range m.after {
				g.Lit(a)
			}
		})
	}
	e.doc("%s returns the schema-derived part of the descriptor of %s.", e.id("Spec"), m.name)
	e.f.Func().Id(e.id("Spec")).Types(jen.Id("M").Any()).Params().Qual(kvPkg, "Spec").Types(jen.Id(e.id("Key")), v, jen.Id("M")).Block(
		jen.Return(jen.Qual(kvPkg, "Spec").Types(jen.Id(e.id("Key")), v, jen.Id("M")).Values(spec)),
	)
}

// baseCarried reports whether the key template of m, a derived model,
// carries every placeholder of its base's key template, so that a derived
// key tells its base's (kv.BaseKeyOf). A template that does not (a base keyed
// by a field the derived key leaves out) gets no BaseOf: a refresh then links
// a found derived value only to a base whose found version derives it.
func baseCarried(m *model) bool {
	for _, b := range m.base.key.holders {
		carried := false
		for _, h := range m.key.holders {
			carried = carried || !h.elem && h.path == b.path && h.format == b.format
		}
		if !carried {
			return false
		}
	}
	return true
}

// labelString renders the label from a typed key field.
func labelString(h *placeholder, x *jen.Statement) jen.Code {
	if h.format == kv.FormatName {
		return x
	}
	return typedKeyPart(h, x)
}

// emitHandler writes the handler interface, its optional capabilities,
// the item of Retrieve and the constructor.
func (e *emitter) emitHandler() {
	m := e.m
	v := e.valueType()
	key := jen.Id(e.id("Key"))
	h, ctor := e.id("Handler"), "New"+m.goName+"Descriptor"
	e.doc("%s holds the southbound calls of %s: Create and Delete. Its optional capabilities are %s, %s, %s and %s "+
		"(and kv.Concurrent); %s refuses a handler with a method of one of their names and another signature. "+
		"Keys arrive parsed; M is the metadata type (struct{} for none).",
		h, m.name, e.id("Updater"), e.id("Retriever"), e.id("Validator"), e.id("Batcher"), ctor)
	e.f.Type().Id(h).Types(jen.Id("M").Any()).Interface(
		jen.Qual(kvPkg, "Handler").Types(key, v, jen.Id("M")),
	)
	e.doc("%s is the optional Update of a %s: without it, every change is applied as Delete followed by Create.", e.id("Updater"), h)
	e.f.Type().Id(e.id("Updater")).Types(jen.Id("M").Any()).Interface(
		jen.Qual(kvPkg, "Updater").Types(key, v, jen.Id("M")),
	)
	e.doc("%s is the optional Retrieve of a %s: it reads the southbound, so that resync finds what exists.", e.id("Retriever"), h)
	e.f.Type().Id(e.id("Retriever")).Types(jen.Id("M").Any()).Interface(
		jen.Qual(kvPkg, "Retriever").Types(key, v, jen.Id("M")),
	)
	e.doc("%s is the optional Validate of a %s: checks beyond the schema's.", e.id("Validator"), h)
	e.f.Type().Id(e.id("Validator")).Interface(
		jen.Qual(kvPkg, "Validator").Types(key, v),
	)
	e.doc("%s is the optional Batch of a %s: many independent creates, updates or deletes in one call, "+
		"each with its own outcome.", e.id("Batcher"), h)
	e.f.Type().Id(e.id("Batcher")).Types(jen.Id("M").Any()).Interface(
		jen.Qual(kvPkg, "Batcher").Types(key, v, jen.Id("M")),
	)
	e.doc("%s is one operation of a batch of %s, with its outcome.", e.id("BatchOp"), m.name)
	e.f.Type().Id(e.id("BatchOp")).Types(jen.Id("M").Any()).Op("=").Qual(kvPkg, "BatchOp").Types(key, v, jen.Id("M"))
	e.doc("%s is a key of %s with its value, metadata and origin, as Retrieve exchanges them.", e.id("Item"), m.name)
	e.f.Type().Id(e.id("Item")).Types(jen.Id("M").Any()).Op("=").Qual(kvPkg, "Item").Types(key, v, jen.Id("M"))
	e.doc("%s returns the descriptor of %s with handler h, to register with the scheduler.", ctor, m.name)
	e.f.Func().Id(ctor).Types(jen.Id("M").Any()).Params(jen.Id("h").Id(h).Types(jen.Id("M"))).Params(
		jen.Op("*").Qual(kvPkg, "TypedDescriptor").Types(key, v, jen.Id("M")), jen.Error(),
	).Block(
		jen.Return(jen.Qual(kvPkg, "NewDescriptor").Call(jen.Id(e.id("Spec")).Types(jen.Id("M")).Call(), jen.Id("h"))),
	)
	e.f.Func().Id("init").Params().Block(
		jen.Qual(kvPkg, "RegisterSchema").Call(jen.Id(e.id("ModelName")), jen.Func().Params(jen.Id("h").Qual(kvPkg, "DynamicHandler")).Params(jen.Qual(kvPkg, "Descriptor"), jen.Error()).Block(
			jen.Return(jen.Id(ctor).Types(jen.Struct()).Call(jen.Qual(kvPkg, "Dynamic").Types(key, v).Call(jen.Id(e.id("ModelName")), jen.Id("h"), jen.Id("Parse"+e.id("Key"))))),
		)),
	)
}

// doc writes a doc comment wrapped at 80 columns.
func (e *emitter) doc(format string, args ...any) { comment(e.f, fmt.Sprintf(format, args...)) }

// comment writes text into f as a comment wrapped at 80 columns.
func comment(f *jen.File, text string) {
	for _, line := range wrap(text, 77) {
		f.Comment(line)
	}
}

// depSource says how the placeholders of a dependency template get their
// values: from the value v (a model, or the element of a derived model),
// or, for base fields of a derived model, from its parsed key k.
type depSource struct {
	e *emitter
}

// part returns the key form of placeholder h and the condition for its
// value to be set (nil: always set).
func (s depSource) part(h *placeholder) (key jen.Code, set jen.Code) {
	m := s.e.m
	if m.base != nil && !h.elem {
		return typedKeyPart(h, jen.Id("k").Dot(h.goName)), nil
	}
	raw := s.raw(h)
	return keyPart(h, raw), nonZero(h.kind(), raw)
}

// raw returns the raw value of a placeholder of the value.
func (s depSource) raw(h *placeholder) *jen.Statement {
	m := s.e.m
	switch {
	case m.base == nil:
		return getter(jen.Id("v"), h.fields)
	case !h.elem:
		return jen.Id("k").Dot(h.goName)
	case m.elem == nil:
		return jen.Id("v").Dot("GetValue").Call()
	}
	return getter(jen.Id("v"), h.fields)
}

func nonZero(k protoreflect.Kind, x jen.Code) jen.Code {
	if k == protoreflect.StringKind {
		return jen.Add(x).Op("!=").Lit("")
	}
	return jen.Add(x).Op("!=").Lit(0)
}

func (e *emitter) usesKeyFields() bool {
	if e.m.base == nil {
		return false
	}
	for _, d := range e.m.deps {
		for _, t := range append([]*keyTemplate{d.key}, d.prefixes...) {
			if t == nil {
				continue
			}
			for _, h := range t.holders {
				if !h.elem {
					return true
				}
			}
		}
		if d.containsHolder != nil && !d.containsHolder.elem {
			return true
		}
	}
	return false
}

// dependencyInputs returns the fields of the value that its dependencies
// are computed from, when the lists can be shared between values with the
// same fields (kv.ShareDependencies): a base model whose dependencies come
// from scalar (string or integer) fields only.
func (e *emitter) dependencyInputs() ([][]*protogen.Field, bool) {
	m := e.m
	if m.base != nil {
		return nil, false
	}
	var out [][]*protogen.Field
	seen := map[string]bool{}
	add := func(fields []*protogen.Field) bool {
		if len(fields) == 0 {
			return false
		}
		var path []string
		for _, f := range fields {
			if f.Desc.IsList() || f.Desc.IsMap() {
				return false
			}
			path = append(path, f.GoName)
		}
		if k := fields[len(fields)-1].Desc.Kind(); k != protoreflect.StringKind && !isIntegerKind(k) {
			return false
		}
		if p := strings.Join(path, "."); !seen[p] {
			seen[p] = true
			out = append(out, fields)
		}
		return true
	}
	for _, r := range m.refs {
		if r.via != nil || !add([]*protogen.Field{r.field}) {
			return nil, false
		}
	}
	for _, d := range m.deps {
		for _, t := range append([]*keyTemplate{d.key}, d.prefixes...) {
			if t == nil {
				continue
			}
			for _, h := range t.holders {
				if !add(h.fields) {
					return nil, false
				}
			}
		}
		if d.containsHolder != nil && !add(d.containsHolder.fields) {
			return nil, false
		}
	}
	return out, len(out) > 0
}

// emitSharedDependencies writes the type of the dependency inputs and
// returns the Dependencies of the spec: the generated function, shared
// between values with the same inputs.
func (e *emitter) emitSharedDependencies(v jen.Code, inputs [][]*protogen.Field) jen.Code {
	typ := e.lid("DependencyInputs")
	var fields []jen.Code
	values := jen.Dict{}
	for _, fs := range inputs {
		k := fs[len(fs)-1].Desc.Kind()
		t := jen.String()
		if isIntegerKind(k) {
			t = goIntType(k)
		}
		// Named after the field's path: vxlan.local_ip is vxlanLocalIp.
		var name string
		for _, f := range fs {
			name += f.GoName
		}
		name = unexported(name)
		if token.IsKeyword(name) {
			name += "_"
		}
		fields = append(fields, jen.Id(name).Add(t))
		values[jen.Id(name)] = getter(jen.Id("v"), fs)
	}
	e.doc("%s are the fields the dependencies of %s are computed from: values with the same ones share one list.", typ, e.m.name)
	e.f.Type().Id(typ).Struct(fields...)
	return jen.Qual(kvimplPkg, "ShareDependencies").Call(
		jen.Id(e.lid("Dependencies")),
		jen.Func().Params(jen.Id("v").Add(v)).Id(typ).Block(jen.Return(jen.Id(typ).Values(values))),
	)
}

func (e *emitter) emitDependencies(v jen.Code) {
	m := e.m
	src := depSource{e: e}
	var body []jen.Code
	// One allocation for the usual case, one dependency per annotation (a
	// repeated field may add more).
	body = append(body, jen.Id("deps").Op(":=").Make(jen.Index().Qual(kvPkg, "Dependency"), jen.Lit(0), jen.Lit(len(m.refs)+len(m.deps))))
	if e.usesKeyFields() {
		body = append(body, jen.List(jen.Id("k"), jen.Id("_")).Op(":=").Id("Parse"+e.id("Key")).Call(jen.Id("key")))
	}
	for _, r := range m.refs {
		// The target's key is built here, from its template, rather than by
		// calling its package: models of two packages may refer to each
		// other, and Go packages may not import each other.
		th := r.target.key.holders[0]
		dep := func(x jen.Code) jen.Code {
			return jen.Id("deps").Op("=").Append(jen.Id("deps"), jen.Qual(kvPkg, "Dependency").Values(jen.Dict{
				jen.Id("Label"): jen.Lit(r.label),
				jen.Id("Key"): concat(r.target.key, func(int, *placeholder) jen.Code {
					return keyPart(&placeholder{format: th.format, fields: []*protogen.Field{r.field}}, x)
				}),
			}))
		}
		x := jen.Id("v").Dot("Get" + r.field.GoName).Call()
		if r.via != nil { // a field of the elements of a repeated message field
			x := jen.Id("e").Dot("Get" + r.field.GoName).Call()
			body = append(body, jen.For(jen.List(jen.Id("_"), jen.Id("e")).Op(":=").Range().Add(jen.Id("v").Dot("Get"+r.via.GoName).Call())).Block(
				jen.If(jen.Id("x").Op(":=").Add(x), nonZero(r.field.Desc.Kind(), jen.Id("x"))).Block(dep(jen.Id("x"))),
			))
			continue
		}
		if r.field.Desc.IsList() {
			body = append(body, jen.For(jen.List(jen.Id("_"), jen.Id("x")).Op(":=").Range().Add(x)).Block(
				jen.If(nonZero(r.field.Desc.Kind(), jen.Id("x"))).Block(dep(jen.Id("x"))),
			))
		} else {
			body = append(body, jen.If(jen.Id("x").Op(":=").Add(x), nonZero(r.field.Desc.Kind(), jen.Id("x"))).Block(dep(jen.Id("x"))))
		}
	}
	for _, d := range m.deps {
		var conds []jen.Code
		build := func(t *keyTemplate) jen.Code {
			return concat(t, func(_ int, h *placeholder) jen.Code {
				key, set := src.part(h)
				if set != nil {
					conds = append(conds, set)
				}
				return key
			})
		}
		var value jen.Code
		if d.key != nil {
			value = jen.Qual(kvPkg, "Dependency").Values(jen.Dict{jen.Id("Label"): jen.Lit(d.label), jen.Id("Key"): build(d.key)})
		} else {
			anyOf := jen.Dict{jen.Id("Prefixes"): jen.Index().String().ValuesFunc(func(g *jen.Group) {
				for _, p := range d.prefixes {
					g.Add(build(p))
				}
			})}
			if d.containsHolder != nil {
				anyOf[jen.Id("Match")] = jen.Qual(kvPkg, "NetworkContains").Call(jen.Id("addr"))
				anyOf[jen.Id("Describe")] = jen.Lit("network contains ").Op("+").Id("addr").Dot("String").Call()
			}
			value = jen.Qual(kvPkg, "Dependency").Values(jen.Dict{jen.Id("Label"): jen.Lit(d.label), jen.Id("AnyOf"): jen.Qual(kvPkg, "AnyOf").Values(anyOf)})
		}
		add := jen.Id("deps").Op("=").Append(jen.Id("deps"), value)
		stmt := []jen.Code{add}
		if d.containsHolder != nil {
			raw := src.raw(d.containsHolder)
			if m.base != nil && !d.containsHolder.elem {
				raw = jen.Add(typedRaw(d.containsHolder, jen.Id("k").Dot(d.containsHolder.goName)))
			}
			stmt = []jen.Code{jen.If(
				jen.List(jen.Id("addr"), jen.Id("err")).Op(":=").Qual("net/netip", "ParseAddr").Call(raw),
				jen.Id("err").Op("==").Nil(),
			).Block(add)}
		}
		if len(conds) > 0 {
			body = append(body, jen.If(conjunctionCode(conds)).Block(stmt...))
		} else {
			body = append(body, stmt...)
		}
	}
	body = append(body,
		jen.If(jen.Len(jen.Id("deps")).Op("==").Lit(0)).Block(jen.Return(jen.Nil())),
		jen.Return(jen.Id("deps")),
	)
	e.doc("%s returns the dependencies of a value of %s.", e.lid("Dependencies"), m.name)
	e.f.Func().Id(e.lid("Dependencies")).Params(jen.Id("key").String(), jen.Id("v").Add(v)).Index().Qual(kvPkg, "Dependency").Block(body...)
}

// conjunctionCode renders the conjunction of conds, one condition per line.
func conjunctionCode(conds []jen.Code) jen.Code {
	s := jen.Add(conds[0])
	for _, c := range conds[1:] {
		s = s.Op("&&").Line().Add(c)
	}
	return s
}

func (e *emitter) emitDerived(v jen.Code) {
	m := e.m
	var body []jen.Code
	body = append(body, jen.Var().Id("out").Index().Qual(kvPkg, "Derived"))
	for _, d := range m.derived {
		build := jen.Id(unexported(d.goName + "Key")).CallFunc(func(g *jen.Group) {
			for _, h := range d.key.holders {
				g.Add(rawValue(d, h, jen.Id("v"), jen.Id("e"), false))
			}
		})
		var value jen.Code = jen.Id("e")
		if d.elem == nil {
			value = jen.Qual(wrappersPkg, wrapperFunc(d.field.Desc.Kind())).Call(jen.Id("e"))
		}
		add := jen.Id("out").Op("=").Append(jen.Id("out"), jen.Qual(kvPkg, "Derived").Values(jen.Dict{jen.Id("Key"): build, jen.Id("Value"): value}))
		x := jen.Id("v").Dot("Get" + d.field.GoName).Call()
		switch {
		case d.field.Desc.IsList():
			body = append(body, jen.For(jen.List(jen.Id("_"), jen.Id("e")).Op(":=").Range().Add(x)).Block(add))
		case d.elem != nil:
			body = append(body, jen.If(jen.Id("e").Op(":=").Add(x), jen.Id("e").Op("!=").Nil()).Block(add))
		default:
			body = append(body, jen.If(jen.Id("e").Op(":=").Add(x), nonZero(d.field.Desc.Kind(), jen.Id("e"))).Block(add))
		}
	}
	body = append(body, jen.Return(jen.Id("out")))
	e.doc("%s returns the values derived from a value of %s.", e.lid("Derived"), m.name)
	e.f.Func().Id(e.lid("Derived")).Params(jen.Id("_").String(), jen.Id("v").Add(v)).Index().Qual(kvPkg, "Derived").Block(body...)
}

func wrapperFunc(k protoreflect.Kind) string {
	switch wrapperName(k) {
	case "UInt32Value":
		return "UInt32"
	case "UInt64Value":
		return "UInt64"
	case "Int32Value":
		return "Int32"
	case "Int64Value":
		return "Int64"
	}
	return "String"
}

// compared lists the fields of msg that take part in comparisons: all but
// ignored ones and those that derive values.
func compared(msg *protogen.Message) []*protogen.Field {
	var out []*protogen.Field
	for _, f := range msg.Fields {
		o := fieldOptions(f)
		if o.GetCompare().GetIgnore() || o.GetDerive() != nil {
			continue
		}
		out = append(out, f)
	}
	return out
}

func recreateFields(msg *protogen.Message) []*protogen.Field {
	var out []*protogen.Field
	for _, f := range msg.Fields {
		if fieldOptions(f).GetRecreate() {
			out = append(out, f)
		}
	}
	return out
}

func (e *emitter) emitEqual(msg *protogen.Message, v jen.Code) {
	conds := e.comparedConds(msg, nil)
	result := jen.True()
	if len(conds) > 0 {
		result = jen.Add(conjunctionCode(conds))
	}
	e.doc("%s compares two values of %s as the southbound sees them.", e.lid("Equal"), e.m.name)
	e.f.Func().Id(e.lid("Equal")).Params(jen.List(jen.Id("a"), jen.Id("b")).Add(v)).Bool().Block(jen.Return(result))
	for _, f := range compared(msg) {
		if withOptions(f) {
			e.emitNestedEqual([]*protogen.Field{f})
		}
	}
}

// fieldEqual renders the comparison of field f of the messages x and y.
func fieldEqual(f *protogen.Field, x, y *jen.Statement) jen.Code {
	o := fieldOptions(f).GetCompare()
	a := x.Clone().Dot("Get" + f.GoName).Call()
	b := y.Clone().Dot("Get" + f.GoName).Call()
	protoEq := func(t jen.Code) jen.Code {
		return jen.Func().Params(jen.List(jen.Id("x"), jen.Id("y")).Add(t)).Bool().Block(jen.Return(jen.Qual(protoPkg, "Equal").Call(jen.Id("x"), jen.Id("y"))))
	}
	switch {
	case f.Desc.IsMap():
		val := f.Message.Fields[1]
		switch {
		case val.Message != nil:
			return jen.Qual("maps", "EqualFunc").Call(a, b, protoEq(jen.Op("*").Qual(string(val.Message.GoIdent.GoImportPath), val.Message.GoIdent.GoName)))
		case val.Desc.Kind() == protoreflect.BytesKind:
			return jen.Qual("maps", "EqualFunc").Call(a, b, jen.Qual("bytes", "Equal"))
		}
		return jen.Qual("maps", "Equal").Call(a, b)
	case f.Desc.IsList() && f.Message != nil:
		eq := protoEq(jen.Op("*").Qual(string(f.Message.GoIdent.GoImportPath), f.Message.GoIdent.GoName))
		if o.GetUnordered() {
			return jen.Qual(kvimplPkg, "EqualUnorderedFunc").Call(a, b, eq)
		}
		return jen.Qual("slices", "EqualFunc").Call(a, b, eq)
	case f.Desc.IsList() && f.Desc.Kind() == protoreflect.BytesKind:
		return jen.Qual("slices", "EqualFunc").Call(a, b, jen.Qual("bytes", "Equal"))
	case f.Desc.IsList() && formatted(f):
		// Compared in key form: 2001:DB8::1 and 2001:db8::1 are equal.
		fm, _ := fieldFormat(f)
		return jen.Qual(kvimplPkg, "EqualFormattedSlices").Call(jen.Qual(kvPkg, formatConst(fm)), a, b, jen.Lit(o.GetUnordered()))
	case f.Desc.IsList():
		if o.GetUnordered() {
			return jen.Qual(kvimplPkg, "EqualUnordered").Call(a, b)
		}
		return jen.Qual("slices", "Equal").Call(a, b)
	case f.Message != nil && o.GetUnsetEqualsEmpty():
		empty := jen.Op("&").Qual(string(f.Message.GoIdent.GoImportPath), f.Message.GoIdent.GoName).Values()
		return jen.Qual(protoPkg, "Equal").Call(jen.Qual("cmp", "Or").Call(a, empty), jen.Qual("cmp", "Or").Call(b, empty))
	case f.Message != nil:
		return jen.Qual(protoPkg, "Equal").Call(a, b)
	case f.Desc.Kind() == protoreflect.BytesKind:
		return jen.Qual("bytes", "Equal").Call(a, b)
	}
	if formatted(f) {
		fm, _ := fieldFormat(f)
		return jen.Qual(kvimplPkg, "EqualFormatted").Call(jen.Qual(kvPkg, formatConst(fm)), a, b)
	}
	if r := o.GetResolution(); r > 1 {
		// The southbound keeps whole units of r (checkFields).
		return jen.Add(a).Op("/").Lit(int(r)).Op("==").Add(b).Op("/").Lit(int(r))
	}
	if d := o.GetZeroEquals(); d != "" {
		def := zeroEqualsLiteral(f, d)
		return jen.Qual(kvimplPkg, "OrDefault").Call(a, def).Op("==").Qual(kvimplPkg, "OrDefault").Call(b, def)
	}
	return jen.Add(a).Op("==").Add(b)
}

// formatted reports whether f is a string field with a format other than
// a name: its values have a canonical (key) form.
func formatted(f *protogen.Field) bool {
	if f.Desc.Kind() != protoreflect.StringKind || f.Desc.IsMap() {
		return false
	}
	fm, err := fieldFormat(f)
	return err == nil && fm != kv.FormatName
}

// zeroEqualsLiteral renders the default of a zero_equals hint (checked when
// the models are collected).
func zeroEqualsLiteral(f *protogen.Field, text string) jen.Code {
	switch f.Desc.Kind() {
	case protoreflect.StringKind:
		return jen.Lit(text)
	case protoreflect.EnumKind:
		for _, v := range f.Enum.Values {
			if string(v.Desc.Name()) == text {
				return jen.Qual(string(v.GoIdent.GoImportPath), v.GoIdent.GoName)
			}
		}
	}
	return jen.Id(text) // a number or bool, as an untyped constant
}

// checkZeroEquals reports a zero_equals hint that does not fit its field.
func checkZeroEquals(f *protogen.Field, text string) string {
	switch {
	case f.Desc.IsList() || f.Desc.IsMap() || f.Message != nil || f.Desc.Kind() == protoreflect.BytesKind:
		return "zero_equals applies to scalar fields only"
	case f.Desc.Kind() == protoreflect.BoolKind:
		if text != "true" {
			return fmt.Sprintf("zero_equals %q of a bool field can only be true", text)
		}
	case f.Desc.Kind() == protoreflect.EnumKind:
		for _, v := range f.Enum.Values {
			if string(v.Desc.Name()) == text {
				return ""
			}
		}
		return fmt.Sprintf("zero_equals %q is not a value of %s", text, f.Enum.Desc.FullName())
	case f.Desc.Kind() == protoreflect.FloatKind || f.Desc.Kind() == protoreflect.DoubleKind:
		bits := 64
		if f.Desc.Kind() == protoreflect.FloatKind {
			bits = 32
		}
		if x, err := strconv.ParseFloat(text, bits); err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return fmt.Sprintf("zero_equals %q is not a finite %s", text, f.Desc.Kind())
		}
	case isIntegerKind(f.Desc.Kind()):
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != text || !fitsKind(n, f.Desc.Kind()) {
			return fmt.Sprintf("zero_equals %q is not a valid %s", text, f.Desc.Kind())
		}
	}
	return ""
}

// validateOf returns the validate options of a field.
func validateOf(f *protogen.Field) *kvdescriptorv1.Validate { return fieldOptions(f).GetValidate() }
