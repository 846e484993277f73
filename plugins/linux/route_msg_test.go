//go:build linux

package linux

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// This file holds the netlink library's way of building route requests,
// the reference that appendRouteMsg is held to, and the conversions the
// batch tests use to send netlink.Route values through routeBatch.

// libRouteRequest builds the netlink request of op on r, as
// netlink.Handle's RouteAdd, RouteReplace and RouteDel would send it, for
// the fields that the plugin's routes set: destination, gateway, outgoing
// interface, metric, table, protocol and scope. The ACK flag and the
// sequence number are the batch socket's to set.
func libRouteRequest(op routeOp, r *netlink.Route) (*nl.NetlinkRequest, error) {
	if r.Dst == nil || r.Dst.IP == nil {
		return nil, fmt.Errorf("%w: a route without a destination", unix.EINVAL)
	}
	var req *nl.NetlinkRequest
	var msg *nl.RtMsg
	switch op {
	case routeAdd:
		// ip route add: an error if a route of the same destination,
		// metric and table is there already.
		req, msg = nl.NewNetlinkRequest(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_EXCL), nl.NewRtMsg()
	case routeReplace:
		req, msg = nl.NewNetlinkRequest(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE), nl.NewRtMsg()
	case routeDel:
		req, msg = nl.NewNetlinkRequest(unix.RTM_DELROUTE, 0), nl.NewRtDelMsg()
	default:
		return nil, fmt.Errorf("%w: unknown route request %s", unix.EINVAL, op.verb())
	}
	family := nl.GetIPFamily(r.Dst.IP)
	msg.Family = uint8(family)
	bits, _ := r.Dst.Mask.Size()
	msg.Dst_len = uint8(bits)
	attrs := []*nl.RtAttr{nl.NewRtAttr(unix.RTA_DST, ipBytes(r.Dst.IP, family))}
	if r.Gw != nil {
		if nl.GetIPFamily(r.Gw) != family {
			return nil, fmt.Errorf("%w: gateway %s and destination %s of different families", unix.EINVAL, r.Gw, r.Dst)
		}
		attrs = append(attrs, nl.NewRtAttr(unix.RTA_GATEWAY, ipBytes(r.Gw, family)))
	}
	if r.Table > 0 {
		if r.Table >= 256 {
			// The header's table is a byte; larger ones go in RTA_TABLE.
			msg.Table = unix.RT_TABLE_UNSPEC
			attrs = append(attrs, nl.NewRtAttr(unix.RTA_TABLE, nl.Uint32Attr(uint32(r.Table))))
		} else {
			msg.Table = uint8(r.Table)
		}
	}
	if r.Priority > 0 {
		attrs = append(attrs, nl.NewRtAttr(unix.RTA_PRIORITY, nl.Uint32Attr(uint32(r.Priority))))
	}
	if r.Protocol > 0 {
		msg.Protocol = uint8(r.Protocol)
	}
	if r.Type > 0 {
		msg.Type = uint8(r.Type)
	}
	msg.Scope = uint8(r.Scope)
	if r.LinkIndex > 0 {
		attrs = append(attrs, nl.NewRtAttr(unix.RTA_OIF, nl.Uint32Attr(uint32(r.LinkIndex))))
	}
	req.AddData(msg)
	for _, a := range attrs {
		req.AddData(a)
	}
	return req, nil
}

// ipBytes is ip in the 4 or 16 bytes of its family.
func ipBytes(ip net.IP, family int) []byte {
	if family == nl.FAMILY_V4 {
		return ip.To4()
	}
	return ip.To16()
}

// krouteOf is r, over the interface dev, as the batch path sends it.
func krouteOf(r *netlink.Route, dev string) kroute {
	k := kroute{oif: r.LinkIndex, metric: uint32(r.Priority), table: uint32(r.Table), proto: r.Protocol, scope: r.Scope, dev: dev}
	if r.Dst != nil {
		if a, ok := netip.AddrFromSlice(r.Dst.IP); ok {
			bits, _ := r.Dst.Mask.Size()
			k.dst = netip.PrefixFrom(a, bits)
		}
	}
	k.gw, _ = netip.AddrFromSlice(r.Gw)
	return k
}

