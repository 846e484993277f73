package modelstest

import (
	"testing"

	"google.golang.org/protobuf/proto"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
)

// TestEquivalent checks the generated comparators: defaults for zero
// values, unordered repeated fields, fields that derive values left out.
func TestEquivalent(t *testing.T) {
	t.Parallel()
	ms := models()
	type (
		vIf    = vppinterfaces.Interface
		lIf    = linuxinterfaces.Interface
		vxlan  = linuxinterfaces.Interface_Vxlan
		member = vppl2.BridgeDomain_Interface
	)
	tests := []struct {
		name  string
		model string
		a, b  proto.Message
		want  bool
	}{
		{"linux mtu 0 is 1500", linuxinterfaces.InterfaceModelName, &lIf{Name: "eth0"}, &lIf{Name: "eth0", Mtu: 1500}, true},
		{"linux mtu 1500 is not 9000", linuxinterfaces.InterfaceModelName, &lIf{Name: "eth0", Mtu: 1500}, &lIf{Name: "eth0", Mtu: 9000}, false},
		{"linux mtu 0 is not 9000", linuxinterfaces.InterfaceModelName, &lIf{Name: "eth0"}, &lIf{Name: "eth0", Mtu: 9000}, false},
		{"linux addresses are derived, not compared", linuxinterfaces.InterfaceModelName,
			&lIf{Name: "eth0", IpAddresses: []string{"10.0.0.1/24"}}, &lIf{Name: "eth0", IpAddresses: []string{"10.0.0.2/24", "10.0.0.3/24"}}, true},
		{"linux enabled differs", linuxinterfaces.InterfaceModelName, &lIf{Name: "eth0"}, &lIf{Name: "eth0", Enabled: true}, false},
		{"linux peer differs", linuxinterfaces.InterfaceModelName, &lIf{Name: "v1", VethPeer: "v2"}, &lIf{Name: "v1", VethPeer: "v3"}, false},
		{"linux vxlan addresses compare in canonical form", linuxinterfaces.InterfaceModelName,
			&lIf{Name: "vx0", Vxlan: &vxlan{Vni: 1, LocalIp: "2001:DB8:0::1", RemoteIp: "::FFFF:10.0.0.1"}}, &lIf{Name: "vx0", Vxlan: &vxlan{Vni: 1, LocalIp: "2001:db8::1", RemoteIp: "::ffff:10.0.0.1"}}, true},
		{"linux vxlan local_ip differs", linuxinterfaces.InterfaceModelName,
			&lIf{Name: "vx0", Vxlan: &vxlan{Vni: 1, LocalIp: "10.0.0.1"}}, &lIf{Name: "vx0", Vxlan: &vxlan{Vni: 1, LocalIp: "10.0.0.2"}}, false},
		{"linux vxlan dst_port 0 is 4789", linuxinterfaces.InterfaceModelName,
			&lIf{Name: "vx0", Vxlan: &vxlan{Vni: 1}}, &lIf{Name: "vx0", Vxlan: &vxlan{Vni: 1, DstPort: 4789}}, true},
		{"linux vxlan dst_port 0 is not 4790", linuxinterfaces.InterfaceModelName,
			&lIf{Name: "vx0", Vxlan: &vxlan{Vni: 1}}, &lIf{Name: "vx0", Vxlan: &vxlan{Vni: 1, DstPort: 4790}}, false},
		{"linux vxlan set differs from unset", linuxinterfaces.InterfaceModelName,
			&lIf{Name: "vx0"}, &lIf{Name: "vx0", Vxlan: &vxlan{}}, false},
		{"vpp mtu 0 is 9000", vppinterfaces.InterfaceModelName, &vIf{Name: "if1"}, &vIf{Name: "if1", Mtu: 9000}, true},
		{"vpp mtu 0 is not 1500", vppinterfaces.InterfaceModelName, &vIf{Name: "if1"}, &vIf{Name: "if1", Mtu: 1500}, false},
		{"vpp addresses are derived, not compared", vppinterfaces.InterfaceModelName,
			&vIf{Name: "if1", IpAddresses: []string{"10.0.0.1/24"}}, &vIf{Name: "if1", IpAddresses: []string{"10.0.0.1/24", "10.0.0.2/24"}}, true},
		{"vpp memif role differs", vppinterfaces.InterfaceModelName,
			&vIf{Name: "if1", Type: vppinterfaces.Interface_TYPE_MEMIF}, &vIf{Name: "if1", Type: vppinterfaces.Interface_TYPE_MEMIF, Memif: &vppinterfaces.Interface_Memif{Master: true}}, false},
		{"vpp vrf differs", vppinterfaces.InterfaceModelName, &vIf{Name: "if1"}, &vIf{Name: "if1", Vrf: 2}, false},
		{"route weight 0 is 1", vppl3.RouteModelName,
			&vppl3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "10.0.0.1"}, &vppl3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "10.0.0.1", Weight: 1}, true},
		{"route weight 0 is not 2", vppl3.RouteModelName,
			&vppl3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "10.0.0.1"}, &vppl3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "10.0.0.1", Weight: 2}, false},
		{"route preference differs", vppl3.RouteModelName,
			&vppl3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "10.0.0.1"}, &vppl3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "10.0.0.1", Preference: 1}, false},
		{"bridge domain members are derived, not compared", vppl2.BridgeDomainModelName,
			&vppl2.BridgeDomain{Name: "bd1", Interfaces: []*member{{Name: "if1"}}}, &vppl2.BridgeDomain{Name: "bd1", Interfaces: []*member{{Name: "if2", Bvi: true}, {Name: "if3"}}}, true},
		{"bridge domain flood differs", vppl2.BridgeDomainModelName, &vppl2.BridgeDomain{Name: "bd1"}, &vppl2.BridgeDomain{Name: "bd1", Flood: true}, false},
		{"binding bvi differs", vppl2.BridgeDomainInterfacesModelName, &member{Name: "if1"}, &member{Name: "if1", Bvi: true}, false},
		{"binding equal", vppl2.BridgeDomainInterfacesModelName, &member{Name: "if1", SplitHorizonGroup: 2}, &member{Name: "if1", SplitHorizonGroup: 2}, true},
		{"arp static differs", vppl3.ARPEntryModelName, &vppl3.ARPEntry{Interface: "if1"}, &vppl3.ARPEntry{Interface: "if1", Static: true}, false},
		{"linux route metric differs", linuxl3.RouteModelName, &linuxl3.Route{OutgoingInterface: "eth0"}, &linuxl3.Route{OutgoingInterface: "eth0", Metric: 1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := ms[tc.model]
			if got := m.equivalent(tc.a, tc.b); got != tc.want {
				t.Errorf("Spec.Equivalent(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
			if got := m.equivalent(tc.b, tc.a); got != tc.want {
				t.Errorf("Spec.Equivalent(%v, %v) = %v, want %v (not symmetric)", tc.b, tc.a, got, tc.want)
			}
			if got := m.desc.Equivalent("", tc.a, tc.b); got != tc.want {
				t.Errorf("Descriptor.Equivalent(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

// TestNeedsRecreate checks the fields marked recreate.
func TestNeedsRecreate(t *testing.T) {
	t.Parallel()
	ms := models()
	type (
		vIf = vppinterfaces.Interface
		lIf = linuxinterfaces.Interface
	)
	tests := []struct {
		name  string
		model string
		a, b  proto.Message
		want  bool
	}{
		{"linux type", linuxinterfaces.InterfaceModelName, &lIf{Name: "x", Type: linuxinterfaces.Interface_TYPE_VETH}, &lIf{Name: "x", Type: linuxinterfaces.Interface_TYPE_TAP}, true},
		{"linux namespace", linuxinterfaces.InterfaceModelName, &lIf{Name: "x"}, &lIf{Name: "x", Namespace: "ns1"}, true},
		{"linux mtu", linuxinterfaces.InterfaceModelName, &lIf{Name: "x"}, &lIf{Name: "x", Mtu: 9000}, false},
		{"linux addresses", linuxinterfaces.InterfaceModelName, &lIf{Name: "x"}, &lIf{Name: "x", IpAddresses: []string{"10.0.0.1/24"}}, false},
		{"linux enabled and host name", linuxinterfaces.InterfaceModelName, &lIf{Name: "x"}, &lIf{Name: "x", Enabled: true, HostIfName: "y"}, false},
		{"linux vxlan vni", linuxinterfaces.InterfaceModelName,
			&lIf{Name: "x", Vxlan: &linuxinterfaces.Interface_Vxlan{Vni: 1}}, &lIf{Name: "x", Vxlan: &linuxinterfaces.Interface_Vxlan{Vni: 2}}, true},
		{"linux vxlan local_ip respelled", linuxinterfaces.InterfaceModelName,
			&lIf{Name: "x", Vxlan: &linuxinterfaces.Interface_Vxlan{Vni: 1, LocalIp: "2001:DB8::1"}}, &lIf{Name: "x", Vxlan: &linuxinterfaces.Interface_Vxlan{Vni: 1, LocalIp: "2001:db8::1"}}, false},
		{"linux vxlan dst_port 0 to 4789", linuxinterfaces.InterfaceModelName,
			&lIf{Name: "x", Vxlan: &linuxinterfaces.Interface_Vxlan{Vni: 1}}, &lIf{Name: "x", Vxlan: &linuxinterfaces.Interface_Vxlan{Vni: 1, DstPort: 4789}}, false},
		{"vpp type", vppinterfaces.InterfaceModelName, &vIf{Name: "x", Type: vppinterfaces.Interface_TYPE_LOOPBACK}, &vIf{Name: "x", Type: vppinterfaces.Interface_TYPE_MEMIF}, true},
		{"vpp mtu", vppinterfaces.InterfaceModelName, &vIf{Name: "x"}, &vIf{Name: "x", Mtu: 1500}, false},
		{"vpp vrf", vppinterfaces.InterfaceModelName, &vIf{Name: "x"}, &vIf{Name: "x", Vrf: 1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := ms[tc.model]
			if got := m.recreate(tc.a, tc.b); got != tc.want {
				t.Errorf("Spec.NeedsRecreate(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
			if got := m.desc.NeedsRecreate("", tc.a, tc.b); got != tc.want {
				t.Errorf("Descriptor.NeedsRecreate(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}
