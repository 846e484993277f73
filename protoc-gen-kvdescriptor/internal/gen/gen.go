// Package gen is the generator of protoc-gen-kvdescriptor. Generate is its
// one entry point: it reads the (kvdescriptor.v1.model) annotations of every
// file of the request, checks them (every error names the .proto file, the
// line and the option), and writes one NAME.kv.go file per .proto file that
// has models or defaults (defaults.go), next to the NAME.pb.go of
// protoc-gen-go, in the same package.
package gen

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"

	"github.com/kvdescriptor/kvdescriptor/options/kvdescriptorv1"
)

// Generate generates the kvdescriptor code of a request.
func Generate(plugin *protogen.Plugin) error {
	plugin.SupportedFeatures = uint64(pluginpb.CodeGeneratorResponse_FEATURE_PROTO3_OPTIONAL | pluginpb.CodeGeneratorResponse_FEATURE_SUPPORTS_EDITIONS)
	plugin.SupportedEditionsMinimum = descriptorpb.Edition_EDITION_PROTO2
	plugin.SupportedEditionsMaximum = descriptorpb.Edition_EDITION_2023

	models, err := collect(plugin.Files)
	if err != nil {
		return err
	}
	byFile := map[*protogen.File][]*model{}
	for _, m := range models {
		byFile[m.file] = append(byFile[m.file], m)
	}
	// The package doc goes on the first generated file of each Go
	// package, and names the models of all its files.
	byPkg := map[protogen.GoImportPath][]*model{}
	for _, f := range plugin.Files {
		if f.Generate {
			byPkg[f.GoImportPath] = append(byPkg[f.GoImportPath], byFile[f]...)
		}
	}
	for _, f := range plugin.Files {
		if !f.Generate || len(byFile[f]) == 0 && !hasDefaults(f) && !hasSensitive(f) {
			continue
		}
		g := plugin.NewGeneratedFile(f.GeneratedFilenamePrefix+".kv.go", f.GoImportPath)
		pkgModels := byPkg[f.GoImportPath]
		delete(byPkg, f.GoImportPath)
		if err := emitFile(g, f, byFile[f], pkgModels); err != nil {
			return err
		}
	}
	return nil
}

// collect finds the models of all files, resolves their references and
// checks them. Errors are sorted by place and returned together.
func collect(files []*protogen.File) ([]*model, error) {
	var (
		models []*model
		errs   []error
	)
	byName := map[protoreflect.FullName]*model{}
	for _, f := range files {
		forEachMessage(f.Messages, func(msg *protogen.Message) {
			opts := modelOptions(msg)
			if opts == nil {
				return
			}
			m, err := newModel(f, msg)
			if err != nil {
				errs = append(errs, err)
				return
			}
			byName[msg.Desc.FullName()] = m
			models = append(models, m)
		})
	}
	if len(errs) == 0 {
		for _, m := range models {
			errs = append(errs, m.resolve(byName)...)
		}
	}
	var all []*model
	for _, m := range models {
		all = append(all, m)
		all = append(all, m.derived...)
	}
	if len(errs) == 0 {
		errs = append(errs, checkOverlaps(all)...)
		errs = append(errs, checkNames(files, all)...)
		errs = append(errs, checkCycles(all)...)
		errs = append(errs, checkModelCycles(all)...)
		for _, m := range all {
			errs = append(errs, checkSensitiveKeys(m)...)
		}
	}
	if len(errs) > 0 {
		// Sorted by place; an element message shared by two derived
		// fields is checked twice, but reported once.
		slices.SortStableFunc(errs, compareErrors)
		errs = slices.CompactFunc(errs, func(a, b error) bool { return a.Error() == b.Error() })
		return nil, errors.Join(errs...)
	}
	return all, nil
}

// compareErrors orders errors by file, line (as numbers: 9 before 10),
// then text.
func compareErrors(a, b error) int {
	var ga, gb *genError
	if errors.As(a, &ga) && errors.As(b, &gb) {
		if c := strings.Compare(ga.pos.file, gb.pos.file); c != 0 {
			return c
		}
		if c := ga.pos.line - gb.pos.line; c != 0 {
			return c
		}
	}
	return strings.Compare(a.Error(), b.Error())
}

