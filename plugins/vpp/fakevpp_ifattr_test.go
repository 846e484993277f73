package vpp

import (
	"fmt"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/bond"
	"go.fd.io/govpp/binapi/dhcp"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip6_nd"
	"go.fd.io/govpp/binapi/ip_types"
)

func init() { registerFakeExt(func() fakeExt { return &fakeIfattr{} }) }

// fakeIfattr is the fake VPP's part for bonds, DHCP clients and IPv6 ND
// (router advertisements).
type fakeIfattr struct {
	bonds   map[uint32]*bond.SwBondInterfaceDetails
	members map[uint32]fakeMember // by the member's sw_if_index
	dhcp    map[uint32]dhcp.DHCPClient
	ip6     map[uint32]int // explicit IPv6 enables (VPP's link locks)
	ra      map[uint32]*ip6_nd.SwInterfaceIP6ndRaDetails
}

// fakeMember is a bond member.
type fakeMember struct {
	bond                 uint32
	passive, longTimeout bool
}

func (x *fakeIfattr) reset() {
	x.bonds, x.members = map[uint32]*bond.SwBondInterfaceDetails{}, map[uint32]fakeMember{}
	x.dhcp = map[uint32]dhcp.DHCPClient{}
	x.ip6, x.ra = map[uint32]int{}, map[uint32]*ip6_nd.SwInterfaceIP6ndRaDetails{}
}

// forget: VPP detaches a member that goes away, and a bond's members
// with it; the interface's DHCP client and IPv6 state go too.
func (x *fakeIfattr) forget(i uint32) {
	delete(x.bonds, i)
	for m, b := range x.members {
		if m == i || b.bond == i {
			delete(x.members, m)
		}
	}
	delete(x.dhcp, i)
	delete(x.ip6, i)
	delete(x.ra, i)
}

// ipv6On says whether VPP has IPv6 enabled on interface i (by an
// explicit enable or an IPv6 address): only then does it keep RA
// settings, which it drops with the last of those.
func (x *fakeIfattr) ipv6On(f *fakeVPP, i uint32) bool {
	on := x.ip6[i] > 0 || slices.ContainsFunc(f.addrs[i], func(a ip_types.AddressWithPrefix) bool { return a.Address.Af == ip_types.ADDRESS_IP6 })
	if !on {
		delete(x.ra, i)
	} else if x.ra[i] == nil {
		x.ra[i] = &ip6_nd.SwInterfaceIP6ndRaDetails{SwIfIndex: interface_types.InterfaceIndex(i), SendRadv: true, MaxRadvInterval: 200, MinRadvInterval: 150}
	}
	return on
}

