package file

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"gopkg.in/yaml.v3"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

// ParseError is one thing wrong in a configuration file: where it is and,
// when it concerns a key, which. Err is the cause; an unknown key's is an
// *nb.UnknownKeyError.
type ParseError struct {
	File   string // the file's name as given to Parse
	Line   int    // 1-based; 0 when unknown
	Column int    // 1-based; 0 when unknown
	Key    string // "" when the error is not about one key
	Err    error
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Key != "" {
		fmt.Fprintf(&b, "key %q: ", e.Key)
	}
	var unknown *nb.UnknownKeyError
	if errors.As(e.Err, &unknown) {
		b.WriteString("no model handles it (unknown key)")
	} else {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *ParseError) Unwrap() error { return e.Err }

// maxErrors caps the errors one Parse reports (joined); a file that is
// wrong everywhere is still reported in a readable message.
const maxErrors = 10

// maxDepth caps the nesting of a file's values (aliases included), so that
// a hostile file cannot exhaust the stack.
const maxDepth = 64

// maxExpansion caps the JSON a file's values expand to through aliases
// (the "billion laughs"), as a multiple of the file's size.
const maxExpansion = 64

// Parse parses a configuration file's contents into one change per key, in
// the file's order, each value decoded as a message of its key's model
// (found through models). name is the file's name, for the errors, and
// says its syntax: a name ending in ".json" is JSON, anything else YAML.
//
// The file is either a mapping of keys to values:
//
//	linux/interface/veth1:
//	  name: veth1
//	  type: TYPE_VETH
//
// or a list of entries, each with a key and a value:
//
//	# the list form
//	- key: linux/interface/veth1
//	  value: {name: veth1, type: TYPE_VETH}
//
// Each value is the protojson form of its model's message written as YAML
// (or JSON): field names in lowerCamelCase or as in the .proto, enums by
// name or number, 64-bit integers as numbers or strings, bytes in base64.
// A key without a value (null) has the model's empty message.
//
// An empty file (nothing but whitespace and comments) is an error: a file
// caught between its truncation and its writing must not read as "no
// configuration". An empty configuration is written {} (or []).
//
// Every error is a *ParseError (several are joined with errors.Join),
// naming the file, the line and column and, where it concerns one, the key.
func Parse(name string, data []byte, models nb.Models) ([]nb.Change, error) {
	p := &parser{name: name, models: models, budget: maxExpansion * (len(data) + 64)}
	root, err := p.document(data)
	if err != nil {
		return nil, err
	}
	var changes []nb.Change
	seen := make(map[string]int) // key -> line of its first occurrence
	p.entries(root, func(key string, keyNode, valNode *yaml.Node) {
		if first, dup := seen[key]; dup {
			p.fail(keyNode, key, fmt.Errorf("duplicate key (first at line %d)", first))
			return
		}
		seen[key] = keyNode.Line
		if m, ok := p.value(key, keyNode, valNode); ok {
			changes = append(changes, nb.Change{Key: key, Value: m})
		}
	})
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return changes, nil
}

type parser struct {
	name   string
	models nb.Models
	errs   []error
	budget int // bytes of JSON the values may still expand to
}

func (p *parser) fail(n *yaml.Node, key string, err error) {
	if len(p.errs) == maxErrors {
		p.errs = append(p.errs, &ParseError{File: p.name, Err: errors.New("more errors follow")})
	}
	if len(p.errs) > maxErrors {
		return
	}
	pe := &ParseError{File: p.name, Key: key, Err: err}
	if n != nil {
		pe.Line, pe.Column = n.Line, n.Column
	}
	p.errs = append(p.errs, pe)
}

// document parses data into the root node of its only document; nil for a
// document of null ("~", "null").
func (p *parser) document(data []byte) (*yaml.Node, error) {
	if strings.EqualFold(filepath.Ext(p.name), ".json") {
		if off, err := checkJSON(data); err != nil {
			pe := &ParseError{File: p.name, Err: err}
			pe.Line, pe.Column = position(data, off)
			return nil, pe
		}
		// YAML reads JSON, but not JSON's tabs (which a valid JSON text
		// has only as whitespace outside strings): blank them, keeping
		// every offset, and so every line and column.
		data = bytes.ReplaceAll(data, []byte{'\t'}, []byte{' '})
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ParseError{File: p.name, Err: errors.New("the file is empty (an empty configuration is written {})")}
		}
		return nil, p.syntaxError(data, err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); err == nil {
		return nil, &ParseError{File: p.name, Line: more.Line, Column: more.Column, Err: errors.New("a second document: the file must hold one")}
	} else if !errors.Is(err, io.EOF) {
		return nil, p.syntaxError(data, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &ParseError{File: p.name, Err: errors.New("the file is empty (an empty configuration is written {})")}
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, nil
	}
	return root, nil
}

// syntaxError makes a ParseError of a YAML syntax error of data, at the
// line of the trouble (see syntaxLine).
func (p *parser) syntaxError(data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				line, msg = n, rest[i+2:]
			}
		}
	}
	return &ParseError{File: p.name, Line: syntaxLine(data, line, msg), Err: errors.New(msg)}
}

