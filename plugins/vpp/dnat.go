package vpp

import (
	"context"
	"net/netip"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	vppnat "github.com/kvdescriptor/kvdescriptor/generated/vpp/nat/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// dnats is the handler of vpp.nat.v1.DNat44: a label over its mappings,
// which are derived values (staticMappings, identityMappings). VPP has
// nothing of the group but the tag of its mappings.
type dnats struct{ p *Plugin }

var _ vppnat.DNat44Retriever[struct{}] = (*dnats)(nil)

// Create has nothing to do in VPP: the mappings follow.
func (h *dnats) Create(context.Context, vppnat.DNat44Key, *vppnat.DNat44) (struct{}, error) {
	return struct{}{}, nil
}

// Delete has nothing to do in VPP: the mappings went first.
func (h *dnats) Delete(context.Context, vppnat.DNat44Key, *vppnat.DNat44, struct{}) error {
	return nil
}

// Retrieve reports the correlated groups as intended (their mappings are
// read by the mappings' Retrieve), and groups the other mappings by tag:
// a group of ours no longer intended is stale, one made elsewhere
// obtained.
func (h *dnats) Retrieve(ctx context.Context, correlate []vppnat.DNat44Item[struct{}]) ([]vppnat.DNat44Item[struct{}], error) {
	static, ids, err := h.p.dumpMappings(ctx)
	groups := map[string]*vppnat.DNat44{}
	var out []vppnat.DNat44Item[struct{}]
	for _, c := range correlate {
		groups[c.Key.Label] = nil
		out = append(out, vppnat.DNat44Item[struct{}]{Key: c.Key, Value: c.Value, Origin: kv.OriginNB})
	}
	group := func(label string) *vppnat.DNat44 {
		g, seen := groups[label]
		if !seen {
			g = &vppnat.DNat44{Label: label}
			groups[label] = g
			out = append(out, vppnat.DNat44Item[struct{}]{Key: vppnat.DNat44Key{Label: label}, Value: g, Origin: kv.OriginUnknown})
		}
		return g
	}
	for _, m := range static {
		if g := group(m.Key.Label); g != nil {
			g.StaticMappings = append(g.StaticMappings, m.Value)
		}
	}
	for _, m := range ids {
		if g := group(m.Key.Label); g != nil {
			g.IdentityMappings = append(g.IdentityMappings, m.Value)
		}
	}
	return out, err
}

// staticMappings is the handler of vpp.nat.v1.DNat44.static_mappings. It
// has no Update: a change re-creates the mapping.
type staticMappings struct{ p *Plugin }

var _ vppnat.DNat44StaticMappingsRetriever[struct{}] = (*staticMappings)(nil)

// Create adds the mapping, out-to-in only, tagged with the group's label.
// vppctl nat44 add static mapping tcp local L LP external E EP [vrf V] [twice-nat|self-twice-nat] out2in-only
func (h *staticMappings) Create(ctx context.Context, k vppnat.DNat44StaticMappingsKey, v *vppnat.DNat44_StaticMapping) (struct{}, error) {
	return struct{}{}, h.addDel(ctx, k, v, true)
}

// Delete removes it.
func (h *staticMappings) Delete(ctx context.Context, k vppnat.DNat44StaticMappingsKey, v *vppnat.DNat44_StaticMapping, _ struct{}) error {
	return h.addDel(ctx, k, v, false)
}

func (h *staticMappings) addDel(ctx context.Context, k vppnat.DNat44StaticMappingsKey, v *vppnat.DNat44_StaticMapping, add bool) error {
	flags := nat_types.NAT_IS_OUT2IN_ONLY | twiceNATModes[v.GetTwiceNat()] | addrOnly(v.GetExternalPort())
	_, err := h.p.natVPP().Nat44AddDelStaticMappingV2(ctx, &nat44_ed.Nat44AddDelStaticMappingV2{
		IsAdd: add, Flags: flags, MatchPool: v.GetTwiceNatPoolIp() != "", PoolIPAddress: ip4Addr(v.GetTwiceNatPoolIp()),
		LocalIPAddress: ip4Addr(v.GetLocalIp()), ExternalIPAddress: ip4Addr(v.GetExternalIp()), Protocol: uint8(v.GetProtocol()),
		LocalPort: uint16(v.GetLocalPort()), ExternalPort: uint16(v.GetExternalPort()), ExternalSwIfIndex: ^interface_types.InterfaceIndex(0),
		VrfID: v.GetVrfId(), Tag: k.Label,
	})
	return vppErr("nat44_add_del_static_mapping_v2", err)
}

// twiceNATModes are the flags of the twice-NAT modes.
var twiceNATModes = map[vppnat.DNat44_TwiceNat]nat_types.NatConfigFlags{
	vppnat.DNat44_TWICE_NAT_ENABLED: nat_types.NAT_IS_TWICE_NAT,
	vppnat.DNat44_TWICE_NAT_SELF:    nat_types.NAT_IS_SELF_TWICE_NAT,
}

// addrOnly is the flag of a mapping of an address alone (port 0).
func addrOnly(port uint32) nat_types.NatConfigFlags {
	if port == 0 {
		return nat_types.NAT_IS_ADDR_ONLY
	}
	return 0
}

// Retrieve reports the static mappings VPP has, whoever owns them.
func (h *staticMappings) Retrieve(ctx context.Context, correlate []vppnat.DNat44StaticMappingsItem[struct{}]) ([]vppnat.DNat44StaticMappingsItem[struct{}], error) {
	static, _, err := h.p.dumpMappings(ctx)
	want := map[vppnat.DNat44StaticMappingsKey]*vppnat.DNat44_StaticMapping{}
	for _, c := range correlate {
		want[c.Key] = c.Value
		if c.Value.GetExternalPort() == 0 { // VPP keeps no protocol for an address alone
			want[vppnat.DNat44StaticMappingsKey{Label: c.Key.Label, StaticMappingsExternalIp: c.Key.StaticMappingsExternalIp}] = c.Value
		}
	}
	for i, m := range static {
		if w := want[m.Key]; w != nil { // VPP does not report the twice-NAT address picked, nor keeps the protocol of an address alone
			static[i].Key.StaticMappingsProtocol, m.Value.Protocol, m.Value.TwiceNatPoolIp = w.GetProtocol(), w.GetProtocol(), w.GetTwiceNatPoolIp()
		}
	}
	return static, err
}

// identityMappings is the handler of vpp.nat.v1.DNat44.identity_mappings.
// It has no Update: a change re-creates the mapping.
type identityMappings struct{ p *Plugin }

var _ vppnat.DNat44IdentityMappingsRetriever[struct{}] = (*identityMappings)(nil)

// Create adds the mapping, tagged with the group's label.
// vppctl nat44 add identity mapping IP [tcp|udp|icmp PORT] [vrf V]
func (h *identityMappings) Create(ctx context.Context, k vppnat.DNat44IdentityMappingsKey, v *vppnat.DNat44_IdentityMapping) (struct{}, error) {
	return struct{}{}, h.addDel(ctx, k, true)
}

// Delete removes it.
func (h *identityMappings) Delete(ctx context.Context, k vppnat.DNat44IdentityMappingsKey, _ *vppnat.DNat44_IdentityMapping, _ struct{}) error {
	return h.addDel(ctx, k, false)
}

func (h *identityMappings) addDel(ctx context.Context, k vppnat.DNat44IdentityMappingsKey, add bool) error {
	_, err := h.p.natVPP().Nat44AddDelIdentityMapping(ctx, &nat44_ed.Nat44AddDelIdentityMapping{
		IsAdd: add, Flags: addrOnly(k.IdentityMappingsPort), IPAddress: ip4Addr(k.IdentityMappingsIpAddress.String()), Protocol: uint8(k.IdentityMappingsProtocol),
		Port: uint16(k.IdentityMappingsPort), SwIfIndex: ^interface_types.InterfaceIndex(0), VrfID: k.IdentityMappingsVrfId, Tag: k.Label,
	})
	return vppErr("nat44_add_del_identity_mapping", err)
}

// Retrieve reports the identity mappings VPP has, whoever owns them.
func (h *identityMappings) Retrieve(ctx context.Context, correlate []vppnat.DNat44IdentityMappingsItem[struct{}]) ([]vppnat.DNat44IdentityMappingsItem[struct{}], error) {
	_, ids, err := h.p.dumpMappings(ctx)
	want := map[vppnat.DNat44IdentityMappingsKey]uint32{} // of an address alone, the protocol intended: VPP keeps none
	for _, c := range correlate {
		if k := c.Key; k.IdentityMappingsPort == 0 {
			k.IdentityMappingsProtocol = 0
			want[k] = c.Key.IdentityMappingsProtocol
		}
	}
	for i, m := range ids {
		if p, ok := want[m.Key]; ok {
			ids[i].Key.IdentityMappingsProtocol, m.Value.Protocol = p, p
		}
	}
	return ids, err
}

// dumpMappings dumps the static and identity mappings that the model can
// hold (not those of an interface's address), keyed by their tag
// ("untagged" when they have none), their origin left to the scheduler:
// ours when it applied them, obtained otherwise.
func (p *Plugin) dumpMappings(ctx context.Context) ([]vppnat.DNat44StaticMappingsItem[struct{}], []vppnat.DNat44IdentityMappingsItem[struct{}], error) {
	c := p.natVPP()
	sl, err := dump[*nat44_ed.Nat44StaticMappingDetails]("nat44_static_mapping_dump")(c.Nat44StaticMappingDump(ctx, &nat44_ed.Nat44StaticMappingDump{}))
	if err != nil {
		return nil, nil, err
	}
	il, err := dump[*nat44_ed.Nat44IdentityMappingDetails]("nat44_identity_mapping_dump")(c.Nat44IdentityMappingDump(ctx, &nat44_ed.Nat44IdentityMappingDump{}))
	tag := func(t string) string {
		if t == "" {
			return "untagged"
		}
		return t
	}
	var static []vppnat.DNat44StaticMappingsItem[struct{}]
	for _, d := range sl {
		if d.ExternalSwIfIndex == ^interface_types.InterfaceIndex(0) {
			ext, twice := netip.AddrFrom4(d.ExternalIPAddress), vppnat.DNat44_TWICE_NAT_DISABLED
			for mode, f := range twiceNATModes {
				if d.Flags&f != 0 {
					twice = mode
				}
			}
			v := &vppnat.DNat44_StaticMapping{ExternalIp: ext.String(), ExternalPort: uint32(d.ExternalPort), Protocol: uint32(d.Protocol), LocalIp: d.LocalIPAddress.String(),
				LocalPort: uint32(d.LocalPort), VrfId: d.VrfID, TwiceNat: twice}
			k := vppnat.DNat44StaticMappingsKey{Label: tag(d.Tag), StaticMappingsExternalIp: ext, StaticMappingsProtocol: v.Protocol, StaticMappingsExternalPort: v.ExternalPort}
			static = append(static, vppnat.DNat44StaticMappingsItem[struct{}]{Key: k, Value: v})
		}
	}
	var ids []vppnat.DNat44IdentityMappingsItem[struct{}]
	for _, d := range il {
		if d.SwIfIndex == ^interface_types.InterfaceIndex(0) {
			a := netip.AddrFrom4(d.IPAddress)
			v := &vppnat.DNat44_IdentityMapping{VrfId: d.VrfID, IpAddress: a.String(), Protocol: uint32(d.Protocol), Port: uint32(d.Port)}
			k := vppnat.DNat44IdentityMappingsKey{Label: tag(d.Tag), IdentityMappingsVrfId: d.VrfID, IdentityMappingsIpAddress: a, IdentityMappingsProtocol: v.Protocol, IdentityMappingsPort: v.Port}
			ids = append(ids, vppnat.DNat44IdentityMappingsItem[struct{}]{Key: k, Value: v})
		}
	}
	return static, ids, err
}
