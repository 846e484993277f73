package main

import (
	"context"
	"net/netip"
	"strings"

	"google.golang.org/protobuf/types/known/wrapperspb"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// The handlers below are all that a plugin author writes: the generated
// descriptors bring keys, dependencies, derived addresses, comparison,
// re-create rules and validation, and hand the handlers parsed keys.

// descriptors builds the descriptors of the Linux models over dev.
// Interface values carry metadata: the link's ifindex, which the address
// and route handlers read from the interface descriptor's metadata map.
func descriptors(dev *device) ([]kv.Descriptor, error) {
	links, err := linuxinterfaces.NewInterfaceDescriptor[int](linkHandler{dev})
	if err != nil {
		return nil, err
	}
	addrs, err := linuxinterfaces.NewInterfaceIpAddressesDescriptor[struct{}](addrHandler{dev, links.Metadata()})
	if err != nil {
		return nil, err
	}
	routes, err := linuxl3.NewRouteDescriptor[struct{}](routeHandler{dev, links.Metadata()})
	if err != nil {
		return nil, err
	}
	return []kv.Descriptor{links, addrs, routes}, nil
}

// linkHandler handles linux.interfaces.v1.Interface; its metadata is the
// ifindex.
type linkHandler struct{ dev *device }

var (
	_ linuxinterfaces.InterfaceHandler[int]                 = linkHandler{}
	_ linuxinterfaces.InterfaceUpdater[int]                 = linkHandler{}
	_ linuxinterfaces.InterfaceValidator                    = linkHandler{}
	_ linuxinterfaces.InterfaceIpAddressesHandler[struct{}] = addrHandler{}
	_ linuxl3.RouteHandler[struct{}]                        = routeHandler{}
)

// Create runs `ip link add <name> [mtu <mtu>] [up] type <type> [peer name <peer>]`.
// A veth end whose peer made it (`ip link add <peer> type veth peer name
// <name>`) is only set up: `ip link set <name> [mtu <mtu>] [up]`.
func (h linkHandler) Create(_ context.Context, k linuxinterfaces.InterfaceKey, v *linuxinterfaces.Interface) (int, error) {
	if index, ok := h.dev.LinkIndex(k.Name); ok && v.GetType() == linuxinterfaces.Interface_TYPE_VETH {
		return index, h.dev.LinkSet(linkOf(k, v))
	}
	return h.dev.LinkAdd(linkOf(k, v))
}

// Update runs `ip link set <name> [address <mac>] [mtu <mtu>] [up|down]`
// with what changed. A new type or namespace re-creates instead (the model
// says so), and the ifindex stays.
func (h linkHandler) Update(_ context.Context, k linuxinterfaces.InterfaceKey, _, v *linuxinterfaces.Interface, index int) (int, error) {
	return index, h.dev.LinkSet(linkOf(k, v))
}

// Delete runs `ip link del <name>`. Deleting a veth end deletes its peer
// too, whose own Delete then finds nothing: kv.ErrNotFound, a success.
func (h linkHandler) Delete(_ context.Context, k linuxinterfaces.InterfaceKey, _ *linuxinterfaces.Interface, _ int) error {
	return h.dev.LinkDel(k.Name)
}

// Validate adds what the simulated device cannot do to the schema's checks.
func (h linkHandler) Validate(_ linuxinterfaces.InterfaceKey, v *linuxinterfaces.Interface) error {
	if v.GetHostIfName() != "" && v.GetHostIfName() != v.GetName() {
		return kv.Invalid("host_if_name", "the simulated device names links by their logical name")
	}
	return nil
}

// linkOf is the device's view of an interface value.
func linkOf(k linuxinterfaces.InterfaceKey, v *linuxinterfaces.Interface) Link {
	return Link{
		Name:      k.Name,
		Type:      strings.ToLower(strings.TrimPrefix(v.GetType().String(), "TYPE_")),
		Namespace: v.GetNamespace(),
		Peer:      v.GetVethPeer(),
		MAC:       strings.ToLower(v.GetPhysAddress()),
		MTU:       int(v.EffectiveMtu()),
		Up:        v.GetEnabled(),
	}
}

// addrHandler handles the addresses derived from interfaces: the key
// brings the interface name and the address as a netip.Prefix.
type addrHandler struct {
	dev   *device
	links kv.MetadataMap[int]
}

// Create runs `ip addr add <address> dev <name>`, on the link's ifindex (0,
// which the device refuses, when the link has none).
func (h addrHandler) Create(_ context.Context, k linuxinterfaces.InterfaceIpAddressesKey, _ *wrapperspb.StringValue) (struct{}, error) {
	index, _ := h.links.Get(k.Name)
	return struct{}{}, h.dev.AddrAdd(index, k.IpAddresses)
}

// Delete runs `ip addr del <address> dev <name>`.
func (h addrHandler) Delete(_ context.Context, k linuxinterfaces.InterfaceIpAddressesKey, _ *wrapperspb.StringValue, _ struct{}) error {
	index, _ := h.links.Get(k.Name)
	return h.dev.AddrDel(index, k.IpAddresses)
}

// routeHandler handles linux.l3.v1.Route. Without an Update, a changed
// route is deleted and created again.
type routeHandler struct {
	dev   *device
	links kv.MetadataMap[int]
}

// Create runs `ip route add <dst> [via <gw>] dev <name> [metric <n>]`, on
// the outgoing link's ifindex.
func (h routeHandler) Create(_ context.Context, k linuxl3.RouteKey, v *linuxl3.Route) (struct{}, error) {
	index, _ := h.links.Get(k.OutgoingInterface)
	gw, _ := netip.ParseAddr(v.GetGwAddr()) // validated; invalid when empty: no gateway
	return struct{}{}, h.dev.RouteAdd(k.DstNetwork, gw, index, v.GetMetric())
}

// Delete runs `ip route del <dst> dev <name>`.
func (h routeHandler) Delete(_ context.Context, k linuxl3.RouteKey, _ *linuxl3.Route, _ struct{}) error {
	index, _ := h.links.Get(k.OutgoingInterface)
	return h.dev.RouteDel(k.DstNetwork, index)
}
