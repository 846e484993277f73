package ui_test

import (
	"strings"
	"testing"
)

// TestUISearchAndDiffInBrowser: the search over keys and values, the diff
// of two transactions and the diff of a key's intended and southbound
// values, rendered in headless Chromium (screenshots kept).
func TestUISearchAndDiffInBrowser(t *testing.T) {
	_, a := fixture(t)
	// Behind the agent's back, the southbound's iface/eth1 changes.
	a.sb.Put("iface/eth1", "up mtu=1400")
	b := newBrowser(t)
	base := serveAgent(t, a) + "/ui/"
	checks := []struct {
		name, path string
		want, not  []string
	}{
		// By value: iface/eth1's mtu; by key: route/r2.
		{"search-value", "search?q=MTU%3D15", []string{`data-key="iface/eth1"`, `<code class="value">"up mtu=1500"</code>`, ">value<", "1 of 8 values"},
			[]string{`data-key="iface/eth0"`}},
		{"search-key", "search?q=r2", []string{`data-key="route/r2"`, ">key<"}, []string{`data-key="route/r1"`}},
		{"search-markup", "search?q=%3Cimg", []string{"&lt;img src=x"}, nil},
		// #4 → #5 updated iface/eth1.
		{"diff-txns", "diff?a=4&b=5", []string{`data-key="iface/eth1" data-kind="changed"`,
			`<span class="dl del">- "up mtu=9000"`, `<span class="dl add">+ "up mtu=1500"`, "1 differ, 7 the same"},
			[]string{`data-key="iface/eth0"`}},
		// #1 → #3: the routes of #2 and iface/eth9 of #3 were added.
		{"diff-added", "diff?a=1&b=3", []string{`data-key="route/r2" data-kind="added"`, `data-key="iface/eth9" data-kind="added"`}, nil},
		{"diff-southbound", "diff?key=iface%2Feth1", []string{`id="differs"`, `<span class="dl del">- "up mtu=1500"`, `<span class="dl add">+ "up mtu=1400"`}, nil},
		{"diff-southbound-same", "diff?key=iface%2Feth0", []string{`id="same"`}, []string{`class="dl del"`}},
		{"diff-bad", "diff?a=4&b=x", []string{`<code id="argument">b</code>`}, nil},
		{"diff-gone", "diff?a=4&b=99", []string{`<code id="argument">b</code>`}, nil},
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
		if strings.Contains(dom, "<title>pwned") {
			t.Errorf("%s: an injected script ran", c.name)
		}
		if t.Failed() {
			t.Fatalf("%s: the rendered page:\n%s", c.name, dom)
		}
	}
}
