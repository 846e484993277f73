package vpp

import (
	"context"
	"errors"
	"net/netip"

	"go.fd.io/govpp/binapi/dns"

	vppdns "github.com/kvdescriptor/kvdescriptor/generated/vpp/dns/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// dnsCaches is the handler of vpp.dns.v1.DNSCache, the global value. It
// has neither Update (another list of servers re-creates it) nor
// Retrieve (VPP lists no servers).
type dnsCaches struct{ p *Plugin }

// Create adds the servers, then enables the resolver (which VPP refuses
// without a server).
// vppctl dns name-server ADDR; then the binary API's dns_enable_disable
func (h *dnsCaches) Create(ctx context.Context, _ vppdns.DNSCacheKey, v *vppdns.DNSCache) (struct{}, error) {
	for _, s := range v.GetUpstreamDnsServers() {
		if err := h.server(ctx, s, true); err != nil {
			return struct{}{}, err
		}
	}
	return struct{}{}, h.enable(ctx, true)
}

// Delete disables the resolver (clearing its cache), then removes the
// servers (one already gone is no error).
// vppctl dns name-server ADDR del
func (h *dnsCaches) Delete(ctx context.Context, _ vppdns.DNSCacheKey, v *vppdns.DNSCache, _ struct{}) error {
	if err := h.enable(ctx, false); err != nil {
		return err
	}
	for _, s := range v.GetUpstreamDnsServers() {
		if err := h.server(ctx, s, false); err != nil && !errors.Is(err, kv.ErrNotFound) {
			return err
		}
	}
	return nil
}

func (h *dnsCaches) enable(ctx context.Context, on bool) error {
	_, err := dns.NewServiceClient(h.p.conn).DNSEnableDisable(ctx, &dns.DNSEnableDisable{Enable: u8(on)})
	return vppErr("dns_enable_disable", err)
}

// server adds or removes an upstream server (checked by the generated
// Validate).
func (h *dnsCaches) server(ctx context.Context, s string, add bool) error {
	a := netip.MustParseAddr(s) // IPv4: 4 bytes, which the binary API pads to 16
	_, err := dns.NewServiceClient(h.p.conn).DNSNameServerAddDel(ctx, &dns.DNSNameServerAddDel{IsIP6: u8(a.Is6()), IsAdd: u8(add), ServerAddress: a.AsSlice()})
	return vppErr("dns_name_server_add_del", err)
}

// u8 is a bool of the binary API's older messages.
func u8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
