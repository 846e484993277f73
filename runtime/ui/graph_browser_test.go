package ui_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

// TestUIGraph10kInBrowser: at 10,000 values the graph page refuses the
// whole graph, naming the filters, and draws what a filter keeps: a key's
// neighbourhood, the values of a state (screenshots kept).
func TestUIGraph10kInBrowser(t *testing.T) {
	const n = 5000
	a := newAgent(t, "", func(file, etcd nb.Sink) {
		var kvs []string
		for i := range n {
			kvs = append(kvs, fmt.Sprintf("iface/i%d", i), "up", fmt.Sprintf("route/r%d", i), fmt.Sprintf("10.%d.%d.0/24 dep:iface/i%d", i/256, i%256, i))
		}
		// Three routes wait for interfaces that nobody sets.
		kvs = append(kvs, "route/w1", "10.200.1.0/24 dep:iface/none1", "route/w2", "10.200.2.0/24 dep:iface/none2", "route/w3", "10.200.3.0/24 dep:route/w2")
		apply(t, file, nb.Update{Resync: true, Changes: set(kvs...)})
		apply(t, etcd, nb.Update{Resync: true})
	})
	b := newBrowser(t)
	base := serveAgent(t, a) + "/ui/"
	checks := []struct {
		name, path string
		want, not  []string
		nodes      []string
	}{
		{"graph-10k-refused", "graph", []string{`id="graph-refused"`, "at most 1000 nodes", "has 10005 nodes", "filter.model", "filter.state", "filter.key"},
			[]string{`id="graph"`, `<svg width`}, nil},
		{"graph-10k-model-refused", "graph?model=route", []string{`id="graph-refused"`, "has 5003 nodes (model route)", `<option value="route" selected="">`}, nil, nil},
		{"graph-10k-neighbourhood", "graph?key=iface%2Fi7&depth=1", []string{`id="graph"`, `value="iface/i7"`, "2 nodes"}, []string{`id="graph-refused"`},
			[]string{"iface/i7", "route/r7"}},
		{"graph-10k-neighbourhood-2", "graph?key=iface%2Fnone2&depth=2", []string{`id="graph"`, "3 nodes"}, nil,
			[]string{"iface/none2", "route/w2", "route/w3"}},
		{"graph-10k-pending", "graph?state=PENDING", []string{`id="graph"`, "3 nodes", `<option value="PENDING" selected="">`}, nil,
			[]string{"route/w1", "route/w2", "route/w3"}},
		{"graph-10k-bad-state", "graph?state=HAPPY", []string{`<code id="argument">state</code>`, "HAPPY"}, nil, nil},
		{"graph-10k-bad-model", "graph?model=nope", []string{`<code id="argument">model</code>`, "route"}, nil, nil},
		{"graph-10k-bad-depth", "graph?key=iface%2Fi7&depth=x", []string{`<code id="argument">depth</code>`}, nil, nil},
		{"graph-10k-no-key", "graph?key=iface%2Fnope", []string{`<code id="argument">key</code>`, "not in the graph"}, nil, nil},
	}
	for _, c := range checks {
		dom := b.load(c.name, base+c.path)
		for _, w := range c.want {
			if !strings.Contains(dom, w) {
				t.Errorf("%s: the rendered page lacks %s", c.name, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(dom, w) {
				t.Errorf("%s: the rendered page has %s", c.name, w)
			}
		}
		for _, k := range c.nodes {
			if svgNode(dom, k) == "" {
				t.Errorf("%s: the graph has no node %s", c.name, k)
			}
		}
		if strings.Contains(dom, "<title>route/r8</title>") {
			t.Errorf("%s: the graph shows route/r8, outside the filter", c.name)
		}
		if t.Failed() {
			t.Fatalf("%s: the rendered page:\n%.6000s", c.name, dom)
		}
	}
}
