//go:build linux

package linux

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"

	"github.com/vishvananda/netlink"
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
// the one its own Create, Update or Delete would have had. The requests
// are written straight into one buffer per namespace (see appendRouteMsg):
// no netlink.Route or request object is built for a route unless it fails.
func (h *routes) Batch(ctx context.Context, kind kv.BatchKind, ops []linuxl3.RouteBatchOp[struct{}]) {
	op, ok := batchOps[kind]
	if !ok {
		err := kv.NonRetriable(fmt.Errorf("route batch of unknown kind %v", kind))
		for i := range ops {
			ops[i].Err = err
		}
		return
	}
	// The routes of a batch mostly share an interface: its look-up is
	// kept for the next route.
	var (
		label string
		ns    *namespace
		meta  InterfaceMeta
		lerr  error
	)
	sc := scratchPool.Get().(*routeScratch)
	defer sc.put()
	first := &nsGroup[kroute]{at: sc.at[:0], items: sc.items[:0]}
	groups := groupByNamespace(len(ops), first, func(i int) (*namespace, kroute, error) {
		k := ops[i].Key
		if ns == nil && lerr == nil || k.OutgoingInterface != label {
			label = k.OutgoingInterface
			ns, meta, lerr = h.p.link(label)
		}
		if lerr != nil {
			return nil, kroute{}, lerr
		}
		return ns, h.batchRoute(k, ops[i].Value, meta), nil
	}, func(i int, err error) {
		if op == routeDel {
			err = notFound(err)
		}
		ops[i].Err = err
	})
	for _, g := range groups {
		for k, err := range g.n.routeBatch(ctx, op, g.items) {
			ops[g.at[k]].Err = err
		}
	}
	sc.at, sc.items = first.at, first.items
}

// routeScratch holds the buffers of a route batch, reused by the next
// one: a batch of a thousand routes takes some 250 kB, which, allocated
// afresh for each batch, the collector clears and takes back each time.
type routeScratch struct {
	at    []int
	items []kroute
	buf   []byte
	ends  []int
	sent  []int
	msgs  [][]byte
}

var scratchPool = sync.Pool{New: func() any { return new(routeScratch) }}

// put returns sc to the pool, emptied, unless it grew beyond what a batch
// of the scheduler's default size takes (a rare huge batch is not kept).
func (sc *routeScratch) put() {
	if cap(sc.items) > 8192 || cap(sc.buf) > 8192*routeMsgMax {
		return
	}
	clear(sc.items[:cap(sc.items)]) // the interface names
	clear(sc.msgs[:cap(sc.msgs)])
	scratchPool.Put(sc)
}

// kroute is a route as the batch path sends it: what the plugin sets of a
// route, without pointers but the interface's name, so that a batch keeps
// its routes in one array.
type kroute struct {
	dst    netip.Prefix // masked
	gw     netip.Addr   // none: the zero Addr
	oif    int
	metric uint32
	table  uint32
	proto  netlink.RouteProtocol
	scope  netlink.Scope
	dev    string // the interface's name, for errors
}

// batchRoute is the route of v over the interface m.
func (h *routes) batchRoute(k linuxl3.RouteKey, v *linuxl3.Route, m InterfaceMeta) kroute {
	r := kroute{
		dst:    k.DstNetwork.Masked(),
		oif:    m.Index,
		metric: v.GetMetric(),
		table:  v.EffectiveTable(),
		proto:  netlink.RouteProtocol(h.p.opts.routeProtocol),
		dev:    m.HostName,
	}
	if gw, err := netip.ParseAddr(v.GetGwAddr()); err == nil {
		r.gw = gw.WithZone("")
	}
	r.scope = defaultScope(r.gw.IsValid())
	if s, ok := scopes[v.GetScope()]; ok {
		r.scope = s
	}
	return r
}

// netlinkRoute is r as netlink.Handle's route calls take it.
func (r *kroute) netlinkRoute() *netlink.Route {
	a := r.dst.Addr()
	out := &netlink.Route{
		LinkIndex: r.oif,
		Dst:       &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(r.dst.Bits(), a.BitLen())},
		Priority:  int(r.metric),
		Table:     int(r.table),
		Protocol:  r.proto,
		Scope:     r.scope,
	}
	if r.gw.IsValid() {
		out.Gw = r.gw.AsSlice()
	}
	return out
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

// routeMsgMax is the most bytes appendRouteMsg writes for one route: the
// headers and five attributes, two of them IPv6 addresses.
const routeMsgMax = unix.SizeofNlMsghdr + unix.SizeofRtMsg + 2*(unix.SizeofRtAttr+16) + 3*(unix.SizeofRtAttr+4)

