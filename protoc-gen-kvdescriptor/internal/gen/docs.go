package gen

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"

	"github.com/kvdescriptor/kvdescriptor/options/kvdescriptorv1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// Reference pages of the models.
//
// GenerateDocs is the plugin's second output (parameter docs=true): for
// every .proto file with models, one Markdown page (vpp/l3/v1/l3.md for
// vpp/l3/v1/l3.proto) describing each model as a user configures it: its
// key and an example, label, metadata, Retrieve order, every field with
// its type, format, default, comparison, validation, reference and
// re-create rule, its dependencies and its derived values; and an index,
// README.md, listing every model with its key and a link. It reads the
// models as Generate does (collect: the same checks, the same errors), and
// renders in the schema's order, or sorted where the schema has none, so
// that regenerating an unchanged schema rewrites the same bytes.

// docsIndex is the name of the index page, at the root of the output.
const docsIndex = "README.md"

// GenerateDocs writes the reference pages of the models of a request.
func GenerateDocs(plugin *protogen.Plugin) error {
	plugin.SupportedFeatures = uint64(pluginpb.CodeGeneratorResponse_FEATURE_PROTO3_OPTIONAL | pluginpb.CodeGeneratorResponse_FEATURE_SUPPORTS_EDITIONS)
	plugin.SupportedEditionsMinimum = descriptorpb.Edition_EDITION_PROTO2
	plugin.SupportedEditionsMaximum = descriptorpb.Edition_EDITION_2023

	models, err := collect(plugin.Files)
	if err != nil {
		return err
	}
	d := &docs{all: models, page: map[*model]string{}}
	byFile := map[*protogen.File][]*model{}
	var files []*protogen.File
	for _, m := range models {
		if len(byFile[m.file]) == 0 {
			files = append(files, m.file)
		}
		byFile[m.file] = append(byFile[m.file], m)
		d.page[m] = docPage(m.file)
	}
	slices.SortFunc(files, func(a, b *protogen.File) int { return strings.Compare(a.Desc.Path(), b.Desc.Path()) })
	var pages []*protogen.File
	for _, f := range files {
		if f.Generate {
			pages = append(pages, f)
			g := plugin.NewGeneratedFile(docPage(f), f.GoImportPath)
			g.P(d.renderPage(f, byFile[f]))
		}
	}
	if len(pages) > 0 {
		g := plugin.NewGeneratedFile(docsIndex, "")
		g.P(d.renderIndex(pages, byFile))
	}
	return nil
}

// docPage is the path of the page of a .proto file, relative to the
// output directory.
func docPage(f *protogen.File) string {
	return strings.TrimSuffix(f.Desc.Path(), ".proto") + ".md"
}

// docs renders the pages.
type docs struct {
	all  []*model
	page map[*model]string
}

// mdWriter collects a page.
type mdWriter struct{ strings.Builder }

func (w *mdWriter) p(format string, args ...any) {
	fmt.Fprintf(w, format, args...)
	w.WriteByte('\n')
}

// heading is the heading text of a model's section.
func modelHeading(m *model) string {
	if m.base != nil {
		return "Derived `" + m.name + "`"
	}
	return "`" + m.name + "`"
}

func enumHeading(e *protogen.Enum) string { return "Enum `" + string(e.Desc.FullName()) + "`" }

// anchor is the anchor that GitHub (and most renderers) give a heading:
// lower case, punctuation but '-' and '_' dropped, spaces as '-'.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// rel is the link from page from to page to ("" when they are the same).
func rel(from, to string) string {
	if from == to {
		return ""
	}
	fromDir := strings.Split(path.Dir(from), "/")
	toParts := strings.Split(to, "/")
	if path.Dir(from) == "." {
		fromDir = nil
	}
	i := 0
	for i < len(fromDir) && i < len(toParts)-1 && fromDir[i] == toParts[i] {
		i++
	}
	var parts []string
	for range fromDir[i:] {
		parts = append(parts, "..")
	}
	return strings.Join(append(parts, toParts[i:]...), "/")
}

// modelLink links to the section of model m from page from.
func (d *docs) modelLink(from string, m *model) string {
	return fmt.Sprintf("[`%s`](%s#%s)", m.name, rel(from, d.page[m]), anchor(modelHeading(m)))
}

