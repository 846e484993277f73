//go:build linux

package linux_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// BenchmarkRoutes10k compares, in the same run and namespace, adding and
// deleting 10,000 routes over one interface through the framework (the
// commit of one transaction each way: the scheduler with its default
// settings, transaction log on, into a discarding logger) with a plain
// loop of netlink RouteAdd / RouteDel calls. Each op does all four; the
// metrics are milliseconds per 10,000 routes and the ratios. Building
// each transaction (10,000 Set or Delete calls) is timed apart,
// ms-framework-txn-build, and is not in the ratios.
func BenchmarkRoutes10k(b *testing.B) {
	const n = 10000
	requireRoot(b)
	ns := newNetns(b)
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	p, err := linux.New(linux.WithNamespace(ns))
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
	a, peer := vethPair("veth0", "veth1", "10.0.0.1/24")
	if _, err := s.Txn().Set(keyOf(a), a).Set(keyOf(peer), peer).Commit(ctx); err != nil {
		b.Fatal(err)
	}
	link, err := h.LinkByName("veth0")
	if err != nil {
		b.Fatal(err)
	}
	gw := net.ParseIP("10.0.0.254")
	dsts := make([]netip.Prefix, n)
	values := make([]*linuxl3.Route, n)
	keys := make([]string, n)
	for i := range n {
		dsts[i] = netip.PrefixFrom(netip.AddrFrom4([4]byte{172, 16 + byte(i>>16), byte(i >> 8), byte(i)}), 32)
		values[i] = &linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: dsts[i].String(), GwAddr: "10.0.0.254"}
		keys[i] = linuxl3.RouteKeyFor(values[i])
	}
	count := func() int {
		list, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: netlink.RouteProtocol(p.RouteProtocol())}, netlink.RT_FILTER_PROTOCOL)
		if err != nil {
			b.Fatal(err)
		}
		return len(list)
	}
	kernelRoute := func(dst netip.Prefix) *netlink.Route {
		return &netlink.Route{
			LinkIndex: link.Attrs().Index, Gw: gw, Protocol: netlink.RouteProtocol(p.RouteProtocol()),
			Dst: &net.IPNet{IP: dst.Addr().AsSlice(), Mask: net.CIDRMask(32, 32)},
		}
	}
	var fwBuild, fwAdd, fwDel, rawAdd, rawDel time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		txn := s.Txn()
		for j, v := range values {
			txn.Set(keys[j], v)
		}
		fwBuild += time.Since(start)
		start = time.Now()
		if _, err := txn.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		fwAdd += time.Since(start)
		if i == 0 {
			b.StopTimer()
			if got := count(); got != n {
				b.Fatalf("the framework added %d routes, want %d", got, n)
			}
			b.StartTimer()
		}

		start = time.Now()
		txn = s.Txn()
		for _, k := range keys {
			txn.Delete(k)
		}
		fwBuild += time.Since(start)
		start = time.Now()
		if _, err := txn.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		fwDel += time.Since(start)

		start = time.Now()
		for _, dst := range dsts {
			if err := h.RouteAdd(kernelRoute(dst)); err != nil {
				b.Fatal(err)
			}
		}
		rawAdd += time.Since(start)
		if i == 0 {
			b.StopTimer()
			if got := count(); got != n {
				b.Fatalf("the loop added %d routes, want %d", got, n)
			}
			b.StartTimer()
		}

		start = time.Now()
		for _, dst := range dsts {
			if err := h.RouteDel(kernelRoute(dst)); err != nil {
				b.Fatal(err)
			}
		}
		rawDel += time.Since(start)
	}
	b.StopTimer()
	if got := count(); got != 0 {
		b.Fatalf("%d routes left", got)
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(per(fwAdd), "ms-framework-add")
	b.ReportMetric(per(rawAdd), "ms-netlink-add")
	b.ReportMetric(per(fwDel), "ms-framework-del")
	b.ReportMetric(per(rawDel), "ms-netlink-del")
	b.ReportMetric(per(fwBuild)/2, "ms-framework-txn-build")
	b.ReportMetric(float64(fwAdd)/float64(rawAdd), "x-add")
	b.ReportMetric(float64(fwDel)/float64(rawDel), "x-del")
	b.ReportMetric(0, "ns/op")
}

// nopHandler counts the calls it gets and makes none.
type nopHandler[K any, V proto.Message] struct{ creates, deletes int }

func (h *nopHandler[K, V]) Create(context.Context, K, V) (struct{}, error) {
	h.creates++
	return struct{}{}, nil
}

func (h *nopHandler[K, V]) Delete(context.Context, K, V, struct{}) error {
	h.deletes++
	return nil
}

// BenchmarkRoutes10kNoKernel is the framework's own share of
// BenchmarkRoutes10k: the same transactions (10,000 routes added, then
// deleted) with the same generated descriptors and the scheduler's default
// settings, but handlers that make no kernel call. Needs no root.
//
//	go test -run='^$' -bench=Routes10kNoKernel -benchtime=20x -count=5 ./plugins/linux
func BenchmarkRoutes10kNoKernel(b *testing.B) {
	const n = 10000
	ctx := context.Background()
	routes := &nopHandler[linuxl3.RouteKey, *linuxl3.Route]{}
	rd, err := linuxl3.NewRouteDescriptor[struct{}](routes)
	if err != nil {
		b.Fatal(err)
	}
	id, err := linuxinterfaces.NewInterfaceDescriptor[struct{}](&nopHandler[linuxinterfaces.InterfaceKey, *linuxinterfaces.Interface]{})
	if err != nil {
		b.Fatal(err)
	}
	ad, err := linuxinterfaces.NewInterfaceIpAddressesDescriptor[struct{}](&nopHandler[linuxinterfaces.InterfaceIpAddressesKey, *wrapperspb.StringValue]{})
	if err != nil {
		b.Fatal(err)
	}
	s, err := scheduler.New(scheduler.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(ctx)
	if err := s.Register(rd, id, ad); err != nil {
		b.Fatal(err)
	}
	a, peer := vethPair("veth0", "veth1", "10.0.0.1/24")
	if _, err := s.Txn().Set(keyOf(a), a).Set(keyOf(peer), peer).Commit(ctx); err != nil {
		b.Fatal(err)
	}
	values := make([]*linuxl3.Route, n)
	keys := make([]string, n)
	for i := range n {
		dst := netip.PrefixFrom(netip.AddrFrom4([4]byte{172, 16 + byte(i>>16), byte(i >> 8), byte(i)}), 32)
		values[i] = &linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: dst.String(), GwAddr: "10.0.0.254"}
		keys[i] = linuxl3.RouteKeyFor(values[i])
	}
	var add, del time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		txn := s.Txn()
		for j, v := range values {
			txn.Set(keys[j], v)
		}
		start := time.Now()
		if _, err := txn.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		add += time.Since(start)
		txn = s.Txn()
		for _, k := range keys {
			txn.Delete(k)
		}
		start = time.Now()
		if _, err := txn.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		del += time.Since(start)
	}
	b.StopTimer()
	if routes.creates != n*b.N || routes.deletes != n*b.N {
		b.Fatalf("%d route creates and %d deletes, want %d each", routes.creates, routes.deletes, n*b.N)
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(per(add), "ms-add")
	b.ReportMetric(per(del), "ms-del")
	b.ReportMetric(0, "ns/op")
}
