//go:build linux

package linux

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// routes is the handler of linux.l3.v1.Route. Its routes carry the
// plugin's protocol number: that is how Retrieve tells them from the
// host's own.
type routes struct{ p *Plugin }

var (
	_ linuxl3.RouteHandler[struct{}]   = (*routes)(nil)
	_ linuxl3.RouteUpdater[struct{}]   = (*routes)(nil)
	_ linuxl3.RouteRetriever[struct{}] = (*routes)(nil)
	_ linuxl3.RouteValidator           = (*routes)(nil)
)

var scopes = map[linuxl3.Route_Scope]netlink.Scope{
	linuxl3.Route_SCOPE_GLOBAL: netlink.SCOPE_UNIVERSE,
	linuxl3.Route_SCOPE_SITE:   netlink.SCOPE_SITE,
	linuxl3.Route_SCOPE_LINK:   netlink.SCOPE_LINK,
	linuxl3.Route_SCOPE_HOST:   netlink.SCOPE_HOST,
}

// defaultScope is what SCOPE_UNSPECIFIED means for a route.
func defaultScope(hasGateway bool) netlink.Scope {
	if hasGateway {
		return netlink.SCOPE_UNIVERSE
	}
	return netlink.SCOPE_LINK
}

// kernelRoute builds the netlink route of v in its interface's namespace.
func (h *routes) kernelRoute(k linuxl3.RouteKey, v *linuxl3.Route) (*namespace, *netlink.Route, string, error) {
	n, m, err := h.p.link(k.OutgoingInterface)
	if err != nil {
		return nil, nil, "", err
	}
	r := h.batchRoute(k, v, m)
	return n, r.netlinkRoute(), m.HostName, nil
}

// routeCmd writes a route as the arguments of `ip route`; built only for
// errors.
func routeCmd(r *netlink.Route, dev string) string {
	var cmd strings.Builder
	cmd.WriteString(r.Dst.String())
	if r.Gw != nil {
		cmd.WriteString(" via " + r.Gw.String())
	}
	cmd.WriteString(" dev " + dev)
	if r.Priority != 0 {
		fmt.Fprintf(&cmd, " metric %d", r.Priority)
	}
	if r.Table != unix.RT_TABLE_MAIN {
		fmt.Fprintf(&cmd, " table %d", r.Table)
	}
	fmt.Fprintf(&cmd, " scope %s proto %d", r.Scope, r.Protocol)
	return cmd.String()
}

// routeErr wraps the error of a route call, if any, with its command.
func routeErr(err error, verb string, r *netlink.Route, dev string) error {
	if err == nil {
		return nil
	}
	return kernelErr(err, "ip route %s %s", verb, routeCmd(r, dev))
}

// Create adds the route. A route of the same destination, table and metric
// that is there already (the host's, say) is an error: it is not ours.
func (h *routes) Create(_ context.Context, k linuxl3.RouteKey, v *linuxl3.Route) (struct{}, error) {
	n, r, dev, err := h.kernelRoute(k, v)
	if err != nil {
		return struct{}{}, err
	}
	// ip route add DST via GW dev NAME ...
	return struct{}{}, routeErr(n.h.RouteAdd(r), "add", r, dev)
}

// Update replaces the route in place (a new gateway or scope); the metric
// and table identify the route, so changing them re-creates it.
func (h *routes) Update(_ context.Context, k linuxl3.RouteKey, _, v *linuxl3.Route, _ struct{}) (struct{}, error) {
	n, r, dev, err := h.kernelRoute(k, v)
	if err != nil {
		return struct{}{}, err
	}
	// ip route replace DST via GW dev NAME ...
	return struct{}{}, routeErr(n.h.RouteReplace(r), "replace", r, dev)
}

// Delete removes the route; the kernel matches our protocol number, so a
// route of the host's with the same destination is never removed.
func (h *routes) Delete(_ context.Context, k linuxl3.RouteKey, v *linuxl3.Route, _ struct{}) error {
	n, r, dev, err := h.kernelRoute(k, v)
	if err != nil {
		return notFound(err)
	}
	// ip route del DST via GW dev NAME ...
	return notFound(routeErr(n.h.RouteDel(r), "del", r, dev))
}

