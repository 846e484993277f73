package vpp

import (
	"context"

	"go.fd.io/govpp/binapi/flowprobe"
	"go.fd.io/govpp/binapi/interface_types"

	vppipfix "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipfix/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// flowProbeParams is the handler of vpp.ipfix.v1.FlowProbeParams, the
// global value.
type flowProbeParams struct{ p *Plugin }

var _ vppipfix.FlowProbeParamsUpdater[struct{}] = (*flowProbeParams)(nil)
var _ vppipfix.FlowProbeParamsRetriever[struct{}] = (*flowProbeParams)(nil)

// Create sets the settings.
// vppctl flowprobe params record l3 l4 active 15 passive 120
func (h *flowProbeParams) Create(ctx context.Context, k vppipfix.FlowProbeParamsKey, v *vppipfix.FlowProbeParams) (struct{}, error) {
	return h.Update(ctx, k, nil, v, struct{}{})
}

// Update sets them anew, in place (VPP refuses while flowprobe is
// enabled on an interface).
func (h *flowProbeParams) Update(ctx context.Context, _ vppipfix.FlowProbeParamsKey, _, v *vppipfix.FlowProbeParams, _ struct{}) (struct{}, error) {
	flags := flowprobe.FlowprobeRecordFlags(u8(v.GetRecordL2()) | u8(v.GetRecordL3())<<1 | u8(v.GetRecordL4())<<2) // FLOWPROBE_RECORD_FLAG_L2, L3, L4
	_, err := flowprobe.NewServiceClient(h.p.conn).FlowprobeSetParams(ctx, &flowprobe.FlowprobeSetParams{RecordFlags: flags, ActiveTimer: v.EffectiveActiveTimer(), PassiveTimer: v.EffectivePassiveTimer()})
	return struct{}{}, vppErr("flowprobe_set_params", err)
}

// Delete puts VPP's defaults back.
func (h *flowProbeParams) Delete(ctx context.Context, k vppipfix.FlowProbeParamsKey, _ *vppipfix.FlowProbeParams, _ struct{}) error {
	_, err := h.Update(ctx, k, nil, &vppipfix.FlowProbeParams{}, struct{}{})
	return err
}

// Retrieve reads the settings back for a correlated value: VPP always
// has settings, so none is obtained.
func (h *flowProbeParams) Retrieve(ctx context.Context, correlate []vppipfix.FlowProbeParamsItem[struct{}]) ([]vppipfix.FlowProbeParamsItem[struct{}], error) {
	if len(correlate) == 0 {
		return nil, nil
	}
	r, err := flowprobe.NewServiceClient(h.p.conn).FlowprobeGetParams(ctx, &flowprobe.FlowprobeGetParams{})
	if err != nil {
		return nil, vppErr("flowprobe_get_params", err)
	}
	v := &vppipfix.FlowProbeParams{ActiveTimer: r.ActiveTimer, PassiveTimer: r.PassiveTimer, RecordL2: r.RecordFlags&flowprobe.FLOWPROBE_RECORD_FLAG_L2 != 0,
		RecordL3: r.RecordFlags&flowprobe.FLOWPROBE_RECORD_FLAG_L3 != 0, RecordL4: r.RecordFlags&flowprobe.FLOWPROBE_RECORD_FLAG_L4 != 0}
	return []vppipfix.FlowProbeParamsItem[struct{}]{{Key: correlate[0].Key, Value: v, Origin: kv.OriginNB}}, nil
}

// flowProbeFeatures is the handler of vpp.ipfix.v1.FlowProbeFeature. It
// has no Update: another kind or direction re-creates it.
type flowProbeFeatures struct{ p *Plugin }

var _ vppipfix.FlowProbeFeatureRetriever[struct{}] = (*flowProbeFeatures)(nil)

// Create enables flowprobe on the interface.
// vppctl flowprobe feature add-del NAME ip4|ip6|l2 rx|tx|both
func (h *flowProbeFeatures) Create(ctx context.Context, k vppipfix.FlowProbeFeatureKey, v *vppipfix.FlowProbeFeature) (struct{}, error) {
	return struct{}{}, h.addDel(ctx, k, v, true)
}

// Delete disables it.
// vppctl flowprobe feature add-del NAME ip4|ip6|l2 rx|tx|both disable
func (h *flowProbeFeatures) Delete(ctx context.Context, k vppipfix.FlowProbeFeatureKey, v *vppipfix.FlowProbeFeature, _ struct{}) error {
	return h.addDel(ctx, k, v, false)
}

func (h *flowProbeFeatures) addDel(ctx context.Context, k vppipfix.FlowProbeFeatureKey, v *vppipfix.FlowProbeFeature, add bool) error {
	idx, err := h.p.swIfIndex(k.Interface)
	if err != nil {
		return err
	}
	_, err = flowprobe.NewServiceClient(h.p.conn).FlowprobeInterfaceAddDel(ctx, &flowprobe.FlowprobeInterfaceAddDel{IsAdd: add, SwIfIndex: interface_types.InterfaceIndex(idx),
		Which: flowprobe.FlowprobeWhich(v.GetWhich()), Direction: flowprobe.FlowprobeDirection(v.GetDirection())})
	return vppErr("flowprobe_interface_add_del", err)
}

// Retrieve dumps the interfaces flowprobe is enabled on, those it can
// name: correlated ones are ours, the others obtained.
func (h *flowProbeFeatures) Retrieve(ctx context.Context, correlate []vppipfix.FlowProbeFeatureItem[struct{}]) ([]vppipfix.FlowProbeFeatureItem[struct{}], error) {
	list, err := dump[*flowprobe.FlowprobeInterfaceDetails]("flowprobe_interface_dump")(flowprobe.NewServiceClient(h.p.conn).FlowprobeInterfaceDump(ctx, &flowprobe.FlowprobeInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}))
	if err != nil {
		return nil, err
	}
	ours := map[vppipfix.FlowProbeFeatureKey]bool{}
	for _, it := range correlate {
		ours[it.Key] = true
	}
	names := h.p.interfaceNames()
	var out []vppipfix.FlowProbeFeatureItem[struct{}]
	for _, d := range list {
		if k := (vppipfix.FlowProbeFeatureKey{Interface: names[uint32(d.SwIfIndex)]}); k.Interface != "" {
			v := &vppipfix.FlowProbeFeature{Interface: k.Interface, Which: vppipfix.FlowProbeFeature_Which(d.Which), Direction: vppipfix.FlowProbeFeature_Direction(d.Direction)}
			out = append(out, vppipfix.FlowProbeFeatureItem[struct{}]{Key: k, Value: v, Origin: origin(ours[k])})
		}
	}
	return out, nil
}
