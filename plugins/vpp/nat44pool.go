package vpp

import (
	"context"
	"net/netip"

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
	first, last := poolRange(v)
	_, err := h.p.natVPP().Nat44AddDelAddressRange(ctx, &nat44_ed.Nat44AddDelAddressRange{
		FirstIPAddress: first.As4(), LastIPAddress: last.As4(), VrfID: poolVrf(v), IsAdd: add, Flags: twiceNATFlag(v.GetTwiceNat())})
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
		first, last := poolRange(c.Value)
		all := first.IsValid() && !last.Less(first)
		for a := first; all && !last.Less(a); a = a.Next() {
			all = found[nat44_ed.Nat44AddressDetails{IPAddress: a.As4(), VrfID: poolVrf(c.Value), Flags: twiceNATFlag(c.Value.GetTwiceNat())}]
		}
		for a := first; all && !last.Less(a); a = a.Next() {
			delete(found, nat44_ed.Nat44AddressDetails{IPAddress: a.As4(), VrfID: poolVrf(c.Value), Flags: twiceNATFlag(c.Value.GetTwiceNat())})
		}
		if all {
			out = append(out, vppnat.Nat44AddressPoolItem[struct{}]{Key: c.Key, Value: c.Value, Origin: origin(true)})
		}
	}
	for _, d := range list {
		if found[*d] {
			twice, name := d.Flags&nat_types.NAT_IS_TWICE_NAT != 0, d.IPAddress.String()
			if twice {
				name = "twice-nat-" + name
			}
			got := &vppnat.Nat44AddressPool{Name: name, FirstIp: d.IPAddress.String(), VrfId: d.VrfID, TwiceNat: twice}
			if d.VrfID == anyVrf {
				got.VrfId, got.VrfScope = 0, vppnat.Nat44AddressPool_VRF_SCOPE_ANY
			}
			out = append(out, vppnat.Nat44AddressPoolItem[struct{}]{Key: vppnat.Nat44AddressPoolKey{Name: name}, Value: got, Origin: origin(false)})
		}
	}
	return out, err
}

// anyVrf is VPP's tenant VRF of a pool of any table.
const anyVrf = ^uint32(0)

// poolVrf is the tenant VRF of a pool.
func poolVrf(v *vppnat.Nat44AddressPool) uint32 {
	if v.GetVrfScope() == vppnat.Nat44AddressPool_VRF_SCOPE_ANY {
		return anyVrf
	}
	return v.GetVrfId()
}

// poolRange returns the first and last addresses of a pool (the first
// alone when last_ip is empty); the generated Validate checked both.
func poolRange(v *vppnat.Nat44AddressPool) (first, last netip.Addr) {
	first, last = ip4(v.GetFirstIp()), ip4(v.GetLastIp())
	if v.GetLastIp() == "" {
		last = first
	}
	return first, last
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

// twiceNATFlag is the flag of a twice-NAT pool or mapping.
func twiceNATFlag(twice bool) nat_types.NatConfigFlags {
	if twice {
		return nat_types.NAT_IS_TWICE_NAT
	}
	return 0
}
