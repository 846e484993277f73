//go:build linux

package linux

import (
	"context"
	"fmt"

	"github.com/vishvananda/netlink"
	"google.golang.org/protobuf/types/known/wrapperspb"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// masters is the handler of linux.interfaces.v1.Interface.master, the
// binding of an interface to its bridge, derived from its master field.
type masters struct{ p *Plugin }

var (
	_ linuxinterfaces.InterfaceMasterHandler[struct{}]   = (*masters)(nil)
	_ linuxinterfaces.InterfaceMasterRetriever[struct{}] = (*masters)(nil)
)

// Retrieve reports the correlated bindings whose interface is in its
// bridge.
func (h *masters) Retrieve(_ context.Context, correlate []linuxinterfaces.InterfaceMasterItem[struct{}]) ([]linuxinterfaces.InterfaceMasterItem[struct{}], error) {
	var out []linuxinterfaces.InterfaceMasterItem[struct{}]
	for _, c := range correlate {
		k := c.Key
		n, m, err := h.p.link(k.Name)
		if err != nil {
			continue
		}
		bn, bm, err := h.p.link(k.Master)
		if err != nil || bn != n {
			continue
		}
		link, err := n.h.LinkByIndex(m.Index)
		if err != nil {
			if isGone(err) {
				continue
			}
			return nil, kernelErr(err, "ip link show %s", m.HostName)
		}
		if link.Attrs().MasterIndex == bm.Index {
			out = append(out, linuxinterfaces.InterfaceMasterItem[struct{}]{Key: k, Value: c.Value, Origin: kv.OriginNB})
		}
	}
	return out, nil
}

// Create puts the interface into the bridge.
func (h *masters) Create(_ context.Context, k linuxinterfaces.InterfaceMasterKey, _ *wrapperspb.StringValue) (struct{}, error) {
	n, m, err := h.p.link(k.Name)
	if err != nil {
		return struct{}{}, err
	}
	bn, bm, err := h.p.link(k.Master)
	if err != nil {
		return struct{}{}, err
	}
	if bn != n {
		return struct{}{}, kv.NonRetriable(fmt.Errorf("bridge %s is in network namespace %s, interface %s in %s", k.Master, nsName(bn), k.Name, nsName(n)))
	}
	link := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: m.Index, Name: m.HostName}}
	// ip link set dev NAME master BRIDGE
	err = n.h.LinkSetMasterByIndex(link, bm.Index)
	return struct{}{}, kernelErr(err, "ip link set dev %s master %s", m.HostName, bm.HostName)
}

// Delete takes the interface out of its bridge.
func (h *masters) Delete(_ context.Context, k linuxinterfaces.InterfaceMasterKey, _ *wrapperspb.StringValue, _ struct{}) error {
	n, m, err := h.p.link(k.Name)
	if err != nil {
		return notFound(err)
	}
	link, err := n.h.LinkByIndex(m.Index)
	if err != nil {
		return notFound(kernelErr(err, "ip link show %s", m.HostName))
	}
	if bm, ok := h.p.Interfaces().Get(k.Master); ok && link.Attrs().MasterIndex != bm.Index {
		return fmt.Errorf("ip link set dev %s nomaster: %w (not in %s)", m.HostName, kv.ErrNotFound, bm.HostName)
	}
	// ip link set dev NAME nomaster
	return notFound(kernelErr(n.h.LinkSetNoMaster(link), "ip link set dev %s nomaster", m.HostName))
}
