package vpp

import (
	"context"
	"fmt"
	"net/netip"

	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/ipsec"
	"go.fd.io/govpp/binapi/ipsec_types"

	vppipsec "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipsec/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

type sp = vppipsec.SecurityPolicy

// securityPolicies is the handler of vpp.ipsec.v1.SecurityPolicy. It has
// no Update: VPP knows a policy by all its fields, a change re-creates it.
type securityPolicies struct{ p *Plugin }

var _ vppipsec.SecurityPolicyRetriever[struct{}] = (*securityPolicies)(nil)

// Create adds the policy to its SPD.
// vppctl ipsec policy add spd ID priority P outbound action protect sa SA local-ip-range A - B remote-ip-range C - D ...
func (h *securityPolicies) Create(ctx context.Context, _ vppipsec.SecurityPolicyKey, v *sp) (struct{}, error) {
	_, err := ipsec.NewServiceClient(h.p.conn).IpsecSpdEntryAddDelV2(ctx, &ipsec.IpsecSpdEntryAddDelV2{IsAdd: true, Entry: spdEntry(v)})
	return struct{}{}, vppErr("ipsec_spd_entry_add_del_v2", err)
}

// Delete removes the policy VPP has with all these fields.
// vppctl ipsec policy del spd ID ...
func (h *securityPolicies) Delete(ctx context.Context, _ vppipsec.SecurityPolicyKey, v *sp, _ struct{}) error {
	_, err := ipsec.NewServiceClient(h.p.conn).IpsecSpdEntryAddDelV2(ctx, &ipsec.IpsecSpdEntryAddDelV2{Entry: spdEntry(v)})
	return vppErr("ipsec_spd_entry_add_del_v2", err)
}

// spdEntry is the SPD entry of v (the generated Validate checked its
// addresses and their families).
func spdEntry(v *sp) ipsec_types.IpsecSpdEntryV2 {
	a := func(s string) ip_types.Address { x, _ := netip.ParseAddr(s); return address(x) }
	return ipsec_types.IpsecSpdEntryV2{SpdID: v.GetSpdIndex(), Priority: v.GetPriority(), IsOutbound: v.GetIsOutbound(), SaID: v.GetSaIndex(),
		Policy: ipsec_types.IpsecSpdAction(v.GetAction()), Protocol: uint8(v.GetProtocol()),
		RemoteAddressStart: a(v.EffectiveRemoteAddrStart()), RemoteAddressStop: a(v.EffectiveRemoteAddrStop()),
		LocalAddressStart: a(v.EffectiveLocalAddrStart()), LocalAddressStop: a(v.EffectiveLocalAddrStop()),
		RemotePortStart: uint16(v.GetRemotePortStart()), RemotePortStop: uint16(v.EffectiveRemotePortStop()),
		LocalPortStart: uint16(v.GetLocalPortStart()), LocalPortStop: uint16(v.EffectiveLocalPortStop())}
}

// Retrieve dumps the policies of every SPD. VPP keeps no name: a policy
// whose fields are those of a correlated one is that one (as it was asked
// for); the others are obtained as vpp-N, N their place in the SPD's dump.
func (h *securityPolicies) Retrieve(ctx context.Context, correlate []vppipsec.SecurityPolicyItem[struct{}]) (out []vppipsec.SecurityPolicyItem[struct{}], _ error) {
	c := ipsec.NewServiceClient(h.p.conn)
	spds, err := dump[*ipsec.IpsecSpdsDetails]("ipsec_spds_dump")(c.IpsecSpdsDump(ctx, &ipsec.IpsecSpdsDump{}))
	if err != nil {
		return nil, err
	}
	taken := make([]bool, len(correlate))
	for _, s := range spds {
		list, err := dump[*ipsec.IpsecSpdDetails]("ipsec_spd_dump")(c.IpsecSpdDump(ctx, &ipsec.IpsecSpdDump{SpdID: s.SpdID, SaID: ^uint32(0)}))
		if err != nil {
			return nil, err
		}
	entries:
		for n, d := range list {
			e := ipsec_types.IpsecSpdEntryV2(d.Entry)
			if e.Protocol == 255 { // VPP's any, sent as 0
				e.Protocol = 0
			}
			for i, it := range correlate {
				if !taken[i] && spdEntry(it.Value) == e {
					taken[i] = true
					out = append(out, vppipsec.SecurityPolicyItem[struct{}]{Key: it.Key, Value: it.Value, Origin: kv.OriginNB})
					continue entries
				}
			}
			got := &sp{SpdIndex: e.SpdID, Name: fmt.Sprintf("vpp-%d", n), Priority: e.Priority, IsOutbound: e.IsOutbound, SaIndex: e.SaID,
				Action: vppipsec.SecurityPolicy_Action(e.Policy), Protocol: uint32(e.Protocol),
				RemoteAddrStart: addrOf(e.RemoteAddressStart).String(), RemoteAddrStop: addrOf(e.RemoteAddressStop).String(),
				LocalAddrStart: addrOf(e.LocalAddressStart).String(), LocalAddrStop: addrOf(e.LocalAddressStop).String(),
				RemotePortStart: uint32(e.RemotePortStart), RemotePortStop: uint32(e.RemotePortStop),
				LocalPortStart: uint32(e.LocalPortStart), LocalPortStop: uint32(e.LocalPortStop)}
			out = append(out, vppipsec.SecurityPolicyItem[struct{}]{Key: vppipsec.SecurityPolicyKey{SpdIndex: e.SpdID, Name: got.Name}, Value: got, Origin: kv.OriginSB})
		}
	}
	return out, nil
}
