//go:build linux

package linux

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// batchNs is a namespace of the test's own with a veth pair up, veth0
// holding 10.0.0.1/16 and 2001:db8::1/64, wrapped as the plugin's
// namespace type. Needs root.
func batchNs(t testing.TB) (*namespace, netlink.Link) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("this test needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network namespaces; run it as root (euid is %d)", os.Geteuid())
	}
	ns, err := NewNamespace()
	if err != nil {
		t.Fatalf("creating a network namespace: %v", err)
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		ns.Close()
		t.Fatalf("netlink handle: %v", err)
	}
	n := &namespace{name: "batch-test", ns: ns, h: h}
	t.Cleanup(func() {
		if n.batch != nil {
			n.batch.Close()
		}
		h.Close()
		ns.Close()
	})
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "veth0"}, PeerName: "veth1"}
	if err := h.LinkAdd(veth); err != nil {
		t.Fatalf("ip link add veth0 type veth peer name veth1: %v", err)
	}
	for _, name := range []string{"veth0", "veth1"} {
		l, err := h.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.LinkSetUp(l); err != nil {
			t.Fatalf("ip link set %s up: %v", name, err)
		}
	}
	l, err := h.LinkByName("veth0")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"10.0.0.1/16", "2001:db8::1/64"} {
		addr, _ := netlink.ParseAddr(a)
		addr.Flags = unix.IFA_F_NODAD
		if err := h.AddrAdd(l, addr); err != nil {
			t.Fatalf("ip addr add %s dev veth0: %v", a, err)
		}
	}
	return n, l
}

// hostRoutes are n routes 172.16.0.0/32, 172.16.0.1/32, ... from first on,
// via 10.0.0.254 over link, with the plugin's default protocol.
func hostRoutes(link netlink.Link, first, n int) []*netlink.Route {
	rs := make([]*netlink.Route, n)
	for i := range rs {
		j := first + i
		ip := netip.AddrFrom4([4]byte{172, 16 + byte(j>>16), byte(j >> 8), byte(j)})
		rs[i] = &netlink.Route{
			LinkIndex: link.Attrs().Index,
			Dst:       &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(32, 32)},
			Gw:        net.ParseIP("10.0.0.254").To4(),
			Protocol:  DefaultRouteProtocol,
			Table:     unix.RT_TABLE_MAIN,
			Scope:     netlink.SCOPE_UNIVERSE,
		}
	}
	return rs
}

func requests(t testing.TB, op routeOp, rs []*netlink.Route) []*nl.NetlinkRequest {
	t.Helper()
	reqs := make([]*nl.NetlinkRequest, len(rs))
	for i, r := range rs {
		req, err := libRouteRequest(op, r)
		if err != nil {
			t.Fatalf("route request %s %v: %v", op.verb(), r, err)
		}
		reqs[i] = req
	}
	return reqs
}

func devs(n int) []string { return slices.Repeat([]string{"veth0"}, n) }

// installed returns the identities of the namespace's routes with the
// plugin's default protocol, in all tables.
func installed(t testing.TB, n *namespace) map[string]bool {
	t.Helper()
	list, err := n.h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC, Protocol: DefaultRouteProtocol}, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		t.Fatalf("ip route show table all: %v", err)
	}
	out := make(map[string]bool, len(list))
	for i := range list {
		out[routeIdentity(&list[i])] = true
	}
	return out
}