func (x *fakeIfattr) apply(f *fakeVPP, msg api.Message, retval *int32) ([]api.Message, bool) {
	switch m := msg.(type) {
	case *bond.BondCreate2:
		return x.bondCreate(f, m, retval), true
	case *bond.BondDelete:
		if x.bonds[uint32(m.SwIfIndex)] == nil {
			*retval = retvalBadIndex
		} else {
			f.forget(uint32(m.SwIfIndex))
		}
	case *bond.BondAddMember:
		member, b := f.iface(m.SwIfIndex, retval), x.bonds[uint32(m.BondSwIfIndex)]
		_, taken := x.members[uint32(m.SwIfIndex)]
		switch {
		case member == nil:
		case b == nil:
			*retval = int32(api.INVALID_INTERFACE) // bond interface not found
		case taken:
			*retval = int32(api.VALUE_EXIST) // already a member
		case member.Type == interface_types.IF_API_TYPE_SUB || slices.Contains([]string{"bond", "GRE", "IPIP"}, member.InterfaceDevType):
			*retval = int32(api.INVALID_INTERFACE) // a sub-interface, a bond, or not Ethernet
		default:
			x.members[uint32(m.SwIfIndex)] = fakeMember{bond: uint32(m.BondSwIfIndex), passive: m.IsPassive, longTimeout: m.IsLongTimeout}
		}
	case *bond.BondDetachMember:
		if f.iface(m.SwIfIndex, retval) == nil {
			break
		}
		if _, ok := x.members[uint32(m.SwIfIndex)]; !ok {
			*retval = int32(api.INVALID_INTERFACE) // not a member
		}
		delete(x.members, uint32(m.SwIfIndex))
	case *bond.SwBondInterfaceDump:
		var out []api.Message
		for _, i := range sortedKeys(x.bonds) {
			if m.SwIfIndex == ^interface_types.InterfaceIndex(0) || uint32(m.SwIfIndex) == i {
				d := *x.bonds[i]
				for _, mb := range x.members {
					if mb.bond == i {
						d.Members++
						d.ActiveMembers++
					}
				}
				out = append(out, &d)
			}
		}
		return out, true
	case *bond.SwMemberInterfaceDump:
		var out []api.Message
		for _, i := range sortedKeys(x.members) {
			if mb := x.members[i]; mb.bond == uint32(m.SwIfIndex) {
				out = append(out, &bond.SwMemberInterfaceDetails{SwIfIndex: interface_types.InterfaceIndex(i), InterfaceName: f.ifaces[i].InterfaceName,
					IsPassive: mb.passive, IsLongTimeout: mb.longTimeout, IsLocalNuma: true})
			}
		}
		return out, true
	case *dhcp.DHCPClientConfig:
		i := m.Client.SwIfIndex
		_, exists := x.dhcp[uint32(i)]
		switch {
		case f.iface(i, retval) == nil:
		case m.IsAdd && exists:
			*retval = int32(api.INVALID_VALUE) // already a client on it
		case !m.IsAdd && !exists:
			*retval = retvalNoSuchEntry
		case m.IsAdd:
			x.dhcp[uint32(i)] = m.Client
		default:
			delete(x.dhcp, uint32(i))
		}
	case *dhcp.DHCPClientDump:
		var out []api.Message
		for _, i := range sortedKeys(x.dhcp) {
			out = append(out, &dhcp.DHCPClientDetails{Client: x.dhcp[i], Lease: dhcp.DHCPLease{SwIfIndex: interface_types.InterfaceIndex(i), State: dhcp.DHCP_CLIENT_STATE_API_DISCOVER}})
		}
		return out, true
	case *ip.SwInterfaceIP6EnableDisable:
		i := uint32(m.SwIfIndex)
		switch {
		case f.iface(m.SwIfIndex, retval) == nil:
		case m.Enable:
			if x.ipv6On(f, i) {
				*retval = int32(api.VALUE_EXIST) // enabled already; VPP takes the lock all the same
			}
			x.ip6[i]++
			x.ipv6On(f, i)
		case x.ip6[i] == 0:
			*retval = int32(api.IP6_NOT_ENABLED)
		default:
			x.ip6[i]--
			x.ipv6On(f, i)
		}
	case *ip6_nd.SwInterfaceIP6ndRaConfig:
		x.raConfig(f, m, retval)
	case *ip6_nd.SwInterfaceIP6ndRaPrefix:
		x.raPrefix(f, m, retval)
	case *ip6_nd.SwInterfaceIP6ndRaDump:
		if f.ifaces[uint32(m.SwIfIndex)] == nil || !x.ipv6On(f, uint32(m.SwIfIndex)) {
			return nil, true
		}
		d := *x.ra[uint32(m.SwIfIndex)]
		d.Prefixes = slices.Clone(d.Prefixes)
		d.NPrefixes = uint32(len(d.Prefixes))
		return []api.Message{&d}, true
	default:
		return nil, false
	}
	return nil, true
}

// bondCreate creates a bond, refusing what VPP refuses: an unknown mode, a
// hash other than L2, L34, L23 in the XOR and LACP modes, an id in use.
// In the other modes VPP takes the mode's own hash.
func (x *fakeIfattr) bondCreate(f *fakeVPP, m *bond.BondCreate2, retval *int32) []api.Message {
	lb := m.Lb
	switch m.Mode {
	case bond.BOND_API_MODE_XOR, bond.BOND_API_MODE_LACP:
		if lb > bond.BOND_API_LB_ALGO_L23 {
			*retval = int32(api.INVALID_VALUE)
			return nil
		}
	case bond.BOND_API_MODE_ROUND_ROBIN:
		lb = bond.BOND_API_LB_ALGO_RR
	case bond.BOND_API_MODE_ACTIVE_BACKUP:
		lb = bond.BOND_API_LB_ALGO_AB
	case bond.BOND_API_MODE_BROADCAST:
		lb = bond.BOND_API_LB_ALGO_BC
	default:
		*retval = int32(api.INVALID_VALUE)
		return nil
	}
	used := map[uint32]bool{}
	for _, b := range x.bonds {
		used[b.ID] = true
	}
	id := m.ID
	if id == ^uint32(0) {
		for id = 0; used[id]; id++ {
		}
	} else if used[id] {
		*retval = int32(api.INSTANCE_IN_USE)
		return nil
	}
	var mac [6]byte
	if m.UseCustomMac {
		mac = m.MacAddress
	}
	name := fmt.Sprintf("BondEthernet%d", id)
	idx := f.newIf(name, "bond", mac)
	x.bonds[uint32(idx)] = &bond.SwBondInterfaceDetails{SwIfIndex: idx, ID: id, Mode: m.Mode, Lb: lb, NumaOnly: m.NumaOnly, InterfaceName: name}
	return []api.Message{&bond.BondCreate2Reply{SwIfIndex: idx}}
}

