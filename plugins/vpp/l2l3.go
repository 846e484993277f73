package vpp

import (
	vppdns "github.com/kvdescriptor/kvdescriptor/generated/vpp/dns/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppipfix "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipfix/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	vpppunt "github.com/kvdescriptor/kvdescriptor/generated/vpp/punt/v1"
	vppstn "github.com/kvdescriptor/kvdescriptor/generated/vpp/stn/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// buildL2L3 builds the descriptors of the L2 and L3 models beyond bridge
// domains and routes: cross-connects, proxy ARP, VRRP, TEIB, the
// neighbour tables' settings, STN rules, SPAN (port mirroring),
// punt to host sockets, the DNS cache, the IPFIX
// exporter and flowprobe.
func (p *Plugin) buildL2L3() ([]kv.Descriptor, error) {
	var out []kv.Descriptor
	add := func(d kv.Descriptor, err error) error {
		out = append(out, d)
		return err
	}
	for _, err := range []error{
		add(vppl2.NewXConnectPairDescriptor[struct{}](&xconnects{p: p})),
		add(vppl3.NewProxyARPDescriptor[struct{}](&proxyARPs{p: p})),
		add(vppl3.NewProxyARPInterfacesDescriptor[struct{}](&proxyARPInterfaces{p: p})),
		add(vppl3.NewProxyARPRangesDescriptor[struct{}](&proxyARPRanges{p: p})),
		add(vppl3.NewL3XConnectDescriptor[struct{}](&l3xcs{p: p})),
		add(vppl3.NewVRRPEntryDescriptor[struct{}](&vrrps{p: p})),
		add(vppl3.NewTeibEntryDescriptor[struct{}](&teibEntries{p: p})),
		add(vppl3.NewIPScanNeighborDescriptor[struct{}](&ipScanNeighbors{p: p})),
		add(vppstn.NewRuleDescriptor[struct{}](&stnRules{p: p})),
		add(vppinterfaces.NewSpanDescriptor[struct{}](&spans{p: p})),
		add(vpppunt.NewToHostDescriptor[struct{}](&puntToHosts{p: p})),
		add(vpppunt.NewExceptionDescriptor[struct{}](&puntExceptions{p: p})),
		add(vppdns.NewDNSCacheDescriptor[struct{}](&dnsCaches{p: p})),
		add(vppipfix.NewIPFIXDescriptor[struct{}](&ipfixExporters{p: p})),
		add(vppipfix.NewFlowProbeParamsDescriptor[struct{}](&flowProbeParams{p: p})),
		add(vppipfix.NewFlowProbeFeatureDescriptor[struct{}](&flowProbeFeatures{p: p})),
	} {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
