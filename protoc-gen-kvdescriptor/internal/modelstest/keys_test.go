package modelstest

import (
	"net"
	"net/netip"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// keyCmp compares parsed keys: netip values by ==, the rest as usual.
var keyCmp = cmp.Options{
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
}

// awkwardNames are names that keys must carry: the key separator, the
// escape character, an escape-looking text, dots, colons, spaces and
// non-ASCII text.
var awkwardNames = []struct {
	name, inKey string // the name, and how it reads in a key
}{
	{"eth0", "eth0"},
	{"a/b", "a%2Fb"},
	{"/", "%2F"},
	{"100%", "100%25"},
	{"%2F", "%252F"},
	{"v1.2", "v1.2"},
	{"..", ".."},
	{"mem:if", "mem:if"},
	{"my uplink", "my uplink"},
	{"intérface-日本", "intérface-日本"},
	{"a/%/b", "a%2F%25%2Fb"},
}

// roundTrip is one key of one model: how it is built, the key expected,
// and how it parses.
type roundTrip struct {
	name   string
	build  func() string // the key the generated code builds from raw fields (XKeyFor, or the base's Derived)
	key    string        // the key in canonical form
	parse  func(string) (any, bool)
	want   any              // the parsed key
	str    func(any) string // String() of a parsed key
	is     func(string) bool
	forVal func() string // XKeyFor(value), when the model has one
}

func parserOf[K interface{ String() string }](p func(string) (K, bool)) (func(string) (any, bool), func(any) string) {
	return func(s string) (any, bool) { k, ok := p(s); return k, ok },
		func(k any) string { return k.(K).String() }
}

func roundTrips() []roundTrip {
	var out []roundTrip
	for _, n := range awkwardNames {
		p, s := parserOf(vppinterfaces.ParseInterfaceKey)
		out = append(out, roundTrip{
			name:   "vpp interface " + n.name,
			build:  func() string { return vppinterfaces.InterfaceKeyFor(&vppinterfaces.Interface{Name: n.name}) },
			key:    "vpp/interface/" + n.inKey,
			parse:  p,
			str:    s,
			want:   vppinterfaces.InterfaceKey{Name: n.name},
			is:     isKey(vppinterfaces.ParseInterfaceKey),
			forVal: func() string { return vppinterfaces.InterfaceKeyFor(&vppinterfaces.Interface{Name: n.name}) },
		})
		p, s = parserOf(linuxinterfaces.ParseInterfaceKey)
		out = append(out, roundTrip{
			name:   "linux interface " + n.name,
			build:  func() string { return linuxinterfaces.InterfaceKeyFor(&linuxinterfaces.Interface{Name: n.name}) },
			key:    "linux/interface/" + n.inKey,
			parse:  p,
			str:    s,
			want:   linuxinterfaces.InterfaceKey{Name: n.name},
			is:     isKey(linuxinterfaces.ParseInterfaceKey),
			forVal: func() string { return linuxinterfaces.InterfaceKeyFor(&linuxinterfaces.Interface{Name: n.name}) },
		})
		p, s = parserOf(vppl2.ParseBridgeDomainKey)
		out = append(out, roundTrip{
			name:   "bridge domain " + n.name,
			build:  func() string { return vppl2.BridgeDomainKeyFor(&vppl2.BridgeDomain{Name: n.name}) },
			key:    "vpp/bd/" + n.inKey,
			parse:  p,
			str:    s,
			want:   vppl2.BridgeDomainKey{Name: n.name},
			is:     isKey(vppl2.ParseBridgeDomainKey),
			forVal: func() string { return vppl2.BridgeDomainKeyFor(&vppl2.BridgeDomain{Name: n.name}) },
		})
		p, s = parserOf(vppl2.ParseBridgeDomainInterfacesKey)
		out = append(out, roundTrip{
			name:  "bridge domain binding " + n.name,
			build: func() string { return bdBindingKey(n.name, "x/"+n.name) },
			key:   "vpp/bd/" + n.inKey + "/interface/x%2F" + n.inKey,
			parse: p,
			str:   s,
			want:  vppl2.BridgeDomainInterfacesKey{Name: n.name, InterfacesName: "x/" + n.name},
			is:    isKey(vppl2.ParseBridgeDomainInterfacesKey),
		})
		p, s = parserOf(vppl3.ParseARPEntryKey)
		out = append(out, roundTrip{
			name:   "arp " + n.name,
			build:  func() string { return vppl3.ARPEntryKeyFor(&vppl3.ARPEntry{Interface: n.name, IpAddress: "10.0.0.1"}) },
			key:    "vpp/arp/" + n.inKey + "/10.0.0.1",
			parse:  p,
			str:    s,
			want:   vppl3.ARPEntryKey{Interface: n.name, IpAddress: netip.MustParseAddr("10.0.0.1")},
			is:     isKey(vppl3.ParseARPEntryKey),
			forVal: func() string { return vppl3.ARPEntryKeyFor(&vppl3.ARPEntry{Interface: n.name, IpAddress: "10.0.0.1"}) },
		})
		p, s = parserOf(vppl2.ParseFIBEntryKey)
		out = append(out, roundTrip{
			name: "fib " + n.name,
			build: func() string {
				return vppl2.FIBEntryKeyFor(&vppl2.FIBEntry{BridgeDomain: n.name, PhysAddress: "02:00:00:00:00:0a"})
			},
			key:   "vpp/l2fib/" + n.inKey + "/02:00:00:00:00:0a",
			parse: p,
			str:   s,
			want:  vppl2.FIBEntryKey{BridgeDomain: n.name, PhysAddress: mac("02:00:00:00:00:0a")},
			is:    isKey(vppl2.ParseFIBEntryKey),
			forVal: func() string {
				return vppl2.FIBEntryKeyFor(&vppl2.FIBEntry{BridgeDomain: n.name, PhysAddress: "02:00:00:00:00:0a"})
			},
		})
		p, s = parserOf(linuxinterfaces.ParseInterfaceIpAddressesKey)
		out = append(out, roundTrip{
			name:  "linux address " + n.name,
			build: func() string { return linuxAddressKey(n.name, "10.0.0.1/24") },
			key:   "linux/interface/" + n.inKey + "/address/10.0.0.1/24",
			parse: p,
			str:   s,
			want:  linuxinterfaces.InterfaceIpAddressesKey{Name: n.name, IpAddresses: netip.MustParsePrefix("10.0.0.1/24")},
			is:    isKey(linuxinterfaces.ParseInterfaceIpAddressesKey),
		})
		p, s = parserOf(linuxl3.ParseRouteKey)
		out = append(out, roundTrip{
			name: "linux route " + n.name,
			build: func() string {
				return linuxl3.RouteKeyFor(&linuxl3.Route{OutgoingInterface: n.name, DstNetwork: "10.1.1.7/24"})
			},
			key:   "linux/route/" + n.inKey + "/10.1.1.0/24",
			parse: p,
			str:   s,
			want:  linuxl3.RouteKey{OutgoingInterface: n.name, DstNetwork: netip.MustParsePrefix("10.1.1.0/24")},
			is:    isKey(linuxl3.ParseRouteKey),
			forVal: func() string {
				return linuxl3.RouteKeyFor(&linuxl3.Route{OutgoingInterface: n.name, DstNetwork: "10.1.1.7/24"})
			},
		})
	}

	// Canonical forms of addresses, networks, MACs and integers.
	p, s := parserOf(vppl3.ParseRouteKey)
	vppRoute := func(vrf uint32, dst, gw string) func() string {
		return func() string { return vppl3.RouteKeyFor(&vppl3.Route{VrfId: vrf, DstNetwork: dst, NextHopAddr: gw}) }
	}
	vppRouteFor := func(vrf uint32, dst, gw string) func() string {
		return func() string {
			return vppl3.RouteKeyFor(&vppl3.Route{VrfId: vrf, DstNetwork: dst, NextHopAddr: gw})
		}
	}
	for _, c := range []roundTrip{
		{
			name: "vpp route masks host bits", build: vppRoute(0, "10.1.1.7/24", "192.168.1.1"), forVal: vppRouteFor(0, "10.1.1.7/24", "192.168.1.1"),
			key:  "vpp/route/vrf/0/dst/10.1.1.0/24/gw/192.168.1.1",
			want: vppl3.RouteKey{DstNetwork: netip.MustParsePrefix("10.1.1.0/24"), NextHopAddr: netip.MustParseAddr("192.168.1.1")},
		},
		{
			name: "vpp route IPv6 lower-case", build: vppRoute(7, "2001:DB8:0:0:1::/64", "2001:DB8::1"), forVal: vppRouteFor(7, "2001:DB8:0:0:1::/64", "2001:DB8::1"),
			key:  "vpp/route/vrf/7/dst/2001:db8::/64/gw/2001:db8::1",
			want: vppl3.RouteKey{VrfId: 7, DstNetwork: netip.MustParsePrefix("2001:db8::/64"), NextHopAddr: netip.MustParseAddr("2001:db8::1")},
		},
		{
			name: "vpp route default route", build: vppRoute(4294967295, "0.0.0.0/0", "10.0.0.1"), forVal: vppRouteFor(4294967295, "0.0.0.0/0", "10.0.0.1"),
			key:  "vpp/route/vrf/4294967295/dst/0.0.0.0/0/gw/10.0.0.1",
			want: vppl3.RouteKey{VrfId: 4294967295, DstNetwork: netip.MustParsePrefix("0.0.0.0/0"), NextHopAddr: netip.MustParseAddr("10.0.0.1")},
		},
		{
			name: "vpp route IPv6 default route", build: vppRoute(1, "::/0", "::"), forVal: vppRouteFor(1, "::/0", "::"),
			key:  "vpp/route/vrf/1/dst/::/0/gw/::",
			want: vppl3.RouteKey{VrfId: 1, DstNetwork: netip.MustParsePrefix("::/0"), NextHopAddr: netip.MustParseAddr("::")},
		},
		{
			name: "vpp route IPv4-mapped gateway", build: vppRoute(2, "10.0.0.0/8", "::FFFF:10.0.0.1"), forVal: vppRouteFor(2, "10.0.0.0/8", "::FFFF:10.0.0.1"),
			key:  "vpp/route/vrf/2/dst/10.0.0.0/8/gw/::ffff:10.0.0.1",
			want: vppl3.RouteKey{VrfId: 2, DstNetwork: netip.MustParsePrefix("10.0.0.0/8"), NextHopAddr: netip.MustParseAddr("::ffff:10.0.0.1")},
		},
	} {
		c.parse, c.str, c.is = p, s, isKey(vppl3.ParseRouteKey)
		out = append(out, c)
	}

	p, s = parserOf(vppl3.ParseARPEntryKey)
	out = append(out, roundTrip{
		name: "arp IPv6 lower-case and compressed",
		build: func() string {
			return vppl3.ARPEntryKeyFor(&vppl3.ARPEntry{Interface: "eth0", IpAddress: "2001:0DB8:0:0::0001"})
		},
		forVal: func() string {
			return vppl3.ARPEntryKeyFor(&vppl3.ARPEntry{Interface: "eth0", IpAddress: "2001:0DB8:0:0::0001"})
		},
		key:   "vpp/arp/eth0/2001:db8::1",
		parse: p, str: s, is: isKey(vppl3.ParseARPEntryKey),
		want: vppl3.ARPEntryKey{Interface: "eth0", IpAddress: netip.MustParseAddr("2001:db8::1")},
	})

	p, s = parserOf(vppl3.ParseVrfTableKey)
	for _, id := range []uint32{0, 1, 42, 4294967295} {
		out = append(out, roundTrip{
			name:   "vrf table " + vppl3.VrfTableKey{Id: id}.String(),
			build:  func() string { return vppl3.VrfTableKeyFor(&vppl3.VrfTable{Id: id}) },
			forVal: func() string { return vppl3.VrfTableKeyFor(&vppl3.VrfTable{Id: id}) },
			key:    "vpp/vrf-table/" + itoa(id),
			parse:  p, str: s, is: isKey(vppl3.ParseVrfTableKey),
			want: vppl3.VrfTableKey{Id: id},
		})
	}

	p, s = parserOf(vppl2.ParseFIBEntryKey)
	for _, m := range []string{"02:AB:CD:EF:00:01", "02-ab-cd-ef-00-01", "02ab.cdef.0001"} {
		out = append(out, roundTrip{
			name:   "fib MAC lower-case from " + m,
			build:  func() string { return vppl2.FIBEntryKeyFor(&vppl2.FIBEntry{BridgeDomain: "bd1", PhysAddress: m}) },
			forVal: func() string { return vppl2.FIBEntryKeyFor(&vppl2.FIBEntry{BridgeDomain: "bd1", PhysAddress: m}) },
			key:    "vpp/l2fib/bd1/02:ab:cd:ef:00:01",
			parse:  p, str: s, is: isKey(vppl2.ParseFIBEntryKey),
			want: vppl2.FIBEntryKey{BridgeDomain: "bd1", PhysAddress: mac("02:ab:cd:ef:00:01")},
		})
	}

	p, s = parserOf(linuxinterfaces.ParseInterfaceIpAddressesKey)
	for _, c := range []struct{ in, key string }{
		{"10.0.0.1/24", "10.0.0.1/24"}, // host bits kept: it is an interface address
		{"2001:DB8::1/64", "2001:db8::1/64"},
		{"fe80::A:1/10", "fe80::a:1/10"},
		{"192.168.1.255/32", "192.168.1.255/32"},
	} {
		out = append(out, roundTrip{
			name:  "linux address keeps host bits " + c.in,
			build: func() string { return linuxAddressKey("eth0", c.in) },
			key:   "linux/interface/eth0/address/" + c.key,
			parse: p, str: s, is: isKey(linuxinterfaces.ParseInterfaceIpAddressesKey),
			want: linuxinterfaces.InterfaceIpAddressesKey{Name: "eth0", IpAddresses: netip.MustParsePrefix(c.key)},
		})
	}

	p, s = parserOf(linuxl3.ParseRouteKey)
	out = append(out, roundTrip{
		name: "linux route IPv6 masks and lower-cases",
		build: func() string {
			return linuxl3.RouteKeyFor(&linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "2001:DB8::1/48"})
		},
		forVal: func() string {
			return linuxl3.RouteKeyFor(&linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "2001:DB8::1/48"})
		},
		key:   "linux/route/eth0/2001:db8::/48",
		parse: p, str: s, is: isKey(linuxl3.ParseRouteKey),
		want: linuxl3.RouteKey{OutgoingInterface: "eth0", DstNetwork: netip.MustParsePrefix("2001:db8::/48")},
	})
	return out
}

