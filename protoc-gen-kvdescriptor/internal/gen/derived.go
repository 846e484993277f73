package gen

import (
	"slices"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kvdescriptor/kvdescriptor/options/kvdescriptorv1"
)

// newDerived builds the derived model of field f of base model m.
func newDerived(m *model, f *protogen.Field, o *kvdescriptorv1.Derive, byName map[protoreflect.FullName]*model) (*model, []error) {
	pos := locate(m.file.Desc, optionPath(f.Location.Path, 8, 3), "option (kvdescriptor.v1.field).derive")
	switch {
	case f.Desc.IsMap():
		return nil, []error{errorf(pos, "%s is a map; only a message or scalar field, or a repeated one, can derive values", f.Desc.Name())}
	case f.Message == nil && f.Desc.Kind() != protoreflect.StringKind && !isIntegerKind(f.Desc.Kind()):
		return nil, []error{errorf(pos, "%s is %s; derived values come from message, string or integer fields", f.Desc.Name(), f.Desc.Kind())}
	case f.Message != nil && modelOptions(f.Message) != nil:
		return nil, []error{errorf(pos, "%s holds %s, which is a model itself; a derived value's element cannot be a model", f.Desc.Name(), f.Message.Desc.FullName())}
	}
	d := &model{
		file: m.file, msg: m.msg, base: m, field: f, elem: f.Message, deriveOpt: o,
		name:   string(m.msg.Desc.FullName()) + "." + string(f.Desc.Name()),
		goName: m.goName + f.GoName,
		meta:   o.GetWithMetadata(),
		drift:  m.drift,
		pos:    pos,
	}
	if o.GetName() != "" {
		d.name = o.GetName()
	}
	keyPos := locate(m.file.Desc, optionPath(f.Location.Path, 8, 3, 1), "option (kvdescriptor.v1.field).derive.key")
	key, err := parseTemplate(o.GetKey(), scope{msg: m.msg, elem: f})
	if err == nil {
		err = checkKeySpace(key)
	}
	if err != nil {
		return nil, []error{errorf(keyPos, "%v", err)}
	}
	if why := key.parsed.Ambiguity(); why != "" {
		return nil, []error{errorf(keyPos, "ambiguous key template %q: %s", key.text, why)}
	}
	if err := checkKeyFields(key); err != nil {
		return nil, []error{errorf(keyPos, "%v", err)}
	}
	hasElem := false
	for _, h := range key.holders {
		hasElem = hasElem || h.elem
	}
	if !hasElem && f.Desc.IsList() {
		return nil, []error{errorf(keyPos, "the key %q has no placeholder of the element (%s...): every element would get the same key", key.text, f.Desc.Name())}
	}
	d.key = key
	// Dependencies may use the element's fields and the base fields that
	// the derived key carries (the only base fields a derived value's
	// descriptor can see).
	carried := map[string]bool{}
	for _, h := range key.holders {
		if !h.elem {
			carried[h.path] = true
		}
	}
	var errs []error
	// A derived value's Retrieve runs after its base's, which tells what
	// exists; retrieve_after adds more.
	d.after = []string{m.name}
	for i, name := range o.GetRetrieveAfter() {
		t := byName[protoreflect.FullName(name)]
		if t == nil {
			errs = append(errs, errorf(locate(m.file.Desc, optionPath(f.Location.Path, 8, 3, 5, int32(i)), "option (kvdescriptor.v1.field).derive.retrieve_after"),
				"%q is not a model (an annotated message)", name))
			continue
		}
		if t != m && !slices.Contains(d.after, t.name) {
			d.after = append(d.after, t.name)
		}
	}
	for i, dep := range o.GetDependencies() {
		dpos := locate(m.file.Desc, optionPath(f.Location.Path, 8, 3, 3, int32(i)), "option (kvdescriptor.v1.field).derive.dependencies")
		td, err := parseDependency(dep, scope{msg: m.msg, elem: f, only: carried})
		if err != nil {
			errs = append(errs, errorf(dpos, "%v", err))
			continue
		}
		td.pos = dpos
		d.deps = append(d.deps, td)
	}
	if f.Message != nil {
		refs, rerrs := resolveRefs(f.Message, byName)
		d.refs, errs = refs, append(errs, rerrs...)
		errs = append(errs, checkFields(f.Message)...)
		errs = append(errs, checkNested(d.name, f.Message, false)...)
	}
	return d, errs
}