// byName finds a model by its descriptor name.
func (d *docs) byName(name string) *model {
	for _, m := range d.all {
		if m.name == name {
			return m
		}
	}
	return nil
}

// commentText returns a comment as Markdown paragraphs: the comment's
// lines without their leading space, blank lines kept.
func commentText(c protogen.Comments) string {
	lines := strings.Split(strings.TrimRight(string(c), "\n "), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(strings.TrimPrefix(l, " "), " ")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// cell returns text as one table cell: one line, '|' escaped.
func cell(text string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(text), " "), "|", `\|`)
}

func code(s string) string { return "`" + s + "`" }

// formatDocs describes each value of Format as the field's values must
// be written.
var formatDocs = map[kvdescriptorv1.Format]string{
	kvdescriptorv1.Format_FORMAT_UNSPECIFIED: "a name for a string, an unsigned integer for an integer",
	kvdescriptorv1.Format_NAME:               "any non-empty text (escaped in keys: `/` as `%2F`, `%` as `%25`)",
	kvdescriptorv1.Format_UINT:               "an unsigned decimal integer",
	kvdescriptorv1.Format_IP:                 "an IPv4 or IPv6 address (canonical form in keys)",
	kvdescriptorv1.Format_IP_PREFIX:          "an IP network, address/length (keyed with the host bits cleared)",
	kvdescriptorv1.Format_IP_INTERFACE:       "an interface address with its prefix length, 10.0.0.1/24 (host bits kept)",
	kvdescriptorv1.Format_MAC:                "a MAC address of six octets (lower-case in keys)",
	kvdescriptorv1.Format_PLAIN_NAME:         "a plain name: at most 255 bytes of UTF-8, not `.` or `..`, no `/`, whitespace or control characters",
	kvdescriptorv1.Format_IF_NAME:            "a kernel interface name: a plain name of at most 15 bytes, without `:`",
	kvdescriptorv1.Format_IPV4:               "an IPv4 address (canonical form in keys); an IPv6 one is refused",
}

// formatText renders the format of a field: its annotation, or for a key
// field the default one.
func formatText(f *protogen.Field, keyField bool) string {
	describe := func(fm kvdescriptorv1.Format) string {
		if d, ok := formatDocs[fm]; ok {
			return ": " + d
		}
		return "" // TestDocsFormats fails: add it to formatDocs
	}
	fm := fieldOptions(f).GetFormat()
	if fm == kvdescriptorv1.Format_FORMAT_UNSPECIFIED {
		if !keyField {
			return ""
		}
		fm = kvdescriptorv1.Format_NAME
		if isIntegerKind(f.Desc.Kind()) {
			fm = kvdescriptorv1.Format_UINT
		}
		return code(fm.String()) + " (default)" + describe(fm)
	}
	return code(fm.String()) + describe(fm)
}

// renderIndex renders the index of the pages.
func (d *docs) renderIndex(pages []*protogen.File, byFile map[*protogen.File][]*model) string {
	var w mdWriter
	w.p("# Model reference")
	w.p("")
	w.p("Generated by protoc-gen-kvdescriptor from the models' schemas (`make generate`); do not edit.")
	w.p("One page per `.proto` file: each model's key with an example, its label, every field")
	w.p("with its format, default, comparison, validation and references, its dependencies,")
	w.p("its derived values and what re-creates it. A value is configured under its key, in")
	w.p("the protojson form of its message (field names as in the schema or in lowerCamelCase).")
	w.p("")
	w.p("| Model | Key | Description | Page |")
	w.p("|---|---|---|---|")
	var rows []*model
	for _, f := range pages {
		rows = append(rows, byFile[f]...)
	}
	slices.SortStableFunc(rows, func(a, b *model) int { return strings.Compare(a.name, b.name) })
	for _, m := range rows {
		what := firstSentence(commentText(m.msg.Comments.Leading))
		if m.base != nil {
			what = "Derived from " + code(m.base.name) + ": one value per element of " + code(string(m.field.Desc.Name())) + "."
			if !m.field.Desc.IsList() {
				what = "Derived from " + code(m.base.name) + " while " + code(string(m.field.Desc.Name())) + " is set."
			}
		}
		w.p("| %s | %s | %s | [%s](%s) |", d.modelLink(docsIndex, m), code(m.key.text), cell(what), m.file.Desc.Path(), docPage(m.file))
	}
	return strings.TrimRight(w.String(), "\n")
}

