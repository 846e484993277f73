package vpp

import (
	"context"

	"go.fd.io/govpp/api"
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

var (
	_ vppl3.ARPEntryRetriever[struct{}] = (*arpEntries)(nil)
	_ vppl3.ARPEntryBatcher[struct{}]   = (*arpEntries)(nil)
)

// Create adds the neighbour.
// vppctl set ip neighbor [static] NAME IP MAC
func (h *arpEntries) Create(ctx context.Context, k vppl3.ARPEntryKey, v *vppl3.ARPEntry) (struct{}, error) {
	return struct{}{}, apply(ctx, h.p, h.request, k, v, true)
}

// Delete removes the neighbour.
// vppctl set ip neighbor del NAME IP MAC
func (h *arpEntries) Delete(ctx context.Context, k vppl3.ARPEntryKey, v *vppl3.ARPEntry, _ struct{}) error {
	return apply(ctx, h.p, h.request, k, v, false)
}

// Batch adds or removes many neighbours, their requests sent in a stream.
func (h *arpEntries) Batch(ctx context.Context, kind kv.BatchKind, ops []vppl3.ARPEntryBatchOp[struct{}]) {
	batch(ctx, h.p, kind, ops, h.request)
}

// request builds the ip_neighbor_add_del that adds or removes the
// neighbour.
func (h *arpEntries) request(k vppl3.ARPEntryKey, v *vppl3.ARPEntry, add bool) (api.Message, error) {
	idx, err := h.p.swIfIndex(k.Interface)
	if err != nil {
		return nil, err
	}
	n := ip_neighbor.IPNeighbor{SwIfIndex: interface_types.InterfaceIndex(idx), IPAddress: address(k.IpAddress)}
	n.MacAddress, _ = ethernet_types.ParseMacAddress(v.GetPhysAddress()) // the generated Validate checked it
	if v.GetStatic() {
		n.Flags = ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC
	}
	return &ip_neighbor.IPNeighborAddDel{IsAdd: add, Neighbor: n}, nil
}

// Retrieve dumps the neighbours: correlated ones are ours, other static
// ones (added by hand) obtained; learnt ones are not configuration.
func (h *arpEntries) Retrieve(ctx context.Context, correlate []vppl3.ARPEntryItem[struct{}]) (out []vppl3.ARPEntryItem[struct{}], _ error) {
	ours := map[vppl3.ARPEntryKey]bool{}
	for _, it := range correlate {
		ours[it.Key] = true
	}
	names := h.p.interfaceNames()
	for _, af := range []ip_types.AddressFamily{ip_types.ADDRESS_IP4, ip_types.ADDRESS_IP6} {
		req := &ip_neighbor.IPNeighborDump{SwIfIndex: ^interface_types.InterfaceIndex(0), Af: af}
		list, err := dump[*ip_neighbor.IPNeighborDetails]("ip_neighbor_dump")(ip_neighbor.NewServiceClient(h.p.conn).IPNeighborDump(ctx, req))
		if err != nil {
			return nil, err
		}
		for _, d := range list {
			n, static := d.Neighbor, d.Neighbor.Flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC != 0
			k := vppl3.ARPEntryKey{Interface: names[uint32(n.SwIfIndex)], IpAddress: addrOf(n.IPAddress)}
			if k.Interface != "" && (static || ours[k]) {
				got := &vppl3.ARPEntry{Interface: k.Interface, IpAddress: k.IpAddress.String(), PhysAddress: n.MacAddress.String(), Static: static}
				out = append(out, vppl3.ARPEntryItem[struct{}]{Key: k, Value: got, Origin: origin(ours[k])})
			}
		}
	}
	return out, nil
}
