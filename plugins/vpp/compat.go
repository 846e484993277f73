package vpp

import (
	"errors"
	"reflect"
	"slices"
	"strings"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/abf"
	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/af_packet"
	"go.fd.io/govpp/binapi/arp"
	"go.fd.io/govpp/binapi/bond"
	"go.fd.io/govpp/binapi/dhcp"
	"go.fd.io/govpp/binapi/dns"
	"go.fd.io/govpp/binapi/fib"
	"go.fd.io/govpp/binapi/flowprobe"
	"go.fd.io/govpp/binapi/gre"
	vppif "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip6_nd"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ipfix_export"
	"go.fd.io/govpp/binapi/ipip"
	"go.fd.io/govpp/binapi/ipsec"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/l3xc"
	"go.fd.io/govpp/binapi/memif"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/punt"
	"go.fd.io/govpp/binapi/rdma"
	"go.fd.io/govpp/binapi/span"
	"go.fd.io/govpp/binapi/stn"
	"go.fd.io/govpp/binapi/tapv2"
	"go.fd.io/govpp/binapi/teib"
	"go.fd.io/govpp/binapi/vmxnet3"
	"go.fd.io/govpp/binapi/vrrp"
	"go.fd.io/govpp/binapi/vxlan"
	"go.fd.io/govpp/binapi/wireguard"
)

// VPPVersion is the VPP release whose binary API the plugin is built
// for (govpp's generated bindings).
const VPPVersion = "25.10"

// usedMessages are the requests the plugin sends. At each connection it
// checks that the connected VPP knows them, and their replies, with the
// same CRC (TestUsedMessagesListed keeps the list complete).
var usedMessages = []api.Message{
	(*af_packet.AfPacketCreateV3)(nil), (*af_packet.AfPacketDelete)(nil),
	(*fib.FibSourceDump)(nil),
	(*gre.GreTunnelAddDel)(nil), (*gre.GreTunnelDump)(nil),
	(*vppif.CreateLoopback)(nil), (*vppif.DeleteLoopback)(nil),
	(*vppif.CreateSubif)(nil), (*vppif.DeleteSubif)(nil),
	(*vppif.HwInterfaceSetMtu)(nil), (*vppif.SwInterfaceAddDelAddress)(nil),
	(*vppif.SwInterfaceDump)(nil), (*vppif.SwInterfaceGetTable)(nil),
	(*vppif.SwInterfaceRxPlacementDump)(nil), (*vppif.SwInterfaceSetFlags)(nil),
	(*vppif.SwInterfaceSetMacAddress)(nil), (*vppif.SwInterfaceSetRxMode)(nil),
	(*vppif.SwInterfaceSetTable)(nil), (*vppif.SwInterfaceSetUnnumbered)(nil),
	(*vppif.SwInterfaceTagAddDel)(nil),
	(*ip.IPAddressDump)(nil), (*ip.IPRouteAddDel)(nil), (*ip.IPRouteV2Dump)(nil),
	(*ip.IPTableAddDel)(nil), (*ip.IPTableDump)(nil), (*ip.IPUnnumberedDump)(nil),
	(*ip_neighbor.IPNeighborAddDel)(nil), (*ip_neighbor.IPNeighborDump)(nil),
	(*ipip.IpipAddTunnel)(nil), (*ipip.IpipDelTunnel)(nil), (*ipip.IpipTunnelDump)(nil),
	(*l2.BridgeDomainAddDelV2)(nil), (*l2.BridgeFlags)(nil), (*l2.BridgeDomainDump)(nil), (*l2.BridgeDomainSetMacAge)(nil),
	(*l2.L2FibTableDump)(nil), (*l2.L2fibAddDel)(nil), (*l2.SwInterfaceSetL2Bridge)(nil),
	(*memif.MemifCreateV2)(nil), (*memif.MemifDelete)(nil),
	(*tapv2.TapCreateV3)(nil), (*tapv2.TapDeleteV2)(nil),
	(*vxlan.VxlanAddDelTunnelV3)(nil), (*vxlan.VxlanTunnelV2Dump)(nil),
	(*ipsec.IpsecSaV3Dump)(nil), (*ipsec.IpsecSadEntryAddDelV3)(nil),
	(*ipsec.IpsecSpdAddDel)(nil), (*ipsec.IpsecSpdsDump)(nil), (*ipsec.IpsecInterfaceAddDelSpd)(nil), (*ipsec.IpsecSpdInterfaceDump)(nil),
	(*ipsec.IpsecSpdEntryAddDelV2)(nil), (*ipsec.IpsecSpdDump)(nil),
	(*ipsec.IpsecTunnelProtectUpdate)(nil), (*ipsec.IpsecTunnelProtectDel)(nil), (*ipsec.IpsecTunnelProtectDump)(nil),
	(*wireguard.WireguardInterfaceCreate)(nil), (*wireguard.WireguardInterfaceDelete)(nil), (*wireguard.WireguardInterfaceDump)(nil), (*wireguard.WireguardPeerAdd)(nil), (*wireguard.WireguardPeerRemove)(nil), (*wireguard.WireguardPeersDump)(nil),
	(*arp.ProxyArpAddDel)(nil), (*arp.ProxyArpDump)(nil), (*arp.ProxyArpIntfcDump)(nil), (*arp.ProxyArpIntfcEnableDisable)(nil),
	(*ip_neighbor.IPNeighborConfig)(nil), (*ip_neighbor.IPNeighborConfigGet)(nil),
	(*l2.L2XconnectDump)(nil), (*l2.SwInterfaceSetL2Xconnect)(nil),
	(*l3xc.L3xcDel)(nil), (*l3xc.L3xcDump)(nil), (*l3xc.L3xcUpdate)(nil),
	(*teib.TeibDump)(nil), (*teib.TeibEntryAddDel)(nil),
	(*vrrp.VrrpVrAddDel)(nil), (*vrrp.VrrpVrDump)(nil), (*vrrp.VrrpVrStartStop)(nil),
	(*abf.AbfItfAttachAddDel)(nil), (*abf.AbfItfAttachDump)(nil), (*abf.AbfPolicyAddDel)(nil), (*abf.AbfPolicyDump)(nil),
	(*acl.ACLAddReplace)(nil), (*acl.ACLDel)(nil), (*acl.ACLDump)(nil), (*acl.ACLInterfaceAddDel)(nil), (*acl.ACLInterfaceListDump)(nil), (*acl.MacipACLAddReplace)(nil), (*acl.MacipACLDel)(nil), (*acl.MacipACLDump)(nil), (*acl.MacipACLInterfaceAddDel)(nil), (*acl.MacipACLInterfaceListDump)(nil),
	(*bond.BondAddMember)(nil), (*bond.BondCreate2)(nil), (*bond.BondDelete)(nil), (*bond.BondDetachMember)(nil), (*bond.SwBondInterfaceDump)(nil), (*bond.SwMemberInterfaceDump)(nil),
	(*dhcp.DHCPClientConfig)(nil), (*dhcp.DHCPClientDump)(nil),
	(*ip.SwInterfaceIP6EnableDisable)(nil),
	(*ip6_nd.SwInterfaceIP6ndRaConfig)(nil), (*ip6_nd.SwInterfaceIP6ndRaDump)(nil), (*ip6_nd.SwInterfaceIP6ndRaPrefix)(nil),
	(*rdma.RdmaCreateV4)(nil), (*rdma.RdmaDelete)(nil),
	(*vmxnet3.SwVmxnet3InterfaceDump)(nil), (*vmxnet3.Vmxnet3Create)(nil), (*vmxnet3.Vmxnet3Delete)(nil),
	(*nat44_ed.Nat44AddDelAddressRange)(nil), (*nat44_ed.Nat44AddDelIdentityMapping)(nil), (*nat44_ed.Nat44AddDelStaticMappingV2)(nil), (*nat44_ed.Nat44AddressDump)(nil), (*nat44_ed.Nat44EdPluginEnableDisable)(nil), (*nat44_ed.Nat44ForwardingEnableDisable)(nil), (*nat44_ed.Nat44IdentityMappingDump)(nil), (*nat44_ed.Nat44InterfaceAddDelFeature)(nil), (*nat44_ed.Nat44InterfaceDump)(nil), (*nat44_ed.Nat44ShowRunningConfig)(nil), (*nat44_ed.Nat44StaticMappingDump)(nil),
	(*stn.StnAddDelRule)(nil), (*stn.StnRulesDump)(nil),
	(*span.SwInterfaceSpanDump)(nil), (*span.SwInterfaceSpanEnableDisable)(nil),
	(*dns.DNSEnableDisable)(nil), (*dns.DNSNameServerAddDel)(nil),
	(*ipfix_export.IpfixExporterDump)(nil), (*ipfix_export.SetIpfixExporter)(nil),
	(*flowprobe.FlowprobeGetParams)(nil), (*flowprobe.FlowprobeInterfaceAddDel)(nil), (*flowprobe.FlowprobeInterfaceDump)(nil), (*flowprobe.FlowprobeSetParams)(nil),
	(*punt.PuntReasonDump)(nil), (*punt.PuntSocketDeregister)(nil), (*punt.PuntSocketDump)(nil), (*punt.PuntSocketRegister)(nil),
}