// syntaxLine returns the 1-based line of a yaml.v3 error: its message msg
// and the line that its text gives (0 for none).
//
// yaml.v3 writes the line of one of two marks, both 0-based: the start of
// what was being read (a flow sequence's "[", a quoted string's quote),
// and failing that the place of the problem. It adds 1 for the scanner's
// errors but not for the parser's, and leaves the line out when the mark
// is on line 0: a parser error reads one line early, and an error on the
// file's first line has no line. Its reader's errors (bad UTF-8, control
// characters) and an alias to an unknown anchor carry no mark at all:
// their place is found in the text. The end of the file, past its last
// line break, is on its last line.
func syntaxLine(data []byte, line int, msg string) int {
	last := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		last++
	}
	return min(yamlLine(data, line, msg), max(last, 1))
}

func yamlLine(data []byte, line int, msg string) int {
	switch {
	case yamlParserProblems[msg]:
		return line + 1
	case msg == "found a tab character that violates indentation":
		// The mark is the start of the plain scalar being read, which
		// the tab ends, a line or more after it.
		return tabIndentLine(data, line)
	case line > 0:
		return line // a scanner's error
	case strings.HasPrefix(msg, "unknown anchor '"):
		return aliasLine(data, strings.TrimSuffix(strings.TrimPrefix(msg, "unknown anchor '"), "' referenced"))
	case yamlReaderProblems[msg] || strings.HasPrefix(msg, "input error: "):
		return badCharLine(data)
	}
	return 1 // a scanner's error on the first line
}

// yamlParserProblems are the problems of yaml.v3's parser (parserc.go), as
// opposed to its scanner's: their line is 0-based.
var yamlParserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"found undefined tag handle":             true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

// yamlReaderProblems are the problems of yaml.v3's reader (readerc.go):
// characters that are not allowed, which it reports without a line.
var yamlReaderProblems = map[string]bool{
	"invalid leading UTF-8 octet":        true,
	"incomplete UTF-8 octet sequence":    true,
	"invalid trailing UTF-8 octet":       true,
	"invalid length of a UTF-8 sequence": true,
	"invalid Unicode character":          true,
	"incomplete UTF-16 character":        true,
	"unexpected low surrogate area":      true,
	"incomplete UTF-16 surrogate pair":   true,
	"expected low surrogate area":        true,
	"control characters are not allowed": true,
}

// tabIndentLine returns the first line from line (1-based) on whose
// indentation holds a tab; line itself when there is none. (The scalar's
// own line has none; when the scalar starts on the first line, yaml.v3
// gives the tab's line.)
func tabIndentLine(data []byte, line int) int {
	lines := bytes.Split(data, []byte{'\n'})
	for i := max(line-1, 0); i < len(lines); i++ {
		indent := lines[i][:len(lines[i])-len(bytes.TrimLeft(lines[i], " \t"))]
		if bytes.IndexByte(indent, '\t') >= 0 {
			return i + 1
		}
	}
	return line
}

// aliasLine returns the line of the first alias to anchor (*anchor), 0
// when there is none.
func aliasLine(data []byte, anchor string) int {
	re, err := regexp.Compile(`(^|[\s\[{,])\*` + regexp.QuoteMeta(anchor) + `($|[\s\]},])`)
	if err != nil {
		return 0
	}
	loc := re.FindIndex(data)
	if loc == nil {
		return 0
	}
	line, _ := position(data, loc[0]+1)
	return line
}

