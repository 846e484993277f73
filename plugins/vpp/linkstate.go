package vpp

import (
	"context"
	"fmt"
	"slices"

	vppif "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// linkUps is the handler of vpp.interfaces.v1.LinkUp: VPP's report that
// an interface's link is up. It is only retrieved, never configured.
type linkUps struct{ p *Plugin }

var _ vppinterfaces.LinkUpRetriever[struct{}] = (*linkUps)(nil)

// Create refuses: the link state is VPP's to report.
func (h *linkUps) Create(_ context.Context, k vppinterfaces.LinkUpKey, _ *vppinterfaces.LinkUp) (struct{}, error) {
	return struct{}{}, kv.NonRetriable(fmt.Errorf("link of %s: VPP reports it, it cannot be configured (the interface's enabled sets the admin state)", k.Interface))
}

// Delete refuses too.
func (h *linkUps) Delete(ctx context.Context, k vppinterfaces.LinkUpKey, v *vppinterfaces.LinkUp, _ struct{}) error {
	_, err := h.Create(ctx, k, v)
	return err
}

// Retrieve reports the interfaces whose link VPP has up, by label. (A
// link found down is not reported; the scheduler keeps an obtained value
// until a notification removes it: WatchLinks sends those.)
func (h *linkUps) Retrieve(ctx context.Context, _ []vppinterfaces.LinkUpItem[struct{}]) ([]vppinterfaces.LinkUpItem[struct{}], error) {
	up, _, err := h.p.linksUp(ctx)
	var out []vppinterfaces.LinkUpItem[struct{}]
	for _, name := range up {
		out = append(out, vppinterfaces.LinkUpItem[struct{}]{Key: vppinterfaces.LinkUpKey{Interface: name}, Value: &vppinterfaces.LinkUp{Interface: name}, Origin: kv.OriginSB})
	}
	return out, err
}

// linksUp returns the labels of the interfaces whose link is up and of
// those whose link is down, sorted.
func (p *Plugin) linksUp(ctx context.Context) (up, down []string, err error) {
	list, err := dump[*vppif.SwInterfaceDetails]("sw_interface_dump")(vppif.NewServiceClient(p.conn).SwInterfaceDump(ctx, &vppif.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}))
	if err != nil {
		return nil, nil, err
	}
	names := p.interfaceNames()
	for _, d := range list {
		if name, ok := names[uint32(d.SwIfIndex)]; ok && d.Flags&interface_types.IF_STATUS_API_FLAG_LINK_UP != 0 {
			up = append(up, name)
		} else if ok {
			down = append(down, name)
		}
	}
	slices.Sort(up)
	slices.Sort(down)
	return up, down, nil
}
