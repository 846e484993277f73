package gen

import (
	"github.com/dave/jennifer/jen"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Sensitive fields.
//
// A field marked sensitive holds a secret. Every message whose value
// holds one (itself, or through its singular message fields and the
// elements of its repeated message fields, at any depth) gets a Redacted
// method (kv.Redactor) in the file that defines it, listing the paths of
// those fields; the runtime shows values through kv.Redact. A secret must
// not reach a key (keys are shown everywhere) nor anything that prints
// field values, which the checks here refuse.

// sensitivePaths lists the paths of the sensitive fields of msg, through
// its singular and repeated message fields (not maps), stopping where a
// message recurs.
func sensitivePaths(msg *protogen.Message) []string {
	var out []string
	var walk func(msg *protogen.Message, prefix string, on []*protogen.Message)
	walk = func(msg *protogen.Message, prefix string, on []*protogen.Message) {
		for _, o := range on {
			if o == msg {
				return
			}
		}
		on = append(on, msg)
		for _, f := range msg.Fields {
			p := prefix + string(f.Desc.Name())
			switch {
			case fieldOptions(f).GetSensitive():
				out = append(out, p)
			case f.Message != nil && !f.Desc.IsMap():
				walk(f.Message, p+".", on)
			}
		}
	}
	walk(msg, "", nil)
	return out
}

// checkSensitiveField reports a sensitive option on a field it cannot
// apply to: not a string or bytes field, or with an option that would put
// or print its value (format, ref, derive, validate.unique).
func checkSensitiveField(f *protogen.Field) []error {
	o := fieldOptions(f)
	if !o.GetSensitive() {
		return nil
	}
	pos := fieldOptionPos(f, "sensitive", 7)
	var errs []error
	if k := f.Desc.Kind(); f.Desc.IsMap() || k != protoreflect.StringKind && k != protoreflect.BytesKind {
		errs = append(errs, errorf(pos, "%s: sensitive applies to string and bytes fields, %s is %s", f.Desc.FullName(), f.Desc.Name(), kindName(f)))
	}
	for _, c := range []struct {
		name string
		set  bool
	}{
		{"format", o.GetFormat() != 0},
		{"ref", o.GetRef() != nil},
		{"derive", o.GetDerive() != nil},
		{"validate.unique", o.GetValidate().GetUnique()},
	} {
		if c.set {
			errs = append(errs, errorf(pos, "%s: a sensitive field cannot have %s (it would show the secret in keys or errors)", f.Desc.FullName(), c.name))
		}
	}
	if g := f.Parent; g != nil {
		for _, other := range g.Fields {
			if other.GoName == "Redacted" {
				errs = append(errs, errorf(pos, "%s: field %s is named like the Redacted method that a message with sensitive fields gets", f.Desc.FullName(), other.Desc.Name()))
			}
		}
	}
	return errs
}

// checkSensitiveKeys reports the placeholders of m's templates (key,
// label, dependencies) that name a sensitive field: the secret would be
// in a key.
func checkSensitiveKeys(m *model) []error {
	var errs []error
	check := func(t *keyTemplate, pos position, what string) {
		if t == nil {
			return
		}
		for _, h := range t.holders {
			errs = append(errs, sensitiveHolder(h, pos, what)...)
		}
	}
	check(m.key, m.keyPos(), "key")
	if m.label != nil {
		errs = append(errs, sensitiveHolder(m.label, m.pos, "label")...)
	}
	for _, d := range m.deps {
		check(d.key, d.pos, "dependency "+d.label)
		for _, p := range d.prefixes {
			check(p, d.pos, "dependency "+d.label)
		}
		if d.containsHolder != nil {
			errs = append(errs, sensitiveHolder(d.containsHolder, d.pos, "dependency "+d.label)...)
		}
	}
	return errs
}

func sensitiveHolder(h *placeholder, pos position, what string) []error {
	for _, f := range h.fields {
		if fieldOptions(f).GetSensitive() {
			return []error{errorf(pos, "the %s names {%s}, a sensitive field: a secret cannot be in a key", what, h.path)}
		}
	}
	return nil
}

// hasSensitive reports whether a message defined in f has sensitive
// fields (itself or nested), so that f gets a .kv.go.
func hasSensitive(f *protogen.File) bool {
	found := false
	forEachMessage(f.Messages, func(m *protogen.Message) {
		found = found || len(sensitivePaths(m)) > 0
	})
	return found
}

// emitRedacted emits the Redacted method of each message of f that holds
// sensitive fields.
func emitRedacted(jf *jen.File, f *protogen.File) {
	forEachMessage(f.Messages, func(m *protogen.Message) {
		paths := sensitivePaths(m)
		if len(paths) == 0 {
			return
		}
		jf.Line()
		comment(jf, "Redacted returns x as it may be shown: x, or when one of its sensitive fields ("+joinComma(paths)+
			") is set, a copy with those fields replaced by kv.RedactedText. It implements kv.Redactor.")
		args := []jen.Code{jen.Id("x")}
		for _, p := range paths {
			args = append(args, jen.Lit(p))
		}
		jf.Func().Params(jen.Id("x").Op("*").Id(m.GoIdent.GoName)).Id("Redacted").Params().Qual(protoPkg, "Message").Block(
			jen.If(jen.Id("x").Op("==").Nil()).Block(jen.Return(jen.Id("x"))),
			jen.Return(jen.Qual(kvPkg, "RedactPaths").Call(args...)),
		)
	})
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}