// badCharLine returns the line of the first character that YAML does not
// allow (invalid UTF-8, a control character other than tab and line
// breaks), 0 when there is none.
func badCharLine(data []byte) int {
	for off := 0; off < len(data); {
		r, size := utf8.DecodeRune(data[off:])
		bad := r == utf8.RuneError && size <= 1 ||
			r < 0x20 && r != '\t' && r != '\n' && r != '\r' ||
			r >= 0x7f && r < 0xa0 && r != 0x85 ||
			r == 0xfffe || r == 0xffff
		if bad {
			line, _ := position(data, off+1)
			return line
		}
		off += size
	}
	return 0
}

// checkJSON checks that data is one JSON text; its error comes with the
// offset of the trouble.
func checkJSON(data []byte) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, nil // empty: the YAML parser says so
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return int(se.Offset), fmt.Errorf("invalid JSON: %v", se)
		}
		return len(data), fmt.Errorf("invalid JSON: %v", err)
	}
	if off := int(dec.InputOffset()); len(bytes.TrimSpace(data[off:])) > 0 {
		off += len(data[off:]) - len(bytes.TrimLeft(data[off:], " \t\r\n"))
		return off + 1, errors.New("invalid JSON: data after the top-level value")
	}
	return 0, nil
}

// position returns the 1-based line and column of byte offset off.
func position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	col = off - bytes.LastIndexByte(data[:off], '\n')
	if off > 0 {
		// encoding/json's offset is past the offending byte.
		col--
	}
	return line, max(col, 1)
}

// entries calls f for each key of the root, in the file's order.
func (p *parser) entries(root *yaml.Node, f func(key string, keyNode, valNode *yaml.Node)) {
	if root == nil {
		return
	}
	switch root.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := root.Content[i], root.Content[i+1]
			key, ok := p.key(k)
			if ok {
				f(key, k, v)
			}
		}
	case yaml.SequenceNode:
		for _, e := range root.Content {
			p.entry(e, f)
		}
	default:
		p.fail(root, "", errors.New("the file must map keys to values (or list entries with a key and a value)"))
	}
}

// entry reads one {key, value} entry of the list form.
func (p *parser) entry(e *yaml.Node, f func(key string, keyNode, valNode *yaml.Node)) {
	if e.Kind != yaml.MappingNode {
		p.fail(e, "", errors.New("an entry of the list must be a mapping with a key and a value"))
		return
	}
	var keyNode, valNode *yaml.Node
	for i := 0; i+1 < len(e.Content); i += 2 {
		k, v := e.Content[i], e.Content[i+1]
		switch {
		case k.Kind == yaml.ScalarNode && k.Value == "key" && keyNode == nil:
			keyNode = v
		case k.Kind == yaml.ScalarNode && k.Value == "value" && valNode == nil:
			valNode = v
		default:
			p.fail(k, "", fmt.Errorf("an entry has a key and a value, nothing else (found %q)", k.Value))
			return
		}
	}
	if keyNode == nil {
		p.fail(e, "", errors.New("an entry without a key"))
		return
	}
	key, ok := p.key(keyNode)
	if !ok {
		return
	}
	if valNode == nil {
		valNode = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: keyNode.Line, Column: keyNode.Column}
	}
	f(key, keyNode, valNode)
}

// key reads a key: a non-empty string scalar.
func (p *parser) key(n *yaml.Node) (string, bool) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" || n.Value == "" {
		p.fail(n, "", errors.New("a key must be a non-empty string"))
		return "", false
	}
	return n.Value, true
}

// value decodes the value of key.
func (p *parser) value(key string, keyNode, valNode *yaml.Node) (proto.Message, bool) {
	mt, ok := p.models.MessageType(key)
	if !ok {
		p.fail(keyNode, key, &nb.UnknownKeyError{Key: key})
		return nil, false
	}
	c := converter{p: p, key: key}
	var b bytes.Buffer
	if n := resolve(valNode); isNull(n) {
		b.WriteString("{}")
	} else if md := mt.Descriptor(); !isWellKnown(md) && n.Kind != yaml.MappingNode {
		p.fail(valNode, key, fmt.Errorf("the value must be a mapping (a %s)", md.FullName()))
		return nil, false
	} else if !c.message(&b, valNode, mt.Descriptor(), 0) {
		return nil, false
	}
	m := mt.New().Interface()
	if err := protojson.Unmarshal(b.Bytes(), m); err != nil {
		// protojson names the field; the line is the value's.
		p.fail(valNode, key, fmt.Errorf("the value is not a %s: %s", mt.Descriptor().FullName(), protojsonMessage(err)))
		return nil, false
	}
	return m, true
}

