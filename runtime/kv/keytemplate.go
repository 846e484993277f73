package kv

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Format is the format of a key placeholder. It decides which characters a
// placeholder value may hold in a key, which is what makes keys parse back
// unambiguously: an IP prefix never contains "/gw/", an escaped name never
// contains '/'.
type Format uint8

// The placeholder formats.
const (
	// FormatName is any non-empty text; in keys it is escaped with
	// EscapeSegment, so it never contains '/'. The default format.
	FormatName Format = iota
	// FormatUint is an unsigned decimal integer.
	FormatUint
	// FormatIP is an IPv4 or IPv6 address in canonical text form.
	FormatIP
	// FormatIPPrefix is an IP network in canonical form (address/bits, host
	// bits cleared); it contains exactly one '/'.
	FormatIPPrefix
	// FormatMAC is a MAC address, lower-case hex pairs separated by ':'.
	FormatMAC
	// FormatIPInterface is an interface address with its prefix length
	// (10.0.0.1/24), host bits kept; it contains exactly one '/'.
	FormatIPInterface
)

var formatNames = [...]string{FormatName: "name", FormatUint: "uint", FormatIP: "ip", FormatIPPrefix: "ipprefix", FormatMAC: "mac", FormatIPInterface: "ipiface"}

func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", f)
}

// ParseFormat returns the format spelled s ("name", "uint", "ip",
// "ipprefix", "ipiface", "mac").
func ParseFormat(s string) (Format, bool) {
	for f, n := range formatNames {
		if n == s {
			return Format(f), true
		}
	}
	return 0, false
}

// Placeholder is one variable part of a key template.
type Placeholder struct {
	// Field is the (possibly dotted) field path the value comes from.
	Field string
	// Format is the placeholder's format.
	Format Format
}

// KeyTemplate is a parsed key template such as
// "vpp/route/vrf/{vrf_id:uint}/dst/{dst_network:ipprefix}/gw/{gw:ip}".
// Placeholders are written {field} or {field:format}. A KeyTemplate is
// immutable and safe for concurrent use.
type KeyTemplate struct {
	text        string
	parts       []templatePart
	holders     []Placeholder
	elems       []elem
	holderElems [][2]int // per placeholder: first element, element after the last
	prefix      string
	simple      bool // greedy matching is exact: no backtracking needed
	// For backtracking, per element (and the end): the placeholder that
	// ends there or -1, and whether the element is inside a placeholder
	// after its first element (where the outcome depends on where the
	// placeholder started, so failures are not memoized).
	endsHolder []int
	midHolder  []bool
	greedy     []greedyOp // the elements after the prefix, for matchGreedy
}

type templatePart struct {
	literal string
	holder  int // index into holders, or -1 for a literal
}

// ParseKeyTemplate parses a key template written in the grammar of the
// package documentation. Errors name the template and the offending part
// or its byte offset.
func ParseKeyTemplate(text string) (*KeyTemplate, error) {
	if err := checkTemplateText(text); err != nil {
		return nil, err
	}
	t := &KeyTemplate{text: text}
	type written struct {
		body string
		at   int // offset of the '{'
	}
	var seen []written // the placeholders so far, for errors
	lit := 0           // start of the literal text not yet added
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '}':
			return nil, fmt.Errorf("key template %q: unmatched '}'", text)
		case '%':
			return nil, fmt.Errorf("key template %q: '%%' at offset %d: it starts escapes in keys and cannot be literal text", text, i)
		case '/':
			switch {
			case i == 0:
				return nil, fmt.Errorf("key template %q: starts with '/': the first segment is empty", text)
			case i == len(text)-1:
				return nil, fmt.Errorf("key template %q: ends with '/' (offset %d): the last segment is empty", text, i)
			case text[i-1] == '/':
				return nil, fmt.Errorf("key template %q: empty segment \"//\" at offset %d", text, i-1)
			}
		case '{':
			if lit < i {
				t.parts = append(t.parts, templatePart{literal: text[lit:i], holder: -1})
			}
			end := strings.IndexByte(text[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("key template %q: unclosed '{'", text)
			}
			body := text[i+1 : i+end]
			h, err := parsePlaceholder(body)
			if err != nil {
				return nil, fmt.Errorf("key template %q: placeholder {%s}: %w", text, body, err)
			}
			for j, o := range t.holders {
				if o.Field == h.Field {
					return nil, fmt.Errorf("key template %q: placeholder {%s} at offset %d repeats the field of {%s} at offset %d; a key carries each field once", text, body, i, seen[j].body, seen[j].at)
				}
			}
			t.parts = append(t.parts, templatePart{holder: len(t.holders)})
			t.holders = append(t.holders, h)
			seen = append(seen, written{body, i})
			i += end
			lit = i + 1
		}
	}
	if lit < len(text) {
		t.parts = append(t.parts, templatePart{literal: text[lit:], holder: -1})
	}
	for _, p := range t.parts {
		if p.holder >= 0 {
			break
		}
		t.prefix += p.literal
	}
	t.compile()
	return t, nil
}

