package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Fields that follow another while unset.
//
// A field with presence (proto3 optional) whose unset_follows names a
// sibling stands for that sibling's value while unset, and for its own
// once set, zero included. Like a zero_equals default, it gets an
// accessor in its message's package that handlers read and the generated
// comparison compares:
//
//	func (x *Interface) EffectiveIpv6Vrf() uint32
//
// returns *x.Ipv6Vrf when set, else x.GetVrf() (or x.EffectiveVrf() when
// vrf has a default of its own), nil-safe as the getters are.

// followField is a field with unset_follows.
type followField struct {
	msg      *protogen.Message
	f, other *protogen.Field
}

// methodName is the name of the accessor: Effective<Field>.
func (d followField) methodName() string { return "Effective" + d.f.GoName }

// fileFollows lists the fields of the messages of f whose unset_follows
// fits them (checkFollows reports the others), in declaration order.
func fileFollows(f *protogen.File) []followField {
	var out []followField
	forEachMessage(f.Messages, func(msg *protogen.Message) {
		for _, fl := range msg.Fields {
			if name := fieldOptions(fl).GetUnsetFollows(); name != "" && checkFollow(msg, fl, name) == "" {
				out = append(out, followField{msg: msg, f: fl, other: elemField(msg, name)})
			}
		}
	})
	return out
}

// follows reports whether field f follows another while unset (and its
// unset_follows fits it): it compares through its accessor.
func follows(f *protogen.Field) bool {
	name := fieldOptions(f).GetUnsetFollows()
	msg := f.Parent
	return name != "" && msg != nil && checkFollow(msg, f, name) == ""
}

// checkFollow reports an unset_follows of field f of msg that does not fit.
func checkFollow(msg *protogen.Message, f *protogen.Field, name string) string {
	other := elemField(msg, name)
	scalar := func(g *protogen.Field) bool {
		return !g.Desc.IsList() && !g.Desc.IsMap() && g.Message == nil && g.Desc.Kind() != protoreflect.BytesKind
	}
	switch {
	case !scalar(f) || !f.Desc.HasPresence():
		return "unset_follows applies to a single scalar or enum field with presence (declared proto3 optional), so that unset differs from zero"
	case f.Oneof != nil && !f.Oneof.Desc.IsSynthetic():
		return "unset_follows does not apply to a member of a oneof"
	case fieldOptions(f).GetCompare().GetZeroEquals() != "":
		return "unset_follows and compare.zero_equals both say what unset stands for; keep one"
	case other == nil:
		return fmt.Sprintf("unset_follows: %q is not a field of %s", name, msg.Desc.FullName())
	case other == f:
		return "unset_follows names the field itself"
	case !scalar(other) || other.Desc.Kind() != f.Desc.Kind() || (f.Enum != nil && other.Enum != f.Enum):
		return fmt.Sprintf("unset_follows: %s is not a single field of the same type (%s)", other.Desc.Name(), typeName(f))
	case fieldOptions(other).GetUnsetFollows() != "":
		return fmt.Sprintf("unset_follows: %s follows another field itself; name the field it follows", other.Desc.Name())
	}
	return ""
}

// emitFollows writes the accessors of the fields of the messages of file
// that follow another.
func emitFollows(out *jen.File, file *protogen.File) {
	for _, d := range fileFollows(file) {
		get := jen.Id("x").Dot("Get" + d.other.GoName).Call()
		if fieldOptions(d.other).GetCompare().GetZeroEquals() != "" && checkZeroEquals(d.other, fieldOptions(d.other).GetCompare().GetZeroEquals()) == "" {
			get = jen.Id("x").Dot(defaultField{f: d.other}.methodName()).Call()
		}
		out.Line()
		comment(out, fmt.Sprintf("%s returns the %s of x when it is set (zero included), else its %s (unset_follows): the value the generated comparison compares. Like the getters, it is nil-safe.",
			d.methodName(), d.f.Desc.Name(), d.other.Desc.Name()))
		out.Func().Params(jen.Id("x").Op("*").Id(d.msg.GoIdent.GoName)).Id(d.methodName()).Params().Add(defaultType(d.f)).Block(
			jen.If(jen.Id("x").Op("!=").Nil().Op("&&").Id("x").Dot(d.f.GoName).Op("!=").Nil()).Block(
				jen.Return(jen.Op("*").Id("x").Dot(d.f.GoName)),
			),
			jen.Return(get),
		)
	}
}

// checkFollows reports the unset_follows of the messages of the files to
// generate that do not fit their fields, and accessors whose names are
// the Go names of fields of their message.
func checkFollows(files []*protogen.File) []error {
	var errs []error
	for _, file := range files {
		if !file.Generate {
			continue
		}
		forEachMessage(file.Messages, func(msg *protogen.Message) {
			for _, f := range msg.Fields {
				name := fieldOptions(f).GetUnsetFollows()
				if name == "" {
					continue
				}
				pos := locate(f.Desc.ParentFile(), optionPath(f.Location.Path, 8, 8), "option (kvdescriptor.v1.field).unset_follows")
				if why := checkFollow(msg, f, name); why != "" {
					errs = append(errs, errorf(pos, "%s: %s", f.Desc.FullName(), why))
					continue
				}
				method := followField{f: f}.methodName()
				for _, other := range msg.Fields {
					if other.GoName == method || (other.Oneof != nil && !other.Oneof.Desc.IsSynthetic() && other.Oneof.GoName == method) {
						errs = append(errs, errorf(pos, "the generated method %s.%s of %s is also a Go name of %s; rename one of them", msg.GoIdent.GoName, method, f.Desc.FullName(), other.Desc.FullName()))
					}
				}
			}
		})
	}
	return errs
}