// firstSentence is the first sentence of a comment: up to the first
// period followed by a space or the end (not that of "e.g." or "i.e."),
// within its first paragraph.
func firstSentence(text string) string {
	text, _, _ = strings.Cut(text, "\n\n")
	text = strings.Join(strings.Fields(text), " ")
	padded := text + " "
	for i := 0; ; {
		j := strings.Index(padded[i:], ". ")
		if j < 0 {
			return text
		}
		i += j
		if !strings.HasSuffix(padded[:i], "e.g") && !strings.HasSuffix(padded[:i], "i.e") {
			return text[:i+1]
		}
		i += 2
	}
}

// renderPage renders the page of file f and its models.
func (d *docs) renderPage(f *protogen.File, models []*model) string {
	var w mdWriter
	page := docPage(f)
	w.p("# %s", f.Desc.Path())
	w.p("")
	w.p("Generated by protoc-gen-kvdescriptor from `%s` (package `%s`); do not edit. [All models](%s).", f.Desc.Path(), f.Desc.Package(), rel(page, docsIndex))
	w.p("")
	w.p("A value is configured under its key, in the protojson form of its message: field")
	w.p("names as below or in lowerCamelCase, enum values by name. An unset field is its zero")
	w.p("value; an enum field holds only the values its enum declares, unless it allows")
	w.p("unknown values. A change of a field marked re-create deletes the value and creates it")
	w.p("again; other changes update it in place. A change of a key field makes another value.")
	var enums []*protogen.Enum
	for _, m := range models {
		if m.base != nil {
			continue
		}
		d.renderModel(&w, page, m, &enums)
		for _, x := range m.derived {
			d.renderModel(&w, page, x, &enums)
		}
	}
	slices.SortFunc(enums, func(a, b *protogen.Enum) int {
		return strings.Compare(string(a.Desc.FullName()), string(b.Desc.FullName()))
	})
	enums = slices.CompactFunc(enums, func(a, b *protogen.Enum) bool { return a.Desc.FullName() == b.Desc.FullName() })
	for _, e := range enums {
		w.p("")
		w.p("## %s", enumHeading(e))
		if c := commentText(e.Comments.Leading); c != "" {
			w.p("")
			w.p("%s", c)
		}
		w.p("")
		w.p("| Value | Number | Description |")
		w.p("|---|---|---|")
		for _, v := range e.Values {
			w.p("| %s | %d | %s |", code(string(v.Desc.Name())), v.Desc.Number(), cell(commentText(v.Comments.Leading)))
		}
	}
	return strings.TrimRight(w.String(), "\n")
}

// keyFieldPaths lists the paths of the key's placeholders in the value
// message (the element's, without the field's name, for a derived value).
func keyFieldPaths(m *model) map[string]*placeholder {
	out := map[string]*placeholder{}
	for _, h := range m.key.holders {
		switch {
		case m.base == nil:
			out[h.path] = h
		case h.elem && m.elem != nil:
			out[strings.TrimPrefix(h.path, string(m.field.Desc.Name())+".")] = h
		}
	}
	return out
}

