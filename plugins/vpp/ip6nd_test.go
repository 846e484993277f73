package vpp

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip6_nd"
	"google.golang.org/protobuf/proto"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// raOf is the fake's RA state of interface 1, nil without IPv6.
func raOf(f *fakeVPP) *ip6_nd.SwInterfaceIP6ndRaDetails {
	var out *ip6_nd.SwInterfaceIP6ndRaDetails
	f.Do(func(f *fakeVPP) {
		x := fakeExtOf[*fakeIfattr](f)
		if x.ipv6On(f, 1) {
			d := *x.ra[1]
			out = &d
		}
	})
	return out
}

// TestIp6Nd: the RA settings enable IPv6 and are applied after the
// interface, a prefix waits for them (PENDING), both are read back by a
// resync with no calls and changed in place (flags cleared and set, a
// prefix overwritten), and unsetting them removes the prefix first, puts
// VPP's defaults back and releases IPv6.
func TestIp6Nd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const ndKey, pKey = "vpp/interface/l1/ip6nd", "vpp/interface/l1/ip6nd-prefix/2001:db8:1::/64"
	l1 := loop("l1")
	l1.Ip6NdPrefixes = []*vppinterfaces.Interface_Ip6NdPrefix{{Prefix: "2001:db8:1::/64", OffLink: true}}
	e.set(nil, l1)
	e.expect(scheduler.CONFIGURED, "vpp/interface/l1")
	e.expect(scheduler.PENDING, pKey)
	e.f.Requests()

	l1 = proto.Clone(l1).(*vppinterfaces.Interface)
	l1.Ip6Nd = &vppinterfaces.Interface_Ip6Nd{Managed: true, MaxInterval: 60}
	e.set(nil, l1)
	e.expect(scheduler.CONFIGURED, ndKey, pKey)
	want := []api.Message{
		&ip.SwInterfaceIP6EnableDisable{SwIfIndex: 1, Enable: true},
		&ip6_nd.SwInterfaceIP6ndRaConfig{SwIfIndex: 1, Managed: 1, MaxInterval: 60},
		&ip6_nd.SwInterfaceIP6ndRaPrefix{SwIfIndex: 1, Prefix: prefix(netip.MustParsePrefix("2001:db8:1::/64")), OffLink: true, ValLifetime: 2592000, PrefLifetime: 604800},
	}
	if diff := cmp.Diff(want, e.f.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	ra := raOf(e.f)
	if ra == nil || !ra.AdvManagedFlag || ra.MaxRadvInterval != 60 || ra.MinRadvInterval != 45 || len(ra.Prefixes) != 1 || ra.Prefixes[0].OnlinkFlag {
		t.Errorf("RA state %+v", ra)
	}
	e.resync()
	onlyReads(t, e.f, "a resync of unchanged RA settings")
	e.expect(scheduler.CONFIGURED, ndKey, pKey)

	// In place: managed cleared, other and suppress set, the interval
	// back to the default; the prefix's lifetimes overwritten.
	l1 = proto.Clone(l1).(*vppinterfaces.Interface)
	l1.Ip6Nd = &vppinterfaces.Interface_Ip6Nd{Other: true, Suppress: true}
	l1.Ip6NdPrefixes[0].ValidLifetime, l1.Ip6NdPrefixes[0].PreferredLifetime = 3600, 1800
	e.set(nil, l1)
	got := e.f.Requests()
	want = []api.Message{
		&ip6_nd.SwInterfaceIP6ndRaConfig{SwIfIndex: 1, IsNo: true, Managed: 1},
		&ip6_nd.SwInterfaceIP6ndRaConfig{SwIfIndex: 1, Suppress: 1, Other: 1, MaxInterval: 200},
		&ip6_nd.SwInterfaceIP6ndRaPrefix{SwIfIndex: 1, Prefix: prefix(netip.MustParsePrefix("2001:db8:1::/64")), OffLink: true, ValLifetime: 3600, PrefLifetime: 1800},
	}
	if len(got) == 3 && got[0].GetMessageName() == "sw_interface_ip6nd_ra_prefix" { // the two values are independent
		got = append(got[1:], got[0])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	ra = raOf(e.f)
	if ra.AdvManagedFlag || !ra.AdvOtherFlag || ra.SendRadv || ra.MaxRadvInterval != 200 {
		t.Errorf("RA state %+v", ra)
	}
	e.resync()
	onlyReads(t, e.f, "a resync of unchanged RA settings")

	// Unset: the prefix goes first, the settings go back to VPP's
	// defaults, IPv6 is released (and with no address VPP drops it).
	e.set(nil, loop("l1"))
	got = e.f.Requests()
	want = []api.Message{
		&ip6_nd.SwInterfaceIP6ndRaPrefix{SwIfIndex: 1, Prefix: prefix(netip.MustParsePrefix("2001:db8:1::/64")), OffLink: true, ValLifetime: 3600, PrefLifetime: 1800, IsNo: true},
		&ip6_nd.SwInterfaceIP6ndRaConfig{SwIfIndex: 1, IsNo: true, Suppress: 1, Other: 1},
		&ip.SwInterfaceIP6EnableDisable{SwIfIndex: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if ra := raOf(e.f); ra != nil {
		t.Errorf("RA state %+v, want IPv6 off", ra)
	}

	// With an IPv6 address VPP has IPv6 on already (VALUE_EXIST); the
	// value holds it too, and releasing it leaves the address's.
	l2 := loop("l1")
	l2.IpAddresses = []string{"2001:db8:9::1/64"}
	l2.Ip6Nd = &vppinterfaces.Interface_Ip6Nd{Managed: true}
	e.set(nil, l2)
	e.expect(scheduler.CONFIGURED, ndKey)
	e.set(nil, &vppinterfaces.Interface{Name: "l1", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, IpAddresses: l2.IpAddresses})
	if ra := raOf(e.f); ra == nil || ra.AdvManagedFlag {
		t.Errorf("RA state %+v, want IPv6 on, defaults", ra)
	}
}

// TestIp6NdRefused: an interval out of range is refused before VPP is
// asked; a preferred lifetime over the valid one and an IPv4 prefix fail
// when applied.
func TestIp6NdRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bad := loop("bad")
	bad.Ip6Nd = &vppinterfaces.Interface_Ip6Nd{MaxInterval: 2}
	e.set(nil, bad)
	e.expect(scheduler.INVALID, "vpp/interface/bad/ip6nd") // the derived value; the interface is applied
	l1 := loop("l1")
	l1.Ip6Nd = &vppinterfaces.Interface_Ip6Nd{}
	l1.Ip6NdPrefixes = []*vppinterfaces.Interface_Ip6NdPrefix{{Prefix: "2001:db8::/64", ValidLifetime: 100, PreferredLifetime: 200}, {Prefix: "10.0.0.0/8"}}
	e.set(nil, l1)
	e.expect(scheduler.CONFIGURED, "vpp/interface/l1/ip6nd")
	e.expect(scheduler.FAILED, "vpp/interface/l1/ip6nd-prefix/2001:db8::/64", "vpp/interface/l1/ip6nd-prefix/10.0.0.0/8")
}
