package gen

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kvdescriptor/kvdescriptor/options/kvdescriptorv1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// model is one item type: an annotated message, or the derived values of
// one field of an annotated message.
type model struct {
	file   *protogen.File
	msg    *protogen.Message // the base message
	name   string            // descriptor name
	goName string            // Go identifier prefix, e.g. "ARPEntry"
	key    *keyTemplate
	label  *placeholder // the label's placeholder, or nil (variable part)
	meta   bool
	after  []string // RetrieveDependencies, model names
	// drift is the drift policy (option drift_policy; a derived model
	// takes its base's).
	drift kvdescriptorv1.DriftPolicy

	// For annotated messages.
	opts    *kvdescriptorv1.ModelOptions
	derived []*model

	// For derived models.
	base      *model
	field     *protogen.Field   // the deriving field
	elem      *protogen.Message // the element message, nil for scalars
	deriveOpt *kvdescriptorv1.Derive

	refs []ref
	deps []templateDep
	pos  position
}

// valueMsg is the message whose fields describe a value of the model: the
// annotated message, or the element message of a derived model.
func (m *model) valueMsg() *protogen.Message {
	if m.base != nil {
		return m.elem
	}
	return m.msg
}

// ref is a dependency through a field holding another model's label.
type ref struct {
	field *protogen.Field
	// via is the repeated message field of the value whose elements hold
	// field (nil: field is the value's own).
	via    *protogen.Field
	label  string
	target *model
	pos    position
}

// templateDep is a dependency written as a key template, or an AnyOf.
type templateDep struct {
	label    string
	key      *keyTemplate   // plain dependency
	prefixes []*keyTemplate // AnyOf
	// containsHolder is the field of network_contains (AnyOf), or nil.
	containsHolder *placeholder
	pos            position
}

// placeholder is one resolved placeholder of a key template.
type placeholder struct {
	path   string
	fields []*protogen.Field // from the value message (or the base)
	elem   bool              // a field of the derived element (or the element)
	format kv.Format
	goName string
}

// kind is the protobuf kind of the placeholder's value.
func (p *placeholder) kind() protoreflect.Kind {
	if len(p.fields) == 0 {
		return protoreflect.StringKind
	}
	return p.fields[len(p.fields)-1].Desc.Kind()
}

// keyTemplate is a key template with its placeholders resolved to fields.
type keyTemplate struct {
	text    string // as written
	kvText  string // with formats, for runtime/kv
	parsed  *kv.KeyTemplate
	holders []*placeholder
	// literals[i] is the text before holders[i]; literals[len] after the last.
	literals []string
}

// position is a place in a .proto file for error messages.
type position struct {
	file string
	line int // 1-based; 0 unknown
	what string
}

func (p position) String() string {
	if p.line == 0 {
		return p.file
	}
	return fmt.Sprintf("%s:%d", p.file, p.line)
}

// genError is a generator error with its place.
type genError struct {
	pos position
	msg string
}

func (e *genError) Error() string {
	if e.pos.what != "" {
		return e.pos.String() + ": " + e.pos.what + ": " + e.msg
	}
	return e.pos.String() + ": " + e.msg
}

func errorf(pos position, format string, args ...any) error {
	return &genError{pos: pos, msg: fmt.Sprintf(format, args...)}
}

// locate returns the position of the most specific source location along
// path (an option's path, cut back until a location is known) in file fd:
// the file that declares the element the path starts at, which for an
// element message of a derived value may not be the model's.
func locate(fd protoreflect.FileDescriptor, path protoreflect.SourcePath, what string) position {
	pos := position{file: fd.Path(), what: what}
	for n := len(path); n > 0; n-- {
		if loc := fd.SourceLocations().ByPath(path[:n]); loc.Path != nil || loc.StartLine != 0 {
			pos.line = loc.StartLine + 1
			return pos
		}
	}
	return pos
}

// optionPath appends the path of an extension option to a descriptor path:
// 7 is options in DescriptorProto, 8 in FieldDescriptorProto.
func optionPath(base protoreflect.SourcePath, optionsField int32, sub ...int32) protoreflect.SourcePath {
	p := append(append(protoreflect.SourcePath(nil), base...), optionsField, extensionNumber)
	return append(p, sub...)
}

const extensionNumber = 52170

func modelOptions(m *protogen.Message) *kvdescriptorv1.ModelOptions {
	o, _ := proto.GetExtension(m.Desc.Options(), kvdescriptorv1.E_Model).(*kvdescriptorv1.ModelOptions)
	return o
}

