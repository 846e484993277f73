package vpp

import (
	"context"

	vppif "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"google.golang.org/protobuf/types/known/wrapperspb"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
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
	idx, err := h.p.swIfIndex(k.Name)
	if err != nil {
		return err
	}
	numbered, err := h.p.swIfIndex(k.Unnumbered)
	if err != nil {
		return err
	}
	_, err = vppif.NewServiceClient(h.p.conn).SwInterfaceSetUnnumbered(ctx, &vppif.SwInterfaceSetUnnumbered{
		SwIfIndex: interface_types.InterfaceIndex(numbered), UnnumberedSwIfIndex: interface_types.InterfaceIndex(idx), IsAdd: add})
	return vppErr("sw_interface_set_unnumbered", err)
}

// Retrieve reports the unnumbered interfaces VPP has, by label.
func (h *unnumbered) Retrieve(ctx context.Context, _ []vppinterfaces.InterfaceUnnumberedItem[struct{}]) ([]vppinterfaces.InterfaceUnnumberedItem[struct{}], error) {
	list, err := dump[*ip.IPUnnumberedDetails]("ip_unnumbered_dump")(ip.NewServiceClient(h.p.conn).IPUnnumberedDump(ctx, &ip.IPUnnumberedDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}))
	if err != nil {
		return nil, err
	}
	names := h.p.interfaceNames()
	var out []vppinterfaces.InterfaceUnnumberedItem[struct{}]
	for _, d := range list {
		name, ok1 := names[uint32(d.SwIfIndex)]
		numbered, ok2 := names[uint32(d.IPSwIfIndex)]
		if ok1 && ok2 {
			out = append(out, vppinterfaces.InterfaceUnnumberedItem[struct{}]{Key: vppinterfaces.InterfaceUnnumberedKey{Name: name, Unnumbered: numbered},
				Value: wrapperspb.String(numbered), Origin: kv.OriginNB})
		}
	}
	return out, nil
}
