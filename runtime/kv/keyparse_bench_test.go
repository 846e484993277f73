package kv_test

import (
	"testing"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// benchKeys are the keys of the key-parsing benchmarks: a name, a MAC, an
// interface address and the DESIGN.md route, each a key of its template.
var benchKeys = []struct {
	name, template, key string
}{
	{"name", "vpp/bd/{name}", "vpp/bd/bridge-domain-1"},
	{"escaped", "vpp/bd/{name}", "vpp/bd/memif0%2F1"},
	{"mac", "vpp/l2fib/{bd}/{mac:mac}", "vpp/l2fib/bd1/aa:bb:cc:dd:ee:ff"},
	{"ipiface", "linux/interface/{name}/address/{ip:ipiface}", "linux/interface/eth0/address/10.0.0.1/24"},
	{"route", routeTemplate, "vpp/route/vrf/7/dst/10.1.0.0/16/gw/10.1.1.1"},
}

// BenchmarkKeyTemplateMatch measures Match, the key space test of a
// descriptor built from a template alone.
func BenchmarkKeyTemplateMatch(b *testing.B) {
	for _, bk := range benchKeys {
		tmpl := kv.MustParseKeyTemplate(bk.template)
		b.Run(bk.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !tmpl.Match(bk.key) {
					b.Fatalf("%q does not match %q", bk.key, tmpl)
				}
			}
		})
	}
}

// BenchmarkKeyTemplateSplitInto measures SplitInto, the first step of
// every generated key parser.
func BenchmarkKeyTemplateSplitInto(b *testing.B) {
	for _, bk := range benchKeys {
		tmpl := kv.MustParseKeyTemplate(bk.template)
		out := make([]string, len(tmpl.Placeholders()))
		b.Run(bk.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !tmpl.SplitInto(bk.key, out) {
					b.Fatalf("%q does not split by %q", bk.key, tmpl)
				}
			}
		})
	}
}

// BenchmarkParseGeneratedKey measures generated key parsers, which the
// scheduler calls for every key it routes to their descriptors.
func BenchmarkParseGeneratedKey(b *testing.B) {
	for _, bk := range []struct {
		name  string
		key   string
		parse func(string) bool
	}{
		{"bd", "vpp/bd/bridge-domain-1", func(k string) bool { _, ok := vppl2.ParseBridgeDomainKey(k); return ok }},
		{"fib", "vpp/l2fib/bd1/aa:bb:cc:dd:ee:ff", func(k string) bool { _, ok := vppl2.ParseFIBEntryKey(k); return ok }},
		{"address", "linux/interface/eth0/address/10.0.0.1/24", func(k string) bool { _, ok := linuxinterfaces.ParseInterfaceIpAddressesKey(k); return ok }},
		{"route", "vpp/route/vrf/7/dst/10.1.0.0/16/gw/10.1.1.1", func(k string) bool { _, ok := vppl3.ParseRouteKey(k); return ok }},
	} {
		b.Run(bk.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !bk.parse(bk.key) {
					b.Fatalf("%q does not parse", bk.key)
				}
			}
		})
	}
}

// BenchmarkParseKeyTemplate measures parsing (and compiling) a template,
// done once per descriptor.
func BenchmarkParseKeyTemplate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := kv.ParseKeyTemplate(routeTemplate); err != nil {
			b.Fatal(err)
		}
	}
}