func fieldOptions(f *protogen.Field) *kvdescriptorv1.FieldOptions {
	o, _ := proto.GetExtension(f.Desc.Options(), kvdescriptorv1.E_Field).(*kvdescriptorv1.FieldOptions)
	if o == nil {
		return &kvdescriptorv1.FieldOptions{}
	}
	return o
}

// fieldFormat returns the format of a scalar field: its annotation, or the
// default for its kind.
func fieldFormat(f *protogen.Field) (kv.Format, error) {
	o := fieldOptions(f)
	isString := f.Desc.Kind() == protoreflect.StringKind
	isInt := isIntegerKind(f.Desc.Kind())
	switch o.GetFormat() {
	case kvdescriptorv1.Format_FORMAT_UNSPECIFIED:
		if isInt {
			return kv.FormatUint, nil
		}
		return kv.FormatName, nil
	case kvdescriptorv1.Format_UINT:
		if !isInt {
			return 0, fmt.Errorf("format UINT needs an integer field, %s is %s", f.Desc.Name(), f.Desc.Kind())
		}
		return kv.FormatUint, nil
	}
	if !isString {
		return 0, fmt.Errorf("format %s needs a string field, %s is %s", o.GetFormat(), f.Desc.Name(), f.Desc.Kind())
	}
	switch o.GetFormat() {
	case kvdescriptorv1.Format_NAME, kvdescriptorv1.Format_PLAIN_NAME, kvdescriptorv1.Format_IF_NAME:
		// Plain and interface names are names in keys; Validate checks
		// their own rules too (nameCheck).
		return kv.FormatName, nil
	case kvdescriptorv1.Format_IP, kvdescriptorv1.Format_IPV4:
		// An IPv4 address is an IP address in keys; Validate checks its
		// family too (nameCheck).
		return kv.FormatIP, nil
	case kvdescriptorv1.Format_IP_PREFIX:
		return kv.FormatIPPrefix, nil
	case kvdescriptorv1.Format_IP_INTERFACE:
		return kv.FormatIPInterface, nil
	case kvdescriptorv1.Format_MAC:
		return kv.FormatMAC, nil
	}
	return 0, fmt.Errorf("unknown format %v", o.GetFormat())
}

// nameCheck returns the runtime/kv function that checks the values of a
// string field of format PLAIN_NAME, IF_NAME or IPV4 beyond what a name
// or an address in a key needs, or "" for other fields.
func nameCheck(f *protogen.Field) string {
	if f.Desc.Kind() != protoreflect.StringKind {
		return ""
	}
	switch fieldOptions(f).GetFormat() {
	case kvdescriptorv1.Format_PLAIN_NAME:
		return "CheckPlainName"
	case kvdescriptorv1.Format_IF_NAME:
		return "CheckIfName"
	case kvdescriptorv1.Format_IPV4:
		return "CheckIPv4"
	}
	return ""
}

func isIntegerKind(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind,
		protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return true
	}
	return false
}

func isSignedKind(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return true
	}
	return false
}

// scope resolves placeholder paths: over the fields of msg, and, for a
// derived model, over its element (paths starting with the deriving
// field's name).
type scope struct {
	msg  *protogen.Message
	elem *protogen.Field // the deriving field, or nil
	// only, when set, limits base placeholders to these paths (the base
	// fields a derived value's key carries).
	only map[string]bool
}

func (s scope) describe() string {
	if s.elem != nil {
		return fmt.Sprintf("%s or its element %s", s.msg.Desc.FullName(), s.elem.Desc.Name())
	}
	return string(s.msg.Desc.FullName())
}