func mac(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

// TestKeyRoundTrip checks, for every model and derived model, that
// Build gives the canonical key, Parse gives the typed fields back, and
// String of the parsed key gives the same key again.
func TestKeyRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range roundTrips() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key := tc.build()
			if key != tc.key {
				t.Errorf("Build = %q, want %q", key, tc.key)
			}
			if tc.forVal != nil {
				if got := tc.forVal(); got != tc.key {
					t.Errorf("KeyFor(value) = %q, want %q", got, tc.key)
				}
			}
			got, ok := tc.parse(tc.key)
			if !ok {
				t.Fatalf("Parse(%q) failed", tc.key)
			}
			if diff := cmp.Diff(tc.want, got, keyCmp); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tc.key, diff)
			}
			if s := tc.str(got); s != tc.key {
				t.Errorf("String() of the parsed key = %q, want %q", s, tc.key)
			}
			if !tc.is(tc.key) {
				t.Errorf("Is(%q) = false", tc.key)
			}
		})
	}
}

// keyModels lists every model's key recogniser, for checking that keys of
// one model are never taken for keys of another.
var keyModels = []struct {
	name string
	is   func(string) bool
}{
	{vppinterfaces.InterfaceModelName, isKey(vppinterfaces.ParseInterfaceKey)},
	{vppl3.VrfTableModelName, isKey(vppl3.ParseVrfTableKey)},
	{vppl3.ARPEntryModelName, isKey(vppl3.ParseARPEntryKey)},
	{vppl3.RouteModelName, isKey(vppl3.ParseRouteKey)},
	{vppl2.BridgeDomainModelName, isKey(vppl2.ParseBridgeDomainKey)},
	{vppl2.BridgeDomainInterfacesModelName, isKey(vppl2.ParseBridgeDomainInterfacesKey)},
	{vppl2.FIBEntryModelName, isKey(vppl2.ParseFIBEntryKey)},
	{linuxinterfaces.InterfaceModelName, isKey(linuxinterfaces.ParseInterfaceKey)},
	{linuxinterfaces.InterfaceIpAddressesModelName, isKey(linuxinterfaces.ParseInterfaceIpAddressesKey)},
	{linuxl3.RouteModelName, isKey(linuxl3.ParseRouteKey)},
}

