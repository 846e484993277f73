package vpp

import (
	"context"

	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"

	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// fibEntries is the handler of vpp.l2.v1.FIBEntry.
type fibEntries struct{ p *Plugin }

var _ vppl2.FIBEntryRetriever[struct{}] = (*fibEntries)(nil)

// Create adds the entry.
// vppctl l2fib add MAC BD NAME [static]
func (h *fibEntries) Create(ctx context.Context, k vppl2.FIBEntryKey, v *vppl2.FIBEntry) (struct{}, error) {
	return struct{}{}, h.addDel(ctx, k, v, true)
}

// Delete removes the entry.
func (h *fibEntries) Delete(ctx context.Context, k vppl2.FIBEntryKey, v *vppl2.FIBEntry, _ struct{}) error {
	return h.addDel(ctx, k, v, false)
}

func (h *fibEntries) addDel(ctx context.Context, k vppl2.FIBEntryKey, v *vppl2.FIBEntry, add bool) error {
	bd, err := h.p.bdID(k.BridgeDomain)
	if err != nil {
		return err
	}
	idx, err := h.p.swIfIndex(v.GetOutgoingInterface())
	if err != nil {
		return err
	}
	mac, _ := ethernet_types.ParseMacAddress(v.GetPhysAddress())
	_, err = l2.NewServiceClient(h.p.conn).L2fibAddDel(ctx, &l2.L2fibAddDel{
		Mac: mac, BdID: bd, SwIfIndex: interface_types.InterfaceIndex(idx), IsAdd: add, StaticMac: v.GetStaticConfig(),
	})
	return vppErr("l2fib_add_del", err)
}

// Retrieve reports the correlated entries that their bridge domain's
// table has (learnt entries are not configuration: not reported).
func (h *fibEntries) Retrieve(ctx context.Context, correlate []vppl2.FIBEntryItem[struct{}]) ([]vppl2.FIBEntryItem[struct{}], error) {
	tables := map[string]map[string]*l2.L2FibTableDetails{} // by bridge domain, by MAC
	names := h.p.interfaceNames()
	var out []vppl2.FIBEntryItem[struct{}]
	for _, c := range correlate {
		t, seen := tables[c.Key.BridgeDomain]
		if bd, err := h.p.bdID(c.Key.BridgeDomain); err == nil && !seen {
			list, err := dump[*l2.L2FibTableDetails]("l2_fib_table_dump")(l2.NewServiceClient(h.p.conn).L2FibTableDump(ctx, &l2.L2FibTableDump{BdID: bd}))
			if err != nil {
				return nil, err
			}
			t = map[string]*l2.L2FibTableDetails{}
			for _, d := range list {
				t[d.Mac.String()] = d
			}
			tables[c.Key.BridgeDomain] = t
		}
		if d := t[c.Key.PhysAddress.String()]; d != nil {
			got := &vppl2.FIBEntry{BridgeDomain: c.Key.BridgeDomain, PhysAddress: c.Value.GetPhysAddress(), OutgoingInterface: names[uint32(d.SwIfIndex)], StaticConfig: d.StaticMac}
			out = append(out, vppl2.FIBEntryItem[struct{}]{Key: c.Key, Value: got, Origin: kv.OriginNB})
		}
	}
	return out, nil
}