// checkTemplateText checks what a template must not contain anywhere,
// inside placeholders or out: it is not empty, holds no control
// characters and is valid UTF-8.
func checkTemplateText(text string) error {
	if text == "" {
		return fmt.Errorf("key template %q: the template is empty", text)
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case isControl(c):
			return fmt.Errorf("key template %q: control character 0x%02x at offset %d", text, c, i)
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(text[i:])
			if r == utf8.RuneError && n == 1 {
				return fmt.Errorf("key template %q: invalid UTF-8 at offset %d", text, i)
			}
			i += n - 1
		}
	}
	return nil
}

// isControl reports whether c is an ASCII control character (C0 or DEL):
// templates and keys never hold one.
func isControl(c byte) bool { return c < 0x20 || c == 0x7f }

// parsePlaceholder parses the text between the braces of a placeholder.
func parsePlaceholder(body string) (Placeholder, error) {
	field, formatName, hasFormat := strings.Cut(body, ":")
	if !isFieldPath(field) {
		return Placeholder{}, fmt.Errorf("%q is not a field name", field)
	}
	h := Placeholder{Field: field, Format: FormatName}
	if hasFormat {
		f, ok := ParseFormat(formatName)
		if !ok {
			return Placeholder{}, fmt.Errorf("unknown format %q (want name, uint, ip, ipprefix, ipiface or mac)", formatName)
		}
		h.Format = f
	}
	return h, nil
}

// MustParseKeyTemplate is ParseKeyTemplate for templates known to be valid,
// such as those in generated code. It panics on a malformed template.
func MustParseKeyTemplate(text string) *KeyTemplate {
	t, err := ParseKeyTemplate(text)
	if err != nil {
		panic(err)
	}
	return t
}

func isFieldPath(s string) bool {
	if s == "" {
		return false
	}
	for _, seg := range strings.Split(s, ".") {
		if seg == "" {
			return false
		}
		for i, r := range seg {
			letter := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
			if !letter && (i == 0 || r < '0' || r > '9') {
				return false
			}
		}
	}
	return true
}

// String returns the template text.
func (t *KeyTemplate) String() string { return t.text }

// Prefix returns the literal text before the first placeholder: every key of
// the template starts with it.
func (t *KeyTemplate) Prefix() string { return t.prefix }

// CheckDescriptorKeySpace reports why t cannot be a descriptor's key
// template, or nil. A descriptor's template needs a literal prefix (text
// before its first placeholder): keys are mapped to descriptors through
// it. NewDescriptor applies this rule, and so does the generator to a
// model's key, so that a template it accepts is never refused at run time.
func (t *KeyTemplate) CheckDescriptorKeySpace() error {
	if t.prefix == "" {
		return fmt.Errorf("key template %q has no literal prefix before its first placeholder: a descriptor's keys are mapped to it by their prefix", t.text)
	}
	return nil
}

// Placeholders lists the template's placeholders in order.
func (t *KeyTemplate) Placeholders() []Placeholder {
	return append([]Placeholder(nil), t.holders...)
}

// Build fills the placeholders with values, in order. Values must already be
// in key form (escaped, canonical); generated key builders do that.
func (t *KeyTemplate) Build(values ...string) string {
	var b strings.Builder
	for _, p := range t.parts {
		if p.holder < 0 {
			b.WriteString(p.literal)
		} else if p.holder < len(values) {
			b.WriteString(values[p.holder])
		}
	}
	return b.String()
}

