package kv_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

func TestNetworkContains(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		addr string // empty: the zero netip.Addr
		key  string
		want bool
	}{
		{name: "IPv4 inside", addr: "10.0.0.5", key: "linux/interface/eth0/address/10.0.0.1/24", want: true},
		{name: "IPv4 network address of the key", addr: "10.0.0.0", key: "linux/interface/eth0/address/10.0.0.1/24", want: true},
		{name: "IPv4 broadcast", addr: "10.0.0.255", key: "linux/interface/eth0/address/10.0.0.1/24", want: true},
		{name: "IPv4 outside", addr: "10.0.1.5", key: "linux/interface/eth0/address/10.0.0.1/24", want: false},
		{name: "IPv4 host route equal", addr: "10.0.0.5", key: "linux/interface/eth0/address/10.0.0.5/32", want: true},
		{name: "IPv4 host route other", addr: "10.0.0.6", key: "linux/interface/eth0/address/10.0.0.5/32", want: false},
		{name: "IPv4 any", addr: "192.0.2.1", key: "a/0.0.0.0/0", want: true},
		{name: "IPv6 inside", addr: "2001:db8::42", key: "linux/interface/eth0/address/2001:db8::1/64", want: true},
		{name: "IPv6 outside", addr: "2001:db9::42", key: "linux/interface/eth0/address/2001:db8::1/64", want: false},
		{name: "IPv4 addr vs IPv6 key", addr: "10.0.0.5", key: "linux/interface/eth0/address/::/0", want: false},
		{name: "IPv6 addr vs IPv4 key", addr: "::1", key: "linux/interface/eth0/address/0.0.0.0/0", want: false},
		{name: "IPv4-mapped addr vs IPv4 key", addr: "::ffff:10.0.0.5", key: "linux/interface/eth0/address/10.0.0.0/8", want: false},
		{name: "whole key is a prefix", addr: "10.0.0.5", key: "10.0.0.0/8", want: true},
		{name: "zero addr", addr: "", key: "linux/interface/eth0/address/0.0.0.0/0", want: false},
		{name: "no slash", addr: "10.0.0.5", key: "10.0.0.5", want: false},
		{name: "slash at start", addr: "10.0.0.5", key: "/24", want: false},
		{name: "empty key", addr: "10.0.0.5", key: "", want: false},
		{name: "address without length", addr: "10.0.0.5", key: "linux/interface/eth0/address/10.0.0.5", want: false},
		{name: "not an address", addr: "10.0.0.5", key: "linux/interface/eth0/address/eth0/24", want: false},
		{name: "bad length", addr: "10.0.0.5", key: "linux/interface/eth0/address/10.0.0.1/33", want: false},
		{name: "trailing slash", addr: "10.0.0.5", key: "linux/interface/eth0/address/10.0.0.1/24/", want: false},
		{name: "trailing text", addr: "10.0.0.5", key: "linux/interface/eth0/address/10.0.0.1/24/x", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var addr netip.Addr
			if tt.addr != "" {
				addr = netip.MustParseAddr(tt.addr)
			}
			if got := kv.NetworkContains(addr)(tt.key); got != tt.want {
				t.Errorf("NetworkContains(%v)(%q) = %v, want %v", addr, tt.key, got, tt.want)
			}
		})
	}
}

