package vpp

import (
	"context"

	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"

	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"google.golang.org/protobuf/proto"
)

// ipScanNeighbors is the handler of vpp.l3.v1.IPScanNeighbor, the
// settings of VPP's neighbour tables: deleting it restores VPP's defaults.
type ipScanNeighbors struct{ p *Plugin }

var (
	_ vppl3.IPScanNeighborUpdater[struct{}]   = (*ipScanNeighbors)(nil)
	_ vppl3.IPScanNeighborRetriever[struct{}] = (*ipScanNeighbors)(nil)
)

// families are the neighbour tables, with the field of each.
var families = []struct {
	af    ip_types.AddressFamily
	limit func(*vppl3.IPScanNeighbor) *vppl3.IPScanNeighbor_Limits
}{{ip_types.ADDRESS_IP4, (*vppl3.IPScanNeighbor).GetIp4}, {ip_types.ADDRESS_IP6, (*vppl3.IPScanNeighbor).GetIp6}}

// Create sets the tables' settings.
func (h *ipScanNeighbors) Create(ctx context.Context, k vppl3.IPScanNeighborKey, v *vppl3.IPScanNeighbor) (struct{}, error) {
	return h.Update(ctx, k, nil, v, struct{}{})
}

// Update sets the settings of each table, those left out to VPP's
// defaults.
// vppctl set ip neighbor-config ip4|ip6 limit N age A [recycle|norecycle]
func (h *ipScanNeighbors) Update(ctx context.Context, _ vppl3.IPScanNeighborKey, _, v *vppl3.IPScanNeighbor, _ struct{}) (struct{}, error) {
	c := ip_neighbor.NewServiceClient(h.p.conn)
	for _, f := range families {
		l := f.limit(v)
		_, err := c.IPNeighborConfig(ctx, &ip_neighbor.IPNeighborConfig{Af: f.af, MaxNumber: l.EffectiveMaxNumber(), MaxAge: l.GetMaxAge(), Recycle: l.GetRecycle()})
		if err != nil {
			return struct{}{}, vppErr("ip_neighbor_config", err)
		}
	}
	return struct{}{}, nil
}

// Delete restores VPP's defaults.
func (h *ipScanNeighbors) Delete(ctx context.Context, k vppl3.IPScanNeighborKey, _ *vppl3.IPScanNeighbor, _ struct{}) error {
	_, err := h.Update(ctx, k, nil, &vppl3.IPScanNeighbor{}, struct{}{})
	return err
}

// Retrieve reads the tables' settings, a family with VPP's defaults left
// out: the value is ours when wanted, obtained when VPP's settings are
// not the defaults, and not reported otherwise.
func (h *ipScanNeighbors) Retrieve(ctx context.Context, correlate []vppl3.IPScanNeighborItem[struct{}]) ([]vppl3.IPScanNeighborItem[struct{}], error) {
	got := &vppl3.IPScanNeighbor{}
	c := ip_neighbor.NewServiceClient(h.p.conn)
	for _, f := range families {
		r, err := c.IPNeighborConfigGet(ctx, &ip_neighbor.IPNeighborConfigGet{Af: f.af})
		if err != nil {
			return nil, vppErr("ip_neighbor_config_get", err)
		}
		l := &vppl3.IPScanNeighbor_Limits{MaxNumber: r.MaxNumber, MaxAge: r.MaxAge, Recycle: r.Recycle}
		if l.MaxNumber == vppl3.IPScanNeighbor_LimitsMaxNumberDefault && !l.Recycle && l.MaxAge == 0 {
			continue
		}
		if f.af == ip_types.ADDRESS_IP4 {
			got.Ip4 = l
		} else {
			got.Ip6 = l
		}
	}
	if len(correlate) == 0 && proto.Size(got) == 0 {
		return nil, nil
	}
	return []vppl3.IPScanNeighborItem[struct{}]{{Value: got, Origin: origin(len(correlate) > 0)}}, nil
}