// Match reports whether key is a key of this template: it splits into
// values that are each in the key form of their format (see Split).
func (t *KeyTemplate) Match(key string) bool {
	var buf [8]string
	if n := len(t.holderElems); n <= len(buf) {
		return t.split(key, buf[:n], true)
	}
	return t.split(key, make([]string, len(t.holderElems)), true)
}

// Split returns the placeholder values of key, in order and still in key
// form (escaped), or false when key is not a key of this template. A key
// is one only when each value is in the key form of its format, the form
// KeyValue writes: a name escaped with no control characters (and only
// the escapes EscapeSegment writes), an unsigned integer without leading
// zeros that fits 64 bits, an address or network in canonical form (a
// network with its host bits cleared), a MAC address of six lower-case
// octets. So Build(values...) == key, and a key that no valid values
// build never matches. For a template whose keys split in more than one
// place (see Ambiguity), the values of the preferred split (the longest
// first value, and so on) must be in key form.
func (t *KeyTemplate) Split(key string) ([]string, bool) {
	out := make([]string, len(t.holderElems))
	if !t.split(key, out, true) {
		return nil, false
	}
	return out, true
}

// SplitInto is the first step of a generated key parser: Split into the
// caller's out, which must have one element per placeholder (see
// Placeholders), checking the structure of the key only. Each value holds
// only bytes its format allows (a name no '/' and no control characters,
// a number only digits), but whether it is in key form is left to the
// ParseKey function of its format (ParseKeyName, ParseKeyUint, ParseKeyIP,
// ParseKeyIPPrefix, ParseKeyIPInterface, ParseKeyMAC), which the parser
// calls on each value to convert it, so the check is not paid twice. A
// caller that does not convert every value so must use Split. SplitInto
// allocates nothing, so generated parsers use it with an array on their
// stack. It returns false when key is not a key of this template or out
// has the wrong length; out then holds nothing meaningful.
func (t *KeyTemplate) SplitInto(key string, out []string) bool {
	if len(out) != len(t.holderElems) {
		return false
	}
	return t.split(key, out, false)
}

// Overlaps reports whether some key could match both t and u, and returns
// the shortest text that both accept by their structure as an example for
// error messages. The test is conservative: it compares the bytes each
// format may hold, not canonical forms, so templates that differ in formats
// whose canonical forms never meet ({x:ip} and {x:uint}) still overlap, and
// the example ("a/0") need not be a key of either. Every key that matches
// both templates is accepted by both structures.
func (t *KeyTemplate) Overlaps(u *KeyTemplate) (example string, overlap bool) {
	return intersect(t.elems, u.elems)
}

// EscapeSegment escapes a name for use as a placeholder value of format
// FormatName: '%' becomes "%25" and '/' becomes "%2F", so the value never
// contains the separator of key segments.
func EscapeSegment(s string) string {
	if !strings.ContainsAny(s, "%/") {
		return s
	}
	return string(appendEscapedSegment(make([]byte, 0, len(s)+8), s))
}

// appendEscapedSegment appends EscapeSegment(s) to b.
func appendEscapedSegment(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '%':
			b = append(b, "%25"...)
		case '/':
			b = append(b, "%2F"...)
		default:
			b = append(b, s[i])
		}
	}
	return b
}

// UnescapeSegment reverses EscapeSegment. It fails on a '%' that does not
// start "%25" or "%2F", which EscapeSegment never writes.
func UnescapeSegment(s string) (string, error) {
	if strings.IndexByte(s, '%') < 0 {
		if strings.IndexByte(s, '/') >= 0 {
			return "", fmt.Errorf("escaped name %q contains '/'", s)
		}
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '/' {
			return "", fmt.Errorf("escaped name %q contains '/'", s)
		}
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+3 > len(s) {
			return "", fmt.Errorf("escaped name %q: truncated escape at offset %d", s, i)
		}
		switch s[i+1 : i+3] {
		case "25":
			b.WriteByte('%')
		case "2F":
			b.WriteByte('/')
		default:
			return "", fmt.Errorf("escaped name %q: unknown escape %q at offset %d", s, s[i:i+3], i)
		}
		i += 2
	}
	return b.String(), nil
}
