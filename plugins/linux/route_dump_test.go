//go:build linux

package linux

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/testing/protocmp"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// listRetrieve is the route Retrieve as it was before it read the dump
// itself: netlink.Handle's RouteListFiltered, each route parsed into a
// netlink.Route. The test holds the dump's routes to it. (Its one later
// change: a route is the plugin's only when correlate names its key.)
func listRetrieve(h *routes, correlate []linuxl3.RouteItem[struct{}]) ([]linuxl3.RouteItem[struct{}], error) {
	intended := make(map[linuxl3.RouteKey]*linuxl3.Route, len(correlate))
	for _, c := range correlate {
		intended[c.Key] = c.Value
	}
	type nsIndex struct {
		ns    string
		index int
	}
	labels := map[nsIndex]string{}
	spaces := map[string]bool{"": true}
	ifaces := h.p.Interfaces()
	for _, l := range ifaces.Labels() {
		if m, ok := ifaces.Get(l); ok {
			labels[nsIndex{m.Namespace, m.Index}] = l
			spaces[m.Namespace] = true
		}
	}
	var out []linuxl3.RouteItem[struct{}]
	for space := range spaces {
		n, err := h.p.ns.get(space)
		if err != nil {
			if isGone(err) {
				continue
			}
			return nil, err
		}
		filter := &netlink.Route{Protocol: netlink.RouteProtocol(h.p.opts.routeProtocol), Table: unix.RT_TABLE_UNSPEC}
		list, err := retryDump(func() ([]netlink.Route, error) {
			return n.h.RouteListFiltered(netlink.FAMILY_ALL, filter, netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
		})
		if err != nil {
			return nil, kernelErr(err, "ip route show table all proto %d (namespace %s)", h.p.opts.routeProtocol, nsName(n))
		}
		for _, r := range list {
			label, ok := labels[nsIndex{space, r.LinkIndex}]
			if !ok && space == "" {
				if l, err := n.h.LinkByIndex(r.LinkIndex); err == nil {
					label, ok = l.Attrs().Name, true
				}
			}
			if !ok || len(r.MultiPath) > 0 {
				continue
			}
			key, v, ok := listObserve(label, r)
			if !ok {
				continue
			}
			listNormalise(v, intended[key], r)
			// The protocol number says a route may be ours: the scheduler
			// decides (OriginUnknown), unless every such route is claimed.
			origin := kv.OriginUnknown
			if h.p.opts.claimRoutes {
				origin = kv.OriginNB
			}
			out = append(out, linuxl3.RouteItem[struct{}]{Key: key, Value: v, Origin: origin})
		}
	}
	return out, nil
}

// listObserve is observeRoute of a netlink.Route, as it was.
func listObserve(label string, r netlink.Route) (linuxl3.RouteKey, *linuxl3.Route, bool) {
	dst, ok := prefixOf(r.Dst)
	switch {
	case r.Dst != nil && !ok:
		return linuxl3.RouteKey{}, nil, false
	case r.Dst == nil && r.Family == unix.AF_INET6:
		dst = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	case r.Dst == nil:
		dst = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	}
	key := linuxl3.RouteKey{OutgoingInterface: label, DstNetwork: dst.Masked()}
	v := &linuxl3.Route{OutgoingInterface: label, DstNetwork: dst.String(), Metric: uint32(r.Priority), Table: uint32(r.Table)}
	if len(r.Gw) > 0 {
		v.GwAddr = r.Gw.String()
	}
	for s, ns := range scopes {
		if ns == r.Scope {
			v.Scope = s
		}
	}
	return key, v, true
}

// listNormalise is normalise of a netlink.Route, as it was.
func listNormalise(v, want *linuxl3.Route, r netlink.Route) {
	if want.GetScope() == linuxl3.Route_SCOPE_UNSPECIFIED && r.Scope == defaultScope(len(r.Gw) > 0) {
		v.Scope = linuxl3.Route_SCOPE_UNSPECIFIED
	}
	if r.Family == unix.AF_INET6 && want.GetMetric() == 0 && r.Priority == 1024 {
		v.Metric = 0
	}
}

// routeShapesEnv is a plugin, registered with a scheduler, whose
// namespace has a veth pair r0/r1 and a named namespace has a bridge nsbr,
// both the plugin's, and one veth of the test's own in each, u0 and u2.
type routeShapesEnv struct {
	p        *Plugin
	h, other *netlink.Handle // the plugin's namespace; the named one
	r0, nsbr netlink.Link
	u0, u2   netlink.Link
}

func newRouteShapesEnv(t *testing.T) *routeShapesEnv {
	n, _ := batchNs(t) // its veths are the test's: unused
	name, other := namedNs(t)
	p := pluginWith(t, n,
		&linuxinterfaces.Interface{Name: "r0", Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: "r1", Enabled: true, IpAddresses: []string{"10.9.0.1/24", "2001:db8:9::1/64"}},
		&linuxinterfaces.Interface{Name: "r1", Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: "r0", Enabled: true},
		&linuxinterfaces.Interface{Name: "nsbr", Type: linuxinterfaces.Interface_TYPE_BRIDGE, Namespace: name, Enabled: true, IpAddresses: []string{"10.8.0.1/24"}},
	)
	e := &routeShapesEnv{p: p, h: n.h}
	var err error
	if e.other, err = netlink.NewHandleAt(other); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.other.Close)
	e.u0 = addVeth(t, e.h, "u0", "u1", "10.7.0.1/24")
	e.u2 = addVeth(t, e.other, "u2", "u3", "10.6.0.1/24")
	if e.r0, err = e.h.LinkByName("r0"); err != nil {
		t.Fatal(err)
	}
	if e.nsbr, err = e.other.LinkByName("nsbr"); err != nil {
		t.Fatal(err)
	}
	return e
}