// renderModel renders the section of a model (or of derived values).
func (d *docs) renderModel(w *mdWriter, page string, m *model, enums *[]*protogen.Enum) {
	level := "##"
	if m.base != nil {
		level = "###"
	}
	w.p("")
	w.p("%s %s", level, modelHeading(m))
	w.p("")
	if m.base == nil {
		if c := commentText(m.msg.Comments.Leading); c != "" {
			w.p("%s", c)
			w.p("")
		}
	} else {
		what := "one value per element of " + code(string(m.field.Desc.Name()))
		if !m.field.Desc.IsList() {
			what = "one value while " + code(string(m.field.Desc.Name())) + " is set"
		}
		w.p("Derived from %s: %s, configured in the base value and living and dying with it; a change of the field touches these values, never the base.", d.modelLink(page, m.base), what)
		if c := commentText(m.field.Comments.Leading); c != "" {
			w.p("")
			w.p("%s", c)
		}
		w.p("")
	}

	w.p("| | |")
	w.p("|---|---|")
	if m.base == nil {
		w.p("| Message | %s |", code(string(m.msg.Desc.FullName())))
	} else if m.elem != nil {
		w.p("| Element | %s |", code(string(m.elem.Desc.FullName())))
	} else {
		of := "an element of"
		if !m.field.Desc.IsList() {
			of = "the value of"
		}
		w.p("| Element | %s (%s %s) |", strings.TrimPrefix(typeText(m.field, nil, true), "repeated "), of, code(string(m.field.Desc.Name())))
	}
	w.p("| Key | %s |", code(m.key.text))
	w.p("| Example key | %s |", code(exampleKey(m)))
	if m.label != nil {
		w.p("| Label | %s |", code(m.label.path))
	} else {
		w.p("| Label | the key's variable part (after %s), e.g. %s |", code(m.key.parsed.Prefix()), code(strings.TrimPrefix(exampleKey(m), m.key.parsed.Prefix())))
	}
	meta := "no"
	if m.meta {
		meta = "yes: Create and Update return metadata (the southbound's index of the value), kept next to the value"
	}
	w.p("| Metadata | %s |", meta)
	w.p("| Drift policy | %s |", driftPolicyText(m.drift))
	if len(m.after) > 0 {
		var links []string
		for _, name := range m.after {
			if t := d.byName(name); t != nil {
				links = append(links, d.modelLink(page, t))
			} else {
				links = append(links, code(name))
			}
		}
		w.p("| Retrieved after | %s |", strings.Join(links, ", "))
	}

	w.p("")
	w.p("Key placeholders:")
	w.p("")
	w.p("| Placeholder | Field | Type | Format |")
	w.p("|---|---|---|---|")
	for _, h := range m.key.holders {
		f := h.fields[len(h.fields)-1]
		from := "the value"
		switch {
		case m.base != nil && h.elem:
			from = "the element"
		case m.base != nil:
			from = "the base value"
		}
		t := typeText(f, nil, false)
		if h.elem && m.elem == nil {
			t = strings.TrimPrefix(typeText(f, nil, true), "repeated ")
		}
		w.p("| %s | %s of %s | %s | %s |", code("{"+h.path+"}"), code(h.path), from, t, cell(formatText(f, true)))
	}

	w.p("")
	if m.base == nil || m.elem != nil {
		w.p("Fields:")
		w.p("")
		w.p("| Field | Type | Description | Format | Default | Compare | Validation | Ref | Re-create |")
		w.p("|---|---|---|---|---|---|---|---|---|")
		d.fieldRows(w, page, m, m.valueMsg(), "", "", keyFieldPaths(m), nil, enums)
		w.p("")
	} else {
		w.p("Each value is one element of %s (%s).", code(string(m.field.Desc.Name())), cell(scalarFieldText(m.field)))
		w.p("")
	}

	d.renderDependencies(w, page, m)

	w.p("Example (an entry of the agent's file source, the format of `kvctl apply -f`):")
	w.p("")
	w.p("```yaml")
	w.p("%s", exampleEntry(m))
	w.p("```")
	if m.base == nil && len(m.derived) > 0 {
		var links []string
		for _, x := range m.derived {
			links = append(links, d.modelLink(page, x))
		}
		w.p("")
		w.p("Derived values: %s.", strings.Join(links, ", "))
	}
}

// scalarFieldText is the format and validation of a scalar element.
func scalarFieldText(f *protogen.Field) string {
	parts := []string{strings.TrimPrefix(typeText(f, nil, true), "repeated ")}
	if t := formatText(f, true); t != "" {
		parts = append(parts, "format "+t)
	}
	return strings.Join(parts, ", ")
}

// renderDependencies renders what a value of m waits for.
func (d *docs) renderDependencies(w *mdWriter, page string, m *model) {
	if len(m.refs) == 0 && len(m.deps) == 0 {
		if m.base != nil {
			w.p("Dependencies: none but the base value, which a derived value exists with.")
		} else {
			w.p("Dependencies: none; a value is created as soon as it is configured.")
		}
		w.p("")
		return
	}
	w.p("Dependencies (a value stays PENDING until each exists; it is deleted before what it depends on goes away):")
	w.p("")
	for _, r := range m.refs {
		each := ""
		if r.field.Desc.IsList() {
			each = ", one dependency per element"
		}
		w.p("- %s: the value of %s named by %s (when set%s).", code(r.label), d.modelLink(page, r.target), code(string(r.field.Desc.Name())), each)
	}
	for _, dep := range m.deps {
		var targets []string
		for _, t := range dependencyTargets(dep, d.all) {
			targets = append(targets, d.modelLink(page, t))
		}
		of := ""
		if len(targets) > 0 {
			of = " (a value of " + strings.Join(targets, " or ") + ")"
		}
		if dep.key != nil {
			var fields []string
			for _, h := range dep.key.holders {
				fields = append(fields, code(h.path))
			}
			w.p("- %s: the key %s%s; left out while %s is empty.", code(dep.label), code(dep.key.text), of, strings.Join(fields, " or "))
			continue
		}
		var prefixes []string
		for _, p := range dep.prefixes {
			prefixes = append(prefixes, code(p.text))
		}
		line := fmt.Sprintf("- %s: any existing key under %s%s", code(dep.label), strings.Join(prefixes, " or "), of)
		if dep.containsHolder != nil {
			line += fmt.Sprintf(" that ends with an IP network containing the address in %s (left out while it is empty)", code(dep.containsHolder.path))
		}
		w.p("%s.", line)
	}
	w.p("")
}

