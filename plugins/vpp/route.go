package vpp

import (
	"context"
	"net/netip"

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

var _ vppl3.RouteRetriever[struct{}] = (*routes)(nil)

// Create adds the path.
// vppctl ip route add DST table VRF via GW [NAME] weight W preference P
func (h *routes) Create(ctx context.Context, k vppl3.RouteKey, v *vppl3.Route) (struct{}, error) {
	return struct{}{}, h.addDel(ctx, k, v, true)
}

// Delete removes the path.
func (h *routes) Delete(ctx context.Context, k vppl3.RouteKey, v *vppl3.Route, _ struct{}) error {
	return h.addDel(ctx, k, v, false)
}

func (h *routes) addDel(ctx context.Context, k vppl3.RouteKey, v *vppl3.Route, add bool) error {
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
			return err
		}
		path.SwIfIndex = idx
	}
	_, err := ip.NewServiceClient(h.p.conn).IPRouteAddDel(ctx, &ip.IPRouteAddDel{IsAdd: add, IsMultipath: true, Route: ip.IPRoute{
		TableID: k.VrfId, Prefix: prefix(k.DstNetwork), NPaths: 1, Paths: []fib_types.FibPath{path},
	}})
	return vppErr("ip_route_add_del", err)
}

// Retrieve dumps the tables of the correlated routes and reports the
// correlated paths found. VPP's own routes (connected, local, special)
// are not told apart from routes added by hand: neither is reported.
func (h *routes) Retrieve(ctx context.Context, correlate []vppl3.RouteItem[struct{}]) ([]vppl3.RouteItem[struct{}], error) {
	type table struct {
		id uint32
		v6 bool
	}
	want := map[vppl3.RouteKey]bool{}
	tables := map[table]bool{}
	for _, c := range correlate {
		want[c.Key] = true
		tables[table{c.Key.VrfId, c.Key.DstNetwork.Addr().Is6()}] = true
	}
	names := h.p.interfaceNames()
	var out []vppl3.RouteItem[struct{}]
	for t := range tables {
		list, err := dump[*ip.IPRouteDetails]("ip_route_dump")(ip.NewServiceClient(h.p.conn).IPRouteDump(ctx, &ip.IPRouteDump{Table: ip.IPTable{TableID: t.id, IsIP6: t.v6}}))
		if err != nil {
			return nil, err
		}
		for _, d := range list {
			dst := prefixOf(d.Route.Prefix)
			for _, p := range d.Route.Paths {
				var nh netip.Addr
				if p.Proto == fib_types.FIB_API_PATH_NH_PROTO_IP6 {
					nh = addrOf(ip_types.Address{Af: ip_types.ADDRESS_IP6, Un: p.Nh.Address})
				} else {
					nh = addrOf(ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: p.Nh.Address})
				}
				k := vppl3.RouteKey{VrfId: t.id, DstNetwork: dst, NextHopAddr: nh}
				if !want[k] {
					continue
				}
				got := &vppl3.Route{VrfId: t.id, DstNetwork: dst.String(), NextHopAddr: nh.String(), OutgoingInterface: names[p.SwIfIndex], Weight: uint32(p.Weight), Preference: uint32(p.Preference)}
				out = append(out, vppl3.RouteItem[struct{}]{Key: k, Value: got, Origin: kv.OriginNB})
			}
		}
	}
	return out, nil
}