// protojsonMessage returns what protojson found wrong without its position
// in the JSON made from the file, which would mislead.
func protojsonMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "proto:")
	msg = strings.TrimLeft(msg, " \u00a0") // protojson's separator varies
	return strings.TrimLeft(jsonPosition.ReplaceAllString(msg, ""), ": ")
}

var jsonPosition = regexp.MustCompile(` ?\(line \d+:\d+\)`)

// converter writes a YAML value as the JSON that protojson reads, guided by
// the message's descriptor where YAML's implicit types would surprise: a
// plain scalar of a string field is a string even when it looks like a
// number, and a field the message does not have is reported at its line.
type converter struct {
	p   *parser
	key string
}

func (c *converter) fail(n *yaml.Node, err error) bool {
	c.p.fail(n, c.key, err)
	return false
}

// resolve follows an alias.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < maxDepth; i++ {
		n = n.Alias
	}
	return n
}

// message writes n as a message of descriptor md (nil: unknown, converted
// by YAML's types alone).
func (c *converter) message(b *bytes.Buffer, n *yaml.Node, md protoreflect.MessageDescriptor, depth int) bool {
	n = resolve(n)
	if md != nil && isWellKnown(md) {
		md = nil // its JSON form is not an object of its fields
	}
	if md == nil || n.Kind != yaml.MappingNode {
		return c.any(b, n, depth)
	}
	if depth > maxDepth {
		return c.fail(n, errors.New("the value nests too deep"))
	}
	entries, ok := c.pairs(n, 0)
	b.WriteByte('{')
	first := true
	for _, e := range entries {
		k, v := e[0], e[1]
		if k.Kind != yaml.ScalarNode {
			ok = c.fail(k, errors.New("a field name must be a string"))
			continue
		}
		fd := md.Fields().ByJSONName(k.Value)
		if fd == nil {
			fd = md.Fields().ByTextName(k.Value)
		}
		if fd == nil {
			ok = c.fail(k, fmt.Errorf("%s has no field %q", md.FullName(), k.Value))
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		writeString(b, k.Value)
		b.WriteByte(':')
		ok = c.field(b, v, fd, depth+1) && ok
	}
	b.WriteByte('}')
	return ok
}

// pairs returns the keys and values of mapping n with the mappings that
// its "<<" keys merge in, as YAML merges them: a key of n wins over a
// merged one, and an earlier merge over a later one. A key twice in n is
// an error.
func (c *converter) pairs(n *yaml.Node, merges int) ([][2]*yaml.Node, bool) {
	var own, merged [][2]*yaml.Node
	seen := make(map[string]int) // scalar key -> its line
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if !c.spend(k, 2) {
			return nil, false
		}
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			if merges > maxDepth {
				return nil, c.fail(k, errors.New("merges nest too deep"))
			}
			for _, src := range mergeSources(resolve(v)) {
				if src.Kind != yaml.MappingNode {
					return nil, c.fail(k, errors.New("a merge (<<) takes a mapping or a list of mappings"))
				}
				sub, subOK := c.pairs(src, merges+1)
				if !subOK {
					return nil, false
				}
				merged = append(merged, sub...)
			}
			continue
		}
		if k.Kind == yaml.ScalarNode {
			if line, dup := seen[k.Value]; dup {
				ok = c.fail(k, fmt.Errorf("%q twice (first at line %d)", k.Value, line))
				continue
			}
			seen[k.Value] = k.Line
		}
		own = append(own, [2]*yaml.Node{k, v})
	}
	for _, e := range merged {
		if e[0].Kind == yaml.ScalarNode {
			if _, dup := seen[e[0].Value]; dup {
				continue
			}
			seen[e[0].Value] = e[0].Line
		}
		own = append(own, e)
	}
	return own, ok
}

func mergeSources(v *yaml.Node) []*yaml.Node {
	if v.Kind != yaml.SequenceNode {
		return []*yaml.Node{v}
	}
	out := make([]*yaml.Node, len(v.Content))
	for i, e := range v.Content {
		out[i] = resolve(e)
	}
	return out
}

