package gen

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kvdescriptor/kvdescriptor/options/kvdescriptorv1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
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
		return locate(m.file.Desc, optionPath(m.field.Location.Path, 8, 3, 1), "option (kvdescriptor.v1.field).derive.key")
	}
	return locate(m.file.Desc, optionPath(m.msg.Location.Path, 7, 1), "option (kvdescriptor.v1.model).key")
}

// checkKeyFields reports two placeholders of a model's key that would
// become one field of its typed key: two paths with one Go name
// ({peer.name} and {peer_name}). The same field twice is a grammar error,
// which kv.ParseKeyTemplate reports.
func checkKeyFields(t *keyTemplate) error {
	for i, a := range t.holders {
		for _, b := range t.holders[:i] {
			if a.goName == b.goName {
				return fmt.Errorf("placeholders {%s} and {%s} of the key %q would both be the key field %s", b.path, a.path, t.text, a.goName)
			}
		}
	}
	return nil
}

// checkNames reports two models with one descriptor name (the scheduler
// knows descriptors by name) and generated Go identifiers that collide in
// a Go package, with each other's or with protoc-gen-go's.
func checkNames(files []*protogen.File, models []*model) []error {
	var errs []error
	byName := map[string]*model{}
	for _, m := range models {
		if o := byName[m.name]; o != nil {
			errs = append(errs, errorf(m.pos, "descriptor name %q is also the name of %s (%s)", m.name, o.what(), o.pos))
			continue
		}
		byName[m.name] = m
	}

	idents := map[protogen.GoImportPath]map[string]identOwner{}
	pkg := func(p protogen.GoImportPath) map[string]identOwner {
		if idents[p] == nil {
			idents[p] = map[string]identOwner{}
		}
		return idents[p]
	}
	for _, f := range files {
		ids := pkg(f.GoImportPath)
		forEachMessage(f.Messages, func(msg *protogen.Message) {
			ids[msg.GoIdent.GoName] = identOwner{what: "message " + string(msg.Desc.FullName())}
			for _, fl := range msg.Fields {
				if fl.Oneof != nil && !fl.Oneof.Desc.IsSynthetic() {
					ids[fl.GoIdent.GoName] = identOwner{what: "oneof field " + string(fl.Desc.FullName())}
				}
			}
			for _, e := range msg.Enums {
				addEnum(ids, e)
			}
		})
		for _, e := range f.Enums {
			addEnum(ids, e)
		}
	}
	errs = append(errs, checkDefaults(files, pkg)...)
	errs = append(errs, checkFollows(files)...)
	reported := map[[2]string]bool{}
	for _, m := range models {
		ids := pkg(m.file.GoImportPath)
		for _, id := range m.goIdents() {
			o, taken := ids[id]
			if !taken {
				ids[id] = identOwner{m: m}
				continue
			}
			other := o.what
			if o.m != nil {
				other = fmt.Sprintf("%s (%s)", o.m.what(), o.m.pos)
			}
			if pair := [2]string{m.name, other}; !reported[pair] {
				reported[pair] = true
				errs = append(errs, errorf(m.pos, "the generated Go identifier %s of %s is also declared for %s; rename one of them", id, m.what(), other))
			}
		}
	}
	return errs
}

// identOwner says who declares a Go identifier: a model, or protoc-gen-go
// (what names the declaring element).
type identOwner struct {
	m    *model
	what string
}

// addEnum adds the identifiers that protoc-gen-go declares for an enum.
func addEnum(ids map[string]identOwner, e *protogen.Enum) {
	what := identOwner{what: "enum " + string(e.Desc.FullName())}
	ids[e.GoIdent.GoName] = what
	ids[e.GoIdent.GoName+"_name"] = what
	ids[e.GoIdent.GoName+"_value"] = what
	for _, v := range e.Values {
		ids[v.GoIdent.GoName] = identOwner{what: "enum value " + string(v.Desc.FullName())}
	}
}

