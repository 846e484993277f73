package graphviz_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/graphviz"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestSchedulerSnapshot renders the graph of a real scheduler as of a past
// transaction and now.
func TestSchedulerSnapshot(t *testing.T) {
	t.Parallel()
	requireDot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := scheduler.New(scheduler.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	sb := kvtest.NewSB()
	for _, c := range []kvtest.Config{
		{Name: "iface", KeyTemplate: "iface/{name}"},
		{Name: "route", KeyPrefix: "route/"},
		{Name: "bd", KeyPrefix: "bd/"},
		{Name: "bdif", KeyPrefix: "bdif/"},
	} {
		d, err := sb.Descriptor(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	v := kvtest.Value
	commit := func(txn *scheduler.Txn) uint64 {
		t.Helper()
		res, err := txn.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return res.Seq
	}
	commit(s.Txn().
		Set("iface/eth0", v("mtu=1500")).
		Set("route/r1", v("dep:iface/eth1")).
		Set("route/r2", v("any:iface/eth9/addr/")).
		Set("bd/b1", v("derive:bdif/b1/eth0[dep:iface/eth0]")))
	seq := commit(s.Txn().Set("iface/eth1", v("mtu=9000")))
	commit(s.Txn().Delete("iface/eth1"))

	past, err := s.GraphSnapshot(seq)
	if err != nil {
		t.Fatal(err)
	}
	now, err := s.GraphSnapshot(0)
	if err != nil {
		t.Fatal(err)
	}
	pastDOT, err := graphviz.DOT(past, graphviz.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	nowDOT, err := graphviz.DOT(now, graphviz.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	// As of seq, iface/eth1 existed and route/r1 was created on it: both
	// touched. Now r1 waits again.
	for _, c := range []struct {
		dot, head string
		want      []string
	}{
		{string(pastDOT), `"iface/eth1"`, []string{`CONFIGURED`, `penwidth=3`}},
		{string(pastDOT), `"route/r1"`, []string{`CONFIGURED`, `penwidth=3`}},
		{string(pastDOT), `"iface/eth0"`, []string{`CONFIGURED`}},
		{string(pastDOT), `"bdif/b1/eth0"`, []string{`shape=ellipse`, `CONFIGURED`}},
		{string(pastDOT), `"bd/b1" -> "bdif/b1/eth0"`, []string{`arrowhead=odiamond`}},
		{string(pastDOT), `"bdif/b1/eth0" -> "iface/eth0"`, nil},
		{string(pastDOT), `"route/r2"`, []string{`PENDING`, `dashed`}},
		{string(nowDOT), `"route/r1"`, []string{`PENDING`, `style="rounded,filled,dashed"`, `penwidth=3`}},
		{string(nowDOT), `"route/r1" -> "iface/eth1"`, []string{`style=dashed`}},
	} {
		line := statement(t, c.dot, c.head)
		for _, w := range c.want {
			if !strings.Contains(line, w) {
				t.Errorf("%s lacks %s", line, w)
			}
		}
	}
	if strings.Contains(statement(t, string(pastDOT), `"iface/eth0"`), "penwidth") {
		t.Errorf("iface/eth0 is highlighted as of transaction %d, which did not touch it", seq)
	}
	if !strings.Contains(string(pastDOT), `label="values as of transaction 2 (`) {
		t.Errorf("the title does not name transaction %d:\n%s", seq, pastDOT)
	}

	svg, err := graphviz.SVG(ctx, past, graphviz.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	nodes, _, _ := parseSVG(t, svg)
	for _, n := range past.Nodes {
		if _, ok := nodes[n.Key]; !ok {
			t.Errorf("no node titled %q in the SVG of transaction %d", n.Key, seq)
		}
	}
}
