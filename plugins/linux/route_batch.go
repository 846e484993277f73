//go:build linux

package linux

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

var _ linuxl3.RouteBatcher[struct{}] = (*routes)(nil)

// batchOps are the route requests of each batch kind.
var batchOps = map[kv.BatchKind]routeOp{
	kv.BatchCreate: routeAdd,
	kv.BatchUpdate: routeReplace,
	kv.BatchDelete: routeDel,
}

// Batch adds (create), replaces (update) or deletes routes, many per
// netlink write: the routes of each namespace go in one batch through the
// namespace's batch socket. Each operation's outcome, and its error, is
// the one its own Create, Update or Delete would have had.
func (h *routes) Batch(ctx context.Context, kind kv.BatchKind, ops []linuxl3.RouteBatchOp[struct{}]) {
	op, ok := batchOps[kind]
	if !ok {
		err := kv.NonRetriable(fmt.Errorf("route batch of unknown kind %v", kind))
		for i := range ops {
			ops[i].Err = err
		}
		return
	}
	type route struct {
		r   *netlink.Route
		dev string
	}
	groups := groupByNamespace(len(ops), func(i int) (*namespace, route, error) {
		n, r, dev, err := h.kernelRoute(ops[i].Key, ops[i].Value)
		return n, route{r, dev}, err
	}, func(i int, err error) {
		if op == routeDel {
			err = notFound(err)
		}
		ops[i].Err = err
	})
	for _, g := range groups {
		rs, devs := make([]*netlink.Route, len(g.items)), make([]string, len(g.items))
		for k, it := range g.items {
			rs[k], devs[k] = it.r, it.dev
		}
		for k, err := range g.n.routeBatch(ctx, op, rs, devs) {
			ops[g.at[k]].Err = err
		}
	}
}

// routeOp is what a route request asks of the kernel.
type routeOp uint8

const (
	routeAdd     routeOp = iota + 1 // ip route add
	routeReplace                    // ip route replace
	routeDel                        // ip route del
)

// verb is the op's `ip route` subcommand.
func (o routeOp) verb() string {
	switch o {
	case routeAdd:
		return "add"
	case routeReplace:
		return "replace"
	case routeDel:
		return "del"
	}
	return "op" + strconv.Itoa(int(o))
}

// routeRequest builds the netlink request of op on r, as
// netlink.Handle's RouteAdd, RouteReplace and RouteDel would send it, for
// the fields that the plugin's routes set: destination, gateway, outgoing
// interface, metric, table, protocol and scope. The ACK flag and the
// sequence number are the batch socket's to set.
func routeRequest(op routeOp, r *netlink.Route) (*nl.NetlinkRequest, error) {
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

// routeBatch carries out op on the routes rs of the namespace in batches
// (see batchSocket), and returns one error per route, written like the
// error of the route's own call: the `ip route` command and the kernel's
// error. devs are the routes' interface names, for the errors. An add
// whose reply went lost and that, sent again, finds its route there
// succeeds only if the kernel's route is the one asked for; a delete that
// finds its route gone is reported as not found (kv.ErrNotFound).
func (n *namespace) routeBatch(ctx context.Context, op routeOp, rs []*netlink.Route, devs []string) []error {
	errs := make([]error, len(rs))
	reqs := make([]*nl.NetlinkRequest, 0, len(rs))
	at := make([]int, 0, len(rs)) // the route of each request
	for i, r := range rs {
		req, err := routeRequest(op, r)
		if err != nil {
			errs[i] = err
			continue
		}
		reqs = append(reqs, req)
		at = append(at, i)
	}
	if len(reqs) > 0 {
		if s, err := n.batchSocket(); err != nil {
			for _, i := range at {
				errs[i] = err
			}
		} else {
			for k, err := range s.do(ctx, reqs) {
				errs[at[k]] = err
			}
			if op == routeAdd {
				n.confirmAdds(rs, errs)
			}
		}
	}
	for i, err := range errs {
		errs[i] = routeErr(err, op.verb(), rs[i], devs[i])
		if op == routeDel {
			errs[i] = notFound(errs[i])
		}
	}
	return errs
}

// confirmAdds clears the error of each add that was sent again (its first
// reply went lost) and then found its route there, if the kernel's route is
// the one asked for: the first send added it. One listing of the
// namespace's routes serves them all; when it fails, the errors stay.
func (n *namespace) confirmAdds(rs []*netlink.Route, errs []error) {
	var resent []int
	for i, err := range errs {
		var re *resentError
		if errors.As(err, &re) && errors.Is(err, unix.EEXIST) {
			resent = append(resent, i)
		}
	}
	if len(resent) == 0 {
		return
	}
	list, err := retryDump(func() ([]netlink.Route, error) {
		return n.h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return
	}
	there := make(map[string]bool, len(list))
	for i := range list {
		there[routeIdentity(&list[i])] = true
	}
	for _, i := range resent {
		if there[routeIdentity(rs[i])] {
			errs[i] = nil
		}
	}
}

// routeIdentity writes what the plugin sets of a route, as the kernel
// lists it: a route asked for and the kernel's have the same identity when
// the kernel holds the route asked for.
func routeIdentity(r *netlink.Route) string {
	table := r.Table
	if table == 0 {
		table = unix.RT_TABLE_MAIN
	}
	metric := r.Priority
	if metric == 0 && r.Dst != nil && r.Dst.IP.To4() == nil {
		metric = 1024 // IPv6's default metric
	}
	gw := ""
	if r.Gw != nil {
		gw = r.Gw.String()
	}
	return fmt.Sprintf("%v %s %d %d %d %d %d", r.Dst, gw, r.LinkIndex, metric, table, r.Protocol, r.Scope)
}
