package kv

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// simpleTemplates are templates whose greedy matching must be exact.
var simpleTemplates = []string{
	"vpp/route/vrf/{vrf_id:uint}/dst/{dst_network:ipprefix}/gw/{next_hop_addr:ip}",
	"t/{a}/x/{b}",
	"vpp/bd/{name}/interface/{interfaces.name}",
	"linux/interface/{name}/address/{ip_addresses:ipprefix}",
	"m/{mac:mac}/{p:ipprefix}",
	"x/{a:uint}-{b:uint}",
	"global/config",
}

func TestSimpleFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		template string
		want     bool
	}{
		{name: "route", template: simpleTemplates[0], want: true},
		{name: "names separated by slashes", template: "t/{a}/x/{b}", want: true},
		{name: "no placeholders", template: "global/config", want: true},
		{name: "uint then dash", template: "x/{a:uint}-{b:uint}", want: true},
		{name: "name then dash", template: "a/{x}-{y:uint}", want: false},
		{name: "ip then dot", template: "n/{addr:ip}.{suffix:uint}", want: false},
		{name: "adjacent placeholders", template: "a/{x}{y:uint}", want: false},
		{name: "uint then ip", template: "a/{x:uint}{y:ip}", want: false},
		{name: "mac then ip prefix", template: "a/{x:mac}:{y:ipprefix}", want: false},
		{name: "ipprefix then letter", template: "a/{x:ipprefix}x", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := MustParseKeyTemplate(tt.template).simple; got != tt.want {
				t.Errorf("%q: simple = %v, want %v", tt.template, got, tt.want)
			}
		})
	}
}

// FuzzGreedyMatchesBacktracking checks the shortcut that split takes for
// simple templates: greedy matching accepts exactly the keys that
// backtracking accepts, and splits them at the same places. Greedy
// matching checks the structure only; split then checks the values, which
// backtracking checks as it goes.
func FuzzGreedyMatchesBacktracking(f *testing.F) {
	for _, seed := range []string{
		"vpp/route/vrf/0/dst/10.1.1.0/24/gw/10.1.1.1",
		"vpp/route/vrf/0/dst/2001:db8::/32/gw/2001:db8::1",
		"vpp/route/vrf/0/dst/10.1.1.0/24/gw/",
		"t/a/x/b",
		"t/a/x/b/",
		"vpp/bd/a/interface/b",
		"linux/interface/eth0/address/10.0.0.1/24",
		"m/aa:bb/1.2.3.4/5",
		"x/1-2",
		"x/1--2",
		"global/config",
	} {
		f.Add(seed)
	}
	var templates []*KeyTemplate
	for _, text := range simpleTemplates {
		tmpl := MustParseKeyTemplate(text)
		if !tmpl.simple {
			f.Fatalf("%q is not simple", text)
		}
		templates = append(templates, tmpl)
	}
	f.Fuzz(func(t *testing.T, key string) {
		for _, tmpl := range templates {
			greedyValues := make([]string, len(tmpl.holderElems))
			greedy := tmpl.matchGreedy(key, greedyValues)
			for i, v := range greedyValues {
				greedy = greedy && checkKeyValue(tmpl.holders[i].Format, v)
			}
			backPos := make([]int, len(tmpl.elems)+1)
			var failed map[[2]int]bool
			back := tmpl.matchBacktrack(key, 0, 0, backPos, &failed)
			if greedy != back {
				t.Fatalf("%q: greedy match of %q = %v, backtracking = %v", tmpl, key, greedy, back)
			}
			if greedy {
				backValues := make([]string, len(tmpl.holderElems))
				for i, r := range tmpl.holderElems {
					backValues[i] = key[backPos[r[0]]:backPos[r[1]]]
				}
				if diff := cmp.Diff(backValues, greedyValues); diff != "" {
					t.Fatalf("%q: %q split differently (-backtracking +greedy):\n%s", tmpl, key, diff)
				}
			}
		}
	})
}
