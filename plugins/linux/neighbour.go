//go:build linux

package linux

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// neighbours is the handler of linux.l3.v1.Neighbour: permanent ARP (IPv4)
// and NDP (IPv6) entries.
type neighbours struct{ p *Plugin }

var (
	_ linuxl3.NeighbourHandler[struct{}]   = (*neighbours)(nil)
	_ linuxl3.NeighbourUpdater[struct{}]   = (*neighbours)(nil)
	_ linuxl3.NeighbourRetriever[struct{}] = (*neighbours)(nil)
)

func (h *neighbours) neigh(k linuxl3.NeighbourKey, v *linuxl3.Neighbour) (*namespace, *netlink.Neigh, string, error) {
	n, m, err := h.p.link(k.Interface)
	if err != nil {
		return nil, nil, "", err
	}
	e := &netlink.Neigh{LinkIndex: m.Index, Family: unix.AF_INET, State: netlink.NUD_PERMANENT, IP: k.IpAddress.AsSlice()}
	if k.IpAddress.Is6() {
		e.Family = unix.AF_INET6
	}
	if v != nil && v.GetHwAddress() != "" {
		hw, err := net.ParseMAC(v.GetHwAddress())
		if err != nil {
			return nil, nil, "", kv.NonRetriable(fmt.Errorf("hw_address %q: %w", v.GetHwAddress(), err))
		}
		e.HardwareAddr = hw
	}
	return n, e, fmt.Sprintf("%s lladdr %s dev %s", k.IpAddress, e.HardwareAddr, m.HostName), nil
}

// neighOp is what a neighbour request asks of the kernel.
type neighOp uint8

const (
	neighReplace neighOp = iota + 1 // ip neigh replace
	neighDel                        // ip neigh del
)

// neighErr wraps the error of a neighbour call, if any, with its `ip neigh`
// command (cmd: the entry as neigh writes it). A delete that finds its
// entry gone is reported as not found (kv.ErrNotFound).
func neighErr(err error, op neighOp, cmd string) error {
	if op == neighDel {
		return notFound(kernelErr(err, "ip neigh del %s", cmd))
	}
	return kernelErr(err, "ip neigh replace %s nud permanent", cmd)
}

// Create sets the entry (replacing a dynamic one the kernel learnt).
func (h *neighbours) Create(_ context.Context, k linuxl3.NeighbourKey, v *linuxl3.Neighbour) (struct{}, error) {
	n, e, cmd, err := h.neigh(k, v)
	if err != nil {
		return struct{}{}, err
	}
	// ip neigh replace IP lladdr MAC dev NAME nud permanent
	return struct{}{}, neighErr(n.h.NeighSet(e), neighReplace, cmd)
}

// Update sets the new link-layer address in place.
func (h *neighbours) Update(ctx context.Context, k linuxl3.NeighbourKey, _, v *linuxl3.Neighbour, _ struct{}) (struct{}, error) {
	return h.Create(ctx, k, v)
}

// Delete removes the entry; one already gone counts as removed.
func (h *neighbours) Delete(_ context.Context, k linuxl3.NeighbourKey, v *linuxl3.Neighbour, _ struct{}) error {
	n, e, cmd, err := h.neigh(k, v)
	if err != nil {
		return notFound(err)
	}
	// ip neigh del IP dev NAME
	return neighErr(n.h.NeighDel(e), neighDel, cmd)
}

// Retrieve reports the permanent entries of the correlated keys that the
// kernel has (entries are ours only by key: the kernel keeps no owner).
// It reads the entries of each namespace once.
func (h *neighbours) Retrieve(_ context.Context, correlate []linuxl3.NeighbourItem[struct{}]) ([]linuxl3.NeighbourItem[struct{}], error) {
	type entry struct {
		index int
		ip    netip.Addr
	}
	type where struct {
		n *namespace // nil: no such interface
		m InterfaceMeta
	}
	links := map[string]where{} // by interface label
	byNs := map[*namespace]map[entry]net.HardwareAddr{}
	var out []linuxl3.NeighbourItem[struct{}]
	for _, c := range correlate {
		k := c.Key
		w, seen := links[k.Interface]
		if !seen {
			if n, m, err := h.p.link(k.Interface); err == nil {
				w = where{n, m}
			}
			links[k.Interface] = w
		}
		n, m := w.n, w.m
		if n == nil {
			continue // no interface, no entries
		}
		entries, read := byNs[n]
		if !read {
			// ip neigh show nud permanent: the kernel's dump is of every
			// interface's entries, whichever a request names.
			list, err := retryDump(func() ([]netlink.Neigh, error) { return n.h.NeighList(0, netlink.FAMILY_ALL) })
			if err != nil {
				return nil, kernelErr(err, "ip neigh show dev %s", m.HostName)
			}
			entries = map[entry]net.HardwareAddr{}
			for _, e := range list {
				if a, ok := netip.AddrFromSlice(e.IP); ok && e.State&netlink.NUD_PERMANENT != 0 {
					entries[entry{e.LinkIndex, a.Unmap()}] = e.HardwareAddr
				}
			}
			byNs[n] = entries
		}
		hw, ok := entries[entry{m.Index, k.IpAddress}]
		if !ok {
			continue
		}
		v := &linuxl3.Neighbour{Interface: c.Value.GetInterface(), IpAddress: c.Value.GetIpAddress(), HwAddress: hw.String()}
		out = append(out, linuxl3.NeighbourItem[struct{}]{Key: c.Key, Value: v, Origin: kv.OriginNB})
	}
	return out, nil
}
