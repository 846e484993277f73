package vpp

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/api"

	vppdns "github.com/kvdescriptor/kvdescriptor/generated/vpp/dns/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// dnsState returns whether the fake's resolver is on, and its servers.
func (e *env) dnsState() (bool, []netip.Addr) {
	var on bool
	var servers []netip.Addr
	e.f.Do(func(f *fakeVPP) {
		x := fakeExtOf[*fakeServices](f)
		on, servers = x.dnsOn, append([]netip.Addr(nil), x.dnsServers...)
	})
	return on, servers
}

// TestDNSCache: the servers are added before the resolver is enabled
// (VPP refuses it without one); another list re-creates the value; a
// resync changes nothing; what the schema refuses never reaches VPP; and
// the delete disables the resolver and removes the servers, one already
// gone included.
func TestDNSCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const key = "vpp/dns-cache"
	put := func(v *vppdns.DNSCache) {
		t.Helper()
		if _, err := e.s.Txn().Set(key, v).Commit(e.ctx); err != nil {
			t.Logf("commit: %v", err)
		}
	}
	addrs := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, a := range s {
			out = append(out, netip.MustParseAddr(a))
		}
		return out
	}
	check := func(what string, wantOn bool, wantServers []netip.Addr, wantWrites ...string) {
		t.Helper()
		if diff := cmp.Diff(wantWrites, writes(e.f)); diff != "" {
			t.Errorf("%s: requests (-want +got):\n%s", what, diff)
		}
		on, servers := e.dnsState()
		if on != wantOn || !cmp.Equal(servers, wantServers, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })) {
			t.Errorf("%s: VPP's resolver on %v with %v, want %v with %v", what, on, servers, wantOn, wantServers)
		}
	}
	put(&vppdns.DNSCache{UpstreamDnsServers: []string{"8.8.8.8", "2001:4860:4860::8888"}})
	e.expect(scheduler.CONFIGURED, key)
	check("create", true, addrs("8.8.8.8", "2001:4860:4860::8888"), "dns_name_server_add_del", "dns_name_server_add_del", "dns_enable_disable")
	e.noWrites("the DNS cache in order")

	put(&vppdns.DNSCache{UpstreamDnsServers: []string{"1.1.1.1"}})
	e.expect(scheduler.CONFIGURED, key)
	check("another server", true, addrs("1.1.1.1"), "dns_enable_disable", "dns_name_server_add_del", "dns_name_server_add_del", "dns_name_server_add_del", "dns_enable_disable")

	for _, v := range []*vppdns.DNSCache{{}, {UpstreamDnsServers: []string{"nope"}}, {UpstreamDnsServers: []string{"1.1.1.1", "1.1.1.1"}}} {
		put(v)
		e.expect(scheduler.INVALID, key)
	}
	check("invalid values", true, addrs("1.1.1.1"))
	put(&vppdns.DNSCache{UpstreamDnsServers: []string{"1.1.1.1"}})
	e.expect(scheduler.CONFIGURED, key)
	_ = writes(e.f)

	e.f.Do(func(f *fakeVPP) { fakeExtOf[*fakeServices](f).dnsServers = nil }) // vppctl dns name-server 1.1.1.1 del
	e.del(key)
	e.expect(scheduler.NONEXISTENT, key)
	check("delete", false, nil, "dns_enable_disable", "dns_name_server_add_del")

	// What VPP refuses: enabling without a server; removing one it lacks.
	h := &dnsCaches{p: e.p}
	if err := h.enable(e.ctx, true); !errors.Is(err, api.NO_NAME_SERVERS) {
		t.Errorf("enabling without a server: %v, want VPP's no name servers", err)
	}
	if err := h.server(e.ctx, "9.9.9.9", false); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("removing a missing server: %v, want not found", err)
	}
}