// TestKeysOfOtherModelsDoNotParse feeds every key of the round-trip table
// to every model's parser: exactly its own model takes it.
func TestKeysOfOtherModelsDoNotParse(t *testing.T) {
	t.Parallel()
	for _, tc := range roundTrips() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var takers []string
			for _, m := range keyModels {
				if m.is(tc.key) {
					takers = append(takers, m.name)
				}
			}
			if len(takers) != 1 {
				t.Errorf("key %q is taken by %v, want exactly one model", tc.key, takers)
			}
		})
	}
}

// TestParseRejects lists texts that are no key of a model: non-canonical
// forms (which Build never writes), bad escapes, wrong literals, empty and
// out-of-range placeholders.
func TestParseRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		is   func(string) bool
		key  string
	}{
		{"interface empty name", isKey(vppinterfaces.ParseInterfaceKey), "vpp/interface/"},
		{"interface unescaped slash", isKey(vppinterfaces.ParseInterfaceKey), "vpp/interface/a/b"},
		{"interface lower-case escape", isKey(vppinterfaces.ParseInterfaceKey), "vpp/interface/a%2fb"},
		{"interface unknown escape", isKey(vppinterfaces.ParseInterfaceKey), "vpp/interface/a%41"},
		{"interface truncated escape", isKey(vppinterfaces.ParseInterfaceKey), "vpp/interface/a%2"},
		{"interface other prefix", isKey(vppinterfaces.ParseInterfaceKey), "linux/interface/eth0"},
		{"linux interface address key", isKey(linuxinterfaces.ParseInterfaceKey), "linux/interface/eth0/address/10.0.0.1/24"},
		{"bridge domain binding key", isKey(vppl2.ParseBridgeDomainKey), "vpp/bd/bd1/interface/if1"},
		{"binding empty member", isKey(vppl2.ParseBridgeDomainInterfacesKey), "vpp/bd/bd1/interface/"},
		{"binding wrong literal", isKey(vppl2.ParseBridgeDomainInterfacesKey), "vpp/bd/bd1/member/if1"},
		{"vrf leading zero", isKey(vppl3.ParseVrfTableKey), "vpp/vrf-table/01"},
		{"vrf too large", isKey(vppl3.ParseVrfTableKey), "vpp/vrf-table/4294967296"},
		{"vrf negative", isKey(vppl3.ParseVrfTableKey), "vpp/vrf-table/-1"},
		{"vrf plus sign", isKey(vppl3.ParseVrfTableKey), "vpp/vrf-table/+1"},
		{"arp upper-case IPv6", isKey(vppl3.ParseARPEntryKey), "vpp/arp/eth0/2001:DB8::1"},
		{"arp uncompressed IPv6", isKey(vppl3.ParseARPEntryKey), "vpp/arp/eth0/2001:db8:0:0:0:0:0:1"},
		{"arp IPv6 zone", isKey(vppl3.ParseARPEntryKey), "vpp/arp/eth0/fe80::1%25eth0"},
		{"arp not an address", isKey(vppl3.ParseARPEntryKey), "vpp/arp/eth0/10.0.0"},
		{"arp leading zeros", isKey(vppl3.ParseARPEntryKey), "vpp/arp/eth0/10.0.0.01"},
		{"route host bits set", isKey(vppl3.ParseRouteKey), "vpp/route/vrf/0/dst/10.1.1.7/24/gw/10.0.0.1"},
		{"route missing gateway", isKey(vppl3.ParseRouteKey), "vpp/route/vrf/0/dst/10.1.1.0/24/gw/"},
		{"route prefix length too long", isKey(vppl3.ParseRouteKey), "vpp/route/vrf/0/dst/10.1.1.0/33/gw/10.0.0.1"},
		{"route prefix leading zero length", isKey(vppl3.ParseRouteKey), "vpp/route/vrf/0/dst/10.0.0.0/08/gw/10.0.0.1"},
		{"route no prefix length", isKey(vppl3.ParseRouteKey), "vpp/route/vrf/0/dst/10.1.1.0/gw/10.0.0.1"},
		{"route upper-case IPv6", isKey(vppl3.ParseRouteKey), "vpp/route/vrf/0/dst/2001:DB8::/32/gw/::1"},
		{"fib upper-case MAC", isKey(vppl2.ParseFIBEntryKey), "vpp/l2fib/bd1/02:AB:CD:EF:00:01"},
		{"fib dashed MAC", isKey(vppl2.ParseFIBEntryKey), "vpp/l2fib/bd1/02-ab-cd-ef-00-01"},
		{"fib short MAC", isKey(vppl2.ParseFIBEntryKey), "vpp/l2fib/bd1/02:ab:cd"},
		{"linux address without length", isKey(linuxinterfaces.ParseInterfaceIpAddressesKey), "linux/interface/eth0/address/10.0.0.1"},
		{"linux address upper-case", isKey(linuxinterfaces.ParseInterfaceIpAddressesKey), "linux/interface/eth0/address/2001:DB8::1/64"},
		{"linux route host bits set", isKey(linuxl3.ParseRouteKey), "linux/route/eth0/10.1.1.7/24"},
		{"linux route no interface", isKey(linuxl3.ParseRouteKey), "linux/route//10.1.1.0/24"},
		{"linux route trailing text", isKey(linuxl3.ParseRouteKey), "linux/route/eth0/10.1.1.0/24/x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.is(tc.key) {
				t.Errorf("Is(%q) = true, want false", tc.key)
			}
		})
	}
}