// what names the model in errors: its message, or the field its values
// are derived from.
func (m *model) what() string {
	if m.base != nil {
		return "the values derived from " + string(m.field.Desc.FullName())
	}
	return string(m.msg.Desc.FullName())
}

// goIdents lists the package-level identifiers that the generated code of
// the model declares (see emit.go and spec.go).
func (m *model) goIdents() []string {
	g := m.goName
	l := unexported(g)
	ids := []string{
		g + "ModelName", g + "KeyTemplate", g + "KeyPrefix", l + "KeyTemplate",
		g + "Key", l + "Key", "Parse" + g + "Key",
		l + "Label", l + "Dependencies", l + "Derived", l + "Equal", l + "NeedsRecreate", l + "Validate",
		g + "Spec", g + "Handler", g + "Updater", g + "Retriever", g + "Validator", g + "Batcher", g + "BatchOp", g + "Item", "New" + g + "Descriptor",
	}
	if m.base == nil {
		ids = append(ids, g+"KeyFor")
	}
	if msg := m.valueMsg(); msg != nil {
		e := &emitter{m: m}
		var walk func(msg *protogen.Message, path []*protogen.Field)
		walk = func(msg *protogen.Message, path []*protogen.Field) {
			for _, f := range compared(msg) {
				if withOptions(f) {
					p := append(append([]*protogen.Field(nil), path...), f)
					ids = append(ids, e.nestedEqualName(p))
					walk(f.Message, p)
				}
			}
		}
		walk(msg, nil)
	}
	return ids
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

// checkFields reports field annotations that do not fit their fields:
// formats (of every field, not only those in keys), comparison hints and
// validation options, which would otherwise be silently ignored or make
// generated code that does not compile.
func checkFields(msg *protogen.Message) []error {
	var errs []error
	for _, f := range msg.Fields {
		o := fieldOptions(f)
		errs = append(errs, checkSensitiveField(f)...)
		at := func(what string, sub ...int32) position {
			return locate(msg.Desc.ParentFile(), optionPath(f.Location.Path, 8, sub...), "option (kvdescriptor.v1.field)."+what)
		}
		if o.GetFormat() != kvdescriptorv1.Format_FORMAT_UNSPECIFIED {
			if _, err := fieldFormat(f); err != nil || f.Desc.IsMap() {
				why := "a map cannot have a format"
				if err != nil {
					why = err.Error()
				}
				errs = append(errs, errorf(at("format", 1), "%s: %s", f.Desc.FullName(), why))
			}
		}
		c := o.GetCompare()
		if d := c.GetZeroEquals(); d != "" {
			if why := checkZeroEquals(f, d); why != "" {
				errs = append(errs, errorf(at("compare.zero_equals", 5, 2), "%s: %s", f.Desc.FullName(), why))
			}
		}
		if r := c.GetResolution(); r != 0 {
			switch {
			case f.Desc.IsList() || !isIntegerKind(f.Desc.Kind()) || isSignedKind(f.Desc.Kind()):
				errs = append(errs, errorf(at("compare.resolution", 5, 4), "%s: resolution applies to single unsigned integer fields", f.Desc.FullName()))
			case r < 2:
				errs = append(errs, errorf(at("compare.resolution", 5, 4), "%s: resolution %d: at least 2 (1 compares as without it)", f.Desc.FullName(), r))
			case c.GetZeroEquals() != "":
				errs = append(errs, errorf(at("compare.resolution", 5, 4), "%s: resolution and zero_equals together: the default's unit is ambiguous", f.Desc.FullName()))
			}
		}
		if c.GetUnsetEqualsEmpty() && (f.Message == nil || f.Desc.IsList() || f.Desc.IsMap()) {
			errs = append(errs, errorf(at("compare.unset_equals_empty", 5, 5), "%s: unset_equals_empty applies to singular message fields", f.Desc.FullName()))
		}
		if c.GetUnordered() && (!f.Desc.IsList() || f.Desc.Kind() == protoreflect.BytesKind) {
			errs = append(errs, errorf(at("compare.unordered", 5, 3), "%s: unordered applies to repeated fields (not bytes)", f.Desc.FullName()))
		}
		if other := o.GetSameFamilyAs(); other != "" {
			if why := sameFamilyFits(msg, f, other); why != "" {
				errs = append(errs, errorf(at("same_family_as", 9), "%s: same_family_as %s: %s", f.Desc.FullName(), other, why))
			}
		}
		v := o.GetValidate()
		if v.GetUnique() && (!f.Desc.IsList() || f.Message != nil || f.Desc.Kind() == protoreflect.BytesKind) {
			errs = append(errs, errorf(at("validate.unique", 6, 2), "%s: unique applies to repeated scalar fields (not bytes); for messages use unique_by", f.Desc.FullName()))
		}
		if v.GetHasMin() || v.GetHasMax() {
			switch {
			case f.Desc.IsList() || !isNumericKind(f.Desc.Kind()):
				errs = append(errs, errorf(at("validate", 6), "%s: min and max apply to single numeric fields", f.Desc.FullName()))
			case v.GetHasMin() && !fitsKind(v.GetMin(), f.Desc.Kind()):
				errs = append(errs, errorf(at("validate.min", 6, 4), "%s: min %d is out of the range of %s", f.Desc.FullName(), v.GetMin(), f.Desc.Kind()))
			case v.GetHasMax() && !fitsKind(v.GetMax(), f.Desc.Kind()):
				errs = append(errs, errorf(at("validate.max", 6, 6), "%s: max %d is out of the range of %s", f.Desc.FullName(), v.GetMax(), f.Desc.Kind()))
			}
		}
		if v.GetZeroAllowed() && !v.GetHasMin() && !v.GetHasMax() {
			errs = append(errs, errorf(at("validate.zero_allowed", 6, 12), "%s: zero_allowed applies with min or max (has_min, has_max)", f.Desc.FullName()))
		}
		if v.GetAllowUnknown() && (f.Enum == nil || f.Desc.IsMap()) {
			errs = append(errs, errorf(at("validate.allow_unknown", 6, 13), "%s: allow_unknown applies to enum fields", f.Desc.FullName()))
		}
		for _, c := range []struct {
			name string
			num  int32
			cond *kvdescriptorv1.Condition
		}{{"required_if", 9, v.GetRequiredIf()}, {"only_if", 10, v.GetOnlyIf()}} {
			if c.cond == nil {
				continue
			}
			if _, err := resolveCondition(msg, string(f.Desc.Name()), c.cond); err != nil {
				errs = append(errs, errorf(at("validate."+c.name, 6, c.num), "%s: %s: %v", f.Desc.FullName(), c.name, err))
			}
		}
		if other := v.GetNotEqualTo(); other != "" {
			pos := at("validate.not_equal_to", 6, 11)
			g := elemField(msg, other)
			switch {
			case g == nil:
				errs = append(errs, errorf(pos, "%s: not_equal_to: %q is not a field of %s", f.Desc.FullName(), other, msg.Desc.FullName()))
			case g == f:
				errs = append(errs, errorf(pos, "%s: not_equal_to names the field itself", f.Desc.FullName()))
			default:
				if why := notEqualFits(f, g); why != "" {
					errs = append(errs, errorf(pos, "%s: not_equal_to %s: %s", f.Desc.FullName(), other, why))
				}
			}
		}
		for _, sub := range []struct {
			name, field string
			num         int32
			fits        func(*protogen.Field) bool
			want        string
		}{
			{"at_most_one", v.GetAtMostOne(), 7, func(e *protogen.Field) bool {
				return !e.Desc.IsList() && e.Desc.Kind() == protoreflect.BoolKind
			}, "a bool field"},
			{"unique_by", v.GetUniqueBy(), 8, func(e *protogen.Field) bool {
				return !e.Desc.IsList() && e.Message == nil && e.Desc.Kind() != protoreflect.BytesKind
			}, "a single scalar field (not bytes)"},
		} {
			if sub.field == "" {
				continue
			}
			pos := at("validate."+sub.name, 6, sub.num)
			if !f.Desc.IsList() || f.Message == nil {
				errs = append(errs, errorf(pos, "%s: %s applies to repeated message fields", f.Desc.FullName(), sub.name))
				continue
			}
			e := elemField(f.Message, sub.field)
			switch {
			case e == nil:
				errs = append(errs, errorf(pos, "%s: %q is not a field of %s", f.Desc.FullName(), sub.field, f.Message.Desc.FullName()))
			case !sub.fits(e):
				errs = append(errs, errorf(pos, "%s: %s must name %s of %s, %s is %s", f.Desc.FullName(), sub.name, sub.want, f.Message.Desc.FullName(), sub.field, kindName(e)))
			}
		}
	}
	return errs
}

// fitsKind reports whether n is a value of a field of kind k (any number
// fits a float).
func fitsKind(n int64, k protoreflect.Kind) bool {
	switch k {
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return n >= 0 && n <= math.MaxUint32
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return n >= math.MinInt32 && n <= math.MaxInt32
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return n >= 0
	}
	return true
}

func isNumericKind(k protoreflect.Kind) bool {
	return isIntegerKind(k) || k == protoreflect.FloatKind || k == protoreflect.DoubleKind
}

// elemField returns the field of msg named name, or nil.
func elemField(msg *protogen.Message, name string) *protogen.Field {
	for _, f := range msg.Fields {
		if string(f.Desc.Name()) == name {
			return f
		}
	}
	return nil
}

// notEqualFits tells why fields f and g cannot be compared by not_equal_to
// ("" when they can): both single scalar or enum fields (not bytes) of one
// type.
func notEqualFits(f, g *protogen.Field) string {
	for _, x := range []*protogen.Field{f, g} {
		if x.Desc.IsList() || x.Desc.IsMap() || x.Message != nil || x.Desc.Kind() == protoreflect.BytesKind {
			return fmt.Sprintf("%s is %s; not_equal_to compares single scalar or enum fields (not bytes)", x.Desc.Name(), kindName(x))
		}
	}
	if f.Desc.Kind() != g.Desc.Kind() || f.Enum != g.Enum && (f.Enum == nil || g.Enum == nil || f.Enum.Desc.FullName() != g.Enum.Desc.FullName()) {
		return fmt.Sprintf("%s is %s and %s is %s; they must have one type", f.Desc.Name(), typeName(f), g.Desc.Name(), typeName(g))
	}
	return ""
}

// typeName names the type of a single field: its kind, or its enum.
func typeName(f *protogen.Field) string {
	if f.Enum != nil {
		return string(f.Enum.Desc.FullName())
	}
	return f.Desc.Kind().String()
}

// checkModelCycles reports the cycles between models that no values can
// satisfy: a model X depends on values derived from a model B, while B
// (directly or through other models) depends on X. A derived value exists
// only once its base is created, so values closing such a cycle wait for
// each other forever; unlike a cycle of values of models (a veth pair),
// the scheduler cannot create them as a unit. (X depending on values
// derived from itself is checkCycles' when the fields are the same.)
func checkModelCycles(models []*model) []error {
	type edge struct {
		to  *model
		why string // "ref veth_peer", `dependency "bridge"`, "derived from"
		pos position
	}
	edges := map[*model][]edge{}
	for _, m := range models {
		for _, r := range m.refs {
			name := string(r.field.Desc.Name())
			if r.via != nil {
				name = string(r.via.Desc.Name()) + "[]." + name
			}
			edges[m] = append(edges[m], edge{r.target, "ref " + name, r.pos})
		}
		for _, d := range m.deps {
			for _, t := range dependencyTargets(d, models) {
				edges[m] = append(edges[m], edge{t, fmt.Sprintf("dependency %q", d.label), d.pos})
			}
		}
		if m.base != nil {
			edges[m] = append(edges[m], edge{m.base, "derived from", m.pos})
		}
	}
	// path finds a path of edges from a to b (nil if none), breadth first
	// so that the shortest is reported.
	path := func(a, b *model) []edge {
		prev := map[*model]edge{}
		from := map[*model]*model{}
		seen := map[*model]bool{a: true}
		queue := []*model{a}
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			for _, e := range edges[x] {
				if seen[e.to] {
					continue
				}
				seen[e.to], prev[e.to], from[e.to] = true, e, x
				if e.to == b {
					var p []edge
					for y := b; y != a; y = from[y] {
						p = append([]edge{prev[y]}, p...)
					}
					return p
				}
				queue = append(queue, e.to)
			}
		}
		return nil
	}
	var errs []error
	for _, x := range models {
		for _, e := range edges[x] {
			d := e.to
			if d.base == nil || e.why == "derived from" || x == d.base {
				continue
			}
			p := path(d.base, x)
			if p == nil {
				continue
			}
			steps := []string{d.base.name}
			for _, s := range p {
				steps = append(steps, fmt.Sprintf("(%s, %s) %s", s.why, s.pos, s.to.name))
			}
			errs = append(errs, errorf(e.pos, "%s of %s is on %s, values derived from %s, which depends on %s: %s; a derived value exists only once its base is created, so values that close this cycle wait for each other forever",
				e.why, x.name, d.name, d.base.name, x.name, strings.Join(steps, " ")))
		}
	}
	return errs
}

