//go:build linux

package linux

import (
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
	dst := k.DstNetwork.Masked()
	r := &netlink.Route{
		LinkIndex: m.Index,
		Dst:       &net.IPNet{IP: dst.Addr().AsSlice(), Mask: net.CIDRMask(dst.Bits(), dst.Addr().BitLen())},
		Priority:  int(v.GetMetric()),
		Table:     int(v.EffectiveTable()),
		Protocol:  netlink.RouteProtocol(h.p.opts.routeProtocol),
	}
	if gw, err := netip.ParseAddr(v.GetGwAddr()); err == nil {
		r.Gw = gw.AsSlice()
	}
	r.Scope = defaultScope(r.Gw != nil)
	if s, ok := scopes[v.GetScope()]; ok {
		r.Scope = s
	}
	return n, r, m.HostName, nil
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
// interfaces it knows; routes over interfaces it cannot name are left out.
func (h *routes) Retrieve(_ context.Context, correlate []linuxl3.RouteItem[struct{}]) ([]linuxl3.RouteItem[struct{}], error) {
	intended := make(map[linuxl3.RouteKey]*linuxl3.Route, len(correlate))
	for _, c := range correlate {
		intended[c.Key] = c.Value
	}
	// label of (namespace, ifindex)
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
				// An interface we did not create (obtained): its label is its name.
				if l, err := n.h.LinkByIndex(r.LinkIndex); err == nil {
					label, ok = l.Attrs().Name, true
				}
			}
			if !ok || len(r.MultiPath) > 0 {
				continue
			}
			key, v, ok := observeRoute(label, r)
			if !ok {
				continue // a route the model cannot key
			}
			normalise(v, intended[key], r)
			out = append(out, linuxl3.RouteItem[struct{}]{Key: key, Value: v, Origin: kv.OriginNB})
		}
	}
	return out, nil
}

// observeRoute is the key and value of a kernel route; ok is false for a
// destination the model cannot key.
func observeRoute(label string, r netlink.Route) (linuxl3.RouteKey, *linuxl3.Route, bool) {
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

// normalise writes back, as the intended value want (nil: none) wrote
// them, the defaults that the kernel fills in and the schema does not
// know: the default scope as SCOPE_UNSPECIFIED, IPv6's default metric 1024
// as 0. The rest (table 0 and 254, addresses however spelled) the
// generated comparison compares as equal.
func normalise(v, want *linuxl3.Route, r netlink.Route) {
	if want.GetScope() == linuxl3.Route_SCOPE_UNSPECIFIED && r.Scope == defaultScope(len(r.Gw) > 0) {
		v.Scope = linuxl3.Route_SCOPE_UNSPECIFIED
	}
	if r.Family == unix.AF_INET6 && want.GetMetric() == 0 && r.Priority == 1024 {
		v.Metric = 0
	}
}
