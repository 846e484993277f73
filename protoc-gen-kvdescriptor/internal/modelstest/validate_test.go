package modelstest

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	vppnat "github.com/kvdescriptor/kvdescriptor/generated/vpp/nat/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

type validateCase struct {
	name  string
	model string
	key   string
	value proto.Message
	// fields are the invalid fields named, in order (nil: valid).
	fields []string
	// reason is a text the error must contain.
	reason string
}

func validateCases() []validateCase {
	const (
		vppIf   = vppinterfaces.InterfaceModelName
		vrf     = vppl3.VrfTableModelName
		arp     = vppl3.ARPEntryModelName
		route   = vppl3.RouteModelName
		bd      = vppl2.BridgeDomainModelName
		binding = vppl2.BridgeDomainInterfacesModelName
		fib     = vppl2.FIBEntryModelName
		linIf   = linuxinterfaces.InterfaceModelName
		linAddr = linuxinterfaces.InterfaceIpAddressesModelName
		linRt   = linuxl3.RouteModelName
	)
	const mac = "02:00:00:00:00:01"
	member := func(name string, bvi bool) *vppl2.BridgeDomain_Interface {
		return &vppl2.BridgeDomain_Interface{Name: name, Bvi: bvi}
	}
	return []validateCase{
		// VPP interface.
		{name: "vpp interface valid", model: vppIf, key: "vpp/interface/memif0%2F0",
			value: &vppinterfaces.Interface{Name: "memif0/0", PhysAddress: "02:AB:00:00:00:01", IpAddresses: []string{"10.0.0.1/24", "2001:db8::1/64"}}},
		{name: "vpp interface unescaped key", model: vppIf, key: "vpp/interface/memif0/0",
			value: &vppinterfaces.Interface{Name: "memif0/0"}, fields: []string{"(key)"}, reason: `which is "vpp/interface/memif0%2F0"`},
		{name: "vpp interface missing name", model: vppIf, key: "vpp/interface/x",
			value: &vppinterfaces.Interface{}, fields: []string{"name"}, reason: "must be set"},
		{name: "vpp interface bad MAC and address", model: vppIf, key: "vpp/interface/if1",
			value:  &vppinterfaces.Interface{Name: "if1", PhysAddress: "02:00:00:00:00", IpAddresses: []string{"10.0.0.1/24", "10.0.0.300/24"}},
			fields: []string{"phys_address", "ip_addresses[1]"}, reason: `"10.0.0.300/24" is not an interface address`},
		{name: "vpp interface address without length", model: vppIf, key: "vpp/interface/if1",
			value:  &vppinterfaces.Interface{Name: "if1", IpAddresses: []string{"10.0.0.1"}},
			fields: []string{"ip_addresses[0]"}},
		{name: "vpp interface duplicate address", model: vppIf, key: "vpp/interface/if1",
			value:  &vppinterfaces.Interface{Name: "if1", IpAddresses: []string{"10.0.0.1/24", "10.0.0.2/24", "10.0.0.1/24"}},
			fields: []string{"ip_addresses"}, reason: "elements 0 and 2 are equal"},
		{name: "vpp interface other key", model: vppIf, key: "vpp/interface/if2",
			value: &vppinterfaces.Interface{Name: "if1"}, fields: []string{"(key)"}, reason: `which is "vpp/interface/if1"`},

		// VRF table.
		{name: "vrf valid", model: vrf, key: "vpp/vrf-table/1", value: &vppl3.VrfTable{Id: 1, Label: "blue"}},
		{name: "vrf id 0 below minimum", model: vrf, key: "vpp/vrf-table/0", value: &vppl3.VrfTable{}, fields: []string{"id"}, reason: "below the minimum 1"},
		{name: "vrf other key", model: vrf, key: "vpp/vrf-table/2", value: &vppl3.VrfTable{Id: 1}, fields: []string{"(key)"}},

		// ARP entry.
		{name: "arp valid", model: arp, key: "vpp/arp/if1/2001:db8::1",
			value: &vppl3.ARPEntry{Interface: "if1", IpAddress: "2001:DB8::1", PhysAddress: mac}},
		{name: "arp missing key fields", model: arp, key: "vpp/arp/if1/10.0.0.1",
			value: &vppl3.ARPEntry{PhysAddress: mac}, fields: []string{"interface", "ip_address"}},
		{name: "arp bad IP", model: arp, key: "vpp/arp/if1/10.0.0.256",
			value: &vppl3.ARPEntry{Interface: "if1", IpAddress: "10.0.0.256", PhysAddress: mac}, fields: []string{"ip_address"}, reason: "not an IP address"},
		{name: "arp IP with zone", model: arp, key: "vpp/arp/if1/fe80::1%25if1",
			value: &vppl3.ARPEntry{Interface: "if1", IpAddress: "fe80::1%if1", PhysAddress: mac}, fields: []string{"ip_address"}},
		{name: "arp required MAC", model: arp, key: "vpp/arp/if1/10.0.0.1",
			value: &vppl3.ARPEntry{Interface: "if1", IpAddress: "10.0.0.1"}, fields: []string{"phys_address"}, reason: "must be set"},
		{name: "arp bad MAC", model: arp, key: "vpp/arp/if1/10.0.0.1",
			value: &vppl3.ARPEntry{Interface: "if1", IpAddress: "10.0.0.1", PhysAddress: "02:00:00:00:00:0g"}, fields: []string{"phys_address"}, reason: "not a MAC address"},
		{name: "arp other key", model: arp, key: "vpp/arp/if1/10.0.0.2",
			value: &vppl3.ARPEntry{Interface: "if1", IpAddress: "10.0.0.1", PhysAddress: mac}, fields: []string{"(key)"}},

		// VPP route.
		{name: "route valid with host bits", model: route, key: "vpp/route/vrf/3/dst/10.1.1.0/24/gw/10.0.0.1",
			value: &vppl3.Route{VrfId: 3, DstNetwork: "10.1.1.7/24", NextHopAddr: "10.0.0.1", OutgoingInterface: "if1"}},
		{name: "route missing key fields", model: route, key: "vpp/route/vrf/0/dst/10.1.1.0/24/gw/10.0.0.1",
			value: &vppl3.Route{}, fields: []string{"dst_network", "next_hop_addr"}},
		{name: "route bad prefix", model: route, key: "vpp/route/vrf/0/dst/10.1.1.0/33/gw/10.0.0.1",
			value: &vppl3.Route{DstNetwork: "10.1.1.0/33", NextHopAddr: "10.0.0.1"}, fields: []string{"dst_network"}, reason: "not an IP network"},
		{name: "route prefix without length", model: route, key: "vpp/route/vrf/0/dst/10.1.1.0/gw/10.0.0.1",
			value: &vppl3.Route{DstNetwork: "10.1.1.0", NextHopAddr: "10.0.0.1"}, fields: []string{"dst_network"}},
		{name: "route bad gateway", model: route, key: "vpp/route/vrf/0/dst/10.1.1.0/24/gw/x",
			value: &vppl3.Route{DstNetwork: "10.1.1.0/24", NextHopAddr: "x"}, fields: []string{"next_hop_addr"}},
		{name: "route other vrf in key", model: route, key: "vpp/route/vrf/1/dst/10.1.1.0/24/gw/10.0.0.1",
			value: &vppl3.Route{DstNetwork: "10.1.1.0/24", NextHopAddr: "10.0.0.1"}, fields: []string{"(key)"}},
		{name: "route non-canonical key", model: route, key: "vpp/route/vrf/0/dst/10.1.1.7/24/gw/10.0.0.1",
			value: &vppl3.Route{DstNetwork: "10.1.1.7/24", NextHopAddr: "10.0.0.1"}, fields: []string{"(key)"}},

		// Bridge domain and its bindings.
		{name: "bd valid", model: bd, key: "vpp/bd/bd1",
			value: &vppl2.BridgeDomain{Name: "bd1", Flood: true, Interfaces: []*vppl2.BridgeDomain_Interface{member("if1", true), member("if2", false)}}},
		{name: "bd two bvi", model: bd, key: "vpp/bd/bd1",
			value:  &vppl2.BridgeDomain{Name: "bd1", Interfaces: []*vppl2.BridgeDomain_Interface{member("if1", true), member("if2", false), member("if3", true)}},
			fields: []string{"interfaces"}, reason: "elements 0 and 2 both have bvi set"},
		{name: "bd duplicate member", model: bd, key: "vpp/bd/bd1",
			value:  &vppl2.BridgeDomain{Name: "bd1", Interfaces: []*vppl2.BridgeDomain_Interface{member("if1", false), member("if2", false), member("if2", false)}},
			fields: []string{"interfaces"}, reason: "elements 1 and 2 have the same name"},
		{name: "bd member without name", model: bd, key: "vpp/bd/bd1",
			value:  &vppl2.BridgeDomain{Name: "bd1", Interfaces: []*vppl2.BridgeDomain_Interface{member("", false)}},
			fields: []string{"interfaces[0].name"}},
		{name: "bd missing name", model: bd, key: "vpp/bd/bd1",
			value: &vppl2.BridgeDomain{}, fields: []string{"name"}},
		{name: "bd other key", model: bd, key: "vpp/bd/bd2",
			value: &vppl2.BridgeDomain{Name: "bd1"}, fields: []string{"(key)"}},
		{name: "binding valid", model: binding, key: "vpp/bd/bd%2F1/interface/if%2F1",
			value: member("if/1", true)},
		{name: "binding of another member", model: binding, key: "vpp/bd/bd1/interface/if1",
			value: member("if2", false), fields: []string{"(key)"}},
		{name: "binding without name", model: binding, key: "vpp/bd/bd1/interface/if1",
			value: member("", false), fields: []string{"name"}},

		// L2 FIB entry.
		{name: "fib valid upper-case MAC", model: fib, key: "vpp/l2fib/bd1/02:ab:00:00:00:01",
			value: &vppl2.FIBEntry{BridgeDomain: "bd1", PhysAddress: "02:AB:00:00:00:01", OutgoingInterface: "if1"}},
		{name: "fib missing key fields", model: fib, key: "vpp/l2fib/bd1/02:ab:00:00:00:01",
			value: &vppl2.FIBEntry{}, fields: []string{"bridge_domain", "phys_address"}},
		{name: "fib bad MAC", model: fib, key: "vpp/l2fib/bd1/02:ab",
			value: &vppl2.FIBEntry{BridgeDomain: "bd1", PhysAddress: "02:ab"}, fields: []string{"phys_address"}},
		{name: "fib other bridge domain", model: fib, key: "vpp/l2fib/bd2/02:ab:00:00:00:01",
			value: &vppl2.FIBEntry{BridgeDomain: "bd1", PhysAddress: "02:ab:00:00:00:01"}, fields: []string{"(key)"}},

		// Linux interface and its addresses.
		{name: "linux interface valid", model: linIf, key: "linux/interface/veth1",
			value: &linuxinterfaces.Interface{Name: "veth1", Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: "veth2", IpAddresses: []string{"10.0.0.1/24", "2001:db8::1/64"}}},
		{name: "linux interface bad address", model: linIf, key: "linux/interface/eth0",
			value:  &linuxinterfaces.Interface{Name: "eth0", Type: linuxinterfaces.Interface_TYPE_DUMMY, IpAddresses: []string{"10.0.0.1/24", "10.0.0.1"}},
			fields: []string{"ip_addresses[1]"}, reason: "not an interface address"},
		{name: "linux interface empty address", model: linIf, key: "linux/interface/eth0",
			value:  &linuxinterfaces.Interface{Name: "eth0", Type: linuxinterfaces.Interface_TYPE_DUMMY, IpAddresses: []string{""}},
			fields: []string{"ip_addresses[0]"}, reason: "must be set"},
		{name: "linux interface duplicate address", model: linIf, key: "linux/interface/eth0",
			value:  &linuxinterfaces.Interface{Name: "eth0", Type: linuxinterfaces.Interface_TYPE_DUMMY, IpAddresses: []string{"10.0.0.1/24", "10.0.0.1/24"}},
			fields: []string{"ip_addresses"}},
		// Options on the fields of a nested message apply there, by path.
		{name: "linux vxlan local_ip not an address", model: linIf, key: "linux/interface/vx0",
			value:  &linuxinterfaces.Interface{Name: "vx0", Type: linuxinterfaces.Interface_TYPE_VXLAN, Vxlan: &linuxinterfaces.Interface_Vxlan{Vni: 10, LocalIp: "1.2.3"}},
			fields: []string{"vxlan.local_ip"}, reason: `"1.2.3" is not an IP address`},
		{name: "linux vxlan vni and port out of range", model: linIf, key: "linux/interface/vx0",
			value:  &linuxinterfaces.Interface{Name: "vx0", Type: linuxinterfaces.Interface_TYPE_VXLAN, Vxlan: &linuxinterfaces.Interface_Vxlan{Vni: 1 << 24, DstPort: 1 << 16, RemoteIp: "2001:DB8::1"}},
			fields: []string{"vxlan.vni", "vxlan.dst_port"}, reason: "above the maximum 16777215"},
		{name: "linux vxlan vni 0", model: linIf, key: "linux/interface/vx0",
			value:  &linuxinterfaces.Interface{Name: "vx0", Type: linuxinterfaces.Interface_TYPE_VXLAN, Vxlan: &linuxinterfaces.Interface_Vxlan{}},
			fields: []string{"vxlan.vni"}, reason: "below the minimum 1"},
		{name: "linux vxlan unset is not checked", model: linIf, key: "linux/interface/vx0",
			value: &linuxinterfaces.Interface{Name: "vx0", Type: linuxinterfaces.Interface_TYPE_DUMMY}},
		{name: "linux interface bad MAC", model: linIf, key: "linux/interface/eth0",
			value: &linuxinterfaces.Interface{Name: "eth0", Type: linuxinterfaces.Interface_TYPE_DUMMY, PhysAddress: "02:00:00:00:00:01:02"}, fields: []string{"phys_address"}},
		// Names that reach the host: a namespace is a plain name (never a
		// path out of /var/run/netns), kernel names are interface names.
		{name: "linux interface namespace a path", model: linIf, key: "linux/interface/eth0",
			value:  &linuxinterfaces.Interface{Name: "eth0", Type: linuxinterfaces.Interface_TYPE_DUMMY, Namespace: "../../proc/1/ns/net"},
			fields: []string{"namespace"}, reason: `"../../proc/1/ns/net" is not a plain name: it holds '/' at offset 2`},
		{name: "linux interface namespace dot-dot", model: linIf, key: "linux/interface/eth0",
			value:  &linuxinterfaces.Interface{Name: "eth0", Type: linuxinterfaces.Interface_TYPE_DUMMY, Namespace: ".."},
			fields: []string{"namespace"}, reason: "names a directory"},
		{name: "linux interface namespace with NUL", model: linIf, key: "linux/interface/eth0",
			value:  &linuxinterfaces.Interface{Name: "eth0", Type: linuxinterfaces.Interface_TYPE_DUMMY, Namespace: "blue\x00"},
			fields: []string{"namespace"}, reason: "control character"},
		{name: "linux interface namespace plain", model: linIf, key: "linux/interface/eth0",
			value: &linuxinterfaces.Interface{Name: "eth0", Type: linuxinterfaces.Interface_TYPE_DUMMY, Namespace: "blue-1"}},
		{name: "linux interface host name too long", model: linIf, key: "linux/interface/eth0",
			value:  &linuxinterfaces.Interface{Name: "eth0", Type: linuxinterfaces.Interface_TYPE_DUMMY, HostIfName: "a-name-of-16-byt"},
			fields: []string{"host_if_name"}, reason: "16 bytes, more than 15"},
		{name: "vpp tap host name with a space", model: vppIf, key: "vpp/interface/tap0",
			value:  &vppinterfaces.Interface{Name: "tap0", Type: vppinterfaces.Interface_TYPE_TAP, Tap: &vppinterfaces.Interface_Tap{HostIfName: "tap 0"}},
			fields: []string{"tap.host_if_name"}, reason: "space"},
		{name: "vpp af_packet host name a path", model: vppIf, key: "vpp/interface/host0",
			value:  &vppinterfaces.Interface{Name: "host0", Type: vppinterfaces.Interface_TYPE_AF_PACKET, HostIfName: "../eth0"},
			fields: []string{"host_if_name"}, reason: "'/'"},
		// Format IPV4: an IP address, and IPv4 (VPP's NAT44 holds four bytes).
		{name: "nat44 pool IPv4", model: vppnat.Nat44AddressPoolModelName, key: "vpp/nat44/address-pool/p",
			value: &vppnat.Nat44AddressPool{Name: "p", FirstIp: "192.0.2.1", LastIp: "192.0.2.9"}},
		{name: "nat44 pool IPv6", model: vppnat.Nat44AddressPoolModelName, key: "vpp/nat44/address-pool/p",
			value:  &vppnat.Nat44AddressPool{Name: "p", FirstIp: "2001:db8::1", LastIp: "::ffff:192.0.2.9"},
			fields: []string{"first_ip", "last_ip"}, reason: "is not an IPv4 address"},
		{name: "nat44 pool not an address", model: vppnat.Nat44AddressPoolModelName, key: "vpp/nat44/address-pool/p",
			value: &vppnat.Nat44AddressPool{Name: "p", FirstIp: "192.0.2"}, fields: []string{"first_ip"}, reason: `"192.0.2" is not an IP address`},
		{name: "nat44 static mapping IPv6 in the key", model: vppnat.DNat44StaticMappingsModelName, key: "vpp/nat44/dnat/d/static/2001:db8::1/proto/6/port/80",
			value:  &vppnat.DNat44_StaticMapping{ExternalIp: "2001:db8::1", ExternalPort: 80, Protocol: 6, LocalIp: "10.0.0.1"},
			fields: []string{"external_ip"}, reason: "is not an IPv4 address"},
		{name: "linux interface other key", model: linIf, key: "linux/interface/eth1",
			value: &linuxinterfaces.Interface{Name: "eth0", Type: linuxinterfaces.Interface_TYPE_DUMMY}, fields: []string{"(key)"}},
		{name: "linux address valid", model: linAddr, key: "linux/interface/eth0/address/2001:db8::1/64",
			value: wrapperspb.String("2001:DB8::1/64")},
		{name: "linux address of another address", model: linAddr, key: "linux/interface/eth0/address/10.0.0.1/24",
			value: wrapperspb.String("10.0.0.2/24"), fields: []string{"(key)"}},
		{name: "linux address bad", model: linAddr, key: "linux/interface/eth0/address/10.0.0.1/24",
			value: wrapperspb.String("bogus"), fields: []string{"ip_addresses"}},

		// Linux route.
		{name: "linux route valid", model: linRt, key: "linux/route/eth0/10.1.0.0/16",
			value: &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.1.2.3/16", GwAddr: "10.0.0.254", Metric: 10}},
		{name: "linux route missing key fields", model: linRt, key: "linux/route/eth0/10.1.0.0/16",
			value: &linuxl3.Route{GwAddr: "10.0.0.254"}, fields: []string{"outgoing_interface", "dst_network"}},
		{name: "linux route bad gateway", model: linRt, key: "linux/route/eth0/10.1.0.0/16",
			value: &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.1.0.0/16", GwAddr: "10.0.0"}, fields: []string{"gw_addr"}, reason: `"10.0.0" is not an IP address`},
		{name: "linux route other interface", model: linRt, key: "linux/route/eth1/10.1.0.0/16",
			value: &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.1.0.0/16"}, fields: []string{"(key)"}},
	}
}

// fieldNames returns the invalid fields named by err, without repeats.
func fieldNames(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var inv *kv.InvalidValueError
	if !errors.As(err, &inv) {
		t.Fatalf("error %v (%T) is not a *kv.InvalidValueError", err, err)
	}
	if !errors.Is(err, kv.ErrInvalidValue) {
		t.Errorf("errors.Is(%v, kv.ErrInvalidValue) = false", err)
	}
	var out []string
	for _, f := range inv.FieldNames() {
		if len(out) == 0 || out[len(out)-1] != f {
			out = append(out, f)
		}
	}
	return out
}

// TestValidate runs each case through the Spec's Validate (what the
// generator emitted) and through the descriptor built by the generated
// constructor (what the scheduler calls).
func TestValidate(t *testing.T) {
	t.Parallel()
	ms := models()
	for _, tc := range validateCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, ok := ms[tc.model]
			if !ok {
				t.Fatalf("no model %s", tc.model)
			}
			vias := []struct {
				name     string
				validate func(string, proto.Message) error
			}{{"Spec.Validate", m.validate}}
			// A key that does not parse (a key field out of format) is
			// "(key)" for the descriptor; see TestBugKeyFieldOutOfFormat.
			if m.desc.IsKey(tc.key) {
				vias = append(vias, struct {
					name     string
					validate func(string, proto.Message) error
				}{"Descriptor.Validate", m.desc.Validate})
			}
			for _, via := range vias {
				err := via.validate(tc.key, tc.value)
				if diff := cmp.Diff(tc.fields, fieldNames(t, err)); diff != "" {
					t.Errorf("%s(%q): invalid fields (-want +got):\n%s\nerror: %v", via.name, tc.key, diff, err)
				}
				if err != nil && !strings.Contains(err.Error(), tc.reason) {
					t.Errorf("%s(%q) = %q, want it to contain %q", via.name, tc.key, err, tc.reason)
				}
			}
		})
	}
}