// Retrieve reports the routes, in all tables, that carry the plugin's
// protocol number, in the plugin's namespace and in those of the
// interfaces it knows; routes over interfaces it cannot name, and
// multipath routes, are left out. It reads one dump per namespace
// straight from the kernel's messages. The protocol number says a route
// may be ours, not that it is: a route is reported with an unknown origin,
// and the scheduler, which knows what it applied, intends or remembers
// from an agent's record, takes those as ours and any other as another
// program's (OBTAINED), with no set of keys built here. With
// WithClaimedRouteProtocol every route with the number is the plugin's
// (FROM_NB), and those nothing wants are deleted.
func (h *routes) Retrieve(_ context.Context, correlate []linuxl3.RouteItem[struct{}]) ([]linuxl3.RouteItem[struct{}], error) {
	// Only an intended scope or metric changes how a route is normalised:
	// the others normalise as no intended value does.
	shaping := map[linuxl3.RouteKey]*linuxl3.Route{}
	for _, c := range correlate {
		if c.Value.GetScope() != linuxl3.Route_SCOPE_UNSPECIFIED || c.Value.GetMetric() != 0 {
			shaping[c.Key] = c.Value
		} else {
			delete(shaping, c.Key)
		}
	}
	// label by ifindex, by namespace
	labels := map[string]map[uint32]string{"": {}}
	ifaces := h.p.Interfaces()
	for _, l := range ifaces.Labels() {
		if m, ok := ifaces.Get(l); ok {
			if labels[m.Namespace] == nil {
				labels[m.Namespace] = map[uint32]string{}
			}
			labels[m.Namespace][uint32(m.Index)] = l
		}
	}
	origin := kv.OriginUnknown
	if h.p.opts.claimRoutes {
		origin = kv.OriginNB
	}
	out := make([]linuxl3.RouteItem[struct{}], 0, len(correlate))
	for space, byIndex := range labels {
		n, err := h.p.ns.get(space)
		if err != nil {
			if isGone(err) {
				continue
			}
			return nil, err
		}
		if out, err = h.retrieveIn(n, byIndex, shaping, origin, out); err != nil {
			return nil, kernelErr(err, "ip route show table all proto %d (namespace %s)", h.p.opts.routeProtocol, nsName(n))
		}
	}
	return out, nil
}

// retrieveIn appends to out the routes of namespace n that Retrieve
// reports, labelled by byIndex, and normalised as the intended values
// shaping (by key) ask for, with origin.
func (h *routes) retrieveIn(n *namespace, byIndex map[uint32]string, shaping map[linuxl3.RouteKey]*linuxl3.Route, origin kv.Origin, out []linuxl3.RouteItem[struct{}]) ([]linuxl3.RouteItem[struct{}], error) {
	var (
		unknown = map[uint32]bool{} // indexes without a label
		alloc   routeAlloc
		from    = len(out)
	)
	_, err := retryDump(func() (struct{}, error) {
		out = out[:from] // an interrupted dump's routes go
		alloc.pending = alloc.pending[:0]
		// ip route show table all proto N
		err := n.dumpRoutes(uint8(h.p.opts.routeProtocol), func(r *routeMsg) {
			if r.multipath {
				return
			}
			label, ok := byIndex[r.oif]
			if !ok && n.name == "" && !unknown[r.oif] {
				// An interface we did not create (obtained): its label is its name.
				if l, err := n.h.LinkByIndex(int(r.oif)); err == nil {
					label, ok = l.Attrs().Name, true
					byIndex[r.oif] = label
				} else {
					unknown[r.oif] = true
				}
			}
			if !ok {
				return
			}
			key, v, ok := observeRoute(label, r, &alloc)
			if !ok {
				return // a route the model cannot key
			}
			normalise(v, shaping[key], r)
			out = append(out, linuxl3.RouteItem[struct{}]{Key: key, Value: v, Origin: origin})
		})
		alloc.flush()
		return struct{}{}, err
	})
	return out, err
}

// routeAlloc allocates the values of retrieved routes a few at a time:
// a dump makes one per route, up to millions. A value kept (a route
// that differs from the intended one) keeps its few neighbours.
type routeAlloc struct {
	values []linuxl3.Route
	// The destinations' texts, written after each other and made strings
	// of by flush, one per few values, which then point into it.
	text    []byte
	pending []pendingDst
	// The last gateway's text: a namespace's routes have few gateways.
	gw     []byte
	gwText string
}

// routeChunk is how many values and texts routeAlloc allocates at once.
const routeChunk = 32

type pendingDst struct {
	v   *linuxl3.Route
	end int // of its text
}

// value returns a zero route value.
func (a *routeAlloc) value() *linuxl3.Route {
	if len(a.values) == 0 {
		a.values = make([]linuxl3.Route, routeChunk)
	}
	v := &a.values[0]
	a.values = a.values[1:]
	return v
}

