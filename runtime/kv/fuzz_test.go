package kv_test

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// FuzzKeyTemplateRoundTrip escapes two names, builds a key, splits it and
// unescapes the values: the names must come back unchanged. A name with a
// control character builds a key that never matches.
func FuzzKeyTemplateRoundTrip(f *testing.F) {
	for _, seed := range [][2]string{
		{"eth0", "memif0/1"},
		{"a/b/c", "x.y:z"},
		{"with space", "100%"},
		{"%2F", "%25"},
		{"%2f", "%"},
		{"/", "//"},
		{"ünï/cødé", "日本語"},
		{"..", ":"},
		{"/x/", "x/"},
		{"\xff\xfe", "\x00"},
		{"-", "-1"},
		{"{a}", "}{"},
		{"eth0\n", "\x7f"},
		{"a\x1fb", "ok"},
	} {
		f.Add(seed[0], seed[1])
	}
	tmpl := kv.MustParseKeyTemplate("t/{a}/x/{b}")
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == "" || b == "" {
			t.Skip("names are non-empty")
		}
		ea, eb := kv.EscapeSegment(a), kv.EscapeSegment(b)
		if strings.Contains(ea, "/") || strings.Contains(eb, "/") {
			t.Fatalf("escaped names %q, %q contain '/'", ea, eb)
		}
		key := tmpl.Build(ea, eb)
		if hasControl(a) || hasControl(b) {
			if tmpl.Match(key) {
				t.Fatalf("Match(%q) = true for a key with a control character", key)
			}
			if _, ok := tmpl.Split(key); ok {
				t.Fatalf("Split(%q) succeeded for a key with a control character", key)
			}
			return
		}
		if !tmpl.Match(key) {
			t.Fatalf("Match(%q) = false", key)
		}
		values, ok := tmpl.Split(key)
		if !ok {
			t.Fatalf("Split(%q) failed", key)
		}
		if diff := cmp.Diff([]string{ea, eb}, values); diff != "" {
			t.Fatalf("Split(%q) mismatch (-want +got):\n%s", key, diff)
		}
		var got [2]string
		for i, v := range values {
			u, err := kv.UnescapeSegment(v)
			if err != nil {
				t.Fatalf("UnescapeSegment(%q): %v", v, err)
			}
			got[i] = u
		}
		if diff := cmp.Diff([2]string{a, b}, got); diff != "" {
			t.Fatalf("names after the round trip mismatch (-want +got):\n%s", diff)
		}
	})
}

// matchTemplates are the templates FuzzKeyTemplateMatch feeds keys to:
// plain ones, the DESIGN.md route, and ones that need backtracking.
var matchTemplates = []string{
	routeTemplate,
	"t/{a}/x/{b}",
	"vpp/bd/{name}",
	"vpp/bd/{name}/interface/{interfaces.name}",
	"linux/interface/{name}/address/{ip_addresses:ipprefix}",
	"m/{mac:mac}/{p:ipprefix}",
	"a/{x}-{y:uint}",
	"a/{x}-{y:uint}/z",
	"a/{x}{y:uint}",
	"a/{x}",
	"n/{addr:ip}.{suffix:uint}",
	"t/{a}",
	"l/{name}/address/{addr:ipiface}",
	"u/{id:uint}/{mac:mac}",
	"h/{x}.{y:ip}",
}

// formatPattern is the regexp of the structure of each placeholder
// format, used as an independent oracle of the matcher: Go's regexp
// prefers the same (leftmost, greedy) split as the backtracking matcher.
// Whether a value is in key form is the business of keyForm.
var formatPattern = map[kv.Format]string{
	kv.FormatName:        `[^/\x00-\x1f\x7f]+`,
	kv.FormatUint:        `[0-9]+`,
	kv.FormatIP:          `[0-9a-f.:]+`,
	kv.FormatIPPrefix:    `[0-9a-f.:]+/[0-9]+`,
	kv.FormatIPInterface: `[0-9a-f.:]+/[0-9]+`,
	kv.FormatMAC:         `[0-9a-f:]+`,
}

// keyForm reports whether v is in the key form of format f, the oracle of
// the matcher's value checks written with the standard library alone: the
// value decodes, and encoding it again gives v byte for byte.
func keyForm(f kv.Format, v string) bool {
	switch f {
	case kv.FormatName:
		u, err := kv.UnescapeSegment(v)
		return err == nil && u != "" && !hasControl(u) && kv.EscapeSegment(u) == v
	case kv.FormatUint:
		n, err := strconv.ParseUint(v, 10, 64)
		return err == nil && strconv.FormatUint(n, 10) == v
	case kv.FormatIP:
		a, err := netip.ParseAddr(v)
		return err == nil && a.Zone() == "" && a.String() == v
	case kv.FormatIPPrefix:
		p, err := netip.ParsePrefix(v)
		return err == nil && p.Masked() == p && p.String() == v
	case kv.FormatIPInterface:
		p, err := netip.ParsePrefix(v)
		return err == nil && p.String() == v
	case kv.FormatMAC:
		m, err := net.ParseMAC(v)
		return err == nil && len(m) == 6 && m.String() == v
	}
	return false
}