// TestValidateKeyOfNoModel gives descriptors keys under their prefix that
// do not parse: the keyed descriptor names "(key)", or the field of the
// value that makes the key wrong, before any handler runs.
func TestValidateKeyOfNoModel(t *testing.T) {
	t.Parallel()
	ms := models()
	tests := []struct {
		name  string
		model string
		key   string
		value proto.Message
		field string // the invalid field named; default "(key)"
	}{
		{"interface bad escape", vppinterfaces.InterfaceModelName, "vpp/interface/a%zz", &vppinterfaces.Interface{Name: "a%zz"}, ""},
		{"route host bits", vppl3.RouteModelName, "vpp/route/vrf/0/dst/10.1.1.7/24/gw/10.0.0.1", &vppl3.Route{DstNetwork: "10.1.1.7/24", NextHopAddr: "10.0.0.1"}, ""},
		// A key wrong because of a field of the value names that field.
		{"linux address without length", linuxinterfaces.InterfaceIpAddressesModelName, "linux/interface/eth0/address/10.0.0.1", wrapperspb.String("10.0.0.1"), "ip_addresses"},
		{"binding empty member", vppl2.BridgeDomainInterfacesModelName, "vpp/bd/bd1/interface/", &vppl2.BridgeDomain_Interface{}, "name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := ms[tc.model].desc.Validate(tc.key, tc.value)
			want := "(key)"
			if tc.field != "" {
				want = tc.field
			}
			if diff := cmp.Diff([]string{want}, fieldNames(t, err)); diff != "" {
				t.Errorf("Validate(%q) invalid fields (-want +got):\n%s\nerror: %v", tc.key, diff, err)
			}
		})
	}
}

// TestValidateWrongMessageType gives a descriptor a value of another
// model: INVALID naming the message type, never a panic.
func TestValidateWrongMessageType(t *testing.T) {
	t.Parallel()
	err := models()[vppl3.ARPEntryModelName].desc.Validate("vpp/arp/if1/10.0.0.1", &vppl3.Route{})
	if diff := cmp.Diff([]string{"(message type)"}, fieldNames(t, err)); diff != "" {
		t.Errorf("invalid fields (-want +got):\n%s", diff)
	}
	if !errors.Is(err, kv.ErrWrongType) {
		t.Errorf("errors.Is(%v, kv.ErrWrongType) = false", err)
	}
}