// resolve resolves a placeholder path.
func (s scope) resolve(path string) (*placeholder, error) {
	segs := strings.Split(path, ".")
	p := &placeholder{path: path}
	msg := s.msg
	if s.elem != nil && segs[0] == string(s.elem.Desc.Name()) {
		p.elem = true
		if s.elem.Message == nil {
			if len(segs) != 1 {
				return nil, fmt.Errorf("placeholder {%s}: %s is a scalar element and has no fields", path, segs[0])
			}
			p.fields = []*protogen.Field{s.elem}
			f, err := fieldFormat(s.elem)
			if err != nil {
				return nil, fmt.Errorf("placeholder {%s}: %v", path, err)
			}
			p.format, p.goName = f, s.elem.GoName
			return p, nil
		}
		if len(segs) == 1 {
			return nil, fmt.Errorf("placeholder {%s} is the element message itself, not one of its scalar fields", path)
		}
		msg, segs = s.elem.Message, segs[1:]
		p.goName = s.elem.GoName
	} else if s.only != nil && !s.only[path] {
		return nil, fmt.Errorf("placeholder {%s} is neither a field of the element nor a field of the base that the key carries", path)
	}
	for i, seg := range segs {
		var f *protogen.Field
		for _, c := range msg.Fields {
			if string(c.Desc.Name()) == seg {
				f = c
				break
			}
		}
		if f == nil {
			if i == 0 && !p.elem {
				return nil, fmt.Errorf("placeholder {%s} is not a field of %s", path, s.describe())
			}
			return nil, fmt.Errorf("placeholder {%s}: %s is not a field of %s", path, seg, msg.Desc.FullName())
		}
		p.fields = append(p.fields, f)
		p.goName += f.GoName
		last := i == len(segs)-1
		switch {
		case f.Desc.IsList() || f.Desc.IsMap():
			return nil, fmt.Errorf("placeholder {%s}: %s is a repeated field; a key needs a single value", path, f.Desc.Name())
		case !last && f.Message == nil:
			return nil, fmt.Errorf("placeholder {%s}: %s is not a message, it has no field %s", path, f.Desc.Name(), segs[i+1])
		case !last:
			msg = f.Message
		case f.Message != nil:
			return nil, fmt.Errorf("placeholder {%s}: %s is a message; a key needs a scalar field (write {%s.<field>})", path, f.Desc.Name(), path)
		case f.Desc.Kind() != protoreflect.StringKind && !isIntegerKind(f.Desc.Kind()):
			return nil, fmt.Errorf("placeholder {%s}: %s is %s; a key needs a string or integer field", path, f.Desc.Name(), f.Desc.Kind())
		}
	}
	f, err := fieldFormat(p.fields[len(p.fields)-1])
	if err != nil {
		return nil, fmt.Errorf("placeholder {%s}: %v", path, err)
	}
	p.format = f
	return p, nil
}

// parseTemplate parses a key template written over the fields in scope.
// Its grammar is runtime/kv's (kv.ParseKeyTemplate), so that the
// generator and the runtime cannot disagree on what a template is.
func parseTemplate(text string, s scope) (*keyTemplate, error) {
	if text == "" {
		return nil, fmt.Errorf("the key template is empty")
	}
	return parseTemplateText(text, text, s)
}

// parsePrefixTemplate parses the key prefix of an AnyOf dependency: a key
// template followed by one '/', so that the prefix ends where a segment
// does (an interface "eth" is not a prefix of "eth0"'s keys).
func parsePrefixTemplate(text string, s scope) (*keyTemplate, error) {
	body, ok := strings.CutSuffix(text, "/")
	if !ok {
		return nil, fmt.Errorf("key prefix %q does not end with '/': a prefix ends where a segment of the key does", text)
	}
	if body == "" {
		return nil, fmt.Errorf("key prefix %q is empty before its '/'", text)
	}
	t, err := parseTemplateText(body, text, s)
	if err != nil {
		return nil, err
	}
	t.literals[len(t.literals)-1] += "/"
	return t, nil
}

// parseTemplateText parses the key template grammar, whose text is
// written as text (the option's value, for messages).
func parseTemplateText(grammar, text string, s scope) (*keyTemplate, error) {
	raw, err := kv.ParseKeyTemplate(grammar)
	if err != nil {
		return nil, err
	}
	t := &keyTemplate{text: text}
	var kvText strings.Builder
	rest := grammar
	for _, h := range raw.Placeholders() {
		if strings.Contains(h.Field, ":") || h.Format != kv.FormatName {
			return nil, fmt.Errorf("placeholder {%s}: formats come from the field's (kvdescriptor.v1.field).format, not from the template", h.Field)
		}
		open := strings.Index(rest, "{"+h.Field+"}")
		t.literals = append(t.literals, rest[:open])
		kvText.WriteString(rest[:open])
		rest = rest[open+len(h.Field)+2:]
		p, err := s.resolve(h.Field)
		if err != nil {
			return nil, err
		}
		t.holders = append(t.holders, p)
		fmt.Fprintf(&kvText, "{%s:%s}", h.Field, p.format)
	}
	t.literals = append(t.literals, rest)
	kvText.WriteString(rest)
	t.kvText = kvText.String()
	if t.parsed, err = kv.ParseKeyTemplate(t.kvText); err != nil {
		return nil, err
	}
	return t, nil
}

// checkKeySpace applies kv.NewDescriptor's rule on key templates to the
// key of a model (or of a derived value's model), naming the template as
// written: a template the generator accepts is never refused at run time.
func checkKeySpace(t *keyTemplate) error {
	written, err := kv.ParseKeyTemplate(t.text)
	if err != nil {
		return err
	}
	return written.CheckDescriptorKeySpace()
}
