package kv_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// routeTemplate is the DESIGN.md VPP route key: an IP prefix that contains
// '/' although it is not the last placeholder.
const routeTemplate = "vpp/route/vrf/{vrf_id:uint}/dst/{dst_network:ipprefix}/gw/{next_hop_addr:ip}"

func TestFormatString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		format kv.Format
		want   string
	}{
		{name: "name", format: kv.FormatName, want: "name"},
		{name: "uint", format: kv.FormatUint, want: "uint"},
		{name: "ip", format: kv.FormatIP, want: "ip"},
		{name: "ipprefix", format: kv.FormatIPPrefix, want: "ipprefix"},
		{name: "mac", format: kv.FormatMAC, want: "mac"},
		{name: "out of range", format: kv.Format(42), want: "Format(42)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.format.String(); got != tt.want {
				t.Errorf("Format(%d).String() = %q, want %q", tt.format, got, tt.want)
			}
		})
	}
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		text   string
		want   kv.Format
		wantOK bool
	}{
		{name: "name", text: "name", want: kv.FormatName, wantOK: true},
		{name: "uint", text: "uint", want: kv.FormatUint, wantOK: true},
		{name: "ip", text: "ip", want: kv.FormatIP, wantOK: true},
		{name: "ipprefix", text: "ipprefix", want: kv.FormatIPPrefix, wantOK: true},
		{name: "mac", text: "mac", want: kv.FormatMAC, wantOK: true},
		{name: "empty", text: ""},
		{name: "upper case", text: "IP"},
		{name: "unknown", text: "int"},
		{name: "stringer fallback is not a format", text: "Format(7)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := kv.ParseFormat(tt.text)
			if ok != tt.wantOK || got != tt.want {
				t.Errorf("ParseFormat(%q) = %v, %v; want %v, %v", tt.text, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestParseKeyTemplate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		text             string
		wantPrefix       string
		wantPlaceholders []kv.Placeholder
	}{
		{
			name:       "no placeholders",
			text:       "global/config",
			wantPrefix: "global/config",
		},
		{
			name:             "default format is name",
			text:             "linux/interface/{name}",
			wantPrefix:       "linux/interface/",
			wantPlaceholders: []kv.Placeholder{{Field: "name", Format: kv.FormatName}},
		},
		{
			name:             "explicit name format",
			text:             "linux/interface/{name:name}",
			wantPrefix:       "linux/interface/",
			wantPlaceholders: []kv.Placeholder{{Field: "name", Format: kv.FormatName}},
		},
		{
			name:       "every format",
			text:       "m/{a}/{b:uint}/{c:ip}/{d:ipprefix}/{e:mac}",
			wantPrefix: "m/",
			wantPlaceholders: []kv.Placeholder{
				{Field: "a", Format: kv.FormatName},
				{Field: "b", Format: kv.FormatUint},
				{Field: "c", Format: kv.FormatIP},
				{Field: "d", Format: kv.FormatIPPrefix},
				{Field: "e", Format: kv.FormatMAC},
			},
		},
		{
			name:       "route",
			text:       routeTemplate,
			wantPrefix: "vpp/route/vrf/",
			wantPlaceholders: []kv.Placeholder{
				{Field: "vrf_id", Format: kv.FormatUint},
				{Field: "dst_network", Format: kv.FormatIPPrefix},
				{Field: "next_hop_addr", Format: kv.FormatIP},
			},
		},
		{
			name:       "dotted field path",
			text:       "vpp/bd/{name}/interface/{interfaces.name}",
			wantPrefix: "vpp/bd/",
			wantPlaceholders: []kv.Placeholder{
				{Field: "name", Format: kv.FormatName},
				{Field: "interfaces.name", Format: kv.FormatName},
			},
		},
		{
			name:             "deep dotted path with digits, underscores and upper case",
			text:             "x/{Peer_1.inner_2.Name3:mac}",
			wantPrefix:       "x/",
			wantPlaceholders: []kv.Placeholder{{Field: "Peer_1.inner_2.Name3", Format: kv.FormatMAC}},
		},
		{
			name:             "leading underscore",
			text:             "x/{_a}",
			wantPrefix:       "x/",
			wantPlaceholders: []kv.Placeholder{{Field: "_a", Format: kv.FormatName}},
		},
		{
			name:       "placeholder first: empty prefix",
			text:       "{a}/x",
			wantPrefix: "",
			wantPlaceholders: []kv.Placeholder{
				{Field: "a", Format: kv.FormatName},
			},
		},
		{
			name:       "adjacent placeholders parse (the generator rejects them)",
			text:       "x/{a}{b:uint}",
			wantPrefix: "x/",
			wantPlaceholders: []kv.Placeholder{
				{Field: "a", Format: kv.FormatName},
				{Field: "b", Format: kv.FormatUint},
			},
		},
		{
			name:       "literal text after the last placeholder",
			text:       "x/{a}/suffix",
			wantPrefix: "x/",
			wantPlaceholders: []kv.Placeholder{
				{Field: "a", Format: kv.FormatName},
			},
		},
		{
			name:       "spaces, dots, dashes and non-ASCII in literals",
			text:       "vpp/my bd.v1-x/ünï/{name}",
			wantPrefix: "vpp/my bd.v1-x/ünï/",
			wantPlaceholders: []kv.Placeholder{
				{Field: "name", Format: kv.FormatName},
			},
		},
		{
			name:       "two fields under one parent",
			text:       "x/{peer.a}/{peer.b:uint}",
			wantPrefix: "x/",
			wantPlaceholders: []kv.Placeholder{
				{Field: "peer.a", Format: kv.FormatName},
				{Field: "peer.b", Format: kv.FormatUint},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmpl, err := kv.ParseKeyTemplate(tt.text)
			if err != nil {
				t.Fatalf("ParseKeyTemplate(%q) failed: %v", tt.text, err)
			}
			if got := tmpl.String(); got != tt.text {
				t.Errorf("String() = %q, want %q", got, tt.text)
			}
			if got := tmpl.Prefix(); got != tt.wantPrefix {
				t.Errorf("Prefix() = %q, want %q", got, tt.wantPrefix)
			}
			if diff := cmp.Diff(tt.wantPlaceholders, tmpl.Placeholders()); diff != "" {
				t.Errorf("Placeholders() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseKeyTemplateErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		text    string
		wantErr string
	}{
		{
			name:    "unmatched close brace",
			text:    "a}b",
			wantErr: `key template "a}b": unmatched '}'`,
		},
		{
			name:    "close brace before open brace",
			text:    "x/}{a}",
			wantErr: `key template "x/}{a}": unmatched '}'`,
		},
		{
			name:    "close brace after a placeholder",
			text:    "x/{a}}",
			wantErr: `key template "x/{a}}": unmatched '}'`,
		},
		{
			name:    "unclosed open brace",
			text:    "x/{a",
			wantErr: `key template "x/{a": unclosed '{'`,
		},
		{
			name:    "unclosed open brace after a placeholder",
			text:    "x/{a}/{b:uint",
			wantErr: `key template "x/{a}/{b:uint": unclosed '{'`,
		},
		{
			name:    "empty placeholder",
			text:    "x/{}",
			wantErr: `key template "x/{}": placeholder {}: "" is not a field name`,
		},
		{
			name:    "format without field",
			text:    "x/{:uint}",
			wantErr: `key template "x/{:uint}": placeholder {:uint}: "" is not a field name`,
		},
		{
			name:    "field starts with a digit",
			text:    "x/{1a}",
			wantErr: `key template "x/{1a}": placeholder {1a}: "1a" is not a field name`,
		},
		{
			name:    "field with a dash",
			text:    "x/{a-b}",
			wantErr: `key template "x/{a-b}": placeholder {a-b}: "a-b" is not a field name`,
		},
		{
			name:    "field with a space",
			text:    "x/{a b}",
			wantErr: `key template "x/{a b}": placeholder {a b}: "a b" is not a field name`,
		},
		{
			name:    "field with non-ASCII letter",
			text:    "x/{é}",
			wantErr: `key template "x/{é}": placeholder {é}: "é" is not a field name`,
		},
		{
			name:    "empty path segment",
			text:    "x/{a..b}",
			wantErr: `key template "x/{a..b}": placeholder {a..b}: "a..b" is not a field name`,
		},
		{
			name:    "leading dot",
			text:    "x/{.a}",
			wantErr: `key template "x/{.a}": placeholder {.a}: ".a" is not a field name`,
		},
		{
			name:    "trailing dot",
			text:    "x/{a.}",
			wantErr: `key template "x/{a.}": placeholder {a.}: "a." is not a field name`,
		},
		{
			name:    "path segment starts with a digit",
			text:    "x/{a.1b}",
			wantErr: `key template "x/{a.1b}": placeholder {a.1b}: "a.1b" is not a field name`,
		},
		{
			name:    "nested open brace",
			text:    "x/{a{b}",
			wantErr: `key template "x/{a{b}": placeholder {a{b}: "a{b" is not a field name`,
		},
		{
			name:    "bad second placeholder",
			text:    "x/{a}/{b!}",
			wantErr: `key template "x/{a}/{b!}": placeholder {b!}: "b!" is not a field name`,
		},
		{
			name:    "unknown format",
			text:    "x/{a:int}",
			wantErr: `key template "x/{a:int}": placeholder {a:int}: unknown format "int" (want name, uint, ip, ipprefix, ipiface or mac)`,
		},
		{
			name:    "empty format",
			text:    "x/{a:}",
			wantErr: `key template "x/{a:}": placeholder {a:}: unknown format "" (want name, uint, ip, ipprefix, ipiface or mac)`,
		},
		{
			name:    "format names are case sensitive",
			text:    "x/{a:IP}",
			wantErr: `key template "x/{a:IP}": placeholder {a:IP}: unknown format "IP" (want name, uint, ip, ipprefix, ipiface or mac)`,
		},
		// The grammar: not empty, no empty segment, no control
		// characters, no '%' in literal text, valid UTF-8, each field once.
		{
			name:    "empty template",
			text:    "",
			wantErr: `key template "": the template is empty`,
		},
		{
			name:    "leading slash",
			text:    "/a/{x}",
			wantErr: `key template "/a/{x}": starts with '/': the first segment is empty`,
		},
		{
			name:    "only a slash",
			text:    "/",
			wantErr: `key template "/": starts with '/': the first segment is empty`,
		},
		{
			name:    "trailing slash",
			text:    "a/{x}/",
			wantErr: `key template "a/{x}/": ends with '/' (offset 5): the last segment is empty`,
		},
		{
			name:    "trailing slash without placeholders",
			text:    "linux/",
			wantErr: `key template "linux/": ends with '/' (offset 5): the last segment is empty`,
		},
		{
			name:    "double slash",
			text:    "a//{x}",
			wantErr: `key template "a//{x}": empty segment "//" at offset 1`,
		},
		{
			name:    "double slash after a placeholder",
			text:    "a/{x}//b",
			wantErr: `key template "a/{x}//b": empty segment "//" at offset 5`,
		},
		{
			name:    "NUL in a literal",
			text:    "a\x00b/{x}",
			wantErr: `key template "a\x00b/{x}": control character 0x00 at offset 1`,
		},
		{
			name:    "NUL in a placeholder",
			text:    "a/{x\x00}",
			wantErr: `key template "a/{x\x00}": control character 0x00 at offset 4`,
		},
		{
			name:    "newline",
			text:    "a/{x}\n",
			wantErr: `key template "a/{x}\n": control character 0x0a at offset 5`,
		},
		{
			name:    "tab",
			text:    "a\tb/{x}",
			wantErr: `key template "a\tb/{x}": control character 0x09 at offset 1`,
		},
		{
			name:    "escape character",
			text:    "a/\x1b[0m{x}",
			wantErr: `key template "a/\x1b[0m{x}": control character 0x1b at offset 2`,
		},
		{
			name:    "DEL",
			text:    "a/{x}\x7f",
			wantErr: `key template "a/{x}\x7f": control character 0x7f at offset 5`,
		},
		{
			name:    "invalid UTF-8",
			text:    "a/\xff/{x}",
			wantErr: `key template "a/\xff/{x}": invalid UTF-8 at offset 2`,
		},
		{
			name:    "percent in a literal",
			text:    "a/100%/{x}",
			wantErr: `key template "a/100%/{x}": '%' at offset 5: it starts escapes in keys and cannot be literal text`,
		},
		{
			name:    "escape sequence in a literal",
			text:    "a%2Fb/{x}",
			wantErr: `key template "a%2Fb/{x}": '%' at offset 1: it starts escapes in keys and cannot be literal text`,
		},
		{
			name:    "repeated placeholder",
			text:    "a/{name}/b/{name}",
			wantErr: `key template "a/{name}/b/{name}": placeholder {name} at offset 11 repeats the field of {name} at offset 2; a key carries each field once`,
		},
		{
			name:    "repeated field with another format",
			text:    "a/{x}/{y}/{x:uint}",
			wantErr: `key template "a/{x}/{y}/{x:uint}": placeholder {x:uint} at offset 10 repeats the field of {x} at offset 2; a key carries each field once`,
		},
		{
			name:    "repeated dotted field",
			text:    "a/{p.n}-{p.n}",
			wantErr: `key template "a/{p.n}-{p.n}": placeholder {p.n} at offset 8 repeats the field of {p.n} at offset 2; a key carries each field once`,
		},
		{
			name:    "slash inside a placeholder",
			text:    "a/{x/y}",
			wantErr: `key template "a/{x/y}": placeholder {x/y}: "x/y" is not a field name`,
		},
		{
			name:    "two colons",
			text:    "x/{a:ip:v4}",
			wantErr: `key template "x/{a:ip:v4}": placeholder {a:ip:v4}: unknown format "ip:v4" (want name, uint, ip, ipprefix, ipiface or mac)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmpl, err := kv.ParseKeyTemplate(tt.text)
			if err == nil {
				t.Fatalf("ParseKeyTemplate(%q) = %v, want error %q", tt.text, tmpl, tt.wantErr)
			}
			if tmpl != nil {
				t.Errorf("ParseKeyTemplate(%q) returned a template along with the error", tt.text)
			}
			if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
				t.Errorf("error text mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMustParseKeyTemplate(t *testing.T) {
	t.Parallel()
	if got := kv.MustParseKeyTemplate(routeTemplate).String(); got != routeTemplate {
		t.Errorf("MustParseKeyTemplate(%q).String() = %q", routeTemplate, got)
	}

	defer func() {
		r := recover()
		err, ok := r.(error)
		if !ok {
			t.Fatalf("MustParseKeyTemplate of a bad template: recovered %v, want an error", r)
		}
		if diff := cmp.Diff(`key template "x/{a": unclosed '{'`, err.Error()); diff != "" {
			t.Errorf("panic error mismatch (-want +got):\n%s", diff)
		}
	}()
	kv.MustParseKeyTemplate("x/{a")
	t.Error("MustParseKeyTemplate of a bad template did not panic")
}

func TestPlaceholdersReturnsACopy(t *testing.T) {
	t.Parallel()
	tmpl := kv.MustParseKeyTemplate("x/{a}/{b:uint}")
	ps := tmpl.Placeholders()
	ps[0] = kv.Placeholder{Field: "mutated", Format: kv.FormatMAC}
	want := []kv.Placeholder{{Field: "a"}, {Field: "b", Format: kv.FormatUint}}
	if diff := cmp.Diff(want, tmpl.Placeholders()); diff != "" {
		t.Errorf("Placeholders() changed after mutating a returned slice (-want +got):\n%s", diff)
	}
}

// keyCase is a key that a template must split into values, which Build
// must turn back into the same key.
type keyCase struct {
	name       string
	template   string
	key        string
	wantValues []string
}

func keyCases() []keyCase {
	return []keyCase{
		{
			name:       "route IPv4",
			template:   routeTemplate,
			key:        "vpp/route/vrf/0/dst/10.1.1.0/24/gw/10.1.1.1",
			wantValues: []string{"0", "10.1.1.0/24", "10.1.1.1"},
		},
		{
			name:       "route IPv4 default route",
			template:   routeTemplate,
			key:        "vpp/route/vrf/4294967295/dst/0.0.0.0/0/gw/192.168.0.1",
			wantValues: []string{"4294967295", "0.0.0.0/0", "192.168.0.1"},
		},
		{
			name:       "route IPv6",
			template:   routeTemplate,
			key:        "vpp/route/vrf/7/dst/2001:db8::/32/gw/fe80::1",
			wantValues: []string{"7", "2001:db8::/32", "fe80::1"},
		},
		{
			name:       "route IPv6 default route via IPv4-mapped gateway",
			template:   routeTemplate,
			key:        "vpp/route/vrf/1/dst/::/0/gw/::ffff:10.0.0.1",
			wantValues: []string{"1", "::/0", "::ffff:10.0.0.1"},
		},
		{
			name:       "route IPv6 host route",
			template:   routeTemplate,
			key:        "vpp/route/vrf/12/dst/2001:db8:0:1::42/128/gw/2001:db8:0:1::1",
			wantValues: []string{"12", "2001:db8:0:1::42/128", "2001:db8:0:1::1"},
		},
		{
			name:       "interface",
			template:   "linux/interface/{name}",
			key:        "linux/interface/eth0",
			wantValues: []string{"eth0"},
		},
		{
			name:       "escaped name",
			template:   "linux/interface/{name}",
			key:        "linux/interface/a%2Fb%25c",
			wantValues: []string{"a%2Fb%25c"},
		},
		{
			name:       "name with spaces, dots, colons and non-ASCII",
			template:   "linux/interface/{name}",
			key:        "linux/interface/my if.0:1 ünï",
			wantValues: []string{"my if.0:1 ünï"},
		},
		{
			name:       "bridge domain binding (dotted field)",
			template:   "vpp/bd/{name}/interface/{interfaces.name}",
			key:        "vpp/bd/bd1/interface/memif0%2F1",
			wantValues: []string{"bd1", "memif0%2F1"},
		},
		{
			name:       "ARP entry IPv4",
			template:   "vpp/arp/{interface}/{ip_address:ip}",
			key:        "vpp/arp/loop0/192.168.1.1",
			wantValues: []string{"loop0", "192.168.1.1"},
		},
		{
			name:       "linux address (ipiface last)",
			template:   "linux/interface/{name}/address/{ip_addresses:ipiface}",
			key:        "linux/interface/veth1/address/fd00::1/64",
			wantValues: []string{"veth1", "fd00::1/64"},
		},
		{
			name:       "network (ipprefix last)",
			template:   "linux/interface/{name}/network/{net:ipprefix}",
			key:        "linux/interface/veth1/network/fd00::/64",
			wantValues: []string{"veth1", "fd00::/64"},
		},
		{
			name:       "largest uint",
			template:   "x/{a:uint}",
			key:        "x/18446744073709551615",
			wantValues: []string{"18446744073709551615"},
		},
		{
			name:       "uint zero",
			template:   "x/{a:uint}",
			key:        "x/0",
			wantValues: []string{"0"},
		},
		{
			name:       "IPv4-mapped IPv6 gateway and host network",
			template:   routeTemplate,
			key:        "vpp/route/vrf/0/dst/::ffff:10.0.0.0/104/gw/::ffff:10.0.0.1",
			wantValues: []string{"0", "::ffff:10.0.0.0/104", "::ffff:10.0.0.1"},
		},
		{
			name:       "name of escapes only",
			template:   "linux/interface/{name}",
			key:        "linux/interface/%25%2F%252F",
			wantValues: []string{"%25%2F%252F"},
		},
		{
			name:       "name with DEL-adjacent and high bytes",
			template:   "linux/interface/{name}",
			key:        "linux/interface/~\x80\xff",
			wantValues: []string{"~\x80\xff"},
		},
		{
			name:       "MAC",
			template:   "vpp/l2fib/{bridge_domain}/mac/{phys_address:mac}",
			key:        "vpp/l2fib/bd1/mac/aa:bb:cc:dd:ee:0f",
			wantValues: []string{"bd1", "aa:bb:cc:dd:ee:0f"},
		},
		{
			name:       "literal suffix",
			template:   "x/{a:uint}/status",
			key:        "x/42/status",
			wantValues: []string{"42"},
		},
		{
			name:       "no placeholders",
			template:   "global/config",
			key:        "global/config",
			wantValues: []string{},
		},
		// Templates that need backtracking: the placeholder before a literal
		// can contain that literal, so the first '-' is not necessarily the
		// separator. The generator rejects such templates as ambiguous, but
		// the runtime must still match every key the template can build.
		{
			name:       "backtracking: simple",
			template:   "a/{x}-{y:uint}",
			key:        "a/foo-1",
			wantValues: []string{"foo", "1"},
		},
		{
			name:       "backtracking: literal inside the name",
			template:   "a/{x}-{y:uint}",
			key:        "a/foo-bar-12",
			wantValues: []string{"foo-bar", "12"},
		},
		{
			name:       "backtracking: name ends in digits",
			template:   "a/{x}-{y:uint}",
			key:        "a/x-1-2",
			wantValues: []string{"x-1", "2"},
		},
		{
			name:       "backtracking: name is the literal",
			template:   "a/{x}-{y:uint}",
			key:        "a/--1",
			wantValues: []string{"-", "1"},
		},
		{
			name:       "backtracking: literal suffix after the run",
			template:   "a/{x}-{y:uint}/z",
			key:        "a/p-q-1/z",
			wantValues: []string{"p-q", "1"},
		},
		{
			name:       "backtracking: ip followed by a dot",
			template:   "n/{addr:ip}.{suffix:uint}",
			key:        "n/10.0.0.1.5",
			wantValues: []string{"10.0.0.1", "5"},
		},
		{
			// The preferred split ("h.1.2.3" and "4") is not in key
			// form: matching goes on to the split that is.
			name:       "backtracking: the preferred split's address is not an address",
			template:   "a/{x}.{y:ip}",
			key:        "a/h.1.2.3.4",
			wantValues: []string{"h", "1.2.3.4"},
		},
		{
			name:       "backtracking: adjacent placeholders",
			template:   "a/{x}{y:uint}",
			key:        "a/foo12",
			wantValues: []string{"foo1", "2"},
		},
	}
}

// parseLikeGenerated parses key the way generated key parsers do:
// SplitInto, then the ParseKey function of each value's format.
func parseLikeGenerated(tmpl *kv.KeyTemplate, key string) bool {
	holders := tmpl.Placeholders()
	parts := make([]string, len(holders))
	if !tmpl.SplitInto(key, parts) {
		return false
	}
	for i, h := range holders {
		var ok bool
		switch h.Format {
		case kv.FormatName:
			_, ok = kv.ParseKeyName(parts[i])
		case kv.FormatUint:
			_, ok = kv.ParseKeyUint(parts[i], 64)
		case kv.FormatIP:
			_, ok = kv.ParseKeyIP(parts[i])
		case kv.FormatIPPrefix:
			_, ok = kv.ParseKeyIPPrefix(parts[i])
		case kv.FormatIPInterface:
			_, ok = kv.ParseKeyIPInterface(parts[i])
		case kv.FormatMAC:
			_, ok = kv.ParseKeyMAC(parts[i])
		}
		if !ok {
			return false
		}
	}
	return true
}

func TestSplitAndBuild(t *testing.T) {
	t.Parallel()
	for _, tt := range keyCases() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmpl := kv.MustParseKeyTemplate(tt.template)
			got, ok := tmpl.Split(tt.key)
			if !ok {
				t.Fatalf("Split(%q) failed", tt.key)
			}
			if !tmpl.Match(tt.key) {
				t.Errorf("Match(%q) = false, but Split succeeded", tt.key)
			}
			if diff := cmp.Diff(tt.wantValues, got); diff != "" {
				t.Errorf("Split(%q) mismatch (-want +got):\n%s", tt.key, diff)
			}
			if built := tmpl.Build(got...); built != tt.key {
				t.Errorf("Build(%q) = %q, want %q", got, built, tt.key)
			}
			into := make([]string, len(tmpl.Placeholders()))
			if !tmpl.SplitInto(tt.key, into) {
				t.Fatalf("SplitInto(%q) failed where Split succeeded", tt.key)
			}
			if diff := cmp.Diff(got, into); diff != "" {
				t.Errorf("SplitInto(%q) differs from Split (-split +into):\n%s", tt.key, diff)
			}
			if !parseLikeGenerated(tmpl, tt.key) {
				t.Errorf("SplitInto and the ParseKey functions reject %q", tt.key)
			}
			if tmpl.SplitInto(tt.key, make([]string, len(into)+1)) {
				t.Errorf("SplitInto(%q) into %d values succeeded; the template has %d", tt.key, len(into)+1, len(into))
			}
		})
	}
}

// TestKeyParsingAllocatesNothing: key parsing is on the scheduler's path
// for every value of every transaction (descriptor lookup, validation, the
// handler's parsed key), so splitting a key of a template that greedy
// matching decides (every model key here) and checking its canonical forms
// must not allocate. (An allocation count, not a timing.)
func TestKeyParsingAllocatesNothing(t *testing.T) {
	tmpl := kv.MustParseKeyTemplate(routeTemplate)
	key := "vpp/route/vrf/0/dst/10.1.1.0/24/gw/10.1.1.1"
	var parts [3]string
	checks := map[string]func() bool{
		"SplitInto":           func() bool { return tmpl.SplitInto(key, parts[:]) },
		"Match":               func() bool { return tmpl.Match(key) },
		"ParseKeyIP":          func() bool { _, ok := kv.ParseKeyIP("2001:db8::1"); return ok },
		"ParseKeyIPPrefix":    func() bool { _, ok := kv.ParseKeyIPPrefix("10.1.1.0/24"); return ok },
		"ParseKeyIPInterface": func() bool { _, ok := kv.ParseKeyIPInterface("10.1.1.7/24"); return ok },
		"ParseKeyName":        func() bool { _, ok := kv.ParseKeyName("eth0"); return ok },
	}
	for name, f := range checks {
		if !f() {
			t.Fatalf("%s failed", name)
		}
		if n := testing.AllocsPerRun(100, func() { f() }); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, n)
		}
	}
	for _, bad := range []string{"10.1.1.7/24", "10.01.1.0/24", "10.1.1.0/024"} {
		if _, ok := kv.ParseKeyIPPrefix(bad); ok {
			t.Errorf("ParseKeyIPPrefix(%q) accepted a non-canonical network", bad)
		}
	}
	if _, ok := kv.ParseKeyIP("2001:DB8::1"); ok {
		t.Errorf("ParseKeyIP accepted an upper-case address")
	}
}

func TestBuild(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		template string
		values   []string
		want     string
	}{
		{
			name:     "route IPv4",
			template: routeTemplate,
			values:   []string{"0", "10.1.1.0/24", "10.1.1.1"},
			want:     "vpp/route/vrf/0/dst/10.1.1.0/24/gw/10.1.1.1",
		},
		{
			name:     "route IPv6",
			template: routeTemplate,
			values:   []string{"3", "2001:db8::/48", "2001:db8::1"},
			want:     "vpp/route/vrf/3/dst/2001:db8::/48/gw/2001:db8::1",
		},
		{
			name:     "values are written as given (already escaped)",
			template: "t/{a}/x/{b}",
			values:   []string{kv.EscapeSegment("a/b"), kv.EscapeSegment("100%")},
			want:     "t/a%2Fb/x/100%25",
		},
		{
			name:     "no placeholders",
			template: "global/config",
			want:     "global/config",
		},
		{
			name:     "literal suffix",
			template: "x/{a:uint}/status",
			values:   []string{"7"},
			want:     "x/7/status",
		},
		{
			name:     "placeholder first",
			template: "{a}/x",
			values:   []string{"v"},
			want:     "v/x",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmpl := kv.MustParseKeyTemplate(tt.template)
			got := tmpl.Build(tt.values...)
			if got != tt.want {
				t.Errorf("Build(%q) = %q, want %q", tt.values, got, tt.want)
			}
			if !tmpl.Match(got) {
				t.Errorf("Match(Build(%q)) = false", tt.values)
			}
		})
	}
}

func TestMatchRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		template string
		key      string
	}{
		// Wrong or incomplete prefix.
		{name: "route: wrong prefix", template: routeTemplate, key: "vpp/routes/vrf/0/dst/10.1.1.0/24/gw/10.1.1.1"},
		{name: "route: prefix only", template: routeTemplate, key: "vpp/route/vrf/"},
		{name: "route: shorter than prefix", template: routeTemplate, key: "vpp/rou"},
		{name: "route: empty key", template: routeTemplate, key: ""},
		// Empty placeholders.
		{name: "route: empty vrf", template: routeTemplate, key: "vpp/route/vrf//dst/10.1.1.0/24/gw/10.1.1.1"},
		{name: "route: empty network", template: routeTemplate, key: "vpp/route/vrf/0/dst//gw/10.1.1.1"},
		{name: "route: empty gateway", template: routeTemplate, key: "vpp/route/vrf/0/dst/10.1.1.0/24/gw/"},
		{name: "route: empty prefix length", template: routeTemplate, key: "vpp/route/vrf/0/dst/10.1.1.0//gw/10.1.1.1"},
		// Bytes the format does not allow.
		{name: "route: vrf not a number", template: routeTemplate, key: "vpp/route/vrf/x/dst/10.1.1.0/24/gw/10.1.1.1"},
		{name: "route: negative vrf", template: routeTemplate, key: "vpp/route/vrf/-1/dst/10.1.1.0/24/gw/10.1.1.1"},
		{name: "route: network without length", template: routeTemplate, key: "vpp/route/vrf/0/dst/10.1.1.0/gw/10.1.1.1"},
		{name: "route: network with two lengths", template: routeTemplate, key: "vpp/route/vrf/0/dst/10.1.1.0/24/8/gw/10.1.1.1"},
		{name: "route: upper-case IPv6 is not canonical", template: routeTemplate, key: "vpp/route/vrf/0/dst/2001:DB8::/32/gw/fe80::1"},
		{name: "route: gateway is a prefix", template: routeTemplate, key: "vpp/route/vrf/0/dst/10.1.1.0/24/gw/10.1.1.1/32"},
		{name: "route: gateway with zone", template: routeTemplate, key: "vpp/route/vrf/0/dst/fe80::/64/gw/fe80::1%eth0"},
		// Trailing garbage.
		{name: "route: trailing slash", template: routeTemplate, key: "vpp/route/vrf/0/dst/10.1.1.0/24/gw/10.1.1.1/"},
		{name: "route: trailing text", template: routeTemplate, key: "vpp/route/vrf/0/dst/10.1.1.0/24/gw/10.1.1.1x"},
		{name: "literal suffix: missing", template: "x/{a:uint}/status", key: "x/1"},
		{name: "literal suffix: longer", template: "x/{a:uint}/status", key: "x/1/statusx"},
		{name: "no placeholders: longer", template: "global/config", key: "global/config/x"},
		{name: "no placeholders: shorter", template: "global/config", key: "global/conf"},
		// '/' inside a name placeholder.
		{name: "name: slash inside", template: "linux/interface/{name}", key: "linux/interface/a/b"},
		{name: "name: trailing slash", template: "linux/interface/{name}", key: "linux/interface/eth0/"},
		{name: "name: empty", template: "linux/interface/{name}", key: "linux/interface/"},
		{name: "binding: slash inside the member", template: "vpp/bd/{name}/interface/{interfaces.name}", key: "vpp/bd/bd1/interface/memif0/1"},
		{name: "binding: slash inside the bridge domain", template: "vpp/bd/{name}/interface/{interfaces.name}", key: "vpp/bd/a/b/interface/memif0"},
		{name: "binding: is a bridge domain key", template: "vpp/bd/{name}/interface/{interfaces.name}", key: "vpp/bd/bd1"},
		{name: "bridge domain: is a binding key", template: "vpp/bd/{name}", key: "vpp/bd/bd1/interface/memif0"},
		// MAC format.
		{name: "mac: upper case", template: "m/{mac:mac}", key: "m/AA:BB:CC:DD:EE:FF"},
		{name: "mac: dashes", template: "m/{mac:mac}", key: "m/aa-bb-cc-dd-ee-ff"},
		{name: "mac: dots", template: "m/{mac:mac}", key: "m/aabb.ccdd.eeff"},
		{name: "mac: EUI-64", template: "m/{mac:mac}", key: "m/aa:bb:cc:dd:ee:ff:00:11"},
		{name: "mac: five octets", template: "m/{mac:mac}", key: "m/aa:bb:cc:dd:ee"},
		{name: "mac: one-digit octet", template: "m/{mac:mac}", key: "m/a:bb:cc:dd:ee:ff"},
		{name: "mac: seven octets", template: "m/{mac:mac}/x", key: "m/aa:bb:cc:dd:ee:ff:00/x"},
		// Control characters: no key holds one.
		{name: "name: NUL", template: "linux/interface/{name}", key: "linux/interface/eth\x000"},
		{name: "name: only NUL", template: "linux/interface/{name}", key: "linux/interface/\x00"},
		{name: "name: newline", template: "linux/interface/{name}", key: "linux/interface/eth0\n"},
		{name: "name: DEL", template: "linux/interface/{name}", key: "linux/interface/\x7feth0"},
		{name: "name: escape character", template: "linux/interface/{name}", key: "linux/interface/\x1b[0m"},
		{name: "binding: NUL in the first name", template: "vpp/bd/{name}/interface/{iface}", key: "vpp/bd/b\x00d/interface/memif0"},
		{name: "literal: NUL instead of the literal", template: "x/{a:uint}/status", key: "x/1/stat\x00s"},
		// Escapes that EscapeSegment never writes.
		{name: "name: lone percent", template: "linux/interface/{name}", key: "linux/interface/%"},
		{name: "name: percent at the end", template: "linux/interface/{name}", key: "linux/interface/eth0%"},
		{name: "name: truncated escape", template: "linux/interface/{name}", key: "linux/interface/eth0%4"},
		{name: "name: truncated escape of a slash", template: "linux/interface/{name}", key: "linux/interface/a%2"},
		{name: "name: not hex", template: "linux/interface/{name}", key: "linux/interface/%zz"},
		{name: "name: escaped space", template: "linux/interface/{name}", key: "linux/interface/a%20b"},
		{name: "name: lower-case escape", template: "linux/interface/{name}", key: "linux/interface/a%2fb"},
		{name: "name: bad escape after a good one", template: "linux/interface/{name}", key: "linux/interface/%25%zz"},
		{name: "binding: bad escape in the second name", template: "vpp/bd/{name}/interface/{iface}", key: "vpp/bd/bd1/interface/memif%0"},
		{name: "backtracking: bad escape", template: "a/{x}-{y:uint}", key: "a/%zz-1"},
		// Numbers and addresses that KeyValue never writes.
		{name: "uint: leading zero", template: "x/{a:uint}", key: "x/007"},
		{name: "uint: two zeros", template: "x/{a:uint}", key: "x/00"},
		{name: "uint: beyond 64 bits", template: "x/{a:uint}", key: "x/18446744073709551616"},
		{name: "uint: 21 digits", template: "x/{a:uint}", key: "x/100000000000000000000"},
		{name: "ip: IPv4 with a leading zero", template: routeTemplate, key: "vpp/route/vrf/0/dst/10.1.1.0/24/gw/10.1.1.01"},
		{name: "ip: three octets", template: routeTemplate, key: "vpp/route/vrf/0/dst/10.1.1.0/24/gw/10.1.1"},
		{name: "ip: octet out of range", template: routeTemplate, key: "vpp/route/vrf/0/dst/10.1.1.0/24/gw/10.1.1.256"},
		{name: "ip: IPv6 not compressed", template: routeTemplate, key: "vpp/route/vrf/0/dst/10.1.1.0/24/gw/fe80:0:0:0:0:0:0:1"},
		{name: "ip: IPv6 with leading zeros", template: routeTemplate, key: "vpp/route/vrf/0/dst/10.1.1.0/24/gw/fe80::0001"},
		{name: "ip: IPv6 mapped as hex", template: routeTemplate, key: "vpp/route/vrf/0/dst/10.1.1.0/24/gw/::ffff:a00:1"},
		{name: "ipprefix: host bits set", template: routeTemplate, key: "vpp/route/vrf/0/dst/10.1.1.7/24/gw/10.1.1.1"},
		{name: "ipprefix: length with a leading zero", template: routeTemplate, key: "vpp/route/vrf/0/dst/10.1.1.0/024/gw/10.1.1.1"},
		{name: "ipprefix: length out of range", template: routeTemplate, key: "vpp/route/vrf/0/dst/10.1.1.0/33/gw/10.1.1.1"},
		{name: "ipprefix: IPv6 not canonical", template: routeTemplate, key: "vpp/route/vrf/0/dst/2001:db8:0::/48/gw/10.1.1.1"},
		{name: "ipiface: not canonical", template: "a/{x:ipiface}", key: "a/fd00:0::1/64"},
		{name: "ipiface: no length", template: "a/{x:ipiface}", key: "a/10.0.0.1"},
		// Backtracking templates.
		{name: "backtracking: empty name", template: "a/{x}-{y:uint}", key: "a/-1"},
		{name: "backtracking: empty number", template: "a/{x}-{y:uint}", key: "a/foo-"},
		{name: "backtracking: number is not a number", template: "a/{x}-{y:uint}", key: "a/foo-x"},
		{name: "backtracking: no separator", template: "a/{x}-{y:uint}", key: "a/foo1"},
		{name: "backtracking: slash in name", template: "a/{x}-{y:uint}", key: "a/f/o-1"},
		{name: "backtracking: trailing garbage", template: "a/{x}-{y:uint}", key: "a/foo-1/"},
		{name: "backtracking: trailing letter", template: "a/{x}-{y:uint}", key: "a/foo-1-x"},
		{name: "backtracking: missing literal suffix", template: "a/{x}-{y:uint}/z", key: "a/p-q-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmpl := kv.MustParseKeyTemplate(tt.template)
			if tmpl.Match(tt.key) {
				t.Errorf("template %q: Match(%q) = true, want false", tt.template, tt.key)
			}
			if parseLikeGenerated(tmpl, tt.key) {
				t.Errorf("template %q: SplitInto and the ParseKey functions accept %q", tt.template, tt.key)
			}
			if values, ok := tmpl.Split(tt.key); ok || values != nil {
				t.Errorf("template %q: Split(%q) = %q, %v; want nil, false", tt.template, tt.key, values, ok)
			}
		})
	}
}

// TestMatchBacktrackingLongKey makes sure that backtracking stays cheap on
// a long key with many candidate separators and no match.
func TestMatchBacktrackingLongKey(t *testing.T) {
	t.Parallel()
	tmpl := kv.MustParseKeyTemplate("a/{x}-{y}-{z:uint}")
	var key []byte
	key = append(key, "a/"...)
	for range 2000 {
		key = append(key, "-a"...)
	}
	if tmpl.Match(string(key)) {
		t.Fatalf("Match of a key without a number = true")
	}
	key = append(key, "-1"...)
	values, ok := tmpl.Split(string(key))
	if !ok {
		t.Fatalf("Split(%.20q...) failed", key)
	}
	if got := tmpl.Build(values...); got != string(key) {
		t.Errorf("Build(Split(key)) differs from key")
	}
	if values[2] != "1" {
		t.Errorf("last value = %q, want %q", values[2], "1")
	}
}

func TestOverlaps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		a, b        string
		wantOverlap bool
		wantExample string
		notKeys     bool // the example fits the structures only
	}{
		{
			name: "bridge domain vs its bindings (escaped names never hold '/')",
			a:    "vpp/bd/{name}",
			b:    "vpp/bd/{name}/interface/{iface}",
		},
		{
			name: "interface vs its addresses",
			a:    "linux/interface/{name}",
			b:    "linux/interface/{name}/address/{ip_addresses:ipprefix}",
		},
		{
			name: "different prefixes",
			a:    "vpp/interface/{name}",
			b:    "linux/interface/{name}",
		},
		{
			name: "route vs a shorter route-like key",
			a:    routeTemplate,
			b:    "vpp/route/vrf/{id:uint}",
		},
		{
			name: "uint vs literal word",
			a:    "x/{a:uint}",
			b:    "x/b",
		},
		{
			name: "mac vs ipprefix",
			a:    "x/{a:mac}",
			b:    "x/{a:ipprefix}",
		},
		{
			name: "backtracking template vs uint",
			a:    "a/{x}-{y:uint}",
			b:    "a/{z:uint}",
		},
		{
			name: "literal suffixes differ",
			a:    "x/{a}/status",
			b:    "x/{a}/config",
		},
		{
			name:        "name vs uint",
			a:           "x/{a}",
			b:           "x/{b:uint}",
			wantOverlap: true,
			wantExample: "x/0",
		},
		{
			name:        "name vs literal",
			a:           "x/{a}",
			b:           "x/b",
			wantOverlap: true,
			wantExample: "x/b",
		},
		{
			name:        "identical templates",
			a:           routeTemplate,
			b:           routeTemplate,
			wantOverlap: true,
			wantExample: "vpp/route/vrf/0/dst/a/0/gw/a",
			notKeys:     true,
		},
		{
			name:        "same shape, different field names",
			a:           "vpp/arp/{interface}/{ip_address:ip}",
			b:           "vpp/arp/{if}/{addr:ip}",
			wantOverlap: true,
			wantExample: "vpp/arp/a/a",
			notKeys:     true,
		},
		{
			name:        "ip vs mac",
			a:           "vpp/arp/{interface}/{ip:ip}",
			b:           "vpp/arp/{interface}/{mac:mac}",
			wantOverlap: true,
			wantExample: "vpp/arp/a/a",
			notKeys:     true,
		},
		{
			name:        "ip vs uint",
			a:           "a/{x:uint}",
			b:           "a/{x:ip}",
			wantOverlap: true,
			wantExample: "a/0",
			notKeys:     true,
		},
		{
			name:        "name spans a literal of the other",
			a:           "a/{x}",
			b:           "a/{x}-{y:uint}",
			wantOverlap: true,
			wantExample: "a/a-0",
		},
		{
			name:        "ipprefix vs two names",
			a:           "p/{net:ipprefix}",
			b:           "p/{a}/{b}",
			wantOverlap: true,
			wantExample: "p/a/0",
			notKeys:     true,
		},
		{
			name:        "no placeholders",
			a:           "global/config",
			b:           "global/config",
			wantOverlap: true,
			wantExample: "global/config",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, b := kv.MustParseKeyTemplate(tt.a), kv.MustParseKeyTemplate(tt.b)
			example, overlap := a.Overlaps(b)
			if overlap != tt.wantOverlap {
				t.Fatalf("%q.Overlaps(%q) = %q, %v; want overlap %v", tt.a, tt.b, example, overlap, tt.wantOverlap)
			}
			if _, back := b.Overlaps(a); back != overlap {
				t.Errorf("Overlaps is not symmetric: %q.Overlaps(%q) = %v", tt.b, tt.a, back)
			}
			if !overlap {
				if example != "" {
					t.Errorf("disjoint templates returned example %q", example)
				}
				return
			}
			if example != tt.wantExample {
				t.Errorf("example = %q, want %q", example, tt.wantExample)
			}
			// The example fits the structure of both (the regexps of
			// fuzz_test.go); only examples whose values are in key form
			// are keys of both.
			for _, text := range []string{tt.a, tt.b} {
				if !templateRegexp(t, text).MatchString(example) {
					t.Errorf("example %q does not fit the structure of %q", example, text)
				}
			}
			if !tt.notKeys && (!a.Match(example) || !b.Match(example)) {
				t.Errorf("example %q is not a key of both templates", example)
			}
		})
	}
}

func TestEscapeSegment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "empty", in: "", want: ""},
		{name: "plain", in: "eth0", want: "eth0"},
		{name: "slash", in: "a/b", want: "a%2Fb"},
		{name: "double slash", in: "a//b", want: "a%2F%2Fb"},
		{name: "only slash", in: "/", want: "%2F"},
		{name: "percent", in: "100%", want: "100%25"},
		{name: "an escape sequence is escaped again", in: "%2F", want: "%252F"},
		{name: "dots, colons, spaces kept", in: "a.b:c d", want: "a.b:c d"},
		{name: "non-ASCII kept", in: "ünï/çødé", want: "ünï%2Fçødé"},
		{name: "invalid UTF-8 kept", in: "\xff/\xfe", want: "\xff%2F\xfe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := kv.EscapeSegment(tt.in)
			if got != tt.want {
				t.Errorf("EscapeSegment(%q) = %q, want %q", tt.in, got, tt.want)
			}
			back, err := kv.UnescapeSegment(got)
			if err != nil {
				t.Fatalf("UnescapeSegment(%q) failed: %v", got, err)
			}
			if back != tt.in {
				t.Errorf("UnescapeSegment(EscapeSegment(%q)) = %q", tt.in, back)
			}
		})
	}
}

func TestUnescapeSegment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{name: "plain", in: "eth0", want: "eth0"},
		{name: "empty", in: "", want: ""},
		{name: "escaped slash", in: "a%2Fb", want: "a/b"},
		{name: "escaped percent", in: "%25", want: "%"},
		{name: "escaped escape", in: "%252F", want: "%2F"},
		{
			name:    "raw slash",
			in:      "a/b",
			wantErr: `escaped name "a/b" contains '/'`,
		},
		{
			name:    "raw slash after an escape",
			in:      "a%2Fb/c",
			wantErr: `escaped name "a%2Fb/c" contains '/'`,
		},
		{
			name:    "lone percent",
			in:      "%",
			wantErr: `escaped name "%": truncated escape at offset 0`,
		},
		{
			name:    "truncated escape",
			in:      "ab%2",
			wantErr: `escaped name "ab%2": truncated escape at offset 2`,
		},
		{
			name:    "unknown escape",
			in:      "a%20b",
			wantErr: `escaped name "a%20b": unknown escape "%20" at offset 1`,
		},
		{
			name:    "not hex",
			in:      "%zz",
			wantErr: `escaped name "%zz": unknown escape "%zz" at offset 0`,
		},
		{
			// EscapeSegment writes upper case only; accepting "%2f" would
			// give one name two keys.
			name:    "lower-case escape is not canonical",
			in:      "a%2fb",
			wantErr: `escaped name "a%2fb": unknown escape "%2f" at offset 1`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := kv.UnescapeSegment(tt.in)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("UnescapeSegment(%q) = %q, want error %q", tt.in, got, tt.wantErr)
				}
				if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
					t.Errorf("error text mismatch (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("UnescapeSegment(%q) failed: %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("UnescapeSegment(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if again := kv.EscapeSegment(got); again != tt.in {
				t.Errorf("EscapeSegment(UnescapeSegment(%q)) = %q, not canonical", tt.in, again)
			}
		})
	}
}

// TestKeyTemplateConcurrentUse checks the promise that a KeyTemplate is safe
// for concurrent use (run with -race).
func TestKeyTemplateConcurrentUse(t *testing.T) {
	t.Parallel()
	route := kv.MustParseKeyTemplate(routeTemplate)
	backtracking := kv.MustParseKeyTemplate("a/{x}-{y:uint}")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				key := route.Build(fmt.Sprint(i), "10.0.0.0/8", fmt.Sprintf("10.0.0.%d", g))
				if values, ok := route.Split(key); !ok || route.Build(values...) != key {
					t.Errorf("route: Split(%q) = %q, %v", key, values, ok)
					return
				}
				key = backtracking.Build(fmt.Sprintf("g-%d", g), fmt.Sprint(i))
				if values, ok := backtracking.Split(key); !ok || values[1] != fmt.Sprint(i) {
					t.Errorf("backtracking: Split(%q) = %q, %v", key, values, ok)
					return
				}
				if _, ok := route.Overlaps(backtracking); ok {
					t.Errorf("route overlaps %q", backtracking)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestAppendKeyValue: AppendKeyValue and KeyValue write the key form of
// values in and out of format, and AppendKeyValue allocates nothing for
// the formats of the usual keys.
func TestAppendKeyValue(t *testing.T) {
	cases := []struct {
		f       kv.Format
		in, out string
	}{
		{kv.FormatName, "eth0", "eth0"},
		{kv.FormatName, "a/b", "a%2Fb"},
		{kv.FormatName, "100%", "100%25"},
		{kv.FormatUint, "42", "42"},
		{kv.FormatUint, "-1", "-1"},
		{kv.FormatUint, "007", "7"},
		{kv.FormatName, "a\x00b", "a\x00b"},
		{kv.FormatIP, "2001:DB8::1", "2001:db8::1"},
		{kv.FormatIP, "fe80::1%eth0", "fe80::1%25eth0"},
		{kv.FormatIP, "10.0.0.256", "10.0.0.256"},
		{kv.FormatIPPrefix, "10.1.1.7/24", "10.1.1.0/24"},
		{kv.FormatIPPrefix, "x/y", "x%2Fy"},
		{kv.FormatIPInterface, "2001:DB8::1/64", "2001:db8::1/64"},
		{kv.FormatMAC, "02:AB:00:00:00:01", "02:ab:00:00:00:01"},
		{kv.FormatMAC, "zz", "zz"},
		{kv.FormatMAC, "02:AB:00:00:00:01:02:03", "02:AB:00:00:00:01:02:03"},
		{kv.FormatMAC, "0000.5e00.5301", "00:00:5e:00:53:01"},
	}
	for _, c := range cases {
		if got := string(kv.AppendKeyValue([]byte("p/"), c.f, c.in)); got != "p/"+c.out {
			t.Errorf("AppendKeyValue(%v, %q) = %q, want %q", c.f, c.in, got, "p/"+c.out)
		}
		if got := kv.KeyValue(c.f, c.in); got != c.out {
			t.Errorf("KeyValue(%v, %q) = %q, want %q", c.f, c.in, got, c.out)
		}
	}
	buf := make([]byte, 0, 64)
	for f, s := range map[kv.Format]string{kv.FormatName: "eth0", kv.FormatUint: "42", kv.FormatIP: "10.0.0.1", kv.FormatIPPrefix: "10.1.1.0/24", kv.FormatIPInterface: "10.1.1.7/24"} {
		if n := testing.AllocsPerRun(100, func() { kv.AppendKeyValue(buf[:0], f, s) }); n != 0 {
			t.Errorf("AppendKeyValue(%v, %q): %v allocations, want 0", f, s, n)
		}
	}
}
