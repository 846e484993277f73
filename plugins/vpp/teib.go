package vpp

import (
	"context"
	"net/netip"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/teib"

	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
)

// teibEntries is the handler of vpp.l3.v1.TeibEntry. It has no Update: a
// change re-creates it.
type teibEntries struct{ p *Plugin }

var _ vppl3.TeibEntryRetriever[struct{}] = (*teibEntries)(nil)

// Create adds the entry.
// vppctl teib NAME peer PEER nh NH [nh-table-id VRF]
func (h *teibEntries) Create(ctx context.Context, k vppl3.TeibEntryKey, v *vppl3.TeibEntry) (struct{}, error) {
	return struct{}{}, h.addDel(ctx, k, v, 1)
}

// Delete removes the entry.
// vppctl teib del NAME peer PEER
func (h *teibEntries) Delete(ctx context.Context, k vppl3.TeibEntryKey, v *vppl3.TeibEntry, _ struct{}) error {
	return h.addDel(ctx, k, v, 0)
}

func (h *teibEntries) addDel(ctx context.Context, k vppl3.TeibEntryKey, v *vppl3.TeibEntry, add uint8) error {
	idx, err := h.p.swIfIndex(k.Interface)
	if err != nil {
		return err
	}
	nh, _ := netip.ParseAddr(v.GetNextHopAddr()) // the generated Validate checked it
	_, err = teib.NewServiceClient(h.p.conn).TeibEntryAddDel(ctx, &teib.TeibEntryAddDel{IsAdd: add, Entry: teib.TeibEntry{
		SwIfIndex: interface_types.InterfaceIndex(idx), Peer: address(k.PeerAddr), Nh: address(nh), NhTableID: v.GetVrfId(),
	}})
	return vppErr("teib_entry_add_del", err)
}

// Retrieve dumps the entries on interfaces it can name: correlated ones
// are ours, the others obtained.
func (h *teibEntries) Retrieve(ctx context.Context, correlate []vppl3.TeibEntryItem[struct{}]) ([]vppl3.TeibEntryItem[struct{}], error) {
	list, err := dump[*teib.TeibDetails]("teib_dump")(teib.NewServiceClient(h.p.conn).TeibDump(ctx, &teib.TeibDump{}))
	if err != nil {
		return nil, err
	}
	ours := map[vppl3.TeibEntryKey]bool{}
	for _, it := range correlate {
		ours[it.Key] = true
	}
	names := h.p.interfaceNames()
	var out []vppl3.TeibEntryItem[struct{}]
	for _, d := range list {
		k := vppl3.TeibEntryKey{Interface: names[uint32(d.Entry.SwIfIndex)], PeerAddr: addrOf(d.Entry.Peer)}
		if k.Interface != "" {
			got := &vppl3.TeibEntry{Interface: k.Interface, PeerAddr: k.PeerAddr.String(), NextHopAddr: addrOf(d.Entry.Nh).String(), VrfId: d.Entry.NhTableID}
			out = append(out, vppl3.TeibEntryItem[struct{}]{Key: k, Value: got, Origin: origin(ours[k])})
		}
	}
	return out, nil
}