// decode returns the value a placeholder value in key form stands for:
// the name unescaped, anything else as it is.
func decode(f kv.Format, v string) string {
	if f == kv.FormatName {
		u, _ := kv.UnescapeSegment(v)
		return u
	}
	return v
}

// hasControl reports whether s holds an ASCII control character.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// templateRegexp compiles the oracle regexp of a template.
func templateRegexp(t testing.TB, text string) *regexp.Regexp {
	t.Helper()
	tmpl := kv.MustParseKeyTemplate(text)
	var b strings.Builder
	b.WriteString("^")
	rest := text
	for _, p := range tmpl.Placeholders() {
		open := strings.IndexByte(rest, '{')
		end := strings.IndexByte(rest, '}')
		b.WriteString(regexp.QuoteMeta(rest[:open]))
		b.WriteString("(" + formatPattern[p.Format] + ")")
		rest = rest[end+1:]
	}
	b.WriteString(regexp.QuoteMeta(rest))
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// FuzzKeyTemplateMatch feeds arbitrary keys to Match and Split of several
// templates: they must agree with each other and with an oracle (a regexp
// of the structure and keyForm of each value), never panic, and a key
// matches only if kv builds it: the values Split returns, decoded and put
// in key form again by KeyValue, rebuild the same key, and each passes
// CheckFormat. Two templates that both match a key must overlap.
func FuzzKeyTemplateMatch(f *testing.F) {
	for _, seed := range []string{
		"",
		"vpp/route/vrf/0/dst/10.1.1.0/24/gw/10.1.1.1",
		"vpp/route/vrf/7/dst/2001:db8::/32/gw/fe80::1",
		"vpp/route/vrf/7/dst/2001:db8::/32/gw/fe80::1/",
		"vpp/route/vrf//dst/10.1.1.0/24/gw/10.1.1.1",
		"t/a%2Fb/x/c%25",
		"t/a/x/b/c",
		"t//x/b",
		"vpp/bd/bd1",
		"vpp/bd/bd1/interface/memif0",
		"vpp/bd/bd1/interface/",
		"linux/interface/eth0/address/fd00::1/64",
		"m/aa:bb:cc:dd:ee:ff/10.0.0.0/8",
		"a/foo-bar-12",
		"a/x-1-2/z",
		"a/--1",
		"a/-1",
		"a/foo12",
		"a/ünï-1",
		"n/10.0.0.1.5",
		"n/1.2",
		"t/x",
		"a/\xff-0",
		"t/a%zz/x/b",
		"t/a%/x/b",
		"t/a/x/b%4",
		"t/a\x00/x/b",
		"vpp/bd/b\nd",
		"l/eth0/address/10.0.0.1/24",
		"l/eth0/address/10.0.0.01/24",
		"u/0/aa:bb:cc:dd:ee:ff",
		"u/00/aa:bb:cc:dd:ee:ff",
		"u/1/aa:bb:cc:dd:ee:ff:00:11",
		"u/18446744073709551616/aa:bb:cc:dd:ee:ff",
		"m/aa:bb:cc:dd:ee:ff/10.0.0.1/8",
		"vpp/route/vrf/0/dst/10.1.1.0/24/gw/fe80:0::1",
		"h/a.1.2.3.4",
		"h/a.b.::1",
	} {
		f.Add(seed)
	}
	type compiled struct {
		tmpl   *kv.KeyTemplate
		oracle *regexp.Regexp
	}
	var templates []compiled
	for _, text := range matchTemplates {
		templates = append(templates, compiled{kv.MustParseKeyTemplate(text), templateRegexp(f, text)})
	}
	f.Fuzz(func(t *testing.T, key string) {
		matched := make([]bool, len(templates))
		for i, c := range templates {
			tmpl := c.tmpl
			ok := tmpl.Match(key)
			values, splitOK := tmpl.Split(key)
			if ok != splitOK {
				t.Fatalf("%q: Match(%q) = %v, Split ok = %v", tmpl, key, ok, splitOK)
			}
			// The oracle: the regexp's split (the preferred one) with
			// every value in key form. Where a template splits a key in
			// more than one place, Match may find a later split whose
			// values are in key form when the preferred one's are not.
			want := c.oracle.FindStringSubmatch(key)
			oracle := want != nil
			for j, p := range tmpl.Placeholders() {
				oracle = oracle && keyForm(p.Format, want[j+1])
			}
			if ok != oracle && (!ok || want == nil || tmpl.Ambiguity() == "") {
				t.Fatalf("%q: Match(%q) = %v, the oracle (regexp %v and key forms of %q) says %v", tmpl, key, ok, c.oracle, want, oracle)
			}
			matched[i] = ok
			if !ok {
				if values != nil {
					t.Fatalf("%q: Split(%q) failed but returned %q", tmpl, key, values)
				}
				continue
			}
			if oracle {
				if diff := cmp.Diff(want[1:], values); diff != "" {
					t.Fatalf("%q: Split(%q) differs from the regexp (-regexp +split):\n%s", tmpl, key, diff)
				}
			}
			for j, p := range tmpl.Placeholders() {
				if !keyForm(p.Format, values[j]) {
					t.Fatalf("%q: Split(%q): placeholder %s = %q is not in key form", tmpl, key, p.Field, values[j])
				}
			}
			if built := tmpl.Build(values...); built != key {
				t.Fatalf("%q: Build(Split(%q)) = %q", tmpl, key, built)
			}
			// The key is one that kv builds: from the values it stands
			// for, each valid in its format.
			rebuilt := make([]string, len(values))
			for j, p := range tmpl.Placeholders() {
				d := decode(p.Format, values[j])
				if why := kv.CheckFormat(p.Format, d); why != "" {
					t.Fatalf("%q: Split(%q): placeholder %s = %q: %s", tmpl, key, p.Field, d, why)
				}
				rebuilt[j] = kv.KeyValue(p.Format, d)
			}
			if built := tmpl.Build(rebuilt...); built != key {
				t.Fatalf("%q: %q matches, but kv builds %q from its values", tmpl, key, built)
			}
			if hasControl(key) {
				t.Fatalf("%q: Match(%q) = true for a key with a control character", tmpl, key)
			}
			for j, p := range tmpl.Placeholders() {
				if values[j] == "" {
					t.Fatalf("%q: Split(%q): placeholder %s is empty", tmpl, key, p.Field)
				}
				if p.Format != kv.FormatIPPrefix && p.Format != kv.FormatIPInterface && strings.Contains(values[j], "/") {
					t.Fatalf("%q: Split(%q): placeholder %s = %q contains '/'", tmpl, key, p.Field, values[j])
				}
			}
		}
		for i := range templates {
			for j := i + 1; j < len(templates); j++ {
				if !matched[i] || !matched[j] {
					continue
				}
				a, b := templates[i].tmpl, templates[j].tmpl
				example, overlap := a.Overlaps(b)
				if !overlap {
					t.Fatalf("%q and %q both match %q, but Overlaps = false", a, b, key)
				}
				if !templates[i].oracle.MatchString(example) || !templates[j].oracle.MatchString(example) {
					t.Fatalf("%q.Overlaps(%q) example %q does not fit both structures", a, b, example)
				}
				if len(example) > len(key) {
					t.Fatalf("%q.Overlaps(%q) example %q is longer than the common key %q", a, b, example, key)
				}
			}
		}
	})
}

// FuzzParseKeyTemplate parses arbitrary template text: it never panics, a
// template it accepts follows the grammar of the package documentation,
// and it builds keys that it matches and splits back.
func FuzzParseKeyTemplate(f *testing.F) {
	for _, seed := range []string{
		routeTemplate,
		"linux/interface/{name}",
		"vpp/bd/{name}/interface/{interfaces.name}",
		"m/{a}/{b:uint}/{c:ip}/{d:ipprefix}/{e:mac}",
		"a/{x}-{y:uint}",
		"a/{x}{y}",
		"{a}",
		"",
		"x/{a",
		"x/a}",
		"x/{a:int}",
		"x/{1a}",
		"x/{a..b}",
		"x/{}",
		"{{a}}",
		"a/{x:ipiface}",
		"/a/{x}",
		"a/{x}/",
		"a//{x}",
		"a/{x}/{x}",
		"a/{x\x00}",
		"a\nb",
		"a/100%",
		"a/\xff",
	} {
		f.Add(seed)
	}
	sample := map[kv.Format]string{
		kv.FormatName:        "n%2F1",
		kv.FormatUint:        "42",
		kv.FormatIP:          "10.0.0.1",
		kv.FormatIPPrefix:    "fd00::/8",
		kv.FormatIPInterface: "fd00::1/8",
		kv.FormatMAC:         "aa:bb:cc:dd:ee:ff",
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 128 {
			t.Skip("long templates only slow the overlap search down")
		}
		tmpl, err := kv.ParseKeyTemplate(text)
		if err != nil {
			if tmpl != nil {
				t.Fatalf("ParseKeyTemplate(%q) returned a template and %v", text, err)
			}
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("key template %q: ", text)) {
				t.Fatalf("ParseKeyTemplate(%q) error %q does not name the template", text, err)
			}
			return
		}
		if tmpl.String() != text {
			t.Fatalf("String() = %q, want %q", tmpl, text)
		}
		checkGrammar(t, tmpl)
		if !strings.HasPrefix(text, tmpl.Prefix()) || strings.ContainsAny(tmpl.Prefix(), "{}") {
			t.Fatalf("Prefix() = %q, not the literal start of %q", tmpl.Prefix(), text)
		}
		holders := tmpl.Placeholders()
		if n := strings.Count(text, "{"); len(holders) != n {
			t.Fatalf("%q: %d placeholders, want %d", text, len(holders), n)
		}
		values := make([]string, len(holders))
		for i, p := range holders {
			if _, ok := kv.ParseFormat(p.Format.String()); !ok {
				t.Fatalf("%q: placeholder %s has format %v", text, p.Field, p.Format)
			}
			values[i] = sample[p.Format]
		}
		key := tmpl.Build(values...)
		if !strings.HasPrefix(key, tmpl.Prefix()) {
			t.Fatalf("%q: key %q does not start with the prefix %q", text, key, tmpl.Prefix())
		}
		got, ok := tmpl.Split(key)
		if !ok {
			t.Fatalf("%q: Split(Build(%q)) = %q failed", text, values, key)
		}
		if rebuilt := tmpl.Build(got...); rebuilt != key {
			t.Fatalf("%q: Build(Split(%q)) = %q", text, key, rebuilt)
		}
		example, overlap := tmpl.Overlaps(tmpl)
		if !overlap || !templateRegexp(t, text).MatchString(example) {
			t.Fatalf("%q: Overlaps(self) = %q, %v", text, example, overlap)
		}
		if len(example) > len(key) {
			t.Fatalf("%q: Overlaps(self) example %q is longer than the key %q", text, example, key)
		}
	})
}

