//go:build linux

package linux

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// benchRoutes is how many routes the batch benchmarks program.
var benchRoutes = flag.Int("linux.routes", 100_000, "routes that the route batch benchmarks add and delete (try 1000000)")

// txnProfileDir is where BenchmarkRouteBatchFramework writes a CPU
// profile of each of its two transactions, add.pprof and del.pprof.
var txnProfileDir = flag.String("linux.txnprofile", "", "directory for CPU profiles of the route batch framework's add and delete transactions, apart")

// txnProfile starts the CPU profile of the transaction name when
// -linux.txnprofile asks for it, and returns what stops it.
func txnProfile(b *testing.B, name string) (stop func()) {
	if *txnProfileDir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(*txnProfileDir, name+".pprof"))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

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
//  1. BenchmarkRouteBatchFramework: one scheduler transaction of the
//     routes each way, the route descriptor applying them through its
//     Batch method once the scheduler sends batches (it logs whether the
//     batch socket was used; before, the routes go one Create each).
//  2. BenchmarkRouteBatchNetlinkLoop: a plain loop of netlink.Handle
//     RouteAdd / RouteDel calls, one request and one ACK each.
//  3. BenchmarkRouteBatchRaw: the batch socket without the framework, the
//     messages built from the same netlink.Route values: the physical
//     limit of the framework's batches.

// BenchmarkRouteBatchFramework is level 1: the routes set, then deleted,
// in one transaction each, through a scheduler with its default settings
// and the transaction log into a discarding logger. Building a
// transaction (the Set or Delete calls) is timed apart, s-txn-build, and
// is in neither s-add nor s-del.
func BenchmarkRouteBatchFramework(b *testing.B) {
	n, _ := batchNs(b)
	// The veth pair of batchNs is the test's; the plugin makes its own.
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
	veth := func(name, peer string, addrs ...string) *linuxinterfaces.Interface {
		return &linuxinterfaces.Interface{Name: name, Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: peer, Enabled: true, IpAddresses: addrs}
	}
	a, c := veth("fw0", "fw1", "10.1.0.1/16"), veth("fw1", "fw0")
	if _, err := s.Txn().Set(linuxinterfaces.InterfaceKeyFor(a), a).Set(linuxinterfaces.InterfaceKeyFor(c), c).Commit(ctx); err != nil {
		b.Fatal(err)
	}
	values := make([]*linuxl3.Route, *benchRoutes)
	keys := make([]string, len(values))
	for i := range values {
		dst := netip.AddrFrom4([4]byte{172, 16 + byte(i>>16), byte(i >> 8), byte(i)})
		values[i] = &linuxl3.Route{OutgoingInterface: "fw0", DstNetwork: dst.String() + "/32", GwAddr: "10.1.0.254"}
		keys[i] = linuxl3.RouteKeyFor(values[i])
	}
	commit := func(txn *scheduler.Txn) {
		res, err := txn.Commit(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, op := range res.Executed {
			if op.Err != nil {
				b.Fatalf("%s: %v", op.Key, op.Err)
			}
		}
	}
	var build, resync time.Duration
	var add, del stopwatch
	var heap uint64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		before := heapInUse()
		b.StartTimer()
		start := time.Now()
		txn := s.Txn()
		for i, v := range values {
			txn.Set(keys[i], v)
		}
		build += time.Since(start)
		add.start()
		stop := txnProfile(b, "add")
		commit(txn)
		stop()
		add.stop()
		b.StopTimer()
		// What the framework keeps for the routes (the values are the
		// caller's, allocated before), its history included.
		heap += heapInUse() - min(before, heapInUse())
		if got := len(installed(b, n)); got != len(values) {
			b.Fatalf("%d routes added, want %d", got, len(values))
		}
		// A downstream resync over the routes, all correct: one dump.
		start = time.Now()
		res, err := s.Txn(scheduler.DownstreamResync()).Commit(ctx)
		resync += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		for _, op := range res.Executed {
			if op.Called {
				b.Fatalf("the resync of correct routes called the kernel: %v %s", op.Kind, op.Key)
			}
		}
		b.StartTimer()
		start = time.Now()
		txn = s.Txn()
		for _, k := range keys {
			txn.Delete(k)
		}
		build += time.Since(start)
		del.start()
		stop = txnProfile(b, "del")
		commit(txn)
		stop()
		del.stop()
	}
	b.StopTimer()
	if got := len(installed(b, n)); got != 0 {
		b.Fatalf("%d routes left", got)
	}
	own, err := p.ns.get("")
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("routes sent in batches: %v", own.batch != nil)
	b.ReportMetric(build.Seconds()/float64(2*b.N), "s-txn-build")
	b.ReportMetric(resync.Seconds()/float64(b.N), "s-resync")
	b.ReportMetric(float64(heap)/float64(b.N*len(values)), "B-heap/route")
	reportRoutes(b, len(values), add, del)
}