func forEachMessage(msgs []*protogen.Message, fn func(*protogen.Message)) {
	for _, m := range msgs {
		if m.Desc.IsMapEntry() {
			continue
		}
		fn(m)
		forEachMessage(m.Messages, fn)
	}
}

// newModel reads the model options of msg and parses its key.
func newModel(f *protogen.File, msg *protogen.Message) (*model, error) {
	opts := modelOptions(msg)
	m := &model{
		file: f, msg: msg, opts: opts, meta: opts.GetWithMetadata(), drift: opts.GetDriftPolicy(),
		name:   string(msg.Desc.FullName()),
		goName: msg.GoIdent.GoName,
		pos:    locate(f.Desc, optionPath(msg.Location.Path, 7), "option (kvdescriptor.v1.model)"),
	}
	if opts.GetName() != "" {
		m.name = opts.GetName()
	}
	if _, ok := kvdescriptorv1.DriftPolicy_name[int32(m.drift)]; !ok {
		return nil, errorf(locate(f.Desc, optionPath(msg.Location.Path, 7, 7), "option (kvdescriptor.v1.model).drift_policy"),
			"%d is not a drift policy (DRIFT_REPAIR, DRIFT_REPORT or DRIFT_ADOPT)", int32(m.drift))
	}
	keyPos := locate(f.Desc, optionPath(msg.Location.Path, 7, 1), "option (kvdescriptor.v1.model).key")
	key, err := parseTemplate(opts.GetKey(), scope{msg: msg})
	if err == nil {
		err = checkKeySpace(key)
	}
	if err != nil {
		return nil, errorf(keyPos, "%v", err)
	}
	if why := key.parsed.Ambiguity(); why != "" {
		return nil, errorf(keyPos, "ambiguous key template %q: %s", key.text, why)
	}
	if err := checkKeyFields(key); err != nil {
		return nil, errorf(keyPos, "%v", err)
	}
	m.key = key
	labelPos := locate(f.Desc, optionPath(msg.Location.Path, 7, 2), "option (kvdescriptor.v1.model).label")
	switch {
	case opts.GetLabel() != "":
		for _, h := range key.holders {
			if h.path == opts.GetLabel() {
				m.label = h
			}
		}
		if m.label == nil {
			return nil, errorf(labelPos, "label %q is not a placeholder of the key %q", opts.GetLabel(), key.text)
		}
	case len(key.holders) == 1:
		m.label = key.holders[0]
	}
	return m, nil
}

// resolve resolves the references, dependencies and derived values of a
// model (with all models known).
func (m *model) resolve(byName map[protoreflect.FullName]*model) []error {
	var errs []error
	m.after = nil
	for i, name := range m.opts.GetRetrieveAfter() {
		t := byName[protoreflect.FullName(name)]
		if t == nil {
			errs = append(errs, errorf(locate(m.file.Desc, optionPath(m.msg.Location.Path, 7, 5, int32(i)), "option (kvdescriptor.v1.model).retrieve_after"),
				"%q is not a model (an annotated message)", name))
			continue
		}
		m.after = append(m.after, t.name)
	}
	for i, d := range m.opts.GetDependencies() {
		pos := locate(m.file.Desc, optionPath(m.msg.Location.Path, 7, 6, int32(i)), "option (kvdescriptor.v1.model).dependencies")
		dep, err := parseDependency(d, scope{msg: m.msg})
		if err != nil {
			errs = append(errs, errorf(pos, "%v", err))
			continue
		}
		dep.pos = pos
		m.deps = append(m.deps, dep)
	}
	refs, rerrs := resolveRefs(m.msg, byName)
	m.refs, errs = refs, append(errs, rerrs...)
	for _, f := range m.msg.Fields {
		if elemRefs(f) {
			refs, rerrs := resolveRefs(f.Message, byName)
			for _, r := range refs {
				if r.field.Desc.IsList() {
					errs = append(errs, errorf(r.pos, "ref of %s: a field of the elements of %s must hold one label, not a list", r.field.Desc.FullName(), f.Desc.Name()))
					continue
				}
				r.via = f
				m.refs = append(m.refs, r)
			}
			errs = append(errs, rerrs...)
		}
	}
	errs = append(errs, checkFields(m.msg)...)
	errs = append(errs, checkNested(m.name, m.msg, true)...)
	for _, f := range m.msg.Fields {
		o := fieldOptions(f)
		if o.GetDerive() == nil {
			continue
		}
		d, err := newDerived(m, f, o.GetDerive(), byName)
		if err != nil {
			errs = append(errs, err...)
			continue
		}
		m.derived = append(m.derived, d)
	}
	return errs
}