// checkGrammar fails t unless an accepted template follows the grammar
// of the package documentation, checked here independently of the
// parser: segments are not empty, there are no control characters, no
// '%' outside placeholders, the text is UTF-8, and no field repeats.
func checkGrammar(t *testing.T, tmpl *kv.KeyTemplate) {
	t.Helper()
	text := tmpl.String()
	if !utf8.ValidString(text) || hasControl(text) {
		t.Fatalf("accepted %q: not UTF-8, or a control character", text)
	}
	for i, seg := range strings.Split(text, "/") {
		if seg == "" {
			t.Fatalf("accepted %q: segment %d is empty", text, i)
		}
	}
	literal := text
	for range tmpl.Placeholders() {
		open := strings.IndexByte(literal, '{')
		end := strings.IndexByte(literal, '}')
		literal = literal[:open] + literal[end+1:]
	}
	if strings.ContainsAny(literal, "%{}") {
		t.Fatalf("accepted %q: its literal text %q holds '%%', '{' or '}'", text, literal)
	}
	seen := map[string]bool{}
	for _, p := range tmpl.Placeholders() {
		if seen[p.Field] {
			t.Fatalf("accepted %q: field %s appears twice", text, p.Field)
		}
		seen[p.Field] = true
	}
}

// FuzzUnescapeSegment checks that escaped names are canonical: whatever
// UnescapeSegment accepts, EscapeSegment writes back byte for byte, and
// EscapeSegment's output always unescapes.
func FuzzUnescapeSegment(f *testing.F) {
	for _, seed := range []string{"", "eth0", "a%2Fb", "%25", "%2f", "%", "%2", "%zz", "a/b", "ü%2F", "%252F", "a\x00", "\n", "%4"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if u, err := kv.UnescapeSegment(s); err == nil {
			if strings.Contains(s, "/") {
				t.Fatalf("UnescapeSegment(%q) accepted a raw '/'", s)
			}
			if again := kv.EscapeSegment(u); again != s {
				t.Fatalf("EscapeSegment(UnescapeSegment(%q)) = %q: two keys for one name", s, again)
			}
		}
		e := kv.EscapeSegment(s)
		u, err := kv.UnescapeSegment(e)
		if err != nil || u != s {
			t.Fatalf("UnescapeSegment(EscapeSegment(%q)) = %q, %v", s, u, err)
		}
		// ParseKeyName accepts exactly the names kv writes in keys:
		// non-empty, canonically escaped, without control characters.
		name, ok := kv.ParseKeyName(s)
		want := s != "" && !hasControl(s)
		if want {
			_, err := kv.UnescapeSegment(s)
			want = err == nil
		}
		if ok != want {
			t.Fatalf("ParseKeyName(%q) = %q, %v; want ok %v", s, name, ok, want)
		}
		if ok && kv.EscapeSegment(name) != s {
			t.Fatalf("ParseKeyName(%q) = %q, which escapes to %q", s, name, kv.EscapeSegment(name))
		}
	})
}