// setDst sets the DstNetwork of v to the text of dst, on the next flush.
func (a *routeAlloc) setDst(v *linuxl3.Route, dst netip.Prefix) {
	a.text = dst.AppendTo(a.text)
	a.pending = append(a.pending, pendingDst{v, len(a.text)})
	if len(a.pending) == routeChunk {
		a.flush()
	}
}

// flush sets the pending destinations.
func (a *routeAlloc) flush() {
	text, start := string(a.text), 0
	for _, p := range a.pending {
		p.v.DstNetwork = text[start:p.end]
		start = p.end
	}
	a.text, a.pending = a.text[:0], a.pending[:0]
}

// gateway is the text of a gateway address, as net.IP writes it.
func (a *routeAlloc) gateway(b []byte) string {
	if a.gw == nil || !bytes.Equal(b, a.gw) {
		a.gw = append(a.gw[:0:0], b...)
		a.gwText = ipText(b)
	}
	return a.gwText
}

// ipText writes an address of 4 or 16 bytes as net.IP does: an
// IPv4-mapped IPv6 address as IPv4.
func ipText(b []byte) string {
	if a, ok := netip.AddrFromSlice(b); ok {
		return a.Unmap().String()
	}
	return net.IP(b).String()
}

// observeRoute is the key and value of a kernel route; ok is false for a
// destination the model cannot key.
func observeRoute(label string, r *routeMsg, alloc *routeAlloc) (linuxl3.RouteKey, *linuxl3.Route, bool) {
	var dst netip.Prefix
	switch {
	case r.hasDst:
		a, ok := netip.AddrFromSlice(r.dst)
		if !ok {
			return linuxl3.RouteKey{}, nil, false
		}
		bits := int(r.dstLen)
		if bits > 8*len(r.dst) {
			bits = 0 // as a mask of more bits than the address has
		}
		dst = netip.PrefixFrom(a.Unmap(), bits)
	case r.family == unix.AF_INET6:
		dst = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	default:
		dst = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	}
	key := linuxl3.RouteKey{OutgoingInterface: label, DstNetwork: dst.Masked()}
	v := alloc.value()
	v.OutgoingInterface, v.Metric, v.Table = label, r.priority, r.table
	alloc.setDst(v, dst) // dst.String(), when flushed
	if len(r.gw) > 0 {
		v.GwAddr = alloc.gateway(r.gw)
	}
	v.Scope = modelScope(netlink.Scope(r.scope))
	return key, v, true
}

// modelScope is the model's scope of a kernel scope; SCOPE_UNSPECIFIED
// for one the model does not name.
func modelScope(s netlink.Scope) linuxl3.Route_Scope {
	switch s {
	case netlink.SCOPE_UNIVERSE:
		return linuxl3.Route_SCOPE_GLOBAL
	case netlink.SCOPE_SITE:
		return linuxl3.Route_SCOPE_SITE
	case netlink.SCOPE_LINK:
		return linuxl3.Route_SCOPE_LINK
	case netlink.SCOPE_HOST:
		return linuxl3.Route_SCOPE_HOST
	}
	return linuxl3.Route_SCOPE_UNSPECIFIED
}

// normalise writes back, as the intended value want (nil: none) wrote
// them, the defaults that the kernel fills in and the schema does not
// know: the default scope as SCOPE_UNSPECIFIED, IPv6's default metric 1024
// as 0. The rest (table 0 and 254, addresses however spelled) the
// generated comparison compares as equal.
func normalise(v, want *linuxl3.Route, r *routeMsg) {
	if want.GetScope() == linuxl3.Route_SCOPE_UNSPECIFIED && netlink.Scope(r.scope) == defaultScope(len(r.gw) > 0) {
		v.Scope = linuxl3.Route_SCOPE_UNSPECIFIED
	}
	if r.family == unix.AF_INET6 && want.GetMetric() == 0 && r.priority == 1024 {
		v.Metric = 0
	}
}

// Validate checks what the schema cannot: that the gateway is of the
// destination's family. The gateway is written as the route's
// RTA_GATEWAY, which the kernel takes only in the route's own family (it
// answers EINVAL), and the dependency "gateway reachable" would wait for
// an address of the other family forever.
func (h *routes) Validate(k linuxl3.RouteKey, v *linuxl3.Route) error {
	gw, err := netip.ParseAddr(v.GetGwAddr())
	if err != nil || !k.DstNetwork.IsValid() {
		return nil // no gateway (the schema checks its format)
	}
	if gw.Unmap().Is4() != k.DstNetwork.Addr().Unmap().Is4() {
		return (*kv.InvalidValueError)(nil).Add("gw_addr", "gateway %s is not of the family of the destination %s", gw, k.DstNetwork).OrNil()
	}
	return nil
}