// typeText renders the type of a field, its enum linked to the page's
// enum section (collected in enums). bare leaves out oneof and optional.
func typeText(f *protogen.Field, enums *[]*protogen.Enum, bare bool) string {
	base := func(f *protogen.Field) string {
		switch {
		case f.Enum != nil:
			if enums != nil {
				*enums = append(*enums, f.Enum)
			}
			return fmt.Sprintf("enum [%s](#%s)", code(string(f.Enum.Desc.Name())), anchor(enumHeading(f.Enum)))
		case f.Message != nil:
			return "message " + code(string(f.Message.Desc.FullName()))
		}
		return f.Desc.Kind().String()
	}
	var t string
	switch {
	case f.Desc.IsMap():
		t = fmt.Sprintf("map<%s, %s>", base(f.Message.Fields[0]), base(f.Message.Fields[1]))
	case f.Desc.IsList():
		t = "repeated " + base(f)
	default:
		t = base(f)
	}
	if bare {
		return t
	}
	if o := f.Oneof; o != nil && !o.Desc.IsSynthetic() {
		t += " (one of " + code(string(o.Desc.Name())) + ")"
	} else if f.Desc.HasPresence() && f.Message == nil {
		t = "optional " + t
	}
	return t
}

// fieldRows renders the rows of the fields of msg at prefix, and of the
// messages nested in them. recreatedBy names the message field marked
// recreate that holds them, if any.
func (d *docs) fieldRows(w *mdWriter, page string, m *model, msg *protogen.Message, prefix, recreatedBy string, keyFields map[string]*placeholder, on []*protogen.Message, enums *[]*protogen.Enum) {
	if slices.Contains(on, msg) {
		return
	}
	on = append(on, msg)
	for _, f := range msg.Fields {
		p := prefix + string(f.Desc.Name())
		o := fieldOptions(f)
		_, keyField := keyFields[p]
		name := code(p)
		if f.Desc.JSONName() != string(f.Desc.Name()) {
			name += " (" + code(f.Desc.JSONName()) + ")"
		}
		recreate := ""
		switch {
		case o.GetRecreate():
			recreate = "yes"
		case recreatedBy != "":
			recreate = "yes (with " + code(recreatedBy) + ")"
		}
		w.p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |", name, typeText(f, enums, false), cell(commentText(f.Comments.Leading)),
			cell(formatText(f, keyField)), cell(defaultText(f)), cell(d.compareText(page, m, f)), cell(validationText(f, prefix, keyField)),
			cell(d.refText(page, m, f)), recreate)
		if f.Message == nil || o.GetDerive() != nil || strings.HasPrefix(string(f.Message.Desc.FullName()), "google.protobuf.") {
			continue
		}
		sub, by := f.Message, recreatedBy
		if o.GetRecreate() && by == "" {
			by = p
		}
		switch {
		case f.Desc.IsMap():
			sub = f.Message.Fields[1].Message
			if sub == nil || strings.HasPrefix(string(sub.Desc.FullName()), "google.protobuf.") {
				continue
			}
			d.fieldRows(w, page, m, sub, p+"[].", by, keyFields, on, enums)
		case f.Desc.IsList():
			d.fieldRows(w, page, m, sub, p+"[].", by, keyFields, on, enums)
		default:
			d.fieldRows(w, page, m, sub, p+".", by, keyFields, on, enums)
		}
	}
}

