package vpp

import (
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
)

func init() {
	registerFakeExt(func() fakeExt { return &fakeNAT{} })
	readRequests["nat44_show_running_config"] = true
}

// fakeNAT is the fake VPP's NAT44 plugin (nat44_ed, as of VPP 25.10): off
// until enabled, refusing every setting while off (UNSUPPORTED) and
// dropping them all when disabled; refusing a setting that exists (add)
// or does not (delete), and an unknown interface.
type fakeNAT struct {
	enabled    bool
	config     nat44_ed.Nat44ShowRunningConfigReply
	interfaces map[uint32]nat_types.NatConfigFlags // NAT_IS_INSIDE, NAT_IS_OUTSIDE
	addresses  []nat44_ed.Nat44AddressDetails
	static     []nat44_ed.Nat44StaticMappingDetails
	identity   []nat44_ed.Nat44IdentityMappingDetails
}

// fakeNATDisabled is what VPP's nat44_plugin_enable/disable return when
// the plugin already is in the state asked for.
const fakeNATDisabled = 1

func (n *fakeNAT) reset() {
	*n = fakeNAT{interfaces: map[uint32]nat_types.NatConfigFlags{}}
}

// forget: VPP takes NAT44 off an interface that goes away.
func (n *fakeNAT) forget(i uint32) { delete(n.interfaces, i) }

func (n *fakeNAT) apply(f *fakeVPP, msg api.Message, retval *int32) ([]api.Message, bool) {
	fail := func(rv api.VPPApiError) ([]api.Message, bool) {
		*retval = int32(rv)
		return nil, true
	}
	switch m := msg.(type) {
	case *nat44_ed.Nat44EdPluginEnableDisable:
		if m.Enable == n.enabled {
			*retval = fakeNATDisabled
			return nil, true
		}
		if m.Enable && m.Flags != 0 { // static-mapping-only and connection tracking are gone from ED
			return fail(api.UNSUPPORTED)
		}
		n.reset()
		if m.Enable {
			n.enabled = true
			n.config = nat44_ed.Nat44ShowRunningConfigReply{InsideVrf: m.InsideVrf, OutsideVrf: m.OutsideVrf, Sessions: m.Sessions, Flags: nat44_ed.NAT44_IS_ENDPOINT_DEPENDENT}
			if m.Sessions == 0 {
				n.config.Sessions = 63 * 1024
			}
		}
		return nil, true
	case *nat44_ed.Nat44ShowRunningConfig:
		r := n.config
		return []api.Message{&r}, true
	case *nat44_ed.Nat44InterfaceDump:
		var out []api.Message
		for _, i := range sortedKeys(n.interfaces) {
			out = append(out, &nat44_ed.Nat44InterfaceDetails{SwIfIndex: interface_types.InterfaceIndex(i), Flags: n.interfaces[i]})
		}
		return out, true
	case *nat44_ed.Nat44AddressDump:
		var out []api.Message
		for _, a := range n.addresses {
			out = append(out, &a)
		}
		return out, true
	case *nat44_ed.Nat44StaticMappingDump:
		var out []api.Message
		for _, s := range n.static {
			out = append(out, &s)
		}
		return out, true
	case *nat44_ed.Nat44IdentityMappingDump:
		var out []api.Message
		for _, s := range n.identity {
			out = append(out, &s)
		}
		return out, true
	}
	if _, ok := natRequests[msg.GetMessageName()]; !ok {
		return nil, false
	}
	if !n.enabled {
		return fail(api.UNSUPPORTED)
	}
	switch m := msg.(type) {
	case *nat44_ed.Nat44ForwardingEnableDisable:
		n.config.ForwardingEnabled = m.Enable
	case *nat44_ed.Nat44InterfaceAddDelFeature:
		side := nat_types.NAT_IS_OUTSIDE
		if m.Flags&nat_types.NAT_IS_INSIDE != 0 {
			side = nat_types.NAT_IS_INSIDE
		}
		switch has := n.interfaces[uint32(m.SwIfIndex)]; {
		case f.iface(m.SwIfIndex, retval) == nil:
		case m.IsAdd && has&side != 0:
			return fail(api.VALUE_EXIST)
		case !m.IsAdd && has&side == 0:
			return fail(api.NO_SUCH_ENTRY)
		case m.IsAdd:
			n.interfaces[uint32(m.SwIfIndex)] = has | side
		case has == side:
			delete(n.interfaces, uint32(m.SwIfIndex))
		default:
			n.interfaces[uint32(m.SwIfIndex)] = has &^ side
		}
	case *nat44_ed.Nat44AddDelAddressRange:
		return n.addressRange(m, retval), true
	case *nat44_ed.Nat44AddDelStaticMappingV2:
		d := nat44_ed.Nat44StaticMappingDetails{Flags: m.Flags, LocalIPAddress: m.LocalIPAddress,
			ExternalIPAddress: m.ExternalIPAddress, Protocol: m.Protocol, LocalPort: m.LocalPort, ExternalPort: m.ExternalPort, ExternalSwIfIndex: m.ExternalSwIfIndex, VrfID: m.VrfID, Tag: m.Tag}
		switch {
		case m.Flags&nat_types.NAT_IS_TWICE_NAT != 0 && m.Flags&nat_types.NAT_IS_SELF_TWICE_NAT != 0,
			m.MatchPool && m.Flags&nat_types.NAT_IS_TWICE_NAT == 0:
			return fail(api.INVALID_VALUE)
		case m.ExternalSwIfIndex != ^interface_types.InterfaceIndex(0) && f.iface(m.ExternalSwIfIndex, retval) == nil:
			return nil, true
		}
		if m.Flags&nat_types.NAT_IS_ADDR_ONLY != 0 {
			d.LocalPort, d.ExternalPort, d.Protocol = 0, 0, 0
		}
		at := slices.IndexFunc(n.static, func(s nat44_ed.Nat44StaticMappingDetails) bool {
			return s.ExternalIPAddress == d.ExternalIPAddress && s.ExternalPort == d.ExternalPort && s.Protocol == d.Protocol
		})
		local := slices.ContainsFunc(n.static, func(s nat44_ed.Nat44StaticMappingDetails) bool {
			return s.LocalIPAddress == d.LocalIPAddress && s.LocalPort == d.LocalPort && s.Protocol == d.Protocol && s.VrfID == d.VrfID
		})
		switch {
		case m.IsAdd && (at >= 0 || local || n.identityAt(d.ExternalIPAddress, d.ExternalPort, d.Protocol, ^uint32(0)) >= 0):
			return fail(api.VALUE_EXIST)
		case !m.IsAdd && at < 0:
			return fail(api.NO_SUCH_ENTRY)
		case m.IsAdd:
			n.static = append(n.static, d)
		default:
			n.static = slices.Delete(n.static, at, at+1)
		}
	case *nat44_ed.Nat44AddDelIdentityMapping:
		d := nat44_ed.Nat44IdentityMappingDetails{Flags: m.Flags, IPAddress: m.IPAddress, Protocol: m.Protocol, Port: m.Port, SwIfIndex: m.SwIfIndex, VrfID: m.VrfID, Tag: m.Tag}
		if m.SwIfIndex != ^interface_types.InterfaceIndex(0) && f.iface(m.SwIfIndex, retval) == nil {
			return nil, true
		}
		if m.Flags&nat_types.NAT_IS_ADDR_ONLY != 0 {
			d.Port, d.Protocol = 0, 0
		}
		at := n.identityAt(d.IPAddress, d.Port, d.Protocol, d.VrfID)
		static := slices.ContainsFunc(n.static, func(s nat44_ed.Nat44StaticMappingDetails) bool {
			return s.ExternalIPAddress == d.IPAddress && s.ExternalPort == d.Port && s.Protocol == d.Protocol
		})
		switch {
		case m.IsAdd && (at >= 0 || static):
			return fail(api.VALUE_EXIST)
		case !m.IsAdd && at < 0:
			return fail(api.NO_SUCH_ENTRY)
		case m.IsAdd:
			n.identity = append(n.identity, d)
		default:
			n.identity = slices.Delete(n.identity, at, at+1)
		}
	}
	return nil, true
}