func TestAnyOfAccepts(t *testing.T) {
	t.Parallel()
	gw := netip.MustParseAddr("192.168.1.1")
	tests := []struct {
		name  string
		anyOf kv.AnyOf
		key   string
		want  bool
	}{
		{
			name:  "no prefixes",
			anyOf: kv.AnyOf{},
			key:   "anything",
			want:  false,
		},
		{
			name:  "prefix, no predicate",
			anyOf: kv.AnyOf{Prefixes: []string{"linux/interface/eth0/address/"}},
			key:   "linux/interface/eth0/address/10.0.0.1/24",
			want:  true,
		},
		{
			name:  "outside the prefix",
			anyOf: kv.AnyOf{Prefixes: []string{"linux/interface/eth0/address/"}},
			key:   "linux/interface/eth1/address/10.0.0.1/24",
			want:  false,
		},
		{
			name:  "second prefix",
			anyOf: kv.AnyOf{Prefixes: []string{"a/", "b/"}},
			key:   "b/x",
			want:  true,
		},
		{
			name:  "prefix itself",
			anyOf: kv.AnyOf{Prefixes: []string{"a/"}},
			key:   "a/",
			want:  true,
		},
		{
			name: "predicate accepts",
			anyOf: kv.AnyOf{
				Prefixes: []string{"linux/interface/eth0/address/"},
				Match:    kv.NetworkContains(gw),
			},
			key:  "linux/interface/eth0/address/192.168.1.10/24",
			want: true,
		},
		{
			name: "predicate rejects",
			anyOf: kv.AnyOf{
				Prefixes: []string{"linux/interface/eth0/address/"},
				Match:    kv.NetworkContains(gw),
			},
			key:  "linux/interface/eth0/address/192.168.2.10/24",
			want: false,
		},
		{
			name: "predicate not asked outside the prefixes",
			anyOf: kv.AnyOf{
				Prefixes: []string{"a/"},
				Match:    func(string) bool { panic("Match called for a key outside the prefixes") },
			},
			key:  "b/x",
			want: false,
		},
		{
			name: "predicate applies under every prefix",
			anyOf: kv.AnyOf{
				Prefixes: []string{"a/", "b/"},
				Match:    func(key string) bool { return strings.HasSuffix(key, "ok") },
			},
			key:  "b/not",
			want: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.anyOf.Accepts(tt.key); got != tt.want {
				t.Errorf("Accepts(%q) = %v, want %v", tt.key, got, tt.want)
			}
		})
	}
}

func TestDependency(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		dep       kv.Dependency
		wantAnyOf bool
		want      string
	}{
		{
			name: "key",
			dep:  kv.Dependency{Label: "interface", Key: "vpp/interface/loop0"},
			want: "interface -> vpp/interface/loop0",
		},
		{
			name: "key wins over AnyOf",
			dep:  kv.Dependency{Label: "vrf", Key: "vpp/vrf/1", AnyOf: kv.AnyOf{Prefixes: []string{"x/"}}},
			want: "vrf -> vpp/vrf/1",
		},
		{
			name: "AnyOf with description",
			dep: kv.Dependency{Label: "gateway", AnyOf: kv.AnyOf{
				Prefixes: []string{"linux/interface/eth0/address/"},
				Match:    kv.NetworkContains(netip.MustParseAddr("10.0.0.1")),
				Describe: "network contains 10.0.0.1",
			}},
			wantAnyOf: true,
			want:      "gateway -> any of linux/interface/eth0/address/ (network contains 10.0.0.1)",
		},
		{
			name:      "AnyOf with several prefixes, no description",
			dep:       kv.Dependency{Label: "uplink", AnyOf: kv.AnyOf{Prefixes: []string{"a/", "b/"}}},
			wantAnyOf: true,
			want:      "uplink -> any of a/, b/",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.dep.IsAnyOf(); got != tt.wantAnyOf {
				t.Errorf("IsAnyOf() = %v, want %v", got, tt.wantAnyOf)
			}
			if got := tt.dep.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRouteGatewayDependency is DESIGN.md case 6: a Linux route depends on any
// address of its outgoing interface whose network contains the gateway.
func TestRouteGatewayDependency(t *testing.T) {
	t.Parallel()
	address := kv.MustParseKeyTemplate("linux/interface/{name}/address/{ip_addresses:ipprefix}")
	dep := kv.Dependency{Label: "gateway", AnyOf: kv.AnyOf{
		Prefixes: []string{address.Build("eth0", "") /* "linux/interface/eth0/address/" */},
		Match:    kv.NetworkContains(netip.MustParseAddr("fd00::1")),
		Describe: "network contains fd00::1",
	}}
	tests := []struct {
		name string
		key  string
		want bool
	}{
		{name: "matching address", key: address.Build("eth0", "fd00::10/64"), want: true},
		{name: "other network", key: address.Build("eth0", "fd01::10/64"), want: false},
		{name: "other interface", key: address.Build("eth1", "fd00::10/64"), want: false},
		{name: "interface whose name extends eth0", key: address.Build("eth00", "fd00::10/64"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := dep.AnyOf.Accepts(tt.key); got != tt.want {
				t.Errorf("Accepts(%q) = %v, want %v", tt.key, got, tt.want)
			}
		})
	}
}