// field writes the value of field fd.
func (c *converter) field(b *bytes.Buffer, n *yaml.Node, fd protoreflect.FieldDescriptor, depth int) bool {
	n = resolve(n)
	if isNull(n) {
		b.WriteString("null")
		return true
	}
	switch {
	case fd.IsMap():
		if n.Kind != yaml.MappingNode {
			return c.fail(n, fmt.Errorf("field %s: a mapping is expected", fd.JSONName()))
		}
		entries, ok := c.pairs(n, 0)
		b.WriteByte('{')
		for i, e := range entries {
			if e[0].Kind != yaml.ScalarNode {
				ok = c.fail(e[0], errors.New("a map key must be a scalar"))
				continue
			}
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, e[0].Value)
			b.WriteByte(':')
			ok = c.single(b, e[1], fd.MapValue(), depth+1) && ok
		}
		b.WriteByte('}')
		return ok
	case fd.IsList():
		if n.Kind != yaml.SequenceNode {
			return c.fail(n, fmt.Errorf("field %s: a list is expected", fd.JSONName()))
		}
		b.WriteByte('[')
		ok := true
		for i, e := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			ok = c.single(b, e, fd, depth+1) && ok
		}
		b.WriteByte(']')
		return ok
	}
	return c.single(b, n, fd, depth)
}

// single writes one value of fd's kind (an element, for a list or a map).
func (c *converter) single(b *bytes.Buffer, n *yaml.Node, fd protoreflect.FieldDescriptor, depth int) bool {
	n = resolve(n)
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if md := fd.Message(); !isWellKnown(md) && n.Kind != yaml.MappingNode {
			return c.fail(n, fmt.Errorf("field %s: a mapping (a %s) is expected", fd.JSONName(), md.FullName()))
		}
		return c.message(b, n, fd.Message(), depth)
	case protoreflect.StringKind, protoreflect.BytesKind:
		if n.Kind == yaml.ScalarNode && !isNull(n) {
			// "name: 123" or "name: true" is the string, not a number.
			return c.scalarString(b, n)
		}
	default:
		if n.Kind == yaml.ScalarNode && !isNull(n) {
			// Checked here to be reported at the scalar's own line;
			// what passes, protojson still checks.
			if err := checkScalar(n, fd); err != nil {
				return c.fail(n, err)
			}
		}
	}
	return c.any(b, n, depth)
}

// checkScalar checks a scalar of a field of a numeric, boolean or enum kind.
func checkScalar(n *yaml.Node, fd protoreflect.FieldDescriptor) error {
	tag := n.ShortTag()
	bad := func(what string) error {
		return fmt.Errorf("field %s: %q is not %s", fd.JSONName(), n.Value, what)
	}
	var bits int
	signed := true
	switch fd.Kind() {
	case protoreflect.BoolKind:
		if tag != "!!bool" {
			return bad("a boolean (true or false)")
		}
		return nil
	case protoreflect.EnumKind:
		ed := fd.Enum()
		if ed.FullName() == "google.protobuf.NullValue" || ed.Values().ByName(protoreflect.Name(n.Value)) != nil {
			return nil
		}
		if tag == "!!int" {
			if _, err := strconv.ParseInt(intJSON(n.Value), 10, 32); err == nil {
				return nil
			}
		}
		return bad("a value of " + string(ed.FullName()))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		bits = 32
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		bits, signed = 32, false
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		bits = 64
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		bits, signed = 64, false
	default: // floats: protojson's forms ("Infinity", 1e3...) are many
		return nil
	}
	text := n.Value
	switch tag {
	case "!!int":
		text = intJSON(n.Value)
	case "!!str":
		// protojson takes a 64-bit integer as a string too.
	default:
		return nil // a float (1e3 is an integer): protojson decides
	}
	var err error
	if signed {
		_, err = strconv.ParseInt(text, 10, bits)
	} else {
		_, err = strconv.ParseUint(text, 10, bits)
	}
	if err != nil {
		if signed {
			return bad(fmt.Sprintf("an int%d", bits))
		}
		return bad(fmt.Sprintf("a uint%d", bits))
	}
	return nil
}

func (c *converter) scalarString(b *bytes.Buffer, n *yaml.Node) bool {
	if !c.spend(n, len(n.Value)+2) {
		return false
	}
	v := n.Value
	if n.ShortTag() == "!!binary" {
		v = strings.Join(strings.Fields(v), "")
	}
	writeString(b, v)
	return true
}

// spend takes n bytes from the expansion budget.
func (c *converter) spend(node *yaml.Node, n int) bool {
	c.p.budget -= n
	if c.p.budget < 0 {
		return c.fail(node, errors.New("the values expand too much (aliases)"))
	}
	return true
}