// natRequests are the NAT44 requests refused while the plugin is off.
var natRequests = map[string]bool{
	"nat44_forwarding_enable_disable": true, "nat44_interface_add_del_feature": true, "nat44_add_del_address_range": true,
	"nat44_add_del_static_mapping_v2": true, "nat44_add_del_identity_mapping": true,
}

// identityAt is the index of the identity mapping of an address, port and
// protocol in table vrf (any table: ^0), or -1.
func (n *fakeNAT) identityAt(a ip_types.IP4Address, port uint16, proto uint8, vrf uint32) int {
	return slices.IndexFunc(n.identity, func(s nat44_ed.Nat44IdentityMappingDetails) bool {
		return s.IPAddress == a && s.Port == port && s.Protocol == proto && (vrf == ^uint32(0) || s.VrfID == vrf)
	})
}

// addressRange adds or deletes the addresses of a range one by one, as
// VPP does: a range backwards is refused; an address there (add) or
// missing (delete) stops it where it is.
func (n *fakeNAT) addressRange(m *nat44_ed.Nat44AddDelAddressRange, retval *int32) []api.Message {
	first, last := ip4Uint(m.FirstIPAddress), ip4Uint(m.LastIPAddress)
	if last < first {
		*retval = int32(api.INVALID_VALUE)
		return nil
	}
	twice := m.Flags & nat_types.NAT_IS_TWICE_NAT
	for a := first; a <= last && a >= first; a++ {
		ip := ip_types.IP4Address{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}
		at := slices.IndexFunc(n.addresses, func(x nat44_ed.Nat44AddressDetails) bool {
			return x.IPAddress == ip && x.Flags == twice
		})
		switch {
		case m.IsAdd && at >= 0:
			*retval = int32(api.VALUE_EXIST)
			return nil
		case !m.IsAdd && at < 0:
			*retval = int32(api.NO_SUCH_ENTRY)
			return nil
		case m.IsAdd:
			n.addresses = append(n.addresses, nat44_ed.Nat44AddressDetails{IPAddress: ip, Flags: twice, VrfID: m.VrfID})
		default:
			n.addresses = slices.Delete(n.addresses, at, at+1)
		}
	}
	return nil
}

func ip4Uint(a ip_types.IP4Address) uint32 {
	return uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
}