// TestKeyTemplatesDoNotOverlap checks the generated templates pairwise:
// no key can belong to two models.
func TestKeyTemplatesDoNotOverlap(t *testing.T) {
	t.Parallel()
	templates := map[string]string{
		vppinterfaces.InterfaceModelName:              vppinterfaces.InterfaceKeyTemplate,
		vppl3.VrfTableModelName:                       vppl3.VrfTableKeyTemplate,
		vppl3.ARPEntryModelName:                       vppl3.ARPEntryKeyTemplate,
		vppl3.RouteModelName:                          vppl3.RouteKeyTemplate,
		vppl2.BridgeDomainModelName:                   vppl2.BridgeDomainKeyTemplate,
		vppl2.BridgeDomainInterfacesModelName:         vppl2.BridgeDomainInterfacesKeyTemplate,
		vppl2.FIBEntryModelName:                       vppl2.FIBEntryKeyTemplate,
		linuxinterfaces.InterfaceModelName:            linuxinterfaces.InterfaceKeyTemplate,
		linuxinterfaces.InterfaceIpAddressesModelName: linuxinterfaces.InterfaceIpAddressesKeyTemplate,
		linuxl3.RouteModelName:                        linuxl3.RouteKeyTemplate,
	}
	for a, ta := range templates {
		for b, tb := range templates {
			if a >= b {
				continue
			}
			if ex, ok := mustTemplate(t, ta).Overlaps(mustTemplate(t, tb)); ok {
				t.Errorf("%s (%s) and %s (%s) overlap, e.g. %q", a, ta, b, tb, ex)
			}
		}
	}
}

func mustTemplate(t *testing.T, text string) *kv.KeyTemplate {
	t.Helper()
	tmpl, err := kv.ParseKeyTemplate(text)
	if err != nil {
		t.Fatal(err)
	}
	if why := tmpl.Ambiguity(); why != "" {
		t.Errorf("template %s is ambiguous: %s", text, why)
	}
	return tmpl
}