// TestBatchRoutesApplied sends a batch of routes of several kinds (IPv4
// and IPv6, a metric, a table beyond 255, scope link, a replace) in writes
// of a few requests each, and finds each in the kernel as asked.
func TestBatchRoutesApplied(t *testing.T) {
	n, link := batchNs(t)
	rs := hostRoutes(link, 0, 3000)
	idx := link.Attrs().Index
	v6 := func(s string) *net.IPNet { _, p, _ := net.ParseCIDR(s); return p }
	rs = append(rs,
		&netlink.Route{LinkIndex: idx, Dst: v6("2001:db8:1::/48"), Gw: net.ParseIP("2001:db8::fe"), Priority: 7, Table: 1000, Protocol: DefaultRouteProtocol},
		&netlink.Route{LinkIndex: idx, Dst: v6("2001:db8:2::/64"), Protocol: DefaultRouteProtocol, Scope: netlink.SCOPE_UNIVERSE},
		&netlink.Route{LinkIndex: idx, Dst: v6("192.168.7.0/24"), Priority: 30, Table: 100, Protocol: DefaultRouteProtocol, Scope: netlink.SCOPE_LINK},
	)
	s, err := n.batchSocket()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := n.batchSocket(); again != s {
		t.Error("a second batchSocket call opened another socket")
	}
	s.perWrite = 700 // several writes, the last one short
	for i, err := range n.routeBatchOf(context.Background(), routeAdd, rs, devs(len(rs))) {
		if err != nil {
			t.Errorf("route %d: %v", i, err)
		}
	}
	got := installed(t, n)
	if len(got) != len(rs) {
		t.Errorf("%d routes installed, want %d", len(got), len(rs))
	}
	for _, r := range rs {
		if !got[routeIdentity(r)] {
			t.Errorf("not installed as asked: %s", routeIdentity(r))
		}
	}

	// ip route replace: a new gateway for the first 10.
	for _, r := range rs[:10] {
		r.Gw = net.ParseIP("10.0.0.253").To4()
	}
	for i, err := range n.routeBatchOf(context.Background(), routeReplace, rs[:10], devs(10)) {
		if err != nil {
			t.Errorf("replace %d: %v", i, err)
		}
	}
	got = installed(t, n)
	for _, r := range rs[:10] {
		if !got[routeIdentity(r)] {
			t.Errorf("not replaced: %s", routeIdentity(r))
		}
	}
	if s.overruns != 0 {
		t.Errorf("%d receive buffer overruns", s.overruns)
	}
}

// TestBatchRoutesOneBad puts routes that the kernel refuses in the middle
// of a batch: exactly those fail, each with its `ip route` command and
// the kernel's error, and every other route is applied.
func TestBatchRoutesOneBad(t *testing.T) {
	n, link := batchNs(t)
	rs := hostRoutes(link, 0, 2000)
	bad := map[int]error{
		777:  unix.ENETUNREACH, // a gateway on no connected network
		1000: unix.ENODEV,      // no such interface (a route without a gateway)
		1999: unix.ENETUNREACH, // the last of the batch
	}
	rs[777].Gw = net.ParseIP("192.168.99.1").To4()
	rs[1000].LinkIndex, rs[1000].Gw, rs[1000].Scope = 99999, nil, netlink.SCOPE_LINK
	rs[1999].Gw = net.ParseIP("192.168.99.2").To4()
	errs := n.routeBatchOf(context.Background(), routeAdd, rs, devs(len(rs)))
	for i, err := range errs {
		want, isBad := bad[i]
		switch {
		case !isBad && err != nil:
			t.Errorf("route %d: %v", i, err)
		case isBad && !errors.Is(err, want):
			t.Errorf("route %d: %v, want %v", i, err, want)
		}
	}
	wantText := "ip route add 172.16.3.9/32 via 192.168.99.1 dev veth0 scope universe proto 212: network is unreachable"
	if err := errs[777]; err == nil || !strings.HasPrefix(err.Error(), wantText) {
		t.Errorf("route 777: %v, want the error to start with %q", err, wantText)
	}
	t.Logf("the errors read: %v; %v", errs[777], errs[1000])
	got := installed(t, n)
	if len(got) != len(rs)-len(bad) {
		t.Errorf("%d routes installed, want %d", len(got), len(rs)-len(bad))
	}
	for i, r := range rs {
		if _, isBad := bad[i]; !isBad && !got[routeIdentity(r)] {
			t.Errorf("route %d not installed: %s", i, routeIdentity(r))
		}
	}
}

// linkGone reports whether err is the kernel's refusal of a route via a
// gateway over an interface that is not there: ENETUNREACH (the gateway
// is on no network, "Nexthop has invalid gateway") on recent kernels,
// ENODEV on others.
func linkGone(err error) bool { return errors.Is(err, unix.ENETUNREACH) || errors.Is(err, unix.ENODEV) }

