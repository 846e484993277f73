package vpp

import (
	"context"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/span"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
)

// spans is the handler of vpp.interfaces.v1.Span. It has no Update:
// another direction or is_l2 re-creates the mirror.
type spans struct{ p *Plugin }

var _ vppinterfaces.SpanRetriever[struct{}] = (*spans)(nil)

// Create mirrors the packets of the direction to interface_to.
// vppctl set interface span FROM destination TO rx|tx|both [l2]
func (h *spans) Create(ctx context.Context, k vppinterfaces.SpanKey, v *vppinterfaces.Span) (struct{}, error) {
	return struct{}{}, h.set(ctx, k, span.SpanState(v.GetDirection()), v.GetIsL2())
}

// Delete stops the mirror.
// vppctl set interface span FROM destination TO disable [l2]
func (h *spans) Delete(ctx context.Context, k vppinterfaces.SpanKey, v *vppinterfaces.Span, _ struct{}) error {
	return h.set(ctx, k, span.SPAN_STATE_API_DISABLED, v.GetIsL2())
}

func (h *spans) set(ctx context.Context, k vppinterfaces.SpanKey, state span.SpanState, l2 bool) error {
	from, err := h.p.swIfIndex(k.InterfaceFrom)
	if err != nil {
		return err
	}
	to, err := h.p.swIfIndex(k.InterfaceTo)
	if err != nil {
		return err
	}
	_, err = span.NewServiceClient(h.p.conn).SwInterfaceSpanEnableDisable(ctx, &span.SwInterfaceSpanEnableDisable{
		SwIfIndexFrom: interface_types.InterfaceIndex(from), SwIfIndexTo: interface_types.InterfaceIndex(to), State: state, IsL2: l2,
	})
	return vppErr("sw_interface_span_enable_disable", err)
}

// Retrieve dumps the device and the L2 mirrors between interfaces it can
// name: correlated ones are ours, the others obtained. Where a pair has
// both, the one of the correlated value's kind is reported.
func (h *spans) Retrieve(ctx context.Context, correlate []vppinterfaces.SpanItem[struct{}]) ([]vppinterfaces.SpanItem[struct{}], error) {
	var list []*span.SwInterfaceSpanDetails
	for _, l2 := range []bool{false, true} {
		got, err := dump[*span.SwInterfaceSpanDetails]("sw_interface_span_dump")(span.NewServiceClient(h.p.conn).SwInterfaceSpanDump(ctx, &span.SwInterfaceSpanDump{IsL2: l2}))
		if err != nil {
			return nil, err
		}
		list = append(list, got...)
	}
	ours := map[vppinterfaces.SpanKey]*vppinterfaces.Span{}
	for _, it := range correlate {
		ours[it.Key] = it.Value
	}
	names := h.p.interfaceNames()
	var out []vppinterfaces.SpanItem[struct{}]
	at := map[vppinterfaces.SpanKey]int{}
	for _, d := range list {
		k := vppinterfaces.SpanKey{InterfaceFrom: names[uint32(d.SwIfIndexFrom)], InterfaceTo: names[uint32(d.SwIfIndexTo)]}
		if k.InterfaceFrom == "" || k.InterfaceTo == "" {
			continue
		}
		it := vppinterfaces.SpanItem[struct{}]{Key: k, Origin: origin(ours[k] != nil),
			Value: &vppinterfaces.Span{InterfaceFrom: k.InterfaceFrom, InterfaceTo: k.InterfaceTo, Direction: vppinterfaces.Span_Direction(d.State), IsL2: d.IsL2}}
		if i, seen := at[k]; !seen {
			at[k] = len(out)
			out = append(out, it)
		} else if d.IsL2 == ours[k].GetIsL2() {
			out[i] = it
		}
	}
	return out, nil
}