// heapInUse returns the bytes of live heap objects after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkRouteBatchNetlinkLoop is level 2: one RouteAdd, then one
// RouteDel, per route.
func BenchmarkRouteBatchNetlinkLoop(b *testing.B) {
	n, link := batchNs(b)
	rs := hostRoutes(link, 0, *benchRoutes)
	var add, del stopwatch
	b.ResetTimer()
	for range b.N {
		add.start()
		for _, r := range rs {
			// ip route add DST via GW dev veth0 proto 212
			if err := n.h.RouteAdd(r); err != nil {
				b.Fatal(err)
			}
		}
		add.stop()
		b.StopTimer()
		if got := len(installed(b, n)); got != len(rs) {
			b.Fatalf("%d routes added, want %d", got, len(rs))
		}
		b.StartTimer()
		del.start()
		for _, r := range rs {
			if err := n.h.RouteDel(r); err != nil {
				b.Fatal(err)
			}
		}
		del.stop()
	}
	reportRoutes(b, len(rs), add, del)
}

// BenchmarkRouteBatchRaw is level 3: the requests built and sent in one
// batch each way, through the namespace's batch socket. The requests are
// written as the plugin's batches write them (encode=plugin: straight into
// one buffer, the physical limit of the framework's batches), or built as
// nl.NetlinkRequest values of the netlink library and serialised
// (encode=netlink, the way of the framework's batches until issue 28).
func BenchmarkRouteBatchRaw(b *testing.B) {
	ctx := context.Background()
	b.Run("encode=plugin", func(b *testing.B) {
		benchRaw(b, func(s *batchSocket, op routeOp, rs []*netlink.Route) []error {
			return s.send(ctx, encoded(b, op, rs))
		})
	})
	b.Run("encode=netlink", func(b *testing.B) {
		benchRaw(b, func(s *batchSocket, op routeOp, rs []*netlink.Route) []error {
			return s.do(ctx, requests(b, op, rs))
		})
	})
}

// benchRaw is BenchmarkRouteBatchRaw with send building and sending the
// requests.
func benchRaw(b *testing.B, send func(s *batchSocket, op routeOp, rs []*netlink.Route) []error) {
	n, link := batchNs(b)
	rs := hostRoutes(link, 0, *benchRoutes)
	s, err := n.batchSocket()
	if err != nil {
		b.Fatal(err)
	}
	var add, del stopwatch
	b.ResetTimer()
	for range b.N {
		add.start()
		for i, err := range send(s, routeAdd, rs) {
			if err != nil {
				b.Fatalf("route %d: %v", i, err)
			}
		}
		add.stop()
		b.StopTimer()
		if got := len(installed(b, n)); got != len(rs) {
			b.Fatalf("%d routes added, want %d", got, len(rs))
		}
		b.StartTimer()
		del.start()
		for i, err := range send(s, routeDel, rs) {
			if err != nil {
				b.Fatalf("delete %d: %v", i, err)
			}
		}
		del.stop()
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

// reportRoutes reports the times per route and for all routes, each way,
// and the process's CPU time for all routes (cpu-s-add, cpu-s-del): on a
// machine that other work loads, the CPU time varies less than the wall
// time.
func reportRoutes(b *testing.B, routes int, add, del stopwatch) {
	reportEach(b, "route", routes, add.wall, del.wall)
	b.ReportMetric(add.cpu.Seconds()/float64(b.N), "cpu-s-add")
	b.ReportMetric(del.cpu.Seconds()/float64(b.N), "cpu-s-del")
}

// stopwatch adds up the wall time and the process's CPU time (user and
// system, of all its threads: the collector's, the kernel's work for its
// system calls) between start and stop.
type stopwatch struct {
	wall, cpu time.Duration
	t0        time.Time
	c0        time.Duration
}

func (w *stopwatch) start() { w.t0, w.c0 = time.Now(), cpuTime() }

func (w *stopwatch) stop() {
	w.wall += time.Since(w.t0)
	w.cpu += cpuTime() - w.c0
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportEach reports the times per value (ns/UNIT-add, ns/UNIT-del) and
// for all n values (s-add, s-del), each way.
func reportEach(b *testing.B, unit string, n int, add, del time.Duration) {
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) / float64(n) }
	total := func(d time.Duration) float64 { return d.Seconds() / float64(b.N) }
	b.ReportMetric(per(add), "ns/"+unit+"-add")
	b.ReportMetric(total(add), "s-add")
	b.ReportMetric(per(del), "ns/"+unit+"-del")
	b.ReportMetric(total(del), "s-del")
	b.ReportMetric(0, "ns/op")
}
