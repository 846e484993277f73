package vpp

import (
	"context"
	"net/netip"

	vppif "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"google.golang.org/protobuf/types/known/wrapperspb"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// addresses is the handler of vpp.interfaces.v1.Interface.address, the
// values derived from an interface's IP addresses.
type addresses struct{ p *Plugin }

var (
	_ vppinterfaces.InterfaceIpAddressesHandler[struct{}]   = (*addresses)(nil)
	_ vppinterfaces.InterfaceIpAddressesRetriever[struct{}] = (*addresses)(nil)
)

// Create adds the address to its interface.
// vppctl set interface ip address NAME ADDR/LEN
func (h *addresses) Create(ctx context.Context, k vppinterfaces.InterfaceIpAddressesKey, _ *wrapperspb.StringValue) (struct{}, error) {
	return struct{}{}, h.addDel(ctx, k, true)
}

// Delete removes the address; one already gone counts as removed.
func (h *addresses) Delete(ctx context.Context, k vppinterfaces.InterfaceIpAddressesKey, _ *wrapperspb.StringValue, _ struct{}) error {
	return h.addDel(ctx, k, false)
}

func (h *addresses) addDel(ctx context.Context, k vppinterfaces.InterfaceIpAddressesKey, add bool) error {
	idx, err := h.p.swIfIndex(k.Name)
	if err != nil {
		return err
	}
	_, err = vppif.NewServiceClient(h.p.conn).SwInterfaceAddDelAddress(ctx, &vppif.SwInterfaceAddDelAddress{
		SwIfIndex: interface_types.InterfaceIndex(idx), IsAdd: add, Prefix: ip_types.AddressWithPrefix(prefix(k.IpAddresses)),
	})
	return vppErr("sw_interface_add_del_address", err)
}

// Retrieve reports the correlated addresses that their interface has.
func (h *addresses) Retrieve(ctx context.Context, correlate []vppinterfaces.InterfaceIpAddressesItem[struct{}]) ([]vppinterfaces.InterfaceIpAddressesItem[struct{}], error) {
	have := map[string]map[netip.Prefix]bool{} // by interface label
	var out []vppinterfaces.InterfaceIpAddressesItem[struct{}]
	for _, c := range correlate {
		addrs, seen := have[c.Key.Name]
		if idx, err := h.p.swIfIndex(c.Key.Name); err == nil && !seen {
			addrs = map[netip.Prefix]bool{}
			for _, v6 := range []bool{false, true} {
				list, err := dump[*ip.IPAddressDetails]("ip_address_dump")(ip.NewServiceClient(h.p.conn).IPAddressDump(ctx, &ip.IPAddressDump{
					SwIfIndex: interface_types.InterfaceIndex(idx), IsIPv6: v6,
				}))
				if err != nil {
					return nil, err
				}
				for _, d := range list {
					addrs[prefixOf(ip_types.Prefix(d.Prefix))] = true
				}
			}
			have[c.Key.Name] = addrs
		}
		if addrs[c.Key.IpAddresses] {
			out = append(out, vppinterfaces.InterfaceIpAddressesItem[struct{}]{Key: c.Key, Value: c.Value, Origin: kv.OriginNB})
		}
	}
	return out, nil
}
