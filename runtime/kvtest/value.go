package kvtest

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// Value returns a harness value: a StringValue whose text is a list of
// tokens separated by spaces. The tokens say how the value behaves:
//
//	dep:KEY             a plain dependency on KEY (label "KEY")
//	any:PREFIX          an AnyOf dependency on any key under PREFIX
//	any:PREFIX@IP       ... whose key ends with a network containing IP
//	derive:KEY[T,T,..]  a derived value at KEY whose tokens are T,T,..
//	                    (brackets nest: derive:a[derive:b[dep:c]])
//	recreate:X          changing any recreate: token needs a re-create
//	note:X              ignored when comparing values
//	invalid:FIELD       validation fails, naming FIELD
//	anything else       a plain attribute
func Value(text string) *wrapperspb.StringValue { return wrapperspb.String(text) }

// Text returns the text of a harness value ("" for nil or another type).
func Text(v proto.Message) string {
	if sv, ok := v.(*wrapperspb.StringValue); ok {
		return sv.GetValue()
	}
	return ""
}

// Spec is a parsed harness value.
type Spec struct {
	Deps     []kv.Dependency
	Derived  []kv.Derived
	Recreate []string
	Notes    []string
	Invalid  []string
	Attrs    []string
}

// Parse parses the tokens of a harness value text.
func Parse(text string) (Spec, error) {
	var s Spec
	for _, tok := range splitTokens(text, ' ') {
		kind, arg, _ := strings.Cut(tok, ":")
		switch kind {
		case "dep":
			s.Deps = append(s.Deps, kv.Dependency{Label: arg, Key: arg})
		case "any":
			prefix, ip, hasIP := strings.Cut(arg, "@")
			a := kv.AnyOf{Prefixes: []string{prefix}}
			if hasIP {
				addr, err := netip.ParseAddr(ip)
				if err != nil {
					return s, fmt.Errorf("token %q: %w", tok, err)
				}
				a.Match = kv.NetworkContains(addr)
				a.Describe = "network contains " + addr.String()
			}
			s.Deps = append(s.Deps, kv.Dependency{Label: "any " + arg, AnyOf: a})
		case "derive":
			open := strings.IndexByte(arg, '[')
			key, inner := arg, ""
			if open >= 0 {
				if !strings.HasSuffix(arg, "]") {
					return s, fmt.Errorf("token %q: unbalanced brackets", tok)
				}
				key, inner = arg[:open], arg[open+1:len(arg)-1]
			}
			s.Derived = append(s.Derived, kv.Derived{Key: key, Value: Value(strings.Join(splitTokens(inner, ','), " "))})
		case "recreate":
			s.Recreate = append(s.Recreate, arg)
		case "note":
			s.Notes = append(s.Notes, arg)
		case "invalid":
			s.Invalid = append(s.Invalid, arg)
		default:
			s.Attrs = append(s.Attrs, tok)
		}
	}
	return s, nil
}

// splitTokens splits text at sep outside brackets, dropping empty tokens.
func splitTokens(text string, sep byte) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i <= len(text); i++ {
		if i < len(text) {
			switch text[i] {
			case '[':
				depth++
				continue
			case ']':
				depth--
				continue
			}
			if text[i] != sep || depth > 0 {
				continue
			}
		}
		if tok := strings.TrimSpace(text[start:i]); tok != "" {
			out = append(out, tok)
		}
		start = i + 1
	}
	return out
}

// comparable returns the tokens that matter for equality, sorted. Like a
// generated comparator, it leaves out what derives values: changing the
// derived values touches them, never the base.
func (s Spec) comparable() []string {
	var toks []string
	for _, d := range s.Deps {
		toks = append(toks, "dep "+d.String())
	}
	for _, r := range s.Recreate {
		toks = append(toks, "recreate "+r)
	}
	for _, r := range s.Invalid {
		toks = append(toks, "invalid "+r)
	}
	toks = append(toks, s.Attrs...)
	slices.Sort(toks)
	return toks
}
