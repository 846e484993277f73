package vpp

import (
	"context"
	"errors"

	vppif "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"google.golang.org/protobuf/types/known/wrapperspb"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
)

// unnumbered is the handler of vpp.interfaces.v1.Interface.unnumbered:
// an interface borrowing the addresses of another.
type unnumbered struct{ p *Plugin }

var _ vppinterfaces.InterfaceUnnumberedRetriever[struct{}] = (*unnumbered)(nil)

// Create makes the interface unnumbered, using the other's addresses.
// vppctl set interface unnumbered NAME use NUMBERED
func (h *unnumbered) Create(ctx context.Context, k vppinterfaces.InterfaceUnnumberedKey, _ *wrapperspb.StringValue) (struct{}, error) {
	return struct{}{}, h.set(ctx, k, true)
}

// Delete makes it numbered again.
// vppctl set interface unnumbered del NAME
func (h *unnumbered) Delete(ctx context.Context, k vppinterfaces.InterfaceUnnumberedKey, _ *wrapperspb.StringValue, _ struct{}) error {
	return h.set(ctx, k, false)
}

func (h *unnumbered) set(ctx context.Context, k vppinterfaces.InterfaceUnnumberedKey, add bool) error {
	idx, err1 := h.p.swIfIndex(k.Name)
	numbered, err2 := h.p.swIfIndex(k.Unnumbered)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	_, err := vppif.NewServiceClient(h.p.conn).SwInterfaceSetUnnumbered(ctx, &vppif.SwInterfaceSetUnnumbered{
		SwIfIndex: interface_types.InterfaceIndex(numbered), UnnumberedSwIfIndex: interface_types.InterfaceIndex(idx), IsAdd: add})
	return vppErr("sw_interface_set_unnumbered", err)
}

// Retrieve reports the unnumbered interfaces VPP has, by label: the
// correlated ones as ours, the others (set by hand) obtained.
func (h *unnumbered) Retrieve(ctx context.Context, correlate []vppinterfaces.InterfaceUnnumberedItem[struct{}]) ([]vppinterfaces.InterfaceUnnumberedItem[struct{}], error) {
	ours := map[vppinterfaces.InterfaceUnnumberedKey]bool{}
	for _, c := range correlate {
		ours[c.Key] = true
	}
	list, err := dump[*ip.IPUnnumberedDetails]("ip_unnumbered_dump")(ip.NewServiceClient(h.p.conn).IPUnnumberedDump(ctx, &ip.IPUnnumberedDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}))
	if err != nil {
		return nil, err
	}
	names := h.p.interfaceNames()
	var out []vppinterfaces.InterfaceUnnumberedItem[struct{}]
	for _, d := range list {
		name, ok1 := names[uint32(d.SwIfIndex)]
		numbered, ok2 := names[uint32(d.IPSwIfIndex)]
		k := vppinterfaces.InterfaceUnnumberedKey{Name: name, Unnumbered: numbered}
		if ok1 && ok2 {
			out = append(out, vppinterfaces.InterfaceUnnumberedItem[struct{}]{Key: k, Value: wrapperspb.String(numbered), Origin: origin(ours[k])})
		}
	}
	return out, nil
}