// pluginWith is a plugin in namespace n, registered with a scheduler that
// has created the interfaces.
func pluginWith(t testing.TB, n *namespace, ifaces ...*linuxinterfaces.Interface) *Plugin {
	t.Helper()
	p, err := New(WithNamespace(n.ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	s, err := scheduler.New(scheduler.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() { s.Close(ctx) })
	if err := s.Register(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	txn := s.Txn()
	for _, v := range ifaces {
		txn.Set(linuxinterfaces.InterfaceKeyFor(v), v)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return p
}

// namedNs creates a named network namespace (/var/run/netns/NAME), gone
// at the end of the test.
func namedNs(t *testing.T) (string, netns.NsHandle) {
	name := "kvdroute-" + strings.ReplaceAll(t.Name(), "/", "-")
	name = name[:min(len(name), 40)]
	ns, err := OnLockedThread(func() (netns.NsHandle, error) { return netns.NewNamed(name) })
	if err != nil {
		t.Fatalf("ip netns add %s: %v", name, err)
	}
	t.Cleanup(func() {
		ns.Close()
		if err := netns.DeleteNamed(name); err != nil {
			t.Errorf("ip netns del %s: %v", name, err)
		}
	})
	return name, ns
}

// addVeth adds a veth pair, the first end up with an address (dummy
// interfaces need a module the test machine may lack).
func addVeth(t *testing.T, h *netlink.Handle, name, peer, addr string) netlink.Link {
	t.Helper()
	// ip link add NAME type veth peer name PEER
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peer}); err != nil {
		t.Fatalf("ip link add %s type veth peer name %s: %v", name, peer, err)
	}
	l, err := h.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetUp(l); err != nil {
		t.Fatal(err)
	}
	a, _ := netlink.ParseAddr(addr)
	a.Flags = unix.IFA_F_NODAD
	if err := h.AddrAdd(l, a); err != nil {
		t.Fatalf("ip addr add %s dev %s: %v", addr, name, err)
	}
	return l
}

func cidr(s string) *net.IPNet {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	return n
}

// TestNetnsRouteDumpMatchesRouteList adds routes of every shape the model
// has (IPv4 and IPv6, via a gateway and direct, default routes, other
// tables, metrics, scopes) and of shapes Retrieve leaves out (another
// protocol, multipath, no interface, an interface the plugin cannot name),
// and checks that Retrieve reports exactly what the RouteListFiltered code
// it replaced reports, for intended values that set a scope or a metric
// and for none. Needs root.
func TestNetnsRouteDumpMatchesRouteList(t *testing.T) {
	e := newRouteShapesEnv(t)
	proto := netlink.RouteProtocol(DefaultRouteProtocol)
	r0, br, d0, d1 := e.r0.Attrs().Index, e.nsbr.Attrs().Index, e.u0.Attrs().Index, e.u2.Attrs().Index
	ip := net.ParseIP
	mine := []*netlink.Route{
		// ip route add 10.20.0.0/16 via 10.9.0.254 dev r0 proto 212
		{LinkIndex: r0, Dst: cidr("10.20.0.0/16"), Gw: ip("10.9.0.254")},
		{LinkIndex: r0, Dst: cidr("10.21.0.0/16"), Scope: netlink.SCOPE_LINK},
		{LinkIndex: r0, Dst: cidr("10.22.0.0/16"), Priority: 50, Gw: ip("10.9.0.253")},
		{LinkIndex: r0, Dst: cidr("10.23.0.0/16"), Table: 100, Gw: ip("10.9.0.254")},
		{LinkIndex: r0, Dst: cidr("10.24.0.0/16"), Table: 1000, Priority: 3, Scope: netlink.SCOPE_LINK},
		{LinkIndex: r0, Dst: cidr("10.25.0.0/16"), Scope: netlink.SCOPE_HOST},
		{LinkIndex: r0, Dst: cidr("10.26.0.0/16"), Scope: netlink.SCOPE_SITE},
		{LinkIndex: r0, Dst: cidr("10.27.0.0/16")}, // direct, scope global
		{LinkIndex: r0, Dst: cidr("10.28.0.1/32"), Gw: ip("10.9.0.254")},
		{LinkIndex: r0, Dst: cidr("0.0.0.0/0"), Gw: ip("10.9.0.254"), Priority: 10},
		{LinkIndex: r0, Dst: cidr("0.0.0.0/0"), Gw: ip("10.9.0.252"), Table: 100},
		{LinkIndex: r0, Dst: cidr("2001:db8:20::/48"), Gw: ip("2001:db8:9::fe")},
		{LinkIndex: r0, Dst: cidr("2001:db8:21::/48")},
		{LinkIndex: r0, Dst: cidr("2001:db8:22::/48"), Gw: ip("2001:db8:9::fd"), Priority: 7, Table: 200},
		{LinkIndex: r0, Dst: cidr("2001:db8:23::/64"), Priority: 1024, Gw: ip("2001:db8:9::fe")},
		{LinkIndex: r0, Dst: cidr("2001:db8:24::1/128"), Priority: 1, Scope: netlink.SCOPE_LINK},
		{LinkIndex: r0, Dst: cidr("::/0"), Gw: ip("2001:db8:9::fe")},
		{LinkIndex: r0, Dst: cidr("::/0"), Gw: ip("fe80::1"), Table: 300},
		// an interface the plugin did not create: labelled by its name
		{LinkIndex: d0, Dst: cidr("10.30.0.0/16"), Gw: ip("10.7.0.254")},
		{LinkIndex: d0, Dst: cidr("2001:db8:30::/48")},
		// left out: multipath, no interface
		{Dst: cidr("10.31.0.0/16"), MultiPath: []*netlink.NexthopInfo{{LinkIndex: r0, Gw: ip("10.9.0.250")}, {LinkIndex: r0, Gw: ip("10.9.0.251")}}},
		{Dst: cidr("2001:db8:31::/48"), MultiPath: []*netlink.NexthopInfo{{LinkIndex: r0, Gw: ip("2001:db8:9::fa")}, {LinkIndex: r0, Gw: ip("2001:db8:9::fb")}}},
		{Dst: cidr("10.32.0.0/16"), Type: unix.RTN_BLACKHOLE},
		{Dst: cidr("2001:db8:32::/48"), Type: unix.RTN_UNREACHABLE},
		// a local route of ours, in table local
		{LinkIndex: r0, Dst: cidr("10.9.0.77/32"), Type: unix.RTN_LOCAL, Table: unix.RT_TABLE_LOCAL, Scope: netlink.SCOPE_HOST},
	}
	host := []*netlink.Route{
		// ip route add 10.40.0.0/16 via 10.9.0.254 dev r0 proto static
		{LinkIndex: r0, Dst: cidr("10.40.0.0/16"), Gw: ip("10.9.0.254"), Protocol: unix.RTPROT_STATIC},
		{LinkIndex: r0, Dst: cidr("2001:db8:40::/48"), Protocol: unix.RTPROT_BOOT},
		{LinkIndex: r0, Dst: cidr("10.20.0.0/16"), Gw: ip("10.9.0.254"), Priority: 99, Protocol: unix.RTPROT_STATIC},
	}
	other := []*netlink.Route{
		{LinkIndex: br, Dst: cidr("10.50.0.0/16"), Gw: ip("10.8.0.254")},
		{LinkIndex: br, Dst: cidr("0.0.0.0/0"), Gw: ip("10.8.0.254"), Table: 7},
		{LinkIndex: br, Dst: cidr("10.51.0.0/16"), Protocol: unix.RTPROT_STATIC},
		// an interface of the named namespace the plugin does not know: left out
		{LinkIndex: d1, Dst: cidr("10.52.0.0/16"), Gw: ip("10.6.0.254")},
	}
	add := func(h *netlink.Handle, rs []*netlink.Route) {
		for _, r := range rs {
			if r.Protocol == 0 {
				r.Protocol = proto
			}
			if err := h.RouteAdd(r); err != nil {
				t.Fatalf("ip route add %v: %v", r, err)
			}
		}
	}
	add(e.h, mine)
	add(e.h, host)
	add(e.other, other)

	h := &routes{p: e.p}
	item := func(k linuxl3.RouteKey, v *linuxl3.Route) linuxl3.RouteItem[struct{}] {
		return linuxl3.RouteItem[struct{}]{Key: k, Value: v, Origin: kv.OriginNB}
	}
	key := func(label, dst string) linuxl3.RouteKey {
		return linuxl3.RouteKey{OutgoingInterface: label, DstNetwork: netip.MustParsePrefix(dst)}
	}
	// Intended values that set a scope or a metric the kernel fills in by
	// default keep them; the rest are normalised away.
	shaping := []linuxl3.RouteItem[struct{}]{
		item(key("r0", "10.21.0.0/16"), &linuxl3.Route{OutgoingInterface: "r0", DstNetwork: "10.21.0.0/16", Scope: linuxl3.Route_SCOPE_LINK}),
		item(key("r0", "10.20.0.0/16"), &linuxl3.Route{OutgoingInterface: "r0", DstNetwork: "10.20.0.0/16", GwAddr: "10.9.0.254", Scope: linuxl3.Route_SCOPE_GLOBAL}),
		item(key("r0", "2001:db8:23::/64"), &linuxl3.Route{OutgoingInterface: "r0", DstNetwork: "2001:db8:23::/64", GwAddr: "2001:db8:9::fe", Metric: 1024}),
		item(key("r0", "2001:db8:20::/48"), &linuxl3.Route{OutgoingInterface: "r0", DstNetwork: "2001:db8:20::/48", GwAddr: "2001:db8:9::fe"}),
	}
	sortItems := func(items []linuxl3.RouteItem[struct{}]) []linuxl3.RouteItem[struct{}] {
		// Routes of other tables may share a key.
		slices.SortFunc(items, func(a, b linuxl3.RouteItem[struct{}]) int {
			return cmp.Or(strings.Compare(a.Key.String(), b.Key.String()), int(a.Value.GetTable())-int(b.Value.GetTable()))
		})
		return items
	}
	for _, tc := range []struct {
		name      string
		correlate []linuxl3.RouteItem[struct{}]
	}{
		{name: "no intended values"},
		{name: "intended scope and metric", correlate: shaping},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := listRetrieve(h, tc.correlate)
			if err != nil {
				t.Fatal(err)
			}
			got, err := h.Retrieve(context.Background(), tc.correlate)
			if err != nil {
				t.Fatal(err)
			}
			if diff := gocmp.Diff(sortItems(want), sortItems(got), protocmp.Transform(), cmpopts.EquateComparable(netip.Prefix{})); diff != "" {
				t.Errorf("Retrieve differs from the RouteListFiltered code (-list +dump):\n%s", diff)
			}
			// Not vacuous: what each reports is what the shapes above make it.
			var keys []string
			for _, it := range got {
				keys = append(keys, it.Key.OutgoingInterface+" "+it.Key.DstNetwork.String())
			}
			wantKeys := []string{
				// IPv6 keeps an unreachable route on lo: an obtained interface
				"lo 2001:db8:32::/48",
				"nsbr 0.0.0.0/0", "nsbr 10.50.0.0/16",
				"r0 0.0.0.0/0", "r0 0.0.0.0/0", "r0 10.20.0.0/16", "r0 10.21.0.0/16", "r0 10.22.0.0/16",
				"r0 10.23.0.0/16", "r0 10.24.0.0/16", "r0 10.25.0.0/16", "r0 10.26.0.0/16", "r0 10.27.0.0/16",
				"r0 10.28.0.1/32", "r0 10.9.0.77/32", "r0 2001:db8:20::/48", "r0 2001:db8:21::/48", "r0 2001:db8:22::/48",
				"r0 2001:db8:23::/64", "r0 2001:db8:24::1/128", "r0 ::/0", "r0 ::/0",
				"u0 10.30.0.0/16", "u0 2001:db8:30::/48",
			}
			slices.Sort(keys)
			if diff := gocmp.Diff(wantKeys, keys); diff != "" {
				t.Errorf("Retrieve's keys (-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkRouteRetrieve is the route Retrieve alone over -linux.routes
// routes of the plugin's (the framework benchmark's: /32s via a gateway
// over one veth), all intended: the dump Retrieve reads and the
// RouteListFiltered code it replaced. It reports the time and the heap
// allocations per route:
//
//	go test -run '^$' -bench RouteRetrieve ./plugins/linux/
func BenchmarkRouteRetrieve(b *testing.B) {
	n, _ := batchNs(b) // its veths are the benchmark's: unused
	p := pluginWith(b, n,
		&linuxinterfaces.Interface{Name: "r0", Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: "r1", Enabled: true, IpAddresses: []string{"10.0.0.1/16"}},
		&linuxinterfaces.Interface{Name: "r1", Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: "r0", Enabled: true},
	)
	link, err := n.h.LinkByName("r0")
	if err != nil {
		b.Fatal(err)
	}
	rs := hostRoutes(link, 0, *benchRoutes)
	s, err := n.batchSocket()
	if err != nil {
		b.Fatal(err)
	}
	for i, err := range s.do(context.Background(), requests(b, routeAdd, rs)) {
		if err != nil {
			b.Fatalf("route %d: %v", i, err)
		}
	}
	correlate := make([]linuxl3.RouteItem[struct{}], len(rs))
	for i, r := range rs {
		dst, _ := prefixOf(r.Dst)
		v := &linuxl3.Route{OutgoingInterface: "r0", DstNetwork: dst.String(), GwAddr: r.Gw.String()}
		correlate[i] = linuxl3.RouteItem[struct{}]{Key: linuxl3.RouteKey{OutgoingInterface: "r0", DstNetwork: dst}, Value: v}
	}
	h := &routes{p: p}
	for _, bc := range []struct {
		name     string
		retrieve func([]linuxl3.RouteItem[struct{}]) ([]linuxl3.RouteItem[struct{}], error)
	}{
		{"dump", func(c []linuxl3.RouteItem[struct{}]) ([]linuxl3.RouteItem[struct{}], error) {
			return h.Retrieve(context.Background(), c)
		}},
		{"list", func(c []linuxl3.RouteItem[struct{}]) ([]linuxl3.RouteItem[struct{}], error) {
			return listRetrieve(h, c)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				got, err := bc.retrieve(correlate)
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != len(rs) {
					b.Fatalf("%d routes retrieved, want %d", len(got), len(rs))
				}
			}
			runtime.ReadMemStats(&after)
			per := float64(b.N) * float64(len(rs))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/route")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/per, "allocs/route")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/per, "B/route")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// TestRouteDumpUnderChurn dumps the routes while another goroutine adds
// and deletes one, and checks that each dump either holds all the routes
// or says it was interrupted, and that the socket serves the next one. It
// also checks that the kernel (4.20 on) sends only the routes of the
// protocol asked for. (Route dumps are seldom marked interrupted: IPv4's
// never are, IPv6's start again from the top when the table changes.)
func TestRouteDumpUnderChurn(t *testing.T) {
	n, link := batchNs(t)
	rs := hostRoutes(link, 0, 20000)
	others := hostRoutes(link, 20000, 2000)
	for _, r := range others {
		r.Protocol = unix.RTPROT_STATIC
	}
	s, err := n.batchSocket()
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range s.do(context.Background(), requests(t, routeAdd, append(rs, others...))) {
		if err != nil {
			t.Fatalf("route %d: %v", i, err)
		}
	}
	if kernelAtLeast(t, 4, 20) {
		sent := 0
		err := s.dump(routeDumpRequest(DefaultRouteProtocol), func(typ uint16, _ []byte) error {
			if typ == unix.RTM_NEWROUTE {
				sent++
			}
			return nil
		})
		if err != nil || sent != len(rs) {
			t.Errorf("the kernel sent %d routes (%v), want only the %d of protocol %d", sent, err, len(rs), DefaultRouteProtocol)
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		churn := []*netlink.Route{
			{LinkIndex: link.Attrs().Index, Dst: cidr("10.99.0.0/16"), Protocol: DefaultRouteProtocol},
			{LinkIndex: link.Attrs().Index, Dst: cidr("2001:db8:99::/48"), Protocol: unix.RTPROT_STATIC},
		}
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, r := range churn {
				_ = n.h.RouteAdd(r)
				_ = n.h.RouteDel(r)
			}
		}
	}()
	interrupted := 0
	for range 50 {
		got := 0
		err := n.dumpRoutes(DefaultRouteProtocol, func(r *routeMsg) {
			if r.protocol == DefaultRouteProtocol && r.dstLen == 32 {
				got++
			}
		})
		switch {
		case errors.Is(err, netlink.ErrDumpInterrupted):
			interrupted++
		case err != nil:
			t.Fatal(err)
		case got != len(rs):
			t.Fatalf("a dump not interrupted has %d routes, want %d", got, len(rs))
		}
	}
	close(stop)
	<-done
	t.Logf("%d of 50 dumps interrupted", interrupted)
	got := 0
	if err := n.dumpRoutes(DefaultRouteProtocol, func(*routeMsg) { got++ }); err != nil || got != len(rs) {
		t.Errorf("the dump after: %d routes, %v; want %d", got, err, len(rs))
	}
}

// kernelAtLeast reports whether the running kernel is of version
// major.minor or later.
func kernelAtLeast(t *testing.T, major, minor int) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var ma, mi int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi); err != nil {
		t.Fatalf("kernel release %q: %v", u.Release, err)
	}
	return ma > major || ma == major && mi >= minor
}
