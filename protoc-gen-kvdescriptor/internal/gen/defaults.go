package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Defaults of the schema.
//
// A field whose compare.zero_equals names a default (an Interface's mtu:
// "1500") gets, next to the message's other generated code, a typed
// constant holding that default and an accessor that handlers read instead
// of writing the default a second time:
//
//	const InterfaceMtuDefault uint32 = 1500
//	func (x *Interface) EffectiveMtu() uint32
//
// The accessor returns the field, or the default when the field is zero,
// and is nil-safe as protoc-gen-go's getters are; it is the value that the
// generated comparator compares. Every message of a generated file gets
// them, messages nested in values and elements of derived values included:
// a method can only be declared in the message's own package.

// defaultField is a field with a zero_equals default.
type defaultField struct {
	msg  *protogen.Message
	f    *protogen.Field
	text string // the zero_equals text, checked by checkZeroEquals
}

// constName is the name of the constant of the default:
// <Message><Field>Default (InterfaceMtuDefault, Interface_VxlanDstPortDefault).
func (d defaultField) constName() string {
	return d.msg.GoIdent.GoName + d.f.GoName + "Default"
}

// methodName is the name of the accessor: Effective<Field> (EffectiveMtu).
func (d defaultField) methodName() string { return "Effective" + d.f.GoName }

// fileDefaults lists the fields of the messages of f that have a
// zero_equals default that fits them, in declaration order. A default that
// does not fit is reported by checkDefaults, never emitted.
func fileDefaults(f *protogen.File) []defaultField {
	var out []defaultField
	forEachMessage(f.Messages, func(msg *protogen.Message) {
		for _, fl := range msg.Fields {
			text := fieldOptions(fl).GetCompare().GetZeroEquals()
			if text == "" || checkZeroEquals(fl, text) != "" {
				continue
			}
			out = append(out, defaultField{msg: msg, f: fl, text: text})
		}
	})
	return out
}

// defaultType is the Go type of a field with a default (a scalar: see
// checkZeroEquals).
func defaultType(f *protogen.Field) jen.Code {
	switch k := f.Desc.Kind(); {
	case k == protoreflect.EnumKind:
		return jen.Qual(string(f.Enum.GoIdent.GoImportPath), f.Enum.GoIdent.GoName)
	case k == protoreflect.StringKind:
		return jen.String()
	case k == protoreflect.BoolKind:
		return jen.Bool()
	case k == protoreflect.FloatKind:
		return jen.Float32()
	case k == protoreflect.DoubleKind:
		return jen.Float64()
	case isIntegerKind(k):
		return goIntType(k)
	}
	panic(fmt.Sprintf("no default for a field of kind %s", f.Desc.Kind()))
}

// emitDefaults writes the constants and accessors of the defaults of the
// messages of file, after its models.
func emitDefaults(out *jen.File, file *protogen.File) {
	for _, d := range fileDefaults(file) {
		out.Line()
		comment(out, fmt.Sprintf("%s is the compare.zero_equals of %s: what a zero value stands for.", d.constName(), d.f.Desc.FullName()))
		out.Const().Id(d.constName()).Add(defaultType(d.f)).Op("=").Add(zeroEqualsLiteral(d.f, d.text))
		out.Line()
		comment(out, fmt.Sprintf("%s returns the %s of x, or %s when it is zero: the value the generated comparison compares. Like the getters, it is nil-safe.", d.methodName(), d.f.Desc.Name(), d.constName()))
		out.Func().Params(jen.Id("x").Op("*").Id(d.msg.GoIdent.GoName)).Id(d.methodName()).Params().Add(defaultType(d.f)).Block(
			jen.If(jen.Id("v").Op(":=").Id("x").Dot("Get"+d.f.GoName).Call(), isSet(d.f, jen.Id("v"))).Block(
				jen.Return(jen.Id("v")),
			),
			jen.Return(jen.Id(d.constName())),
		)
	}
}

// hasDefaults reports whether a generated file would hold defaults, so
// that a file with no models but with defaults gets its .kv.go.
func hasDefaults(f *protogen.File) bool { return len(fileDefaults(f)) > 0 || len(fileFollows(f)) > 0 }

// checkDefaults reports the zero_equals defaults of the messages of the
// files to generate that do not fit their fields (those of the messages of
// models are reported by checkFields too; the duplicates are dropped), and
// the generated identifiers of the defaults that collide: a constant with
// a package-level identifier of ids, or an accessor with a field of its
// message. It adds the constants to ids, so that the models' identifiers
// are checked against them.
func checkDefaults(files []*protogen.File, ids func(protogen.GoImportPath) map[string]identOwner) []error {
	var errs []error
	for _, file := range files {
		if !file.Generate {
			continue
		}
		forEachMessage(file.Messages, func(msg *protogen.Message) {
			for _, f := range msg.Fields {
				text := fieldOptions(f).GetCompare().GetZeroEquals()
				if text == "" {
					continue
				}
				if why := checkZeroEquals(f, text); why != "" {
					errs = append(errs, errorf(zeroEqualsPos(f), "%s: %s", f.Desc.FullName(), why))
				}
			}
		})
		pkg := ids(file.GoImportPath)
		for _, d := range fileDefaults(file) {
			pos := zeroEqualsPos(d.f)
			if o, taken := pkg[d.constName()]; taken {
				errs = append(errs, errorf(pos, "the generated Go identifier %s of the default of %s is also declared for %s; rename one of them", d.constName(), d.f.Desc.FullName(), o.describe()))
			} else {
				pkg[d.constName()] = identOwner{what: "the default of " + string(d.f.Desc.FullName())}
			}
			for _, other := range d.msg.Fields {
				name, what := other.GoName, "field "+string(other.Desc.FullName())
				if o := other.Oneof; o != nil && !o.Desc.IsSynthetic() {
					name, what = o.GoName, "oneof "+string(o.Desc.FullName())
				}
				if name == d.methodName() {
					errs = append(errs, errorf(pos, "the generated method %s.%s of the default of %s is also the Go name of the %s; rename one of them", d.msg.GoIdent.GoName, name, d.f.Desc.FullName(), what))
				}
			}
		}
	}
	return errs
}

// zeroEqualsPos is the place of the zero_equals option of f.
func zeroEqualsPos(f *protogen.Field) position {
	return locate(f.Desc.ParentFile(), optionPath(f.Location.Path, 8, 5, 2), "option (kvdescriptor.v1.field).compare.zero_equals")
}

// describe names the owner of an identifier in errors.
func (o identOwner) describe() string {
	if o.m != nil {
		return fmt.Sprintf("%s (%s)", o.m.what(), o.m.pos)
	}
	return o.what
}