// checkMessages are usedMessages and the messages VPP answers them with
// (a request's reply, a dump's details), as the binary API pairs them.
func checkMessages() []api.Message {
	byName := map[string]api.Message{}
	for _, msgs := range api.GetRegisteredMessages() {
		for _, m := range msgs {
			byName[reflect.TypeOf(m).Elem().PkgPath()+"."+m.GetMessageName()] = m
		}
	}
	var out []api.Message
	for _, m := range usedMessages {
		out = append(out, m)
		path, name := reflect.TypeOf(m).Elem().PkgPath(), m.GetMessageName()
		answer := name + "_reply"
		if base, ok := strings.CutSuffix(name, "_dump"); ok {
			answer = base + "_details"
		}
		if r, ok := byName[path+"."+answer]; ok {
			out = append(out, r)
		}
	}
	return out
}

// checkCompatibility asks the connected VPP for the ids of the messages
// the plugin uses and returns the names (with CRC) of those it does not
// know: a VPP of another release than VPPVersion may have changed or
// dropped some.
func (p *Plugin) checkCompatibility() ([]string, error) {
	ch, err := p.conn.NewAPIChannel()
	if err != nil {
		return nil, err
	}
	defer ch.Close()
	err = ch.CheckCompatiblity(checkMessages()...)
	var ce *api.CompatibilityError
	if errors.As(err, &ce) {
		missing := slices.Clone(ce.IncompatibleMessages)
		slices.Sort(missing)
		return missing, nil
	}
	return nil, err
}

// Incompatible returns the messages the plugin uses that the VPP it last
// connected to does not know (name_crc), sorted; the calls that need them
// fail. It is checked at each connection, and reported in the log.
func (p *Plugin) Incompatible() []string {
	p.compatMu.Lock()
	defer p.compatMu.Unlock()
	return slices.Clone(p.incompatible)
}