// resolveRefs finds the ref annotations on the fields of msg.
func resolveRefs(msg *protogen.Message, byName map[protoreflect.FullName]*model) ([]ref, []error) {
	var (
		refs []ref
		errs []error
	)
	for _, f := range msg.Fields {
		r := fieldOptions(f).GetRef()
		if r == nil {
			continue
		}
		pos := locate(msg.Desc.ParentFile(), optionPath(f.Location.Path, 8, 2), "option (kvdescriptor.v1.field).ref")
		t := byName[protoreflect.FullName(r.GetModel())]
		switch {
		case r.GetModel() == "":
			errs = append(errs, errorf(pos, "ref of %s names no model", f.Desc.FullName()))
			continue
		case t == nil:
			errs = append(errs, errorf(pos, "ref of %s: %q is not a model (an annotated message in the files given to the generator)", f.Desc.FullName(), r.GetModel()))
			continue
		case len(t.key.holders) != 1:
			errs = append(errs, errorf(pos, "ref of %s: the key %q of %s has %d placeholders, so a label alone cannot name a value; use a dependency key template", f.Desc.FullName(), t.key.text, t.name, len(t.key.holders)))
			continue
		case f.Message != nil || f.Desc.IsMap():
			errs = append(errs, errorf(pos, "ref of %s: the field must hold a label (string or integer), not a %s", f.Desc.FullName(), kindName(f)))
			continue
		}
		target := t.key.holders[0].kind()
		if (f.Desc.Kind() == protoreflect.StringKind) != (target == protoreflect.StringKind) || (f.Desc.Kind() != protoreflect.StringKind && !isIntegerKind(f.Desc.Kind())) {
			errs = append(errs, errorf(pos, "ref of %s: the field is %s but the label of %s is %s", f.Desc.FullName(), f.Desc.Kind(), t.name, target))
			continue
		}
		label := r.GetLabel()
		if label == "" {
			label = string(f.Desc.Name())
		}
		refs = append(refs, ref{field: f, label: label, target: t, pos: pos})
	}
	return refs, errs
}

func kindName(f *protogen.Field) string {
	switch {
	case f.Desc.IsMap():
		return "map"
	case f.Message != nil:
		return "message"
	}
	return f.Desc.Kind().String()
}

// parseDependency parses a dependency written over the fields in scope.
func parseDependency(d *kvdescriptorv1.Dependency, s scope) (templateDep, error) {
	dep := templateDep{label: d.GetLabel()}
	anyOf := d.GetAnyOf()
	switch {
	case dep.label == "":
		return dep, fmt.Errorf("a dependency needs a label")
	case d.GetKey() != "" && anyOf != nil:
		return dep, fmt.Errorf("dependency %q: set key or any_of, not both", dep.label)
	case d.GetKey() == "" && anyOf == nil:
		return dep, fmt.Errorf("dependency %q: set key or any_of", dep.label)
	case d.GetKey() != "":
		t, err := parseTemplate(d.GetKey(), s)
		if err != nil {
			return dep, fmt.Errorf("dependency %q: %v", dep.label, err)
		}
		dep.key = t
		return dep, nil
	case len(anyOf.GetPrefixes()) == 0:
		return dep, fmt.Errorf("dependency %q: any_of needs at least one prefix", dep.label)
	}
	for _, p := range anyOf.GetPrefixes() {
		t, err := parsePrefixTemplate(p, s)
		if err != nil {
			return dep, fmt.Errorf("dependency %q: prefix: %v", dep.label, err)
		}
		dep.prefixes = append(dep.prefixes, t)
	}
	if c := anyOf.GetNetworkContains(); c != "" {
		p, err := s.resolve(c)
		if err != nil {
			return dep, fmt.Errorf("dependency %q: network_contains: %v", dep.label, err)
		}
		if p.kind() != protoreflect.StringKind {
			return dep, fmt.Errorf("dependency %q: network_contains: %s must be a string field holding an IP address", dep.label, c)
		}
		dep.containsHolder = p
	}
	return dep, nil
}