// defaultText renders the default of a field (compare.zero_equals).
func defaultText(f *protogen.Field) string {
	if z := fieldOptions(f).GetCompare().GetZeroEquals(); z != "" {
		return "unset means " + code(z)
	}
	if u := fieldOptions(f).GetUnsetFollows(); u != "" {
		return "unset means the value of " + code(u) + " (set, even to 0, it is its own)"
	}
	return ""
}

// compareText renders how a field compares, when not plainly.
func (d *docs) compareText(page string, m *model, f *protogen.Field) string {
	o := fieldOptions(f)
	var parts []string
	if o.GetDerive() != nil {
		for _, x := range m.derived {
			if x.field == f {
				parts = append(parts, "not compared: derives "+d.modelLink(page, x))
			}
		}
	}
	c := o.GetCompare()
	if c.GetIgnore() {
		parts = append(parts, "ignored (a change is no change)")
	}
	if c.GetUnordered() {
		parts = append(parts, "unordered (compared as a set)")
	}
	if r := c.GetResolution(); r > 1 {
		parts = append(parts, fmt.Sprintf("in units of %d (values within one unit are equal: the southbound keeps whole units)", r))
	}
	if o.GetSensitive() {
		parts = append(parts, "a secret (sensitive): compared as it is, shown as "+code("REDACTED")+" wherever values are shown")
	}
	if c.GetUnsetEqualsEmpty() {
		parts = append(parts, "unset equals a message at its defaults")
	}
	if o.GetDerive() == nil && !c.GetIgnore() && formatted(f) {
		parts = append(parts, "in key form (two spellings of one address are equal)")
	}
	return strings.Join(parts, "; ")
}

// validationText renders the checks of a field's values. prefix is the
// path of its message in the value.
func validationText(f *protogen.Field, prefix string, keyField bool) string {
	var parts []string
	if keyField {
		parts = append(parts, "required (in the key)")
	}
	v := validateOf(f)
	if f.Enum != nil && v.GetAllowUnknown() {
		parts = append(parts, "any number, declared or not (allow_unknown)")
	}
	if v.GetRequired() && !keyField {
		parts = append(parts, "required")
	}
	if (v.GetHasMin() || v.GetHasMax()) && !f.Desc.IsList() {
		var r string
		switch {
		case v.GetHasMin() && v.GetHasMax():
			r = fmt.Sprintf("%d to %d", v.GetMin(), v.GetMax())
		case v.GetHasMin():
			r = fmt.Sprintf("at least %d", v.GetMin())
		default:
			r = fmt.Sprintf("at most %d", v.GetMax())
		}
		if v.GetZeroAllowed() {
			r += ", or 0 (unset)"
		}
		parts = append(parts, r)
	}
	if v.GetUnique() {
		parts = append(parts, "elements unique")
	}
	if s := v.GetUniqueBy(); s != "" {
		parts = append(parts, "elements' "+code(s)+" unique")
	}
	if s := v.GetAtMostOne(); s != "" {
		parts = append(parts, "at most one element with "+code(s)+" set")
	}
	cond := func(c *kvdescriptorv1.Condition) string {
		r, err := resolveCondition(f.Parent, string(f.Desc.Name()), c)
		if err != nil {
			return ""
		}
		var names []string
		for _, v := range r.values {
			names = append(names, code(string(v.Desc.Name())))
		}
		return code(prefix+string(r.field.Desc.Name())) + " is " + strings.Join(names, " or ")
	}
	ri, oi := v.GetRequiredIf(), v.GetOnlyIf()
	if ri != nil && oi != nil && slices.Equal(ri.GetIn(), oi.GetIn()) && ri.GetField() == oi.GetField() {
		parts = append(parts, "set when, and only when, "+cond(ri))
	} else {
		if ri != nil {
			parts = append(parts, "required when "+cond(ri))
		}
		if oi != nil {
			parts = append(parts, "empty unless "+cond(oi))
		}
	}
	if s := v.GetNotEqualTo(); s != "" {
		parts = append(parts, "must differ from "+code(prefix+s))
	}
	if s := fieldOptions(f).GetSameFamilyAs(); s != "" {
		parts = append(parts, "of the IP family of "+code(prefix+s))
	}
	return strings.Join(parts, "; ")
}

