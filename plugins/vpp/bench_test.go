package vpp

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/core"

	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
)

// BenchmarkRoutes10k adds 10,000 routes through the scheduler and the
// plugin over govpp's mock adapter (the fake VPP), then deletes them; and
// makes the same 10,000 ip_route_add_del calls through the route handler
// alone. The difference is the framework's share (scheduler, generated
// descriptors): us-framework-per-route, next to us-vpp-call-per-route,
// the cost of one call through govpp and the fake. Building each
// transaction is timed apart (ms-txn-build). us-pipelined-call-per-route
// is what the binary API's pipelined path would cost instead of one call
// at a time: the same requests sent on one stream while a reader takes the
// replies (measured once, outside the timed loop; the plugin does not use
// it: the scheduler hands a handler one value at a time).
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
	var fwAdd, fwDel, raw, build time.Duration
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
		build += t1.Sub(t0) + t3.Sub(t2)
		fwAdd += t2.Sub(t1)
		fwDel += t4.Sub(t3)
		raw += t5.Sub(t4)
	}
	b.StopTimer()
	pipelined := pipelineRoutes(b, e.p, values, keys)
	for _, st := range e.s.Statuses("vpp/route/") {
		b.Fatalf("%s left: %s", st.Key, st.State)
	}
	perRoute := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 / float64(b.N) / n }
	call := perRoute(raw) / 2
	b.ReportMetric(call, "us-vpp-call-per-route")
	b.ReportMetric(perRoute(fwAdd+fwDel)/2-call, "us-framework-per-route")
	b.ReportMetric(perRoute(fwAdd+fwDel)/2/call, "x-of-the-call")
	b.ReportMetric(float64(build.Microseconds())/1000/float64(b.N)/2, "ms-txn-build")
	b.ReportMetric(float64(pipelined.Nanoseconds())/1000/2/n, "us-pipelined-call-per-route")
	b.ReportMetric(0, "ns/op")
}

// pipelineRoutes adds and deletes the routes over one stream, requests
// sent while another goroutine reads the replies, and returns the time.
func pipelineRoutes(b *testing.B, p *Plugin, values []*vppl3.Route, keys []vppl3.RouteKey) time.Duration {
	ctx := context.Background()
	s, err := p.conn.NewStream(ctx, core.WithReplySize(1024))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	idx, err := p.swIfIndex("if1")
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	replies := make(chan error, 1)
	go func() {
		for range 2 * len(values) {
			m, err := s.RecvMsg()
			if err == nil {
				err = api.RetvalToVPPApiError(m.(*ip.IPRouteAddDelReply).Retval)
			}
			if err != nil {
				replies <- err
				return
			}
		}
		replies <- nil
	}()
	for _, add := range []bool{true, false} {
		for i, k := range keys {
			path := fib_types.FibPath{SwIfIndex: idx, TableID: k.VrfId, Weight: uint8(values[i].EffectiveWeight())}
			path.Nh.Address.SetIP4(k.NextHopAddr.As4())
			if err := s.SendMsg(&ip.IPRouteAddDel{IsAdd: add, IsMultipath: true, Route: ip.IPRoute{
				TableID: k.VrfId, Prefix: prefix(k.DstNetwork), NPaths: 1, Paths: []fib_types.FibPath{path},
			}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := <-replies; err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}