// raConfig applies sw_interface_ip6nd_ra_config as VPP does: the flags
// given (non-zero) are set, or cleared with is_no; a max_interval given
// sets the interval (min_interval 0: 3/4 of it), or with is_no puts the
// defaults back. It refuses an interface without IPv6 and intervals out
// of range.
func (x *fakeIfattr) raConfig(f *fakeVPP, m *ip6_nd.SwInterfaceIP6ndRaConfig, retval *int32) {
	i := uint32(m.SwIfIndex)
	if f.iface(m.SwIfIndex, retval) == nil {
		return
	}
	if !x.ipv6On(f, i) {
		*retval = int32(api.IP6_NOT_ENABLED)
		return
	}
	maxI, minI := float64(m.MaxInterval), float64(m.MinInterval)
	if m.MaxInterval != 0 && !m.IsNo {
		if minI == 0 {
			minI = 0.75 * maxI
		}
		if maxI < 4 || maxI > 1800 || minI < 3 || minI > 0.75*maxI {
			*retval = int32(api.INVALID_VALUE)
			return
		}
	}
	ra := x.ra[i]
	if m.Suppress != 0 {
		ra.SendRadv = m.IsNo
	}
	if m.Managed != 0 {
		ra.AdvManagedFlag = !m.IsNo
	}
	if m.Other != 0 {
		ra.AdvOtherFlag = !m.IsNo
	}
	if m.MaxInterval != 0 {
		if m.IsNo {
			maxI, minI = 200, 150
		}
		ra.MaxRadvInterval, ra.MinRadvInterval = maxI, minI
	}
}

// raPrefix adds, changes (the call overwrites) or removes an advertised
// prefix, refusing an interface without IPv6, a preferred lifetime over
// the valid one, the removal of a prefix not there, and an IPv4 prefix
// (VPP would read its bytes as an IPv6 one: no handler may send one).
func (x *fakeIfattr) raPrefix(f *fakeVPP, m *ip6_nd.SwInterfaceIP6ndRaPrefix, retval *int32) {
	i := uint32(m.SwIfIndex)
	if f.iface(m.SwIfIndex, retval) == nil {
		return
	}
	if !x.ipv6On(f, i) {
		*retval = int32(api.IP6_NOT_ENABLED)
		return
	}
	if m.Prefix.Address.Af != ip_types.ADDRESS_IP6 || (!m.IsNo && !m.UseDefault && m.PrefLifetime > m.ValLifetime) {
		*retval = int32(api.INVALID_VALUE)
		return
	}
	ra := x.ra[i]
	at := slices.IndexFunc(ra.Prefixes, func(p ip6_nd.IP6ndRaPrefix) bool { return p.Prefix == m.Prefix })
	if m.IsNo {
		if at < 0 {
			*retval = retvalNoSuchEntry
			return
		}
		ra.Prefixes = slices.Delete(ra.Prefixes, at, at+1)
		return
	}
	p := ip6_nd.IP6ndRaPrefix{Prefix: m.Prefix, OnlinkFlag: !m.OffLink, AutonomousFlag: !m.NoAutoconfig, ValLifetime: m.ValLifetime, PrefLifetime: m.PrefLifetime,
		NoAdvertise: m.NoAdvertise}
	if m.UseDefault {
		p.ValLifetime, p.PrefLifetime = 2592000, 604800
	}
	if at < 0 {
		ra.Prefixes = append(ra.Prefixes, p)
	} else {
		ra.Prefixes[at] = p
	}
}
