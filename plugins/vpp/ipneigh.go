package vpp

import (
	"context"

	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"

	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
)

// ipScanNeighbors is the handler of vpp.l3.v1.IPScanNeighbor, the
// settings of VPP's neighbour tables: deleting it restores VPP's defaults.
// It has Update and Retrieve (the descriptor's constructor checks their
// signatures).
type ipScanNeighbors struct{ p *Plugin }

// neighborTable is one of VPP's neighbour tables, with the field of a
// value that holds its settings.
type neighborTable struct {
	af ip_types.AddressFamily
	l  **vppl3.IPScanNeighbor_Limits
}

func neighborTables(v *vppl3.IPScanNeighbor) []neighborTable {
	return []neighborTable{{ip_types.ADDRESS_IP4, &v.Ip4}, {ip_types.ADDRESS_IP6, &v.Ip6}}
}

// Create sets the tables' settings.
func (h *ipScanNeighbors) Create(ctx context.Context, k vppl3.IPScanNeighborKey, v *vppl3.IPScanNeighbor) (struct{}, error) {
	return h.Update(ctx, k, nil, v, struct{}{})
}

// Update sets the settings of each table, those left out to VPP's
// defaults.
// vppctl set ip neighbor-config ip4|ip6 limit N age A [recycle|norecycle]
func (h *ipScanNeighbors) Update(ctx context.Context, _ vppl3.IPScanNeighborKey, _, v *vppl3.IPScanNeighbor, _ struct{}) (struct{}, error) {
	for _, t := range neighborTables(v) {
		l := *t.l
		req := &ip_neighbor.IPNeighborConfig{Af: t.af, MaxNumber: l.EffectiveMaxNumber(), MaxAge: l.GetMaxAge(), Recycle: l.GetRecycle()}
		if _, err := ip_neighbor.NewServiceClient(h.p.conn).IPNeighborConfig(ctx, req); err != nil {
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

// Retrieve reads the tables' settings: the value is ours when wanted,
// obtained when not and VPP's settings are not the defaults (the schema's
// comparison with an empty value says), and not reported otherwise.
func (h *ipScanNeighbors) Retrieve(ctx context.Context, correlate []vppl3.IPScanNeighborItem[struct{}]) ([]vppl3.IPScanNeighborItem[struct{}], error) {
	got := &vppl3.IPScanNeighbor{}
	for _, t := range neighborTables(got) {
		r, err := ip_neighbor.NewServiceClient(h.p.conn).IPNeighborConfigGet(ctx, &ip_neighbor.IPNeighborConfigGet{Af: t.af})
		if err != nil {
			return nil, vppErr("ip_neighbor_config_get", err)
		}
		*t.l = &vppl3.IPScanNeighbor_Limits{MaxNumber: r.MaxNumber, MaxAge: r.MaxAge, Recycle: r.Recycle}
	}
	if len(correlate) == 0 && vppl3.IPScanNeighborSpec[struct{}]().Equivalent("", got, &vppl3.IPScanNeighbor{}) {
		return nil, nil
	}
	return []vppl3.IPScanNeighborItem[struct{}]{{Value: got, Origin: origin(len(correlate) > 0)}}, nil
}