// any writes n by YAML's own types.
func (c *converter) any(b *bytes.Buffer, n *yaml.Node, depth int) bool {
	n = resolve(n)
	if depth > maxDepth {
		return c.fail(n, errors.New("the value nests too deep"))
	}
	if !c.spend(n, 2) {
		return false
	}
	switch n.Kind {
	case yaml.MappingNode:
		entries, ok := c.pairs(n, 0)
		b.WriteByte('{')
		for i, e := range entries {
			if e[0].Kind != yaml.ScalarNode {
				ok = c.fail(e[0], errors.New("a mapping key must be a scalar"))
				continue
			}
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, e[0].Value)
			b.WriteByte(':')
			ok = c.any(b, e[1], depth+1) && ok
		}
		b.WriteByte('}')
		return ok
	case yaml.SequenceNode:
		b.WriteByte('[')
		ok := true
		for i, e := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			ok = c.any(b, e, depth+1) && ok
		}
		b.WriteByte(']')
		return ok
	case yaml.ScalarNode:
		return c.scalar(b, n)
	}
	return c.fail(n, errors.New("an alias to nothing"))
}

// scalar writes a scalar by its YAML type.
func (c *converter) scalar(b *bytes.Buffer, n *yaml.Node) bool {
	if !c.spend(n, len(n.Value)+2) {
		return false
	}
	switch n.ShortTag() {
	case "!!null":
		b.WriteString("null")
	case "!!bool":
		v, err := strconv.ParseBool(strings.ToLower(n.Value))
		if err != nil {
			return c.fail(n, fmt.Errorf("%q is not a boolean", n.Value))
		}
		b.WriteString(strconv.FormatBool(v))
	case "!!int":
		b.WriteString(intJSON(n.Value))
	case "!!float":
		b.WriteString(floatJSON(n.Value))
	case "!!binary":
		writeString(b, strings.Join(strings.Fields(n.Value), ""))
	default: // !!str, !!timestamp, custom tags: the text
		writeString(b, n.Value)
	}
	return true
}

// intJSON writes a YAML integer (0x1f, 0o17, 0b101, 1_000, +5, 017) as a JSON
// number, exactly: 64-bit values are not rounded through a float. A value
// out of the 64-bit range stays as written, as a string, for protojson to
// reject by the field's name.
func intJSON(s string) string {
	t := strings.ReplaceAll(s, "_", "")
	neg := strings.HasPrefix(t, "-")
	t = strings.TrimLeft(t, "+-")
	base := 10
	switch {
	case strings.HasPrefix(t, "0x"), strings.HasPrefix(t, "0X"):
		base, t = 16, t[2:]
	case strings.HasPrefix(t, "0o"), strings.HasPrefix(t, "0O"):
		base, t = 8, t[2:]
	case strings.HasPrefix(t, "0b"), strings.HasPrefix(t, "0B"):
		base, t = 2, t[2:]
	}
	// 017 is seventeen, as in YAML 1.2 (octal is written 0o17): a VLAN
	// written 010 is not 8.
	u, err := strconv.ParseUint(t, base, 64)
	if err != nil {
		return quote(s)
	}
	if neg {
		if u > 1<<63 {
			return quote(s)
		}
		return "-" + strconv.FormatUint(u, 10)
	}
	return strconv.FormatUint(u, 10)
}

// floatJSON writes a YAML float as JSON: protojson's "Infinity",
// "-Infinity" and "NaN" for YAML's .inf, -.inf and .nan.
func floatJSON(s string) string {
	switch strings.ToLower(strings.TrimPrefix(s, "+")) {
	case ".inf":
		return `"Infinity"`
	case "-.inf":
		return `"-Infinity"`
	case ".nan":
		return `"NaN"`
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return quote(s)
	}
	if json.Valid([]byte(s)) {
		return s // as written: no digits lost to a float's formatting
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// isWellKnown says whether md is a google.protobuf type whose JSON form is
// not an object of its fields (Timestamp, Duration, the wrappers, Struct,
// Value, Any, FieldMask...).
func isWellKnown(md protoreflect.MessageDescriptor) bool {
	return md.ParentFile() != nil && md.ParentFile().Package() == "google.protobuf"
}

func quote(s string) string {
	var b bytes.Buffer
	writeString(&b, s)
	return b.String()
}

// writeString writes s as a JSON string.
func writeString(b *bytes.Buffer, s string) {
	enc, err := json.Marshal(s)
	if err != nil { // never for a string
		enc = []byte(`""`)
	}
	b.Write(enc)
}
