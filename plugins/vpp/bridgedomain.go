package vpp

import (
	"context"
	"strconv"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"

	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// bridgeDomains is the handler of vpp.l2.v1.BridgeDomain.
type bridgeDomains struct{ p *Plugin }

var (
	_ vppl2.BridgeDomainUpdater[BridgeDomainMeta]   = (*bridgeDomains)(nil)
	_ vppl2.BridgeDomainRetriever[BridgeDomainMeta] = (*bridgeDomains)(nil)
	_ vppl2.BridgeDomainValidator                   = (*bridgeDomains)(nil)
)

// Validate checks that VPP can hold the name: it is the bd_tag.
func (h *bridgeDomains) Validate(k vppl2.BridgeDomainKey, _ *vppl2.BridgeDomain) error {
	return checkTag(k.Name)
}

// Create adds the bridge domain, tagged with its name; VPP allocates its
// bd_id.
// vppctl create bridge-domain ID flood F learn L arp-term A mac-age M
func (h *bridgeDomains) Create(ctx context.Context, k vppl2.BridgeDomainKey, v *vppl2.BridgeDomain) (BridgeDomainMeta, error) {
	r, err := l2.NewServiceClient(h.p.conn).BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{
		BdID: ^uint32(0), Flood: v.GetFlood(), UuFlood: v.GetFlood(), Forward: true, Learn: v.GetLearn(),
		ArpTerm: v.GetArpTermination(), MacAge: uint8(v.GetMacAge()), BdTag: k.Name, IsAdd: true,
	})
	if err != nil {
		return BridgeDomainMeta{}, vppErr("bridge_domain_add_del_v2", err)
	}
	return BridgeDomainMeta{ID: r.BdID}, nil
}

// Update sets the flags that were turned on, clears those turned off, and
// sets the MAC age, in place: the members stay.
// vppctl set bridge-domain (learn|flood|uu-flood|arp term) BD [disable]
func (h *bridgeDomains) Update(ctx context.Context, _ vppl2.BridgeDomainKey, old, v *vppl2.BridgeDomain, m BridgeDomainMeta) (BridgeDomainMeta, error) {
	c := l2.NewServiceClient(h.p.conn)
	flags := func(b *vppl2.BridgeDomain) (f l2.BdFlags) {
		for flag, on := range map[l2.BdFlags]bool{l2.BRIDGE_API_FLAG_LEARN: b.GetLearn(), l2.BRIDGE_API_FLAG_FLOOD | l2.BRIDGE_API_FLAG_UU_FLOOD: b.GetFlood(), l2.BRIDGE_API_FLAG_ARP_TERM: b.GetArpTermination()} {
			if on {
				f |= flag
			}
		}
		return f
	}
	was, now := flags(old), flags(v)
	for _, set := range []bool{true, false} {
		changed := now &^ was
		if !set {
			changed = was &^ now
		}
		if changed == 0 {
			continue
		}
		if _, err := c.BridgeFlags(ctx, &l2.BridgeFlags{BdID: m.ID, IsSet: set, Flags: changed}); err != nil {
			return m, vppErr("bridge_flags", err)
		}
	}
	if v.GetMacAge() != old.GetMacAge() {
		if _, err := c.BridgeDomainSetMacAge(ctx, &l2.BridgeDomainSetMacAge{BdID: m.ID, MacAge: uint8(v.GetMacAge())}); err != nil {
			return m, vppErr("bridge_domain_set_mac_age", err)
		}
	}
	return m, nil
}

// Delete removes the bridge domain.
func (h *bridgeDomains) Delete(ctx context.Context, _ vppl2.BridgeDomainKey, _ *vppl2.BridgeDomain, m BridgeDomainMeta) error {
	_, err := l2.NewServiceClient(h.p.conn).BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: m.ID, IsAdd: false})
	return vppErr("bridge_domain_add_del_v2", err)
}

// Retrieve dumps the bridge domains: tagged ones are ours, by their tag;
// the others are obtained, named bd-ID, with their members.
func (h *bridgeDomains) Retrieve(ctx context.Context, correlate []vppl2.BridgeDomainItem[BridgeDomainMeta]) ([]vppl2.BridgeDomainItem[BridgeDomainMeta], error) {
	list, err := h.p.dumpBDs(ctx)
	if err != nil {
		return nil, err
	}
	want := map[string]*vppl2.BridgeDomain{}
	for _, it := range correlate {
		want[it.Key.Name] = it.Value
	}
	names := h.p.interfaceNames()
	found := map[string]uint32{}
	var out []vppl2.BridgeDomainItem[BridgeDomainMeta]
	for _, d := range list {
		name, origin := d.BdTag, kv.OriginNB
		if name == "" {
			name, origin = "bd-"+strconv.FormatUint(uint64(d.BdID), 10), kv.OriginSB
		}
		got := &vppl2.BridgeDomain{Name: name, Flood: d.Flood, Learn: d.Learn, MacAge: uint32(d.MacAge), ArpTermination: d.ArpTerm}
		if w := want[name]; w != nil {
			got.Interfaces = w.GetInterfaces()
		} else {
			for _, m := range d.SwIfDetails {
				if n, ok := names[uint32(m.SwIfIndex)]; ok {
					got.Interfaces = append(got.Interfaces, &vppl2.BridgeDomain_Interface{Name: n, Bvi: m.SwIfIndex == d.BviSwIfIndex, SplitHorizonGroup: uint32(m.Shg)})
				}
			}
		}
		found[name] = d.BdID
		out = append(out, vppl2.BridgeDomainItem[BridgeDomainMeta]{Key: vppl2.BridgeDomainKey{Name: name}, Value: got, Metadata: BridgeDomainMeta{ID: d.BdID}, Origin: origin})
	}
	h.p.setRetrieved(true, found)
	return out, nil
}

// dumpBDs dumps the bridge domains but VPP's internal bd 0.
func (p *Plugin) dumpBDs(ctx context.Context) ([]*l2.BridgeDomainDetails, error) {
	list, err := dump[*l2.BridgeDomainDetails]("bridge_domain_dump")(l2.NewServiceClient(p.conn).BridgeDomainDump(ctx, &l2.BridgeDomainDump{BdID: ^uint32(0), SwIfIndex: ^interface_types.InterfaceIndex(0)}))
	out := list[:0]
	for _, d := range list {
		if d.BdID != 0 {
			out = append(out, d)
		}
	}
	return out, err
}
