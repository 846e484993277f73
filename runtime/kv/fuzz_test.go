package kv_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// FuzzKeyTemplateRoundTrip escapes two names, builds a key, splits it and
// unescapes the values: the names must come back unchanged.
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
}

// formatPattern is the regexp of each placeholder format, used as an
// independent oracle of the matcher: Go's regexp prefers the same
// (leftmost, greedy) split as the backtracking matcher.
var formatPattern = map[kv.Format]string{
	kv.FormatName:     `[^/]+`,
	kv.FormatUint:     `[0-9]+`,
	kv.FormatIP:       `[0-9a-f.:]+`,
	kv.FormatIPPrefix: `[0-9a-f.:]+/[0-9]+`,
	kv.FormatMAC:      `[0-9a-f:]+`,
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
// templates: they must agree with each other and with a regexp, never
// panic, and the values Split returns must rebuild the same key. Two
// templates that both match a key must overlap.
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
			want := c.oracle.FindStringSubmatch(key)
			if ok != (want != nil) {
				t.Fatalf("%q: Match(%q) = %v, regexp %v says %v", tmpl, key, ok, c.oracle, want != nil)
			}
			matched[i] = ok
			if !ok {
				if values != nil {
					t.Fatalf("%q: Split(%q) failed but returned %q", tmpl, key, values)
				}
				continue
			}
			if diff := cmp.Diff(want[1:], values); diff != "" {
				t.Fatalf("%q: Split(%q) differs from the regexp (-regexp +split):\n%s", tmpl, key, diff)
			}
			if built := tmpl.Build(values...); built != key {
				t.Fatalf("%q: Build(Split(%q)) = %q", tmpl, key, built)
			}
			for j, p := range tmpl.Placeholders() {
				if values[j] == "" {
					t.Fatalf("%q: Split(%q): placeholder %s is empty", tmpl, key, p.Field)
				}
				if p.Format != kv.FormatIPPrefix && strings.Contains(values[j], "/") {
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
				if !a.Match(example) || !b.Match(example) {
					t.Fatalf("%q.Overlaps(%q) example %q does not match both", a, b, example)
				}
				if len(example) > len(key) {
					t.Fatalf("%q.Overlaps(%q) example %q is longer than the common key %q", a, b, example, key)
				}
			}
		}
	})
}

// FuzzParseKeyTemplate parses arbitrary template text: it never panics, and
// a template it accepts builds keys that it matches and splits back.
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
	} {
		f.Add(seed)
	}
	sample := map[kv.Format]string{
		kv.FormatName:     "n%2F1",
		kv.FormatUint:     "42",
		kv.FormatIP:       "10.0.0.1",
		kv.FormatIPPrefix: "fd00::/8",
		kv.FormatMAC:      "aa:bb:cc:dd:ee:ff",
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
		if !overlap || !tmpl.Match(example) {
			t.Fatalf("%q: Overlaps(self) = %q, %v", text, example, overlap)
		}
		if len(example) > len(key) {
			t.Fatalf("%q: Overlaps(self) example %q is longer than the key %q", text, example, key)
		}
	})
}

// FuzzUnescapeSegment checks that escaped names are canonical: whatever
// UnescapeSegment accepts, EscapeSegment writes back byte for byte, and
// EscapeSegment's output always unescapes.
func FuzzUnescapeSegment(f *testing.F) {
	for _, seed := range []string{"", "eth0", "a%2Fb", "%25", "%2f", "%", "%2", "%zz", "a/b", "ü%2F", "%252F"} {
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
	})
}