// TestBatchRoutesLinkDeleted deletes the routes' interface from another
// goroutine after the batch's second write: the routes of the first two
// writes succeed, every later one fails as the kernel refuses a route
// over a missing interface, and the batch ends.
func TestBatchRoutesLinkDeleted(t *testing.T) {
	n, link := batchNs(t)
	rs := hostRoutes(link, 0, 5000)
	s, err := n.batchSocket()
	if err != nil {
		t.Fatal(err)
	}
	s.perWrite = 500
	writes := 0
	deleteNow, deleted := make(chan struct{}), make(chan error)
	go func() {
		<-deleteNow
		// ip link del veth0
		deleted <- n.h.LinkDel(link)
	}()
	s.afterWrite = func() {
		if writes++; writes == 2 {
			close(deleteNow)
			if err := <-deleted; err != nil {
				t.Errorf("ip link del veth0: %v", err)
			}
		}
	}
	errs := n.routeBatchOf(context.Background(), routeAdd, rs, devs(len(rs)))
	for i, err := range errs {
		switch {
		case i < 2*s.perWrite && err != nil:
			t.Errorf("route %d, sent before the link went: %v", i, err)
		case i >= 2*s.perWrite && !linkGone(err):
			t.Errorf("route %d, sent after the link went: %v, want ENETUNREACH or ENODEV", i, err)
		}
	}
	if writes != len(rs)/s.perWrite {
		t.Errorf("%d writes, want %d", writes, len(rs)/s.perWrite)
	}
	if got := installed(t, n); len(got) != 0 {
		t.Errorf("%d routes left over a deleted link", len(got))
	}
}

// TestBatchRoutesLinkDeletedRacing deletes the routes' interface while a
// batch runs, at a moment the test does not choose: the kernel carries
// out the requests in order, so the batch must report successes up to
// some request and the refusal of a missing interface from there on, and
// must end.
func TestBatchRoutesLinkDeletedRacing(t *testing.T) {
	n, link := batchNs(t)
	rs := hostRoutes(link, 0, 20000)
	s, err := n.batchSocket()
	if err != nil {
		t.Fatal(err)
	}
	s.perWrite = 200
	started, done := make(chan struct{}), make(chan error)
	go func() {
		<-started
		done <- n.h.LinkDel(link)
	}()
	first := true
	s.afterWrite = func() {
		if first {
			first = false
			close(started) // and go on: the deletion races the batch
		}
	}
	errs := n.routeBatchOf(context.Background(), routeAdd, rs, devs(len(rs)))
	if err := <-done; err != nil {
		t.Fatalf("ip link del veth0: %v", err)
	}
	cut := slices.IndexFunc(errs, func(err error) bool { return err != nil })
	if cut < 0 {
		t.Logf("the batch ended before the link went")
		cut = len(errs)
	}
	t.Logf("%d routes added before the link went, %d refused", cut, len(errs)-cut)
	for i, err := range errs[cut:] {
		if !linkGone(err) {
			t.Errorf("route %d: %v, want ENETUNREACH or ENODEV", cut+i, err)
		}
	}
	if cut < s.perWrite {
		t.Errorf("only %d routes succeeded, want at least the first write's %d", cut, s.perWrite)
	}
}

// TestBatchRoutesOverrun provokes receive buffer overruns: a tiny buffer
// and an ACK asked for on every request. Replies go lost, and yet every
// request's outcome comes out right: the good routes added (some of them
// confirmed after a resend found them there), the bad ones refused, and
// the ones whose destination held another route before refused as
// existing.
func TestBatchRoutesOverrun(t *testing.T) {
	n, link := batchNs(t)
	rs := hostRoutes(link, 0, 6000)
	// Routes there before, with another gateway: adding rs[i] must fail.
	before := map[int]bool{}
	for i := 5; i < len(rs); i += 300 {
		r := *rs[i]
		r.Gw = net.ParseIP("10.0.0.200").To4()
		if err := n.h.RouteAdd(&r); err != nil {
			t.Fatal(err)
		}
		before[i] = true
	}
	bad := map[int]bool{}
	for i := 11; i < len(rs); i += 97 {
		rs[i].Gw = net.ParseIP("192.168.99.1").To4()
		bad[i] = true
	}
	s, err := openBatchSocket(n.ns, 0) // the smallest receive buffer the kernel allows
	if err != nil {
		t.Fatal(err)
	}
	n.batch = s
	s.ackAll, s.perWrite = true, len(rs)
	t.Logf("receive buffer fits %d replies", s.fit)

	errs := n.routeBatchOf(context.Background(), routeAdd, rs, devs(len(rs)))
	if s.overruns == 0 {
		t.Fatal("no receive buffer overrun: the test tests nothing")
	}
	t.Logf("%d overruns", s.overruns)
	got := installed(t, n)
	resent := 0
	for i, err := range errs {
		var re *resentError
		if errors.As(err, &re) {
			resent++
		}
		switch {
		case bad[i]:
			if !errors.Is(err, unix.ENETUNREACH) {
				t.Errorf("route %d (unreachable gateway): %v, want ENETUNREACH", i, err)
			}
		case before[i]:
			if !errors.Is(err, unix.EEXIST) {
				t.Errorf("route %d (another route there before): %v, want EEXIST", i, err)
			}
		case err != nil:
			t.Errorf("route %d: %v", i, err)
		case !got[routeIdentity(rs[i])]:
			t.Errorf("route %d reported added, not there: %s", i, routeIdentity(rs[i]))
		}
	}
	if resent == 0 {
		t.Error("no error of a resend: the overrun lost no reply to a failed request, or resends are not marked")
	}
}