// refText renders the model a field refers to.
func (d *docs) refText(page string, m *model, f *protogen.Field) string {
	for _, r := range m.refs {
		if r.field == f {
			s := "a value of " + d.modelLink(page, r.target) + " by label (dependency " + code(r.label)
			if f.Desc.IsList() {
				s += ", one per element"
			}
			return s + ")"
		}
	}
	return ""
}

// Examples.

// exampleScalar is an example value of a scalar field in its text form
// (an enum's by name): a valid one, within its bounds and format.
func exampleScalar(f *protogen.Field) string {
	v := validateOf(f)
	switch k := f.Desc.Kind(); {
	case k == protoreflect.EnumKind:
		for _, ev := range f.Enum.Values {
			if ev.Desc.Number() != 0 {
				return string(ev.Desc.Name())
			}
		}
		return string(f.Enum.Values[0].Desc.Name())
	case k == protoreflect.BoolKind:
		return "true"
	case k == protoreflect.BytesKind:
		return "AQ=="
	case isIntegerKind(k) || k == protoreflect.FloatKind || k == protoreflect.DoubleKind:
		n := int64(1)
		if v.GetHasMin() && v.GetMin() > n {
			n = v.GetMin()
		}
		if v.GetHasMax() && v.GetMax() < n {
			n = v.GetMax()
		}
		return strconv.FormatInt(n, 10)
	}
	// By the key format, which every format of the vocabulary maps to.
	fm, _ := fieldFormat(f)
	switch fm {
	case kv.FormatIP:
		return "192.0.2.1"
	case kv.FormatIPPrefix:
		return "192.0.2.0/24"
	case kv.FormatIPInterface:
		return "192.0.2.1/24"
	case kv.FormatMAC:
		return "02:00:00:00:00:01"
	}
	name := strings.ReplaceAll(string(f.Desc.Name()), "_", "-")
	if len(name) > 14 {
		name = name[:14]
	}
	return name + "1"
}

// exampleKey is an example key of model m, from the example values of its
// placeholders.
func exampleKey(m *model) string {
	var b strings.Builder
	for i, h := range m.key.holders {
		b.WriteString(m.key.literals[i])
		b.WriteString(kv.KeyValue(h.format, exampleScalar(h.fields[len(h.fields)-1])))
	}
	b.WriteString(m.key.literals[len(m.key.holders)])
	return b.String()
}

// example is an example value of a message: the values of fields by path.
type example map[string]string

// jsonLit is the protojson literal of the text value of field f.
func jsonLit(f *protogen.Field, text string) string {
	switch k := f.Desc.Kind(); {
	case k == protoreflect.BoolKind || isIntegerKind(k) || k == protoreflect.FloatKind || k == protoreflect.DoubleKind:
		return text
	}
	b, _ := json.Marshal(text)
	return string(b)
}

// set sets the scalar (or repeated scalar) field f at path p to its
// example value.
func (e example) set(p string, f *protogen.Field) {
	lit := jsonLit(f, exampleScalar(f))
	switch {
	case f.Desc.IsMap():
		lit = "{}"
	case f.Desc.IsList():
		lit = "[" + lit + "]"
	}
	e[p] = lit
}

// fill sets the key fields of the value message msg, then its required
// fields (see fillRequired). The key fields, and the fields of msg in
// also (that the example sets later), first set the enum fields that
// their only_if conditions name to a value that allows them.
func (e example) fill(msg *protogen.Message, keyFields map[string]*placeholder, also ...*protogen.Field) {
	paths := slices.Sorted(maps.Keys(keyFields))
	for _, p := range paths {
		prefix := p[:strings.LastIndex(p, ".")+1]
		e.pin(keyFields[p].fields[len(keyFields[p].fields)-1], prefix)
	}
	for _, f := range also {
		e.pin(f, "")
	}
	for _, p := range paths {
		e.set(p, keyFields[p].fields[len(keyFields[p].fields)-1])
	}
	e.fillRequired(msg, "", nil)
}

// pin sets the enum field that the only_if condition of f (a field of the
// message at prefix) names to the condition's first value, unless it
// already holds one of them.
func (e example) pin(f *protogen.Field, prefix string) {
	c := validateOf(f).GetOnlyIf()
	if c == nil {
		return
	}
	r, err := resolveCondition(f.Parent, string(f.Desc.Name()), c)
	if err != nil {
		return
	}
	p := prefix + string(r.field.Desc.Name())
	for _, v := range r.values {
		if e[p] == jsonLit(r.field, string(v.Desc.Name())) {
			return
		}
	}
	e[p] = jsonLit(r.field, string(r.values[0].Desc.Name()))
}

