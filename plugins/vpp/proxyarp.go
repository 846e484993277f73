package vpp

import (
	"context"

	"go.fd.io/govpp/binapi/arp"
	"go.fd.io/govpp/binapi/interface_types"

	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// proxyARPs is the handler of vpp.l3.v1.ProxyARP, the global value:
// VPP holds only its interfaces and ranges, which are derived values.
type proxyARPs struct{ p *Plugin }

var _ vppl3.ProxyARPRetriever[struct{}] = (*proxyARPs)(nil)

// Create does nothing: the interfaces and ranges are derived values.
func (h *proxyARPs) Create(context.Context, vppl3.ProxyARPKey, *vppl3.ProxyARP) (struct{}, error) {
	return struct{}{}, nil
}

// Delete does nothing: the derived values go first.
func (h *proxyARPs) Delete(context.Context, vppl3.ProxyARPKey, *vppl3.ProxyARP, struct{}) error {
	return nil
}

// Retrieve reports the global value as it is wanted, when it is: VPP has
// no state of its own for it.
func (h *proxyARPs) Retrieve(_ context.Context, correlate []vppl3.ProxyARPItem[struct{}]) ([]vppl3.ProxyARPItem[struct{}], error) {
	for i := range correlate {
		correlate[i].Origin = kv.OriginNB
	}
	return correlate, nil
}

// proxyARPInterfaces is the handler of vpp.l3.v1.ProxyARP.interfaces.
type proxyARPInterfaces struct{ p *Plugin }

var _ vppl3.ProxyARPInterfacesRetriever[struct{}] = (*proxyARPInterfaces)(nil)

// Create enables proxy ARP on the interface.
// vppctl set interface proxy-arp NAME enable
func (h *proxyARPInterfaces) Create(ctx context.Context, k vppl3.ProxyARPInterfacesKey, _ *vppl3.ProxyARP_Interface) (struct{}, error) {
	return struct{}{}, h.set(ctx, k, true)
}

// Delete disables proxy ARP on the interface.
// vppctl set interface proxy-arp NAME disable
func (h *proxyARPInterfaces) Delete(ctx context.Context, k vppl3.ProxyARPInterfacesKey, _ *vppl3.ProxyARP_Interface, _ struct{}) error {
	return h.set(ctx, k, false)
}

func (h *proxyARPInterfaces) set(ctx context.Context, k vppl3.ProxyARPInterfacesKey, enable bool) error {
	idx, err := h.p.swIfIndex(k.InterfacesName)
	if err != nil {
		return err
	}
	_, err = arp.NewServiceClient(h.p.conn).ProxyArpIntfcEnableDisable(ctx, &arp.ProxyArpIntfcEnableDisable{SwIfIndex: interface_types.InterfaceIndex(idx), Enable: enable})
	return vppErr("proxy_arp_intfc_enable_disable", err)
}

// Retrieve reports the correlated interfaces that proxy ARP is enabled on.
func (h *proxyARPInterfaces) Retrieve(ctx context.Context, correlate []vppl3.ProxyARPInterfacesItem[struct{}]) ([]vppl3.ProxyARPInterfacesItem[struct{}], error) {
	list, err := dump[*arp.ProxyArpIntfcDetails]("proxy_arp_intfc_dump")(arp.NewServiceClient(h.p.conn).ProxyArpIntfcDump(ctx, &arp.ProxyArpIntfcDump{}))
	if err != nil {
		return nil, err
	}
	on := map[string]bool{}
	names := h.p.interfaceNames()
	for _, d := range list {
		on[names[d.SwIfIndex]] = true
	}
	var out []vppl3.ProxyARPInterfacesItem[struct{}]
	for _, c := range correlate {
		if on[c.Key.InterfacesName] {
			out = append(out, vppl3.ProxyARPInterfacesItem[struct{}]{Key: c.Key, Value: c.Value, Origin: kv.OriginNB})
		}
	}
	return out, nil
}

// proxyARPRanges is the handler of vpp.l3.v1.ProxyARP.ranges.
type proxyARPRanges struct{ p *Plugin }

var _ vppl3.ProxyARPRangesRetriever[struct{}] = (*proxyARPRanges)(nil)

// Create adds the range.
// vppctl set arp proxy table-id VRF start FIRST end LAST
func (h *proxyARPRanges) Create(ctx context.Context, k vppl3.ProxyARPRangesKey, _ *vppl3.ProxyARP_Range) (struct{}, error) {
	return struct{}{}, h.addDel(ctx, k, true)
}

// Delete removes the range.
// vppctl set arp proxy del table-id VRF start FIRST end LAST
func (h *proxyARPRanges) Delete(ctx context.Context, k vppl3.ProxyARPRangesKey, _ *vppl3.ProxyARP_Range, _ struct{}) error {
	return h.addDel(ctx, k, false)
}

// addDel adds or removes the range (the generated Validate checked that
// both ends are IPv4 addresses).
func (h *proxyARPRanges) addDel(ctx context.Context, k vppl3.ProxyARPRangesKey, add bool) error {
	_, err := arp.NewServiceClient(h.p.conn).ProxyArpAddDel(ctx, &arp.ProxyArpAddDel{IsAdd: add, Proxy: arp.ProxyArp{
		TableID: k.RangesVrfId, Low: k.RangesFirstIpAddr.As4(), Hi: k.RangesLastIpAddr.As4(),
	}})
	return vppErr("proxy_arp_add_del", err)
}

// Retrieve reports the correlated ranges that VPP has.
func (h *proxyARPRanges) Retrieve(ctx context.Context, correlate []vppl3.ProxyARPRangesItem[struct{}]) ([]vppl3.ProxyARPRangesItem[struct{}], error) {
	list, err := dump[*arp.ProxyArpDetails]("proxy_arp_dump")(arp.NewServiceClient(h.p.conn).ProxyArpDump(ctx, &arp.ProxyArpDump{}))
	if err != nil {
		return nil, err
	}
	has := map[arp.ProxyArp]bool{}
	for _, d := range list {
		has[d.Proxy] = true
	}
	var out []vppl3.ProxyARPRangesItem[struct{}]
	for _, c := range correlate {
		if k := c.Key; has[arp.ProxyArp{TableID: k.RangesVrfId, Low: k.RangesFirstIpAddr.As4(), Hi: k.RangesLastIpAddr.As4()}] {
			out = append(out, vppl3.ProxyARPRangesItem[struct{}]{Key: c.Key, Value: c.Value, Origin: kv.OriginNB})
		}
	}
	return out, nil
}