// appendRouteMsg appends to b the netlink request of op on r, byte for
// byte as netlink.Handle's RouteAdd, RouteReplace and RouteDel build it
// for the fields that the plugin's routes set: destination, gateway,
// table, metric, protocol, scope and outgoing interface. The ACK flag and
// the sequence number are the batch socket's to set. On an error b is
// returned as it was.
func appendRouteMsg(b []byte, op routeOp, r *kroute) ([]byte, error) {
	dst := r.dst.Addr().Unmap()
	if !dst.IsValid() {
		return b, fmt.Errorf("%w: a route without a destination", unix.EINVAL)
	}
	gw := r.gw.Unmap()
	if gw.IsValid() && gw.Is4() != dst.Is4() {
		return b, fmt.Errorf("%w: gateway %s and destination %s of different families", unix.EINVAL, r.gw, r.dst)
	}
	var typ, flags uint16
	// The rtmsg: family, dst_len, src_len, tos, table, protocol, scope,
	// type, then 4 bytes of flags.
	msg := [unix.SizeofRtMsg]byte{1: uint8(r.dst.Bits()), 4: unix.RT_TABLE_MAIN}
	switch op {
	case routeAdd:
		// ip route add: an error if a route of the same destination,
		// metric and table is there already.
		typ, flags = unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_EXCL
		msg[5], msg[7] = unix.RTPROT_BOOT, unix.RTN_UNICAST
	case routeReplace:
		typ, flags = unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE
		msg[5], msg[7] = unix.RTPROT_BOOT, unix.RTN_UNICAST
	case routeDel:
		typ = unix.RTM_DELROUTE
	default:
		return b, fmt.Errorf("%w: unknown route request %s", unix.EINVAL, op.verb())
	}
	msg[0] = unix.AF_INET6
	if dst.Is4() {
		msg[0] = unix.AF_INET
	}
	if r.table > 0 && r.table < 256 {
		msg[4] = uint8(r.table)
	} else if r.table > 0 {
		msg[4] = unix.RT_TABLE_UNSPEC // larger tables go in RTA_TABLE
	}
	if r.proto > 0 {
		msg[5] = uint8(r.proto)
	}
	msg[6] = uint8(r.scope)

	ne := binary.NativeEndian
	start := len(b)
	b = ne.AppendUint32(b, 0) // the length, set below
	b = ne.AppendUint16(b, typ)
	b = ne.AppendUint16(b, unix.NLM_F_REQUEST|flags)
	b = ne.AppendUint32(b, 0) // the sequence number: the socket's
	b = ne.AppendUint32(b, 0) // the port id: the kernel's
	b = append(b, msg[:]...)
	b = appendAddrAttr(b, unix.RTA_DST, dst)
	if gw.IsValid() {
		b = appendAddrAttr(b, unix.RTA_GATEWAY, gw)
	}
	if r.table >= 256 {
		b = appendU32Attr(b, unix.RTA_TABLE, r.table)
	}
	if r.metric > 0 {
		b = appendU32Attr(b, unix.RTA_PRIORITY, r.metric)
	}
	if r.oif > 0 {
		b = appendU32Attr(b, unix.RTA_OIF, uint32(r.oif))
	}
	ne.PutUint32(b[start:], uint32(len(b)-start))
	return b, nil
}

// appendAddrAttr appends an attribute holding the 4 or 16 bytes of a.
func appendAddrAttr(b []byte, typ uint16, a netip.Addr) []byte {
	ne := binary.NativeEndian
	if a.Is4() {
		b = ne.AppendUint16(b, unix.SizeofRtAttr+4)
		b = ne.AppendUint16(b, typ)
		v := a.As4()
		return append(b, v[:]...)
	}
	b = ne.AppendUint16(b, unix.SizeofRtAttr+16)
	b = ne.AppendUint16(b, typ)
	v := a.As16()
	return append(b, v[:]...)
}

// appendU32Attr appends an attribute holding v.
func appendU32Attr(b []byte, typ uint16, v uint32) []byte {
	ne := binary.NativeEndian
	b = ne.AppendUint16(b, unix.SizeofRtAttr+4)
	b = ne.AppendUint16(b, typ)
	return ne.AppendUint32(b, v)
}

// routeBatch carries out op on the routes rs of the namespace in batches
// (see batchSocket), and returns one error per route, written like the
// error of the route's own call: the `ip route` command and the kernel's
// error. An add whose reply went lost and that, sent again, finds its
// route there succeeds only if the kernel's route is the one asked for; a
// delete that finds its route gone is reported as not found
// (kv.ErrNotFound). The requests are written into one buffer.
func (n *namespace) routeBatch(ctx context.Context, op routeOp, rs []kroute) []error {
	sc := scratchPool.Get().(*routeScratch)
	defer sc.put()
	errs := make([]error, len(rs))
	buf := sc.buf[:0]
	ends := sc.ends[:0] // where each request ends in buf
	at := sc.sent[:0]   // the route of each request
	defer func() { sc.buf, sc.ends, sc.sent = buf, ends, at }()
	for i := range rs {
		var err error
		if buf, err = appendRouteMsg(buf, op, &rs[i]); err != nil {
			errs[i] = err
			continue
		}
		ends = append(ends, len(buf))
		at = append(at, i)
	}
	if len(at) > 0 {
		if s, err := n.batchSocket(); err != nil {
			for _, i := range at {
				errs[i] = err
			}
		} else {
			msgs := append(sc.msgs[:0], make([][]byte, len(ends))...)
			sc.msgs = msgs
			from := 0
			for k, end := range ends {
				msgs[k] = buf[from:end:end]
				from = end
			}
			for k, err := range s.send(ctx, msgs) {
				errs[at[k]] = err
			}
			if op == routeAdd {
				n.confirmAdds(rs, errs)
			}
		}
	}
	for i, err := range errs {
		if err == nil {
			continue
		}
		errs[i] = routeErr(err, op.verb(), rs[i].netlinkRoute(), rs[i].dev)
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
func (n *namespace) confirmAdds(rs []kroute, errs []error) {
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
		if there[routeIdentity(rs[i].netlinkRoute())] {
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
