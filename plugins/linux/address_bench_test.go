//go:build linux

package linux

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// Sizes of the address benchmarks.
var (
	benchAddrLinks = flag.Int("linux.addr-links", 100, "interfaces (veth ends, an even number) that the address benchmarks put addresses on")
	benchAddrsPer  = flag.Int("linux.addrs-per-link", 100, "addresses per interface in the address benchmarks")
)

// The address benchmarks measure whether addresses would gain from
// batches: -linux.addr-links dummy interfaces with -linux.addrs-per-link
// addresses each (two thirds IPv4 /24s, one third IPv6 /64s), added, then
// deleted. They report ns-per-address and seconds for all, each way:
//
//	go test -run '^$' -bench 'AddressBatch' -benchtime 5x ./plugins/linux/
//
// Three levels: the framework (the interfaces set with their addresses in
// one transaction, then without them in another: one Create or Delete per
// address), a plain loop of netlink.Handle AddrAdd / AddrDel calls, and
// the batch socket without the framework. What a Batch of the address
// handler could save is at most the loop's time less the raw batch's.

// addrPrefix is the j-th address of the i-th interface.
func addrPrefix(i, j int) string {
	if j%3 == 2 {
		return fmt.Sprintf("2001:db8:%x:%x::1/64", i, j)
	}
	return fmt.Sprintf("10.%d.%d.1/24", i, j)
}

// addrLinks creates the veth interfaces ad0, ad1, ... in the namespace,
// up, and returns them with their addresses.
func addrLinks(b *testing.B, n *namespace) ([]netlink.Link, [][]*netlink.Addr) {
	b.Helper()
	links := make([]netlink.Link, *benchAddrLinks)
	addrs := make([][]*netlink.Addr, len(links))
	for i := 0; i+1 < len(links); i += 2 {
		v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: fmt.Sprintf("ad%d", i)}, PeerName: fmt.Sprintf("ad%d", i+1)}
		if err := n.h.LinkAdd(v); err != nil {
			b.Fatalf("ip link add %s type veth peer name %s: %v", v.Name, v.PeerName, err)
		}
	}
	for i := range links {
		l, err := n.h.LinkByName(fmt.Sprintf("ad%d", i))
		if err != nil {
			b.Fatal(err)
		}
		if err := n.h.LinkSetUp(l); err != nil {
			b.Fatal(err)
		}
		links[i] = l
		for j := range *benchAddrsPer {
			a, err := netlink.ParseAddr(addrPrefix(i, j))
			if err != nil {
				b.Fatal(err)
			}
			if a.IP.To4() == nil {
				a.Flags = unix.IFA_F_NODAD
			}
			addrs[i] = append(addrs[i], a)
		}
	}
	return links, addrs
}

// countAddrs counts the namespace's addresses on the interfaces adN.
func countAddrs(b *testing.B, n *namespace, links []netlink.Link) int {
	b.Helper()
	list, err := retryDump(func() ([]netlink.Addr, error) { return n.h.AddrList(nil, netlink.FAMILY_ALL) })
	if err != nil {
		b.Fatal(err)
	}
	ours := map[int]bool{}
	for _, l := range links {
		ours[l.Attrs().Index] = true
	}
	c := 0
	for _, a := range list {
		if ours[a.LinkIndex] && !a.IP.IsLinkLocalUnicast() {
			c++
		}
	}
	return c
}

