package vpp

import (
	"context"

	vppif "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
)

// physical holds what is particular to the interfaces of type DPDK: VPP
// made them at start from the hardware, and they are adopted, never
// created or deleted.
type physical struct{ p *Plugin }

// Create finds the hardware interface by VPP's name of it, as the last
// Retrieve found it. One not found is an error retried (after another
// Retrieve).
func (h physical) Create(name string) (interface_types.InterfaceIndex, error) {
	i, err := h.p.swIfIndex(name)
	return interface_types.InterfaceIndex(i), err
}

// Delete takes the configuration off: down, the default VRF (addresses
// are gone already: derived values go first), untagged. MTU and MAC are
// left as they are.
func (h physical) Delete(ctx context.Context, idx interface_types.InterfaceIndex, v *vppinterfaces.Interface) error {
	if err := (&interfaces{h.p}).apply(ctx, idx, v, &vppinterfaces.Interface{Mtu: v.GetMtu()}); err != nil {
		return err
	}
	_, err := vppif.NewServiceClient(h.p.conn).SwInterfaceTagAddDel(ctx, &vppif.SwInterfaceTagAddDel{SwIfIndex: idx})
	return vppErr("sw_interface_tag_add_del", err)
}