// routeBatchOf is routeBatch of the routes rs over the interfaces devs.
func (n *namespace) routeBatchOf(ctx context.Context, op routeOp, rs []*netlink.Route, devs []string) []error {
	ks := make([]kroute, len(rs))
	for i, r := range rs {
		ks[i] = krouteOf(r, devs[i])
	}
	return n.routeBatch(ctx, op, ks)
}

// encoded writes the requests of op on rs as routeBatch does: into one
// buffer, a slice of it each.
func encoded(t testing.TB, op routeOp, rs []*netlink.Route) [][]byte {
	t.Helper()
	buf := make([]byte, 0, len(rs)*routeMsgMax)
	msgs := make([][]byte, len(rs))
	for i, r := range rs {
		k := krouteOf(r, "")
		from := len(buf)
		var err error
		if buf, err = appendRouteMsg(buf, op, &k); err != nil {
			t.Fatalf("route request %s %v: %v", op.verb(), r, err)
		}
		msgs[i] = buf[from:len(buf):len(buf)]
	}
	return msgs
}

// TestRouteMsgAsNetlinkBuildsIt holds the batch path's requests to the
// netlink library's, byte for byte (the sequence number aside, which the
// batch socket sets), for each op and the fields the plugin sets, and
// checks that a route the library refuses is refused alike.
func TestRouteMsgAsNetlinkBuildsIt(t *testing.T) {
	p := func(s string) netip.Prefix { return netip.MustParsePrefix(s) }
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	cases := []kroute{
		{dst: p("172.16.0.1/32"), gw: a("10.0.0.254"), oif: 7, table: unix.RT_TABLE_MAIN, proto: DefaultRouteProtocol, scope: netlink.SCOPE_UNIVERSE},
		{dst: p("10.9.0.0/16"), oif: 3, metric: 20, table: 100, proto: DefaultRouteProtocol, scope: netlink.SCOPE_LINK},
		{dst: p("2001:db8:1::/48"), gw: a("2001:db8::fe"), oif: 2, metric: 7, table: 1000, proto: DefaultRouteProtocol},
		{dst: p("2001:db8:2::/64"), oif: 2, table: 254, scope: netlink.SCOPE_HOST},
		{dst: p("0.0.0.0/0"), gw: a("::ffff:10.0.0.1"), table: 65535, proto: 4, scope: netlink.SCOPE_SITE},
		{dst: p("::ffff:10.1.0.0/112"), oif: 1},
	}
	for _, op := range []routeOp{routeAdd, routeReplace, routeDel} {
		for _, k := range cases {
			req, err := libRouteRequest(op, k.netlinkRoute())
			if err != nil {
				t.Fatalf("%s %v: %v", op.verb(), k, err)
			}
			want := req.Serialize()
			want[8], want[9], want[10], want[11] = 0, 0, 0, 0 // the library's sequence number
			got, err := appendRouteMsg([]byte("prefix"), op, &k)
			if err != nil {
				t.Fatalf("%s %v: %v", op.verb(), k, err)
			}
			if !bytes.Equal(got[6:], want) || string(got[:6]) != "prefix" {
				t.Errorf("%s %v:\n got %x\nwant %x", op.verb(), k, got[6:], want)
			}
			if len(got[6:]) > routeMsgMax {
				t.Errorf("%s %v: %d bytes, more than routeMsgMax (%d)", op.verb(), k, len(got[6:]), routeMsgMax)
			}
		}
	}
	bad := []kroute{
		{gw: a("10.0.0.1")},                             // no destination
		{dst: p("10.0.0.0/8"), gw: a("2001:db8::1")},    // families differ
		{dst: p("2001:db8::/32"), gw: a("192.168.1.1")}, // families differ
	}
	for _, k := range bad {
		_, libErr := libRouteRequest(routeAdd, k.netlinkRoute())
		b, err := appendRouteMsg([]byte("x"), routeAdd, &k)
		if err == nil || libErr == nil || string(b) != "x" {
			t.Errorf("%v: error %v (the library's %v), buffer %q, want an error and the buffer as it was", k, err, libErr, b)
		}
	}
	if _, err := appendRouteMsg(nil, routeOp(9), &cases[0]); err == nil {
		t.Error("an unknown op: no error")
	}
}
