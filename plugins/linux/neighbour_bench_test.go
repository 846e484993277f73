//go:build linux

package linux

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// benchNeighbours is how many entries the neighbour batch benchmarks set.
var benchNeighbours = flag.Int("linux.neighbours", 10_000, "entries that the neighbour batch benchmarks set and delete")

// The neighbour batch benchmarks set -linux.neighbours permanent entries
// (two thirds ARP, one third NDP) on one veth, then delete them, each way
// in a namespace of their own; every op does both. They report
// ns-per-entry and seconds for all the entries, each way:
//
//	go test -run '^$' -bench 'NeighbourBatch' -benchtime 1x ./plugins/linux/
//
// Three levels, as for routes (see batch_bench_test.go): the framework
// (one scheduler transaction each way, the neighbour handler's Batch), a
// plain loop of netlink.Handle NeighSet / NeighDel calls, and the batch
// socket without the framework.

// BenchmarkNeighbourBatchFramework is level 1: the entries set, then
// deleted, in one transaction each, through a scheduler with the
// transaction log into a discarding logger: with its default settings
// (batches), and with batches turned off (WithBatchSize(1): one Create or
// Delete per entry, as before the handler had Batch).
func BenchmarkNeighbourBatchFramework(b *testing.B) {
	b.Run("batches", func(b *testing.B) { benchNeighbourFramework(b) })
	b.Run("calls", func(b *testing.B) { benchNeighbourFramework(b, scheduler.WithBatchSize(1)) })
}

func benchNeighbourFramework(b *testing.B, opts ...scheduler.Option) {
	n, _ := batchNs(b)
	p, err := New(WithNamespace(n.ns))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	s, err := scheduler.New(append([]scheduler.Option{scheduler.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	defer s.Close(ctx)
	if err := s.Register(p.Descriptors()...); err != nil {
		b.Fatal(err)
	}
	a := &linuxinterfaces.Interface{Name: "nb0", Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: "nb1", Enabled: true}
	c := &linuxinterfaces.Interface{Name: "nb1", Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: "nb0", Enabled: true}
	if _, err := s.Txn().Set(linuxinterfaces.InterfaceKeyFor(a), a).Set(linuxinterfaces.InterfaceKeyFor(c), c).Commit(ctx); err != nil {
		b.Fatal(err)
	}
	values := neighbourValues("nb0", *benchNeighbours)
	keys := make([]string, len(values))
	for i, v := range values {
		keys[i] = linuxl3.NeighbourKeyFor(v)
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
	var add, del time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		txn := s.Txn()
		for i, v := range values {
			txn.Set(keys[i], v)
		}
		commit(txn)
		add += time.Since(start)
		b.StopTimer()
		if got := len(permanentNeighbours(b, n.h)); got != len(values) {
			b.Fatalf("%d entries set, want %d", got, len(values))
		}
		b.StartTimer()
		start = time.Now()
		txn = s.Txn()
		for _, k := range keys {
			txn.Delete(k)
		}
		commit(txn)
		del += time.Since(start)
	}
	b.StopTimer()
	if got := len(permanentNeighbours(b, n.h)); got != 0 {
		b.Fatalf("%d entries left", got)
	}
	own, err := p.ns.get("")
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("entries sent in batches: %v", own.batch != nil)
	reportEach(b, "neighbour", len(values), add, del)
}

// kernelNeighbours are the entries of neighbourValues as the handler
// builds them, over link.
func kernelNeighbours(link netlink.Link, n int) []*netlink.Neigh {
	es := make([]*netlink.Neigh, n)
	for i, v := range neighbourValues(link.Attrs().Name, n) {
		ip := net.ParseIP(v.IpAddress)
		family := unix.AF_INET6
		if ip4 := ip.To4(); ip4 != nil {
			ip, family = ip4, unix.AF_INET
		}
		hw, _ := net.ParseMAC(v.HwAddress)
		es[i] = &netlink.Neigh{LinkIndex: link.Attrs().Index, Family: family, State: netlink.NUD_PERMANENT, IP: ip, HardwareAddr: hw}
	}
	return es
}

// BenchmarkNeighbourBatchNetlinkLoop is level 2: one NeighSet, then one
// NeighDel, per entry.
func BenchmarkNeighbourBatchNetlinkLoop(b *testing.B) {
	n, link := batchNs(b)
	es := kernelNeighbours(link, *benchNeighbours)
	var add, del time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		for _, e := range es {
			// ip neigh replace IP lladdr MAC dev veth0 nud permanent
			if err := n.h.NeighSet(e); err != nil {
				b.Fatal(err)
			}
		}
		add += time.Since(start)
		b.StopTimer()
		if got := len(permanentNeighbours(b, n.h)); got != len(es) {
			b.Fatalf("%d entries set, want %d", got, len(es))
		}
		b.StartTimer()
		start = time.Now()
		for _, e := range es {
			if err := n.h.NeighDel(e); err != nil {
				b.Fatal(err)
			}
		}
		del += time.Since(start)
	}
	reportEach(b, "neighbour", len(es), add, del)
}

// BenchmarkNeighbourBatchRaw is level 3: the requests built and sent in
// one batch each way, through the namespace's batch socket.
func BenchmarkNeighbourBatchRaw(b *testing.B) {
	n, link := batchNs(b)
	es := kernelNeighbours(link, *benchNeighbours)
	s, err := n.batchSocket()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	batch := func(op neighOp) {
		reqs := make([]*nl.NetlinkRequest, len(es))
		for i, e := range es {
			reqs[i] = neighRequest(op, e)
		}
		for i, err := range s.do(ctx, reqs) {
			if err != nil {
				b.Fatalf("entry %d: %v", i, err)
			}
		}
	}
	var add, del time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		batch(neighReplace)
		add += time.Since(start)
		b.StopTimer()
		if got := len(permanentNeighbours(b, n.h)); got != len(es) {
			b.Fatalf("%d entries set, want %d", got, len(es))
		}
		b.StartTimer()
		start = time.Now()
		batch(neighDel)
		del += time.Since(start)
	}
	b.StopTimer()
	if got := len(permanentNeighbours(b, n.h)); got != 0 {
		b.Fatalf("%d entries left", got)
	}
	if s.overruns != 0 {
		b.Errorf("%d receive buffer overruns", s.overruns)
	}
	reportEach(b, "neighbour", len(es), add, del)
}
