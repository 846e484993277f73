//go:build linux

package linux

import (
	"context"
	"errors"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/types/known/wrapperspb"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// addresses is the handler of linux.interfaces.v1.Interface.address, the
// values derived from an interface's IP addresses.
type addresses struct{ p *Plugin }

var (
	_ linuxinterfaces.InterfaceIpAddressesHandler[struct{}]   = (*addresses)(nil)
	_ linuxinterfaces.InterfaceIpAddressesRetriever[struct{}] = (*addresses)(nil)
)

// Retrieve reports the correlated addresses that their interface has.
// It reads the addresses of each namespace once.
func (h *addresses) Retrieve(_ context.Context, correlate []linuxinterfaces.InterfaceIpAddressesItem[struct{}]) ([]linuxinterfaces.InterfaceIpAddressesItem[struct{}], error) {
	have := map[string]map[netip.Prefix]bool{} // by interface label; nil: no interface
	byNs := map[*namespace]map[int]map[netip.Prefix]bool{}
	var out []linuxinterfaces.InterfaceIpAddressesItem[struct{}]
	for _, c := range correlate {
		k := c.Key
		addrs, seen := have[k.Name]
		if !seen {
			if n, m, err := h.p.link(k.Name); err == nil {
				all, read := byNs[n]
				if !read {
					all, err = addrsByIndex(n)
					if err != nil && !isGone(err) {
						return nil, kernelErr(err, "ip addr show dev %s", m.HostName)
					}
					byNs[n] = all
				}
				addrs = all[m.Index]
			}
			have[k.Name] = addrs
		}
		if addrs[k.IpAddresses] {
			out = append(out, linuxinterfaces.InterfaceIpAddressesItem[struct{}]{Key: k, Value: c.Value, Origin: kv.OriginNB})
		}
	}
	return out, nil
}

func (h *addresses) addr(k linuxinterfaces.InterfaceIpAddressesKey) (*namespace, netlink.Link, *netlink.Addr, error) {
	n, m, err := h.p.link(k.Name)
	if err != nil {
		return nil, nil, nil, err
	}
	p := k.IpAddresses
	a := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
	if p.Addr().Is6() {
		a.Flags = unix.IFA_F_NODAD // usable at once: routes may need it as their gateway's network
	}
	link := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: m.Index, Name: m.HostName}}
	return n, link, a, nil
}

// Create adds the address; an address that is there already is ours.
func (h *addresses) Create(_ context.Context, k linuxinterfaces.InterfaceIpAddressesKey, _ *wrapperspb.StringValue) (struct{}, error) {
	n, link, a, err := h.addr(k)
	if err != nil {
		return struct{}{}, err
	}
	// ip addr add ADDR dev NAME
	if err := n.h.AddrAdd(link, a); err != nil && !errors.Is(err, unix.EEXIST) {
		return struct{}{}, kernelErr(err, "ip addr add %s dev %s", k.IpAddresses, link.Attrs().Name)
	}
	return struct{}{}, nil
}

// Delete removes the address; one already gone counts as removed.
func (h *addresses) Delete(_ context.Context, k linuxinterfaces.InterfaceIpAddressesKey, _ *wrapperspb.StringValue, _ struct{}) error {
	n, link, a, err := h.addr(k)
	if err != nil {
		return notFound(err)
	}
	// ip addr del ADDR dev NAME
	return notFound(kernelErr(n.h.AddrDel(link, a), "ip addr del %s dev %s", k.IpAddresses, link.Attrs().Name))
}
