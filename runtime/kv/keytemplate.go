package kv

import (
	"fmt"
	"strings"
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
}

type templatePart struct {
	literal string
	holder  int // index into holders, or -1 for a literal
}

// ParseKeyTemplate parses a key template. Errors name the offending part.
func ParseKeyTemplate(text string) (*KeyTemplate, error) {
	t := &KeyTemplate{text: text}
	rest := text
	for rest != "" {
		open := strings.IndexByte(rest, '{')
		closeAt := strings.IndexByte(rest, '}')
		if closeAt >= 0 && (open < 0 || closeAt < open) {
			return nil, fmt.Errorf("key template %q: unmatched '}'", text)
		}
		if open < 0 {
			t.parts = append(t.parts, templatePart{literal: rest, holder: -1})
			break
		}
		if open > 0 {
			t.parts = append(t.parts, templatePart{literal: rest[:open], holder: -1})
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("key template %q: unclosed '{'", text)
		}
		body := rest[open+1 : open+end]
		field, formatName, hasFormat := strings.Cut(body, ":")
		if !isFieldPath(field) {
			return nil, fmt.Errorf("key template %q: placeholder {%s}: %q is not a field name", text, body, field)
		}
		format := FormatName
		if hasFormat {
			f, ok := ParseFormat(formatName)
			if !ok {
				return nil, fmt.Errorf("key template %q: placeholder {%s}: unknown format %q (want name, uint, ip, ipprefix, ipiface or mac)", text, body, formatName)
			}
			format = f
		}
		t.parts = append(t.parts, templatePart{holder: len(t.holders)})
		t.holders = append(t.holders, Placeholder{Field: field, Format: format})
		rest = rest[open+end+1:]
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

// Match reports whether key is a key of this template.
func (t *KeyTemplate) Match(key string) bool {
	return t.split(key, nil)
}

// Split returns the placeholder values of key, in order and still in key
// form (escaped), or false when key is not a key of this template.
func (t *KeyTemplate) Split(key string) ([]string, bool) {
	out := make([]string, len(t.holderElems))
	if !t.split(key, out) {
		return nil, false
	}
	return out, true
}

// SplitInto is Split into the caller's out, which must have one element
// per placeholder (see Placeholders); it allocates nothing, so generated
// key parsers use it with an array on their stack. It returns false when
// key is not a key of this template or out has the wrong length; out then
// holds nothing meaningful.
func (t *KeyTemplate) SplitInto(key string, out []string) bool {
	if len(out) != len(t.holderElems) {
		return false
	}
	return t.split(key, out)
}

// Overlaps reports whether some key matches both t and u, and returns the
// shortest such key as an example for error messages.
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
