package vpp

import (
	"context"
	"net/netip"

	"go.fd.io/govpp/binapi/ipfix_export"

	vppipfix "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipfix/v1"
)

// ipfixExporters is the handler of vpp.ipfix.v1.IPFIX, the global value.
type ipfixExporters struct{ p *Plugin }

var (
	_ vppipfix.IPFIXUpdater[struct{}]   = (*ipfixExporters)(nil)
	_ vppipfix.IPFIXRetriever[struct{}] = (*ipfixExporters)(nil)
)

// Create sets the exporter.
// vppctl set ipfix exporter collector ADDR port N src ADDR fib-id N path-mtu N template-interval N
func (h *ipfixExporters) Create(ctx context.Context, k vppipfix.IPFIXKey, v *vppipfix.IPFIX) (struct{}, error) {
	return h.Update(ctx, k, nil, v, struct{}{})
}

// Update sets the exporter anew, in place.
func (h *ipfixExporters) Update(ctx context.Context, _ vppipfix.IPFIXKey, _, v *vppipfix.IPFIX, _ struct{}) (struct{}, error) {
	return struct{}{}, h.set(ctx, v)
}

// Delete sets no collector (and no source), which stops the export.
// vppctl set ipfix exporter collector 0.0.0.0
func (h *ipfixExporters) Delete(ctx context.Context, _ vppipfix.IPFIXKey, _ *vppipfix.IPFIX, _ struct{}) error {
	return h.set(ctx, &vppipfix.IPFIX{Collector: &vppipfix.IPFIX_Collector{Address: "0.0.0.0"}, SourceAddress: "0.0.0.0"})
}

// set sends the exporter with VPP's defaults for zero fields (the
// generated Validate checked the addresses).
func (h *ipfixExporters) set(ctx context.Context, v *vppipfix.IPFIX) error {
	_, err := ipfix_export.NewServiceClient(h.p.conn).SetIpfixExporter(ctx, &ipfix_export.SetIpfixExporter{
		CollectorAddress: address(netip.MustParseAddr(v.GetCollector().GetAddress())), CollectorPort: uint16(v.GetCollector().EffectivePort()),
		SrcAddress: address(netip.MustParseAddr(v.GetSourceAddress())), VrfID: v.GetVrfId(),
		PathMtu: v.EffectivePathMtu(), TemplateInterval: v.EffectiveTemplateInterval(),
	})
	return vppErr("set_ipfix_exporter", err)
}

// Retrieve reads the exporter back, when it has a collector: ours if
// correlated, else obtained.
func (h *ipfixExporters) Retrieve(ctx context.Context, correlate []vppipfix.IPFIXItem[struct{}]) ([]vppipfix.IPFIXItem[struct{}], error) {
	list, err := dump[*ipfix_export.IpfixExporterDetails]("ipfix_exporter_dump")(ipfix_export.NewServiceClient(h.p.conn).IpfixExporterDump(ctx, &ipfix_export.IpfixExporterDump{}))
	if err != nil || len(list) == 0 || addrOf(list[0].CollectorAddress).IsUnspecified() {
		return nil, err
	}
	d := list[0]
	v := &vppipfix.IPFIX{Collector: &vppipfix.IPFIX_Collector{Address: addrOf(d.CollectorAddress).String(), Port: uint32(d.CollectorPort)},
		SourceAddress: addrOf(d.SrcAddress).String(), VrfId: d.VrfID, PathMtu: d.PathMtu, TemplateInterval: d.TemplateInterval}
	return []vppipfix.IPFIXItem[struct{}]{{Key: vppipfix.IPFIXKey{}, Value: v, Origin: origin(len(correlate) > 0)}}, nil
}