// TestBatchRoutesDelete deletes routes in a batch, among them some that
// are not there: those report not found (ESRCH, kv.ErrNotFound), the rest
// are gone.
func TestBatchRoutesDelete(t *testing.T) {
	n, link := batchNs(t)
	rs := hostRoutes(link, 0, 3000)
	for i, err := range n.routeBatchOf(context.Background(), routeAdd, rs, devs(len(rs))) {
		if err != nil {
			t.Fatalf("route %d: %v", i, err)
		}
	}
	del := append(slices.Clone(rs[:1500]), hostRoutes(link, 10000, 3)...)
	del = append(del, rs[1500:]...)
	for i, err := range n.routeBatchOf(context.Background(), routeDel, del, devs(len(del))) {
		missing := i >= 1500 && i < 1503
		switch {
		case missing && !(errors.Is(err, kv.ErrNotFound) && errors.Is(err, unix.ESRCH)):
			t.Errorf("delete %d (not there): %v, want ESRCH marked not found", i, err)
		case missing:
			if want := "ip route del " + del[i].Dst.String(); !strings.Contains(err.Error(), want) {
				t.Errorf("delete %d: %v, want it to name %q", i, err, want)
			}
		case err != nil:
			t.Errorf("delete %d: %v", i, err)
		}
	}
	if got := installed(t, n); len(got) != 0 {
		t.Errorf("%d routes left", len(got))
	}
}

// TestBatchRoutesCancelled sends nothing once the context is done: every
// request reports the context's error.
func TestBatchRoutesCancelled(t *testing.T) {
	n, link := batchNs(t)
	rs := hostRoutes(link, 0, 10)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i, err := range n.routeBatchOf(ctx, routeAdd, rs, devs(len(rs))) {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("route %d: %v, want context.Canceled", i, err)
		}
	}
	if got := installed(t, n); len(got) != 0 {
		t.Errorf("%d routes added", len(got))
	}
}

// TestAckErr reads errors out of NLMSG_ERROR messages as the kernel
// writes them: an ACK, a bare errno, a capped request with the kernel's
// message, and a whole request echoed before the message.
func TestAckErr(t *testing.T) {
	le := nl.NativeEndian()
	msg := func(flags uint16, errno int32, echoedLen int, text string) syscall.NetlinkMessage {

		b := make([]byte, 4)
		le.PutUint32(b, uint32(errno))
		hdr := make([]byte, unix.SizeofNlMsghdr)
		le.PutUint32(hdr, uint32(echoedLen))
		b = append(b, hdr...)
		if flags&unix.NLM_F_CAPPED == 0 {
			b = append(b, make([]byte, nlmAlign(echoedLen)-unix.SizeofNlMsghdr)...)
		}
		if text != "" {
			b = append(b, nl.NewRtAttr(unix.NLMSGERR_ATTR_OFFS, nl.Uint32Attr(20)).Serialize()...)
			b = append(b, nl.NewRtAttr(unix.NLMSGERR_ATTR_MSG, nl.ZeroTerminated(text)).Serialize()...)
		}
		return syscall.NetlinkMessage{Header: syscall.NlMsghdr{Type: unix.NLMSG_ERROR, Flags: flags}, Data: b}
	}
	for _, tc := range []struct {
		name string
		m    syscall.NetlinkMessage
		want string
	}{
		{"ack", msg(0, 0, 16, ""), "<nil>"},
		{"errno", msg(0, -int32(unix.EEXIST), 16, ""), "file exists"},
		{"capped with message", msg(unix.NLM_F_CAPPED|unix.NLM_F_ACK_TLVS, -int32(unix.ENETUNREACH), 68, "Nexthop has invalid gateway"), "network is unreachable: Nexthop has invalid gateway"},
		{"whole request with message", msg(unix.NLM_F_ACK_TLVS, -int32(unix.ENODEV), 62, "no such device here"), "no such device: no such device here"},
		{"truncated", syscall.NetlinkMessage{Data: []byte{1}}, "netlink: truncated error message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(ackErr(tc.m)); got != tc.want {
				t.Errorf("ackErr = %q, want %q", got, tc.want)
			}
		})
	}
}
