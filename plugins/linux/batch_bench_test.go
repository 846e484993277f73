//go:build linux

package linux

import (
	"context"
	"flag"
	"testing"
	"time"
)

// benchRoutes is how many routes the batch benchmarks program.
var benchRoutes = flag.Int("linux.routes", 100_000, "routes that the route batch benchmarks add and delete (try 1000000)")

// The route batch benchmarks add -linux.routes /32 routes via a gateway
// over one veth, then delete them, each way in a namespace of its own;
// every op does both. They report ns-per-route and seconds for all the
// routes, each way:
//
//	go test -run '^$' -bench 'RouteBatch' -benchtime 1x ./plugins/linux/
//	go test -run '^$' -bench 'RouteBatch' -benchtime 1x -timeout 30m ./plugins/linux/ -linux.routes 1000000
//
// Three levels, to compare:
//
//  1. the framework with batching: a scheduler transaction of the routes,
//     the route descriptor sending them through its Batch method. To come
//     when the engine's batch capability (kv.Batcher) is on main, as
//     BenchmarkRouteBatchFramework.
//  2. BenchmarkRouteBatchNetlinkLoop: a plain loop of netlink.Handle
//     RouteAdd / RouteDel calls, one request and one ACK each.
//  3. BenchmarkRouteBatchRaw: the batch socket without the framework, the
//     messages built from the same netlink.Route values: the physical
//     limit of the framework's batches.

// BenchmarkRouteBatchNetlinkLoop is level 2: one RouteAdd, then one
// RouteDel, per route.
func BenchmarkRouteBatchNetlinkLoop(b *testing.B) {
	n, link := batchNs(b)
	rs := hostRoutes(link, 0, *benchRoutes)
	var add, del time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		for _, r := range rs {
			// ip route add DST via GW dev veth0 proto 212
			if err := n.h.RouteAdd(r); err != nil {
				b.Fatal(err)
			}
		}
		add += time.Since(start)
		b.StopTimer()
		if got := len(installed(b, n)); got != len(rs) {
			b.Fatalf("%d routes added, want %d", got, len(rs))
		}
		b.StartTimer()
		start = time.Now()
		for _, r := range rs {
			if err := n.h.RouteDel(r); err != nil {
				b.Fatal(err)
			}
		}
		del += time.Since(start)
	}
	reportRoutes(b, len(rs), add, del)
}

// BenchmarkRouteBatchRaw is level 3: the requests built and sent in one
// batch each way, through the namespace's batch socket.
func BenchmarkRouteBatchRaw(b *testing.B) {
	n, link := batchNs(b)
	rs := hostRoutes(link, 0, *benchRoutes)
	s, err := n.batchSocket()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var add, del time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		for i, err := range s.do(ctx, requests(b, routeAdd, rs)) {
			if err != nil {
				b.Fatalf("route %d: %v", i, err)
			}
		}
		add += time.Since(start)
		b.StopTimer()
		if got := len(installed(b, n)); got != len(rs) {
			b.Fatalf("%d routes added, want %d", got, len(rs))
		}
		b.StartTimer()
		start = time.Now()
		for i, err := range s.do(ctx, requests(b, routeDel, rs)) {
			if err != nil {
				b.Fatalf("delete %d: %v", i, err)
			}
		}
		del += time.Since(start)
	}
	b.StopTimer()
	if got := len(installed(b, n)); got != 0 {
		b.Fatalf("%d routes left", got)
	}
	if s.overruns != 0 {
		b.Errorf("%d receive buffer overruns", s.overruns)
	}
	reportRoutes(b, len(rs), add, del)
}

// reportRoutes reports the times per route and for all routes, each way.
func reportRoutes(b *testing.B, routes int, add, del time.Duration) {
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) / float64(routes) }
	total := func(d time.Duration) float64 { return d.Seconds() / float64(b.N) }
	b.ReportMetric(per(add), "ns/route-add")
	b.ReportMetric(total(add), "s-add")
	b.ReportMetric(per(del), "ns/route-del")
	b.ReportMetric(total(del), "s-del")
	b.ReportMetric(0, "ns/op")
}
