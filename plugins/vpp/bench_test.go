package vpp

import (
	"context"
	"net/netip"
	"testing"
	"time"

	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// BenchmarkRoutes10k adds 10,000 routes through the scheduler and the
// plugin over govpp's mock adapter (the fake VPP), then deletes them; and
// makes the same 10,000 ip_route_add_del calls through the route handler
// alone, one call at a time (Create, Delete) and batched (Batch: the
// requests sent on one stream, up to window ahead of their replies).
// us-scheduler-per-route is the cost of a route through the scheduler,
// which sends batches; the difference with us-batched-call-per-route is the
// framework's share (scheduler, generated descriptors),
// us-framework-per-route; us-vpp-call-per-route is the cost of one call
// through govpp and the fake, and x-of-the-call the scheduler's cost
// against it. Building each transaction is timed apart (ms-txn-build).
//
//	go test -run='^$' -bench=Routes10k -benchtime=3x ./plugins/vpp
func BenchmarkRoutes10k(b *testing.B) {
	const n = 10000
	e := newEnv(b)
	e.f.Do(func(f *fakeVPP) { f.record = false })
	e.set(nil, loop("if1"), &vppl3.VrfTable{Id: 3})
	values := make([]*vppl3.Route, n)
	keys := make([]vppl3.RouteKey, n)
	for i := range values {
		dst := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24)
		values[i] = &vppl3.Route{VrfId: 3, DstNetwork: dst.String(), NextHopAddr: "192.168.0.1", OutgoingInterface: "if1"}
		keys[i] = vppl3.RouteKey{VrfId: 3, DstNetwork: dst, NextHopAddr: netip.MustParseAddr("192.168.0.1")}
	}
	h := &routes{p: e.p}
	ctx := context.Background()
	ops := make([]vppl3.RouteBatchOp[struct{}], n)
	var fwAdd, fwDel, raw, batched, build time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		txn := e.s.Txn()
		for _, v := range values {
			txn.Set(vppl3.RouteKeyFor(v), v)
		}
		t1 := time.Now()
		if _, err := txn.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		del := e.s.Txn()
		for _, v := range values {
			del.Delete(vppl3.RouteKeyFor(v))
		}
		t3 := time.Now()
		if _, err := del.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		t4 := time.Now()
		for i, v := range values {
			if _, err := h.Create(ctx, keys[i], v); err != nil {
				b.Fatal(err)
			}
		}
		for i, v := range values {
			if err := h.Delete(ctx, keys[i], v, struct{}{}); err != nil {
				b.Fatal(err)
			}
		}
		t5 := time.Now()
		for _, kind := range []kv.BatchKind{kv.BatchCreate, kv.BatchDelete} {
			for i, v := range values {
				ops[i] = vppl3.RouteBatchOp[struct{}]{Key: keys[i], Value: v}
			}
			h.Batch(ctx, kind, ops)
			for _, op := range ops {
				if op.Err != nil {
					b.Fatalf("%v: %v", kind, op.Err)
				}
			}
		}
		t6 := time.Now()
		build += t1.Sub(t0) + t3.Sub(t2)
		fwAdd += t2.Sub(t1)
		fwDel += t4.Sub(t3)
		raw += t5.Sub(t4)
		batched += t6.Sub(t5)
	}
	b.StopTimer()
	for _, st := range e.s.Statuses("vpp/route/") {
		b.Fatalf("%s left: %s", st.Key, st.State)
	}
	perRoute := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 / float64(b.N) / n }
	call, inBatch, fw := perRoute(raw)/2, perRoute(batched)/2, perRoute(fwAdd+fwDel)/2
	b.ReportMetric(call, "us-vpp-call-per-route")
	b.ReportMetric(inBatch, "us-batched-call-per-route")
	b.ReportMetric(fw, "us-scheduler-per-route")
	// The scheduler sends batches: its share is what it adds to the
	// batched calls; x-of-the-call compares it with the loop of single
	// calls a person would write.
	b.ReportMetric(fw-inBatch, "us-framework-per-route")
	b.ReportMetric(fw/call, "x-of-the-call")
	b.ReportMetric(float64(build.Microseconds())/1000/float64(b.N)/2, "ms-txn-build")
	b.ReportMetric(call/inBatch, "x-batch-speedup")
	b.ReportMetric(0, "ns/op")
}
