package vpp

import (
	"context"

	"go.fd.io/govpp/binapi/ip"

	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// vrfTables is the handler of vpp.l3.v1.VrfTable: an IPv4 and an IPv6
// table with the same id.
type vrfTables struct{ p *Plugin }

var _ vppl3.VrfTableRetriever[struct{}] = (*vrfTables)(nil)

// Create adds both tables.
// vppctl ip table add ID; vppctl ip6 table add ID
func (h *vrfTables) Create(ctx context.Context, k vppl3.VrfTableKey, v *vppl3.VrfTable) (struct{}, error) {
	return struct{}{}, h.addDel(ctx, k, v, true)
}

// Delete removes both tables.
func (h *vrfTables) Delete(ctx context.Context, k vppl3.VrfTableKey, v *vppl3.VrfTable, _ struct{}) error {
	return h.addDel(ctx, k, v, false)
}

func (h *vrfTables) addDel(ctx context.Context, k vppl3.VrfTableKey, v *vppl3.VrfTable, add bool) error {
	for _, v6 := range []bool{false, true} {
		_, err := ip.NewServiceClient(h.p.conn).IPTableAddDel(ctx, &ip.IPTableAddDel{IsAdd: add, Table: ip.IPTable{TableID: k.Id, IsIP6: v6, Name: v.GetLabel()}})
		if err != nil {
			return vppErr("ip_table_add_del", err)
		}
	}
	return nil
}

// Retrieve dumps the tables: the correlated ids are ours, other non-zero
// ones obtained.
func (h *vrfTables) Retrieve(ctx context.Context, correlate []vppl3.VrfTableItem[struct{}]) ([]vppl3.VrfTableItem[struct{}], error) {
	list, err := dump[*ip.IPTableDetails]("ip_table_dump")(ip.NewServiceClient(h.p.conn).IPTableDump(ctx, &ip.IPTableDump{}))
	if err != nil {
		return nil, err
	}
	want := map[uint32]*vppl3.VrfTable{}
	for _, c := range correlate {
		want[c.Key.Id] = c.Value
	}
	seen := map[uint32]bool{}
	var out []vppl3.VrfTableItem[struct{}]
	for _, d := range list {
		id := d.Table.TableID
		if id == 0 || seen[id] {
			continue
		}
		seen[id] = true
		it := vppl3.VrfTableItem[struct{}]{Key: vppl3.VrfTableKey{Id: id}, Value: &vppl3.VrfTable{Id: id, Label: d.Table.Name}, Origin: kv.OriginSB}
		if w := want[id]; w != nil {
			it.Value.Label, it.Origin = w.GetLabel(), kv.OriginNB
		}
		out = append(out, it)
	}
	return out, nil
}
