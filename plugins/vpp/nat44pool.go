package vpp

import (
	"cmp"
	"context"
	"net/netip"
	"slices"

	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	vppnat "github.com/kvdescriptor/kvdescriptor/generated/vpp/nat/v1"
)

// nat44Pools is the handler of vpp.nat.v1.Nat44AddressPool. It has no
// Update: a change re-creates it.
type nat44Pools struct{ p *Plugin }

var _ vppnat.Nat44AddressPoolRetriever[struct{}] = (*nat44Pools)(nil)

// Create adds the range.
// vppctl nat44 add address FIRST - LAST [tenant-vrf V] [twice-nat]
func (h *nat44Pools) Create(ctx context.Context, _ vppnat.Nat44AddressPoolKey, v *vppnat.Nat44AddressPool) (struct{}, error) {
	return struct{}{}, h.addDel(ctx, v, true)
}

// Delete removes it.
// vppctl nat44 add address FIRST - LAST [tenant-vrf V] [twice-nat] del
func (h *nat44Pools) Delete(ctx context.Context, _ vppnat.Nat44AddressPoolKey, v *vppnat.Nat44AddressPool, _ struct{}) error {
	return h.addDel(ctx, v, false)
}

func (h *nat44Pools) addDel(ctx context.Context, v *vppnat.Nat44AddressPool, add bool) error {
	last := cmp.Or(v.GetLastIp(), v.GetFirstIp())
	_, err := h.p.natVPP().Nat44AddDelAddressRange(ctx, &nat44_ed.Nat44AddDelAddressRange{
		FirstIPAddress: ip4Addr(v.GetFirstIp()), LastIPAddress: ip4Addr(last), VrfID: poolVrf(v), IsAdd: add, Flags: twiceNATFlags[v.GetTwiceNat()]})
	return vppErr("nat44_add_del_address_range", err)
}

// Retrieve dumps the addresses (VPP keeps them one by one): a correlated
// pool whose every address VPP has, with its table and twice-NAT flag,
// is ours; each address left is a pool of its own, named after it,
// obtained.
func (h *nat44Pools) Retrieve(ctx context.Context, correlate []vppnat.Nat44AddressPoolItem[struct{}]) ([]vppnat.Nat44AddressPoolItem[struct{}], error) {
	list, err := dump[*nat44_ed.Nat44AddressDetails]("nat44_address_dump")(h.p.natVPP().Nat44AddressDump(ctx, &nat44_ed.Nat44AddressDump{}))
	found := map[nat44_ed.Nat44AddressDetails]bool{}
	for _, d := range list {
		found[*d] = true
	}
	var out []vppnat.Nat44AddressPoolItem[struct{}]
	for _, c := range correlate {
		addrs := poolAddrs(c.Value)
		if len(addrs) > 0 && !slices.ContainsFunc(addrs, func(a nat44_ed.Nat44AddressDetails) bool { return !found[a] }) {
			for _, a := range addrs {
				delete(found, a)
			}
			out = append(out, vppnat.Nat44AddressPoolItem[struct{}]{Key: c.Key, Value: c.Value, Origin: origin(true)})
		}
	}
	for _, d := range list {
		if found[*d] {
			got := &vppnat.Nat44AddressPool{Name: d.IPAddress.String(), FirstIp: d.IPAddress.String(), VrfId: d.VrfID, TwiceNat: d.Flags == twiceNATFlags[true]}
			if got.TwiceNat {
				got.Name = "twice-nat-" + got.Name
			}
			if d.VrfID == ^uint32(0) { // VPP's tenant VRF of any table
				got.VrfId, got.VrfScope = 0, vppnat.Nat44AddressPool_VRF_SCOPE_ANY
			}
			out = append(out, vppnat.Nat44AddressPoolItem[struct{}]{Key: vppnat.Nat44AddressPoolKey{Name: got.Name}, Value: got, Origin: origin(false)})
		}
	}
	return out, err
}

// poolVrf is the tenant VRF of a pool: ~0 for any table.
func poolVrf(v *vppnat.Nat44AddressPool) uint32 {
	if v.GetVrfScope() == vppnat.Nat44AddressPool_VRF_SCOPE_ANY {
		return ^uint32(0)
	}
	return v.GetVrfId()
}

// poolAddrs are the addresses of a pool as VPP lists them: none for a
// range backwards. The generated Validate checked both ends.
func poolAddrs(v *vppnat.Nat44AddressPool) (out []nat44_ed.Nat44AddressDetails) {
	first, last := ip4(v.GetFirstIp()), ip4(v.GetLastIp())
	if v.GetLastIp() == "" {
		last = first
	}
	for a := first; a.IsValid() && !last.Less(a); a = a.Next() {
		out = append(out, nat44_ed.Nat44AddressDetails{IPAddress: a.As4(), VrfID: poolVrf(v), Flags: twiceNATFlags[v.GetTwiceNat()]})
	}
	return out
}

// ip4 parses an IPv4 address of a field of format IPV4, which Validate
// checked (0.0.0.0 when empty).
func ip4(s string) netip.Addr {
	if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
		return a
	}
	return netip.IPv4Unspecified()
}

// ip4Addr converts it to the binary API's.
func ip4Addr(s string) ip_types.IP4Address { return ip4(s).As4() }

// twiceNATFlags are the flags of a pool for twice-NAT or not.
var twiceNATFlags = map[bool]nat_types.NatConfigFlags{true: nat_types.NAT_IS_TWICE_NAT}
