package vpp

import (
	"context"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"

	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// routes is the handler of vpp.l3.v1.Route: one path of a route, added
// as a path of the prefix (multipath), so that routes to one prefix
// through different gateways coexist.
type routes struct{ p *Plugin }

var (
	_ vppl3.RouteRetriever[struct{}] = (*routes)(nil)
	_ vppl3.RouteBatcher[struct{}]   = (*routes)(nil)
)

// Create adds the path.
// vppctl ip route add DST table VRF via GW [NAME] weight W preference P
func (h *routes) Create(ctx context.Context, k vppl3.RouteKey, v *vppl3.Route) (struct{}, error) {
	return struct{}{}, apply(ctx, h.p, h.request, k, v, true)
}

// Delete removes the path.
// vppctl ip route del DST table VRF via GW [NAME]
func (h *routes) Delete(ctx context.Context, k vppl3.RouteKey, v *vppl3.Route, _ struct{}) error {
	return apply(ctx, h.p, h.request, k, v, false)
}

// Batch adds or removes many paths, their requests sent in a stream.
func (h *routes) Batch(ctx context.Context, kind kv.BatchKind, ops []vppl3.RouteBatchOp[struct{}]) {
	batch(ctx, h.p, kind, ops, h.request)
}

// request builds the ip_route_add_del that adds or removes the path.
func (h *routes) request(k vppl3.RouteKey, v *vppl3.Route, add bool) (api.Message, error) {
	path := fib_types.FibPath{SwIfIndex: ^uint32(0), TableID: k.VrfId, Weight: uint8(v.EffectiveWeight()), Preference: uint8(v.GetPreference())}
	if k.NextHopAddr.Is6() {
		path.Proto = fib_types.FIB_API_PATH_NH_PROTO_IP6
		path.Nh.Address.SetIP6(k.NextHopAddr.As16())
	} else if k.NextHopAddr.IsValid() {
		path.Nh.Address.SetIP4(k.NextHopAddr.As4())
	} else if k.DstNetwork.Addr().Is6() {
		path.Proto = fib_types.FIB_API_PATH_NH_PROTO_IP6
	}
	if v.GetOutgoingInterface() != "" {
		idx, err := h.p.swIfIndex(v.GetOutgoingInterface())
		if err != nil {
			return nil, err
		}
		path.SwIfIndex = idx
	}
	return &ip.IPRouteAddDel{IsAdd: add, IsMultipath: true, Route: ip.IPRoute{
		TableID: k.VrfId, Prefix: prefix(k.DstNetwork), NPaths: 1, Paths: []fib_types.FibPath{path},
	}}, nil
}

// userSources name the FIB sources (fib_source_dump) of routes that
// someone added: through the API (this plugin, or another client) and by
// hand (vppctl ip route add). VPP adds the others on its own: each table's
// special and default routes, the connected and local routes of interface
// addresses, the /32s of resolved neighbours...
var userSources = []string{"API", "CLI"}

// Retrieve dumps the routes of every table and reports each path of a
// route whose best source is a user's: correlated ones as ours, the
// others (made by hand, or by another client) obtained. VPP's own routes
// are left out by their source, and so are paths that the model cannot
// hold (drop, local, unreachable...).
func (h *routes) Retrieve(ctx context.Context, correlate []vppl3.RouteItem[struct{}]) ([]vppl3.RouteItem[struct{}], error) {
	srcs, err := dump[*fib.FibSourceDetails]("fib_source_dump")(fib.NewServiceClient(h.p.conn).FibSourceDump(ctx, &fib.FibSourceDump{}))
	if err != nil {
		return nil, err
	}
	user := map[uint8]bool{}
	for _, s := range srcs {
		user[s.Src.ID] = slices.Contains(userSources, s.Src.Name)
	}
	c := ip.NewServiceClient(h.p.conn)
	tables, err := dump[*ip.IPTableDetails]("ip_table_dump")(c.IPTableDump(ctx, &ip.IPTableDump{}))
	if err != nil {
		return nil, err
	}
	ours := map[vppl3.RouteKey]bool{}
	for _, it := range correlate {
		ours[it.Key] = true
	}
	names := h.p.interfaceNames()
	var out []vppl3.RouteItem[struct{}]
	for _, t := range tables {
		id := t.Table.TableID
		list, err := dump[*ip.IPRouteV2Details]("ip_route_v2_dump")(c.IPRouteV2Dump(ctx, &ip.IPRouteV2Dump{Table: ip.IPTable{TableID: id, IsIP6: t.Table.IsIP6}}))
		if err != nil {
			return nil, err
		}
		for _, d := range list {
			if !user[d.Route.Src] {
				continue
			}
			dst := prefixOf(d.Route.Prefix)
			for _, p := range d.Route.Paths {
				if p.Type != fib_types.FIB_API_PATH_TYPE_NORMAL {
					continue
				}
				nh := ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: p.Nh.Address}
				if p.Proto == fib_types.FIB_API_PATH_NH_PROTO_IP6 {
					nh.Af = ip_types.ADDRESS_IP6
				}
				k := vppl3.RouteKey{VrfId: id, DstNetwork: dst, NextHopAddr: addrOf(nh)}
				got := &vppl3.Route{VrfId: id, DstNetwork: dst.String(), NextHopAddr: k.NextHopAddr.String(), OutgoingInterface: names[p.SwIfIndex], Weight: uint32(p.Weight), Preference: uint32(p.Preference)}
				out = append(out, vppl3.RouteItem[struct{}]{Key: k, Value: got, Origin: origin(ours[k])})
			}
		}
	}
	return out, nil
}