// fillRequired sets the fields of msg at prefix that must be set: the
// required ones, and those required by a condition that the example
// meets; a message field with its own required fields, at any depth.
func (e example) fillRequired(msg *protogen.Message, prefix string, on []*protogen.Message) {
	if slices.Contains(on, msg) {
		return
	}
	on = append(on, msg)
	for range 2 { // a field set may meet another field's condition
		for _, f := range msg.Fields {
			p := prefix + string(f.Desc.Name())
			if _, done := e[p]; done || e.has(p+".") || fieldOptions(f).GetDerive() != nil {
				continue
			}
			v := validateOf(f)
			// A bound that zero (unset) does not meet makes the field
			// required too (not in a oneof, bounded only while set).
			need := v.GetRequired() || !f.Desc.IsList() && (f.Oneof == nil || f.Oneof.Desc.IsSynthetic()) && !v.GetZeroAllowed() &&
				(v.GetHasMin() && v.GetMin() > 0 || v.GetHasMax() && v.GetMax() < 0)
			if c := v.GetRequiredIf(); c != nil {
				if r, err := resolveCondition(msg, string(f.Desc.Name()), c); err == nil {
					for _, val := range r.values {
						need = need || e[prefix+string(r.field.Desc.Name())] == jsonLit(r.field, string(val.Desc.Name()))
					}
				}
			}
			switch {
			case !need:
			case f.Message != nil && f.Desc.IsList():
				x := example{}
				x.fillRequired(f.Message, "", on)
				e[p] = "[" + x.render(f.Message, "") + "]"
			case f.Message != nil && !f.Desc.IsMap():
				e.fillRequired(f.Message, p+".", on)
				if !e.has(p + ".") {
					e[p] = "{}"
				}
			default:
				e.set(p, f)
			}
		}
	}
}

// render renders the example as a JSON object of msg at prefix, in the
// schema's field order.
func (e example) render(msg *protogen.Message, prefix string) string {
	var parts []string
	for _, f := range msg.Fields {
		p := prefix + string(f.Desc.Name())
		key, _ := json.Marshal(f.Desc.JSONName())
		if v, ok := e[p]; ok {
			parts = append(parts, string(key)+": "+v)
			continue
		}
		if f.Message != nil && !f.Desc.IsList() && !f.Desc.IsMap() && e.has(p+".") {
			parts = append(parts, string(key)+": "+e.render(f.Message, p+"."))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (e example) has(prefix string) bool {
	for p := range e {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// exampleEntry is an entry of the file source configuring an example
// value of m: for derived values, the base value with one element.
func exampleEntry(m *model) string {
	base := m
	if m.base != nil {
		base = m.base
	}
	e := example{}
	if m.base != nil {
		e.fill(base.msg, keyFieldPaths(base), m.field)
	} else {
		e.fill(base.msg, keyFieldPaths(base))
	}
	if m.base != nil {
		// The base fields that the derived key carries, and one element.
		for _, h := range m.key.holders {
			if !h.elem {
				e.set(h.path, h.fields[len(h.fields)-1])
			}
		}
		elem := ""
		if m.elem != nil {
			x := example{}
			x.fill(m.elem, keyFieldPaths(m))
			elem = x.render(m.elem, "")
		} else {
			elem = jsonLit(m.field, exampleScalar(m.field))
		}
		if m.field.Desc.IsList() {
			elem = "[" + elem + "]"
		}
		e[string(m.field.Desc.Name())] = elem
	}
	key, _ := json.Marshal(exampleKey(base))
	out := string(key) + ": " + e.render(base.msg, "")
	if m.base != nil {
		out += "\n# derives " + exampleKey(m)
	}
	return out
}

// driftPolicyText says what a model's drift policy does.
func driftPolicyText(p kvdescriptorv1.DriftPolicy) string {
	switch p {
	case kvdescriptorv1.DriftPolicy_DRIFT_REPORT:
		return "report: a value changed or deleted behind the agent's back is left so, DRIFTED or MISSING"
	case kvdescriptorv1.DriftPolicy_DRIFT_ADOPT:
		return "adopt: a value changed behind the agent's back is taken as intended"
	}
	return "repair (the default): a value changed or deleted behind the agent's back is applied again"
}
