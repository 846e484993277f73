package vpp

import (
	"net/netip"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/dns"
)

// fakeServices is the fake VPP's part of the services VPP runs itself:
// the DNS resolver.
type fakeServices struct {
	dnsOn      bool
	dnsServers []netip.Addr // in the order added, as VPP asks them
}

func init() { registerFakeExt(func() fakeExt { return &fakeServices{} }) }

func (x *fakeServices) reset()        { x.dnsOn, x.dnsServers = false, nil }
func (x *fakeServices) forget(uint32) {}

// apply simulates the requests, refusing what VPP refuses: enabling the
// resolver without a server, removing a server it does not have (adding
// one it has is no error, and no change).
func (x *fakeServices) apply(_ *fakeVPP, msg api.Message, retval *int32) ([]api.Message, bool) {
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
	default:
		return nil, false
	}
	return nil, true
}