// BenchmarkAddressBatchFramework is level 1: the interfaces set with their
// addresses, then without, through a scheduler with its default settings.
func BenchmarkAddressBatchFramework(b *testing.B) {
	n, _ := batchNs(b)
	p, err := New(WithNamespace(n.ns))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	s, err := scheduler.New(scheduler.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	defer s.Close(ctx)
	if err := s.Register(p.Descriptors()...); err != nil {
		b.Fatal(err)
	}
	bare := make([]*linuxinterfaces.Interface, *benchAddrLinks)
	full := make([]*linuxinterfaces.Interface, len(bare))
	for i := range bare {
		bare[i] = &linuxinterfaces.Interface{Name: fmt.Sprintf("ad%d", i), Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: fmt.Sprintf("ad%d", i^1), Enabled: true}
		full[i] = &linuxinterfaces.Interface{Name: bare[i].Name, Type: bare[i].Type, VethPeer: bare[i].VethPeer, Enabled: true}
		for j := range *benchAddrsPer {
			full[i].IpAddresses = append(full[i].IpAddresses, addrPrefix(i, j))
		}
	}
	commit := func(ifs []*linuxinterfaces.Interface) *scheduler.Result {
		txn := s.Txn()
		for _, v := range ifs {
			txn.Set(linuxinterfaces.InterfaceKeyFor(v), v)
		}
		res, err := txn.Commit(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, op := range res.Executed {
			if op.Err != nil {
				b.Fatalf("%s: %v", op.Key, op.Err)
			}
		}
		return res
	}
	commit(bare)
	links := make([]netlink.Link, len(bare))
	for i, v := range bare {
		if links[i], err = n.h.LinkByName(v.Name); err != nil {
			b.Fatal(err)
		}
	}
	total := len(bare) * *benchAddrsPer
	var add, del time.Duration
	var ops int
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		res := commit(full)
		add += time.Since(start)
		ops = len(res.Executed)
		b.StopTimer()
		if got := countAddrs(b, n, links); got != total {
			b.Fatalf("%d addresses, want %d", got, total)
		}
		b.StartTimer()
		start = time.Now()
		commit(bare)
		del += time.Since(start)
	}
	b.StopTimer()
	if got := countAddrs(b, n, links); got != 0 {
		b.Fatalf("%d addresses left", got)
	}
	b.Logf("%d operations to add %d addresses", ops, total)
	reportEach(b, "address", total, add, del)
}

// BenchmarkAddressBatchNetlinkLoop is level 2: one AddrAdd, then one
// AddrDel, per address.
func BenchmarkAddressBatchNetlinkLoop(b *testing.B) {
	n, _ := batchNs(b)
	links, addrs := addrLinks(b, n)
	total := len(links) * *benchAddrsPer
	var add, del time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		for i, l := range links {
			for _, a := range addrs[i] {
				// ip addr add ADDR dev adN
				if err := n.h.AddrAdd(l, a); err != nil {
					b.Fatal(err)
				}
			}
		}
		add += time.Since(start)
		b.StopTimer()
		if got := countAddrs(b, n, links); got != total {
			b.Fatalf("%d addresses, want %d", got, total)
		}
		b.StartTimer()
		start = time.Now()
		for i, l := range links {
			for _, a := range addrs[i] {
				if err := n.h.AddrDel(l, a); err != nil {
					b.Fatal(err)
				}
			}
		}
		del += time.Since(start)
	}
	reportEach(b, "address", total, add, del)
}

// addrBenchRequest builds an ip addr add (or del) request of a on the
// interface index as AddrAdd and AddrDel build it for the plugin's
// addresses (no peer, label or lifetimes).
func addrBenchRequest(del bool, index int, a *netlink.Addr) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_NEWADDR, unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	if del {
		req = nl.NewNetlinkRequest(unix.RTM_DELADDR, 0)
	}
	family := nl.GetIPFamily(a.IP)
	msg := nl.NewIfAddrmsg(family)
	msg.Index = uint32(index)
	bits, _ := a.Mask.Size()
	msg.Prefixlen = uint8(bits)
	msg.Flags = uint8(a.Flags)
	req.AddData(msg)
	local := ipBytes(a.IP, family)
	req.AddData(nl.NewRtAttr(unix.IFA_LOCAL, local))
	req.AddData(nl.NewRtAttr(unix.IFA_ADDRESS, local))
	if family == nl.FAMILY_V4 && bits < 31 {
		brd := make(net.IP, 4)
		for i := range brd {
			brd[i] = local[i] | ^a.Mask[i]
		}
		req.AddData(nl.NewRtAttr(unix.IFA_BROADCAST, brd))
	}
	return req
}

// BenchmarkAddressBatchRaw is level 3: the requests built and sent in one
// batch each way, through the namespace's batch socket.
func BenchmarkAddressBatchRaw(b *testing.B) {
	n, _ := batchNs(b)
	links, addrs := addrLinks(b, n)
	total := len(links) * *benchAddrsPer
	s, err := n.batchSocket()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	batch := func(del bool) {
		reqs := make([]*nl.NetlinkRequest, 0, total)
		for i, l := range links {
			for _, a := range addrs[i] {
				reqs = append(reqs, addrBenchRequest(del, l.Attrs().Index, a))
			}
		}
		for i, err := range s.do(ctx, reqs) {
			if err != nil {
				b.Fatalf("address %d: %v", i, err)
			}
		}
	}
	var add, del time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		batch(false)
		add += time.Since(start)
		b.StopTimer()
		if got := countAddrs(b, n, links); got != total {
			b.Fatalf("%d addresses, want %d", got, total)
		}
		b.StartTimer()
		start = time.Now()
		batch(true)
		del += time.Since(start)
	}
	b.StopTimer()
	if got := countAddrs(b, n, links); got != 0 {
		b.Fatalf("%d addresses left", got)
	}
	if s.overruns != 0 {
		b.Errorf("%d receive buffer overruns", s.overruns)
	}
	reportEach(b, "address", total, add, del)
}
