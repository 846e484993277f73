package vpp

import (
	"cmp"
	"net/netip"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/dns"
	"go.fd.io/govpp/binapi/flowprobe"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ipfix_export"
)

// fakeServices is the fake VPP's part of the services VPP runs itself:
// the DNS resolver, the IPFIX exporter and flowprobe.
type fakeServices struct {
	dnsOn      bool
	dnsServers []netip.Addr // in the order added, as VPP asks them
	ipfix      ipfix_export.IpfixExporterDetails
	fpParams   flowprobe.FlowprobeGetParamsReply
	fpIf       map[uint32]*flowprobe.FlowprobeInterfaceDetails
}

// ipfixDefault is VPP's exporter before it is set: no collector.
var ipfixDefault = ipfix_export.IpfixExporterDetails{CollectorAddress: address(netip.IPv4Unspecified()), SrcAddress: address(netip.IPv4Unspecified()),
	CollectorPort: 4739, PathMtu: 512, TemplateInterval: 20}

func init() { registerFakeExt(func() fakeExt { return &fakeServices{} }) }

func (x *fakeServices) reset() {
	x.dnsOn, x.dnsServers, x.ipfix = false, nil, ipfixDefault
	x.fpParams, x.fpIf = flowprobe.FlowprobeGetParamsReply{ActiveTimer: 15, PassiveTimer: 120}, map[uint32]*flowprobe.FlowprobeInterfaceDetails{}
}

// forget removes flowprobe from interface i.
func (x *fakeServices) forget(i uint32) { delete(x.fpIf, i) }

// apply simulates the requests, refusing what VPP refuses: enabling the
// resolver without a server, removing a server it does not have (adding
// one it has is no error, and no change); an IPFIX exporter in a table
// that does not exist, with a collector but no source or one of another
// family, or a path MTU beyond 68 to 1450 (a port or template interval
// of 0 takes VPP's default); flowprobe settings changed while flowprobe
// is enabled on an interface, flowprobe enabled on an interface that has
// it, or disabled where it is not (as it is).
func (x *fakeServices) apply(f *fakeVPP, msg api.Message, retval *int32) ([]api.Message, bool) {
	switch m := msg.(type) {
	case *dns.DNSEnableDisable:
		if m.Enable != 0 && len(x.dnsServers) == 0 {
			*retval = int32(api.NO_NAME_SERVERS)
			return nil, true
		}
		x.dnsOn = m.Enable != 0
	case *dns.DNSNameServerAddDel:
		a := netip.AddrFrom16([16]byte(m.ServerAddress))
		if m.IsIP6 == 0 {
			a = netip.AddrFrom4([4]byte(m.ServerAddress[:4]))
		}
		at := slices.Index(x.dnsServers, a)
		switch {
		case m.IsAdd != 0 && at < 0:
			x.dnsServers = append(x.dnsServers, a)
		case m.IsAdd == 0 && at < 0:
			*retval = int32(api.NAME_SERVER_NOT_FOUND)
		case m.IsAdd == 0:
			x.dnsServers = slices.Delete(x.dnsServers, at, at+1)
		}
	case *ipfix_export.SetIpfixExporter:
		col, src := addrOf(m.CollectorAddress), addrOf(m.SrcAddress)
		switch {
		case !f.tables[ip.IPTable{TableID: m.VrfID, IsIP6: col.Is6()}]:
			*retval = int32(api.NO_SUCH_FIB)
		case !col.IsUnspecified() && (src.IsUnspecified() || col.Is4() != src.Is4()), m.PathMtu < 68 || m.PathMtu > 1450:
			*retval = int32(api.INVALID_VALUE)
		default:
			x.ipfix = ipfix_export.IpfixExporterDetails{CollectorAddress: m.CollectorAddress, CollectorPort: cmp.Or(m.CollectorPort, 4739), SrcAddress: m.SrcAddress,
				VrfID: m.VrfID, PathMtu: m.PathMtu, TemplateInterval: cmp.Or(m.TemplateInterval, 20), UDPChecksum: m.UDPChecksum}
		}
	case *flowprobe.FlowprobeSetParams:
		if len(x.fpIf) > 0 {
			*retval = int32(api.UNSUPPORTED)
			break
		}
		x.fpParams = flowprobe.FlowprobeGetParamsReply{RecordFlags: m.RecordFlags, ActiveTimer: m.ActiveTimer, PassiveTimer: m.PassiveTimer}
		if m.ActiveTimer == ^uint32(0) {
			x.fpParams.ActiveTimer = 15
		}
		if m.PassiveTimer == ^uint32(0) {
			x.fpParams.PassiveTimer = 120
		}
	case *flowprobe.FlowprobeGetParams:
		r := x.fpParams
		return []api.Message{&r}, true
	case *flowprobe.FlowprobeInterfaceAddDel:
		d, i := x.fpIf[uint32(m.SwIfIndex)], uint32(m.SwIfIndex)
		switch {
		case f.iface(m.SwIfIndex, retval) == nil:
		case m.IsAdd && d != nil:
			*retval = int32(api.VALUE_EXIST)
		case !m.IsAdd && (d == nil || d.Which != m.Which || d.Direction != m.Direction):
			*retval = int32(api.NO_SUCH_ENTRY)
		case m.IsAdd:
			x.fpIf[i] = &flowprobe.FlowprobeInterfaceDetails{SwIfIndex: m.SwIfIndex, Which: m.Which, Direction: m.Direction}
		default:
			delete(x.fpIf, i)
		}
	case *flowprobe.FlowprobeInterfaceDump:
		var out []api.Message
		for _, i := range sortedKeys(x.fpIf) {
			d := *x.fpIf[i]
			out = append(out, &d)
		}
		return out, true
	case *ipfix_export.IpfixExporterDump:
		d := x.ipfix
		return []api.Message{&d}, true
	default:
		return nil, false
	}
	return nil, true
}
