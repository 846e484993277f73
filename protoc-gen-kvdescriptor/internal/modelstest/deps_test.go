package modelstest

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/wrapperspb"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// dep is a dependency as compared in tests: an AnyOf's predicate is
// checked separately.
type dep struct {
	Label, Key string
	Prefixes   []string
	Describe   string
}

func deps(ds []kv.Dependency) []dep {
	var out []dep
	for _, d := range ds {
		out = append(out, dep{Label: d.Label, Key: d.Key, Prefixes: d.AnyOf.Prefixes, Describe: d.AnyOf.Describe})
	}
	return out
}

// TestDependencies checks the dependencies generated from refs, key
// templates and AnyOf options, through the Spec and through the
// descriptor.
func TestDependencies(t *testing.T) {
	t.Parallel()
	ms := models()
	tests := []struct {
		name  string
		model string
		key   string
		value proto.Message
		want  []dep
	}{
		{
			name: "arp depends on its interface (case 1)", model: vppl3.ARPEntryModelName, key: "vpp/arp/memif1%2F1/10.0.0.1",
			value: &vppl3.ARPEntry{Interface: "memif1/1", IpAddress: "10.0.0.1", PhysAddress: "02:00:00:00:00:01"},
			want:  []dep{{Label: "interface", Key: "vpp/interface/memif1%2F1"}},
		},
		{
			name: "route without interface in vrf 0 (case 2)", model: vppl3.RouteModelName, key: "vpp/route/vrf/0/dst/10.1.1.0/24/gw/10.0.0.1",
			value: &vppl3.Route{DstNetwork: "10.1.1.0/24", NextHopAddr: "10.0.0.1"},
		},
		{
			name: "route with interface in vrf 0 (case 2)", model: vppl3.RouteModelName, key: "vpp/route/vrf/0/dst/10.1.1.0/24/gw/10.0.0.1",
			value: &vppl3.Route{DstNetwork: "10.1.1.0/24", NextHopAddr: "10.0.0.1", OutgoingInterface: "if1"},
			want:  []dep{{Label: "interface", Key: "vpp/interface/if1"}},
		},
		{
			name: "route in vrf 5 without interface (case 2)", model: vppl3.RouteModelName, key: "vpp/route/vrf/5/dst/10.1.1.0/24/gw/10.0.0.1",
			value: &vppl3.Route{VrfId: 5, DstNetwork: "10.1.1.0/24", NextHopAddr: "10.0.0.1"},
			want:  []dep{{Label: "vrf", Key: "vpp/vrf-table/5"}},
		},
		{
			name: "route in vrf 5 with interface (case 2)", model: vppl3.RouteModelName, key: "vpp/route/vrf/5/dst/10.1.1.0/24/gw/10.0.0.1",
			value: &vppl3.Route{VrfId: 5, DstNetwork: "10.1.1.0/24", NextHopAddr: "10.0.0.1", OutgoingInterface: "if1"},
			want:  []dep{{Label: "vrf", Key: "vpp/vrf-table/5"}, {Label: "interface", Key: "vpp/interface/if1"}},
		},
		{
			name: "vpp interface in vrf 0", model: vppinterfaces.InterfaceModelName, key: "vpp/interface/if1",
			value: &vppinterfaces.Interface{Name: "if1"},
		},
		{
			name: "vpp interface in vrf 3", model: vppinterfaces.InterfaceModelName, key: "vpp/interface/if1",
			value: &vppinterfaces.Interface{Name: "if1", Vrf: 3},
			want:  []dep{{Label: "vrf", Key: "vpp/vrf-table/3"}},
		},
		{
			name: "af_packet interface depends on the Linux interface (another plugin's model)", model: vppinterfaces.InterfaceModelName, key: "vpp/interface/host-veth1",
			value: &vppinterfaces.Interface{Name: "host-veth1", Type: vppinterfaces.Interface_TYPE_AF_PACKET, HostIfName: "veth%1"},
			want:  []dep{{Label: "host interface", Key: "linux/interface/veth%251"}},
		},
		{
			name: "vpp interface address depends on nothing but its base", model: vppinterfaces.InterfaceIpAddressesModelName, key: "vpp/interface/if1/address/10.0.0.1/24",
			value: wrapperspb.String("10.0.0.1/24"),
		},
		{
			name: "bridge domain does not wait for its members (case 3)", model: vppl2.BridgeDomainModelName, key: "vpp/bd/bd1",
			value: &vppl2.BridgeDomain{Name: "bd1", Interfaces: []*vppl2.BridgeDomain_Interface{{Name: "if1"}, {Name: "if2"}}},
		},
		{
			name: "binding depends on its interface (case 3)", model: vppl2.BridgeDomainInterfacesModelName, key: "vpp/bd/bd1/interface/if%2F1",
			value: &vppl2.BridgeDomain_Interface{Name: "if/1"},
			want:  []dep{{Label: "interface", Key: "vpp/interface/if%2F1"}},
		},
		{
			name: "fib depends on bridge domain and binding (case 4)", model: vppl2.FIBEntryModelName, key: "vpp/l2fib/bd%2F1/02:00:00:00:00:01",
			value: &vppl2.FIBEntry{BridgeDomain: "bd/1", PhysAddress: "02:00:00:00:00:01", OutgoingInterface: "if 1"},
			want: []dep{
				{Label: "bridge domain", Key: "vpp/bd/bd%2F1"},
				{Label: "bridged interface", Key: "vpp/bd/bd%2F1/interface/if 1"},
			},
		},
		{
			name: "fib without outgoing interface (case 4)", model: vppl2.FIBEntryModelName, key: "vpp/l2fib/bd1/02:00:00:00:00:01",
			value: &vppl2.FIBEntry{BridgeDomain: "bd1", PhysAddress: "02:00:00:00:00:01"},
			want:  []dep{{Label: "bridge domain", Key: "vpp/bd/bd1"}},
		},
		{
			name: "linux interface without peer (case 5)", model: linuxinterfaces.InterfaceModelName, key: "linux/interface/tap0",
			value: &linuxinterfaces.Interface{Name: "tap0", Type: linuxinterfaces.Interface_TYPE_TAP},
		},
		{
			name: "veth end depends on its peer (case 5)", model: linuxinterfaces.InterfaceModelName, key: "linux/interface/veth1",
			value: &linuxinterfaces.Interface{Name: "veth1", Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: "veth/2"},
			want:  []dep{{Label: "veth peer", Key: "linux/interface/veth%2F2"}},
		},
		{
			name: "linux route without gateway (case 6)", model: linuxl3.RouteModelName, key: "linux/route/eth0/10.1.0.0/16",
			value: &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.1.0.0/16"},
			want:  []dep{{Label: "interface", Key: "linux/interface/eth0"}},
		},
		{
			name: "linux route with gateway (case 6)", model: linuxl3.RouteModelName, key: "linux/route/eth%2F0/10.1.0.0/16",
			value: &linuxl3.Route{OutgoingInterface: "eth/0", DstNetwork: "10.1.0.0/16", GwAddr: "10.0.0.254"},
			want: []dep{
				{Label: "interface", Key: "linux/interface/eth%2F0"},
				{Label: "gateway reachable", Prefixes: []string{"linux/interface/eth%2F0/address/"}, Describe: "network contains 10.0.0.254"},
			},
		},
		{
			name: "linux route with IPv6 gateway (case 6)", model: linuxl3.RouteModelName, key: "linux/route/eth0/::/0",
			value: &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "::/0", GwAddr: "2001:DB8::FE"},
			want: []dep{
				{Label: "interface", Key: "linux/interface/eth0"},
				{Label: "gateway reachable", Prefixes: []string{"linux/interface/eth0/address/"}, Describe: "network contains 2001:db8::fe"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := ms[tc.model]
			if err := m.desc.Validate(tc.key, tc.value); err != nil {
				t.Fatalf("the test value is invalid: %v", err)
			}
			if diff := cmp.Diff(tc.want, deps(m.deps(tc.key, tc.value))); diff != "" {
				t.Errorf("Spec.Dependencies (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, deps(m.desc.Dependencies(tc.key, tc.value))); diff != "" {
				t.Errorf("Descriptor.Dependencies (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGatewayPredicate checks the AnyOf of a linux route with a gateway:
// it accepts the address keys of its interface whose network contains the
// gateway, and nothing else (case 6).
func TestGatewayPredicate(t *testing.T) {
	t.Parallel()
	route := &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.1.0.0/16", GwAddr: "10.0.0.254"}
	route6 := &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "::/0", GwAddr: "2001:db8::fe"}
	anyOf := func(r *linuxl3.Route) kv.AnyOf {
		t.Helper()
		for _, d := range linuxl3.RouteSpec[struct{}]().Dependencies(linuxl3.RouteKeyFor(r), r) {
			if d.IsAnyOf() {
				return d.AnyOf
			}
		}
		t.Fatalf("route %v has no AnyOf dependency", r)
		return kv.AnyOf{}
	}
	addr := linuxAddressKey
	tests := []struct {
		name  string
		route *linuxl3.Route
		key   string
		want  bool
	}{
		{"address in the gateway's network", route, addr("eth0", "10.0.0.1/24"), true},
		{"wider network", route, addr("eth0", "10.9.9.9/8"), true},
		{"host route to the gateway", route, addr("eth0", "10.0.0.254/32"), true},
		{"other network", route, addr("eth0", "192.168.0.1/24"), false},
		{"narrower network", route, addr("eth0", "10.0.0.1/30"), false},
		{"IPv6 address for an IPv4 gateway", route, addr("eth0", "2001:db8::1/64"), false},
		{"address of another interface", route, addr("eth1", "10.0.0.1/24"), false},
		{"address of an interface whose name extends ours", route, addr("eth00", "10.0.0.1/24"), false},
		{"the interface itself", route, linuxinterfaces.InterfaceKey{Name: "eth0"}.String(), false},
		{"IPv6 gateway reachable", route6, addr("eth0", "2001:DB8::1/64"), true},
		{"IPv6 gateway not reachable", route6, addr("eth0", "2001:db9::1/64"), false},
		{"IPv4 address for an IPv6 gateway", route6, addr("eth0", "10.0.0.1/0"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := anyOf(tc.route)
			if got := a.Accepts(tc.key); got != tc.want {
				t.Errorf("AnyOf%v.Accepts(%q) = %v, want %v", a.Prefixes, tc.key, got, tc.want)
			}
		})
	}
}

// derived is a derived value as compared in tests: its key, the typed key
// parsed back, and its value.
type derived struct {
	Key    string
	Parsed any
	Value  proto.Message
}

// TestDerived checks the values derived from a bridge domain (one binding
// per member, the member message as value; case 3) and from a linux
// interface (one value per IP address, with typed key fields; case 5).
func TestDerived(t *testing.T) {
	t.Parallel()
	ms := models()
	if1 := &vppl2.BridgeDomain_Interface{Name: "if1", Bvi: true}
	if2 := &vppl2.BridgeDomain_Interface{Name: "memif/2", SplitHorizonGroup: 1}
	tests := []struct {
		name  string
		model string
		value proto.Message
		want  []derived
	}{
		{
			name: "bridge domain members", model: vppl2.BridgeDomainModelName,
			value: &vppl2.BridgeDomain{Name: "bd 1", Flood: true, Interfaces: []*vppl2.BridgeDomain_Interface{if1, if2}},
			want: []derived{
				{Key: "vpp/bd/bd 1/interface/if1", Parsed: vppl2.BridgeDomainInterfacesKey{Name: "bd 1", InterfacesName: "if1"}, Value: if1},
				{Key: "vpp/bd/bd 1/interface/memif%2F2", Parsed: vppl2.BridgeDomainInterfacesKey{Name: "bd 1", InterfacesName: "memif/2"}, Value: if2},
			},
		},
		{
			name: "bridge domain without members", model: vppl2.BridgeDomainModelName,
			value: &vppl2.BridgeDomain{Name: "bd1"},
		},
		{
			name: "linux interface addresses", model: linuxinterfaces.InterfaceModelName,
			value: &linuxinterfaces.Interface{Name: "veth/1", Type: linuxinterfaces.Interface_TYPE_DUMMY, IpAddresses: []string{"10.0.0.1/24", "2001:DB8::1/64"}},
			want: []derived{
				{
					Key:    "linux/interface/veth%2F1/address/10.0.0.1/24",
					Parsed: linuxinterfaces.InterfaceIpAddressesKey{Name: "veth/1", IpAddresses: netip.MustParsePrefix("10.0.0.1/24")},
					Value:  wrapperspb.String("10.0.0.1/24"),
				},
				{
					Key:    "linux/interface/veth%2F1/address/2001:db8::1/64",
					Parsed: linuxinterfaces.InterfaceIpAddressesKey{Name: "veth/1", IpAddresses: netip.MustParsePrefix("2001:db8::1/64")},
					Value:  wrapperspb.String("2001:DB8::1/64"),
				},
			},
		},
		{
			name: "linux interface without addresses", model: linuxinterfaces.InterfaceModelName,
			value: &linuxinterfaces.Interface{Name: "eth0", Type: linuxinterfaces.Interface_TYPE_DUMMY},
		},
		{
			name: "vpp interface derives its addresses", model: vppinterfaces.InterfaceModelName,
			value: &vppinterfaces.Interface{Name: "if1", IpAddresses: []string{"10.0.0.1/24"}},
			want: []derived{{
				Key:    "vpp/interface/if1/address/10.0.0.1/24",
				Parsed: vppinterfaces.InterfaceIpAddressesKey{Name: "if1", IpAddresses: netip.MustParsePrefix("10.0.0.1/24")},
				Value:  wrapperspb.String("10.0.0.1/24"),
			}},
		},
		{
			name: "vpp interface without addresses", model: vppinterfaces.InterfaceModelName,
			value: &vppinterfaces.Interface{Name: "if1"},
		},
	}
	parse := map[string]func(string) (any, bool){
		vppl2.BridgeDomainInterfacesModelName: func(k string) (any, bool) {
			return vppl2.ParseBridgeDomainInterfacesKey(k)
		},
		linuxinterfaces.InterfaceIpAddressesModelName: func(k string) (any, bool) {
			return linuxinterfaces.ParseInterfaceIpAddressesKey(k)
		},
		vppinterfaces.InterfaceIpAddressesModelName: func(k string) (any, bool) {
			return vppinterfaces.ParseInterfaceIpAddressesKey(k)
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := ms[tc.model]
			key := keyOf(tc.value)
			if err := m.desc.Validate(key, tc.value); err != nil {
				t.Fatalf("the test value is invalid: %v", err)
			}
			var got []derived
			for _, d := range m.desc.Derived(key, tc.value) {
				// Each derived value is a value of the derived model:
				// its key parses and its descriptor finds it valid.
				var dm model
				for _, c := range ms {
					if c.desc.IsKey(d.Key) {
						dm = c
					}
				}
				if dm.desc == nil {
					t.Fatalf("derived key %q is a key of no model", d.Key)
				}
				if err := dm.desc.Validate(d.Key, d.Value); err != nil {
					t.Errorf("derived value %q is invalid: %v", d.Key, err)
				}
				p, _ := parse[dm.name](d.Key)
				got = append(got, derived{Key: d.Key, Parsed: p, Value: d.Value})
			}
			if diff := cmp.Diff(tc.want, got, keyCmp, protocmp.Transform(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Derived (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(m.desc.Derived(key, tc.value), m.derived(key, tc.value), protocmp.Transform()); diff != "" {
				t.Errorf("Spec.Derived differs from Descriptor.Derived (-descriptor +spec):\n%s", diff)
			}
		})
	}
}

// keyOf returns the key of a value of a base model, built by the
// generated KeyFor.
func keyOf(v proto.Message) string {
	switch v := v.(type) {
	case *vppinterfaces.Interface:
		return vppinterfaces.InterfaceKeyFor(v)
	case *vppl3.VrfTable:
		return vppl3.VrfTableKeyFor(v)
	case *vppl3.ARPEntry:
		return vppl3.ARPEntryKeyFor(v)
	case *vppl3.Route:
		return vppl3.RouteKeyFor(v)
	case *vppl2.BridgeDomain:
		return vppl2.BridgeDomainKeyFor(v)
	case *vppl2.FIBEntry:
		return vppl2.FIBEntryKeyFor(v)
	case *linuxinterfaces.Interface:
		return linuxinterfaces.InterfaceKeyFor(v)
	case *linuxl3.Route:
		return linuxl3.RouteKeyFor(v)
	}
	panic("no key for " + string(v.ProtoReflect().Descriptor().FullName()))
}

// TestDependencyKeysMatchTheirTargets checks, for awkward names, that the
// keys dependencies name are the keys the targets' models build: a
// dependency spelled differently from its target would wait forever.
func TestDependencyKeysMatchTheirTargets(t *testing.T) {
	t.Parallel()
	depKey := func(ds []kv.Dependency, label string) string {
		for _, d := range ds {
			if d.Label == label {
				return d.Key
			}
		}
		return ""
	}
	for _, a := range awkwardNames {
		for _, b := range awkwardNames {
			t.Run(a.name+" "+b.name, func(t *testing.T) {
				t.Parallel()
				// FIB entry -> the binding derived from the bridge domain.
				bd := &vppl2.BridgeDomain{Name: a.name, Interfaces: []*vppl2.BridgeDomain_Interface{{Name: b.name}}}
				fib := &vppl2.FIBEntry{BridgeDomain: a.name, PhysAddress: "02:00:00:00:00:01", OutgoingInterface: b.name}
				fibDeps := vppl2.FIBEntrySpec[struct{}]().Dependencies(vppl2.FIBEntryKeyFor(fib), fib)
				derivedKey := vppl2.BridgeDomainSpec[struct{}]().Derived(vppl2.BridgeDomainKeyFor(bd), bd)[0].Key
				if got := depKey(fibDeps, "bridged interface"); got != derivedKey {
					t.Errorf("FIB entry depends on %q, the bridge domain derives %q", got, derivedKey)
				}
				if got, want := depKey(fibDeps, "bridge domain"), vppl2.BridgeDomainKeyFor(bd); got != want {
					t.Errorf("FIB entry depends on %q, the bridge domain's key is %q", got, want)
				}
				// Binding -> VPP interface; ARP -> VPP interface.
				vif := vppinterfaces.InterfaceKeyFor(&vppinterfaces.Interface{Name: b.name})
				bindDeps := vppl2.BridgeDomainInterfacesSpec[struct{}]().Dependencies(derivedKey, bd.Interfaces[0])
				if got := depKey(bindDeps, "interface"); got != vif {
					t.Errorf("binding depends on %q, the interface's key is %q", got, vif)
				}
				arp := &vppl3.ARPEntry{Interface: b.name, IpAddress: "10.0.0.1", PhysAddress: "02:00:00:00:00:01"}
				if got := depKey(vppl3.ARPEntrySpec[struct{}]().Dependencies(vppl3.ARPEntryKeyFor(arp), arp), "interface"); got != vif {
					t.Errorf("ARP entry depends on %q, the interface's key is %q", got, vif)
				}
				// Linux route -> interface, and its AnyOf -> the
				// interface's derived addresses.
				lif := &linuxinterfaces.Interface{Name: a.name, Type: linuxinterfaces.Interface_TYPE_VETH, IpAddresses: []string{"10.0.0.1/24"}, VethPeer: b.name}
				route := &linuxl3.Route{OutgoingInterface: a.name, DstNetwork: "0.0.0.0/0", GwAddr: "10.0.0.254"}
				routeDeps := linuxl3.RouteSpec[struct{}]().Dependencies(linuxl3.RouteKeyFor(route), route)
				if got, want := depKey(routeDeps, "interface"), linuxinterfaces.InterfaceKeyFor(lif); got != want {
					t.Errorf("linux route depends on %q, the interface's key is %q", got, want)
				}
				addrKey := linuxinterfaces.InterfaceSpec[struct{}]().Derived(linuxinterfaces.InterfaceKeyFor(lif), lif)[0].Key
				var accepted bool
				for _, d := range routeDeps {
					accepted = accepted || d.IsAnyOf() && d.AnyOf.Accepts(addrKey)
				}
				if !accepted {
					t.Errorf("linux route's AnyOf %+v does not accept the address %q", deps(routeDeps), addrKey)
				}
				// Veth peer -> the peer's key.
				peer := linuxinterfaces.InterfaceKeyFor(&linuxinterfaces.Interface{Name: b.name, Type: linuxinterfaces.Interface_TYPE_DUMMY})
				if got := depKey(linuxinterfaces.InterfaceSpec[struct{}]().Dependencies(linuxinterfaces.InterfaceKeyFor(lif), lif), "veth peer"); got != peer {
					t.Errorf("veth depends on %q, the peer's key is %q", got, peer)
				}
			})
		}
	}
}
