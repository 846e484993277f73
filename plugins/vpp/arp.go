package vpp

import (
	"context"

	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"

	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// arpEntries is the handler of vpp.l3.v1.ARPEntry (an IP neighbour). It
// has no Update: a change re-creates it.
type arpEntries struct{ p *Plugin }

var _ vppl3.ARPEntryRetriever[struct{}] = (*arpEntries)(nil)

// Create adds the neighbour.
// vppctl set ip neighbor [static] NAME IP MAC
func (h *arpEntries) Create(ctx context.Context, k vppl3.ARPEntryKey, v *vppl3.ARPEntry) (struct{}, error) {
	return struct{}{}, h.addDel(ctx, k, v, true)
}

// Delete removes the neighbour.
func (h *arpEntries) Delete(ctx context.Context, k vppl3.ARPEntryKey, v *vppl3.ARPEntry, _ struct{}) error {
	return h.addDel(ctx, k, v, false)
}

func (h *arpEntries) addDel(ctx context.Context, k vppl3.ARPEntryKey, v *vppl3.ARPEntry, add bool) error {
	idx, err := h.p.swIfIndex(k.Interface)
	if err != nil {
		return err
	}
	flags := ip_neighbor.IP_API_NEIGHBOR_FLAG_NONE
	if v.GetStatic() {
		flags = ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC
	}
	mac, _ := ethernet_types.ParseMacAddress(v.GetPhysAddress())
	_, err = ip_neighbor.NewServiceClient(h.p.conn).IPNeighborAddDel(ctx, &ip_neighbor.IPNeighborAddDel{IsAdd: add, Neighbor: ip_neighbor.IPNeighbor{
		SwIfIndex: interface_types.InterfaceIndex(idx), Flags: flags, MacAddress: mac, IPAddress: address(k.IpAddress),
	}})
	return vppErr("ip_neighbor_add_del", err)
}

// Retrieve dumps the neighbours: correlated ones are ours, other static
// ones (added by hand) obtained; learnt ones are not configuration.
func (h *arpEntries) Retrieve(ctx context.Context, correlate []vppl3.ARPEntryItem[struct{}]) ([]vppl3.ARPEntryItem[struct{}], error) {
	want := map[vppl3.ARPEntryKey]bool{}
	for _, c := range correlate {
		want[c.Key] = true
	}
	names := h.p.interfaceNames()
	var out []vppl3.ARPEntryItem[struct{}]
	for _, af := range []ip_types.AddressFamily{ip_types.ADDRESS_IP4, ip_types.ADDRESS_IP6} {
		list, err := dump[*ip_neighbor.IPNeighborDetails]("ip_neighbor_dump")(ip_neighbor.NewServiceClient(h.p.conn).IPNeighborDump(ctx, &ip_neighbor.IPNeighborDump{
			SwIfIndex: ^interface_types.InterfaceIndex(0), Af: af,
		}))
		if err != nil {
			return nil, err
		}
		for _, d := range list {
			n := d.Neighbor
			name, ok := names[uint32(n.SwIfIndex)]
			static := n.Flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC != 0
			k := vppl3.ARPEntryKey{Interface: name, IpAddress: addrOf(n.IPAddress)}
			if !ok || (!want[k] && !static) {
				continue
			}
			it := vppl3.ARPEntryItem[struct{}]{Key: k, Origin: kv.OriginSB, Value: &vppl3.ARPEntry{
				Interface: name, IpAddress: k.IpAddress.String(), PhysAddress: n.MacAddress.String(), Static: static,
			}}
			if want[k] {
				it.Origin = kv.OriginNB
			}
			out = append(out, it)
		}
	}
	return out, nil
}