// dependencyTargets lists the models whose keys a dependency can name: a
// key template's that overlap it, an AnyOf prefix's whose keys can start
// with it.
func dependencyTargets(d templateDep, models []*model) []*model {
	var out []*model
	for _, m := range models {
		if d.key != nil {
			if _, ok := d.key.parsed.Overlaps(m.key.parsed); ok {
				out = append(out, m)
			}
			continue
		}
		for _, p := range d.prefixes {
			if prefixMatches(p, m) {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// prefixMatches reports whether a key of m can start with the AnyOf prefix
// p: whether p followed by some segments overlaps m's key template. Names
// of one to n+1 segments stand for the rest, n the segments of m's key.
func prefixMatches(p *keyTemplate, m *model) bool {
	body := strings.TrimSuffix(p.kvText, "/")
	n := strings.Count(m.key.kvText, "/") + 1
	var rest strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&rest, "/{rest_%d}", i)
		t, err := kv.ParseKeyTemplate(body + rest.String())
		if err != nil {
			continue
		}
		if _, ok := t.Overlaps(m.key.parsed); ok {
			return true
		}
	}
	return false
}

// sameFamilyFits tells why field f of msg cannot be checked to be of the
// IP family of its sibling named other ("" when it can): both single
// string fields of an address format.
func sameFamilyFits(msg *protogen.Message, f *protogen.Field, other string) string {
	g := elemField(msg, other)
	switch {
	case g == nil:
		return fmt.Sprintf("%q is not a field of %s", other, msg.Desc.FullName())
	case g == f:
		return "the field names itself"
	}
	for _, x := range []*protogen.Field{f, g} {
		switch fieldOptions(x).GetFormat() {
		case kvdescriptorv1.Format_IP, kvdescriptorv1.Format_IPV4, kvdescriptorv1.Format_IP_PREFIX, kvdescriptorv1.Format_IP_INTERFACE:
			if !x.Desc.IsList() && !x.Desc.IsMap() && x.Desc.Kind() == protoreflect.StringKind {
				continue
			}
		}
		return fmt.Sprintf("%s is not a single string field of format IP, IPV4, IP_PREFIX or IP_INTERFACE", x.Desc.Name())
	}
	return ""
}
