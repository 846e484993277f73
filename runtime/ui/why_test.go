package ui

import (
	"reflect"
	"strings"
	"testing"
)

// TestParseWhy: the lines of why_pending (as scheduler.PendingReason
// writes them) become a tree with its keys; lines in another form are
// kept as they are.
func TestParseWhy(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(`route/r3 is PENDING
  via: gw -> route/r2: PENDING, intended, a descriptor handles it
    route/r2 is PENDING (dependency cycle: route/r2 -> x/y -> route/r2)
      iface -> iface/eth2: NONEXISTENT, not intended, a descriptor handles it
  any iface/ -> any of iface/, bond/ (up ones): not intended, no descriptor handles it
`, "\n"), "\n")
	got := parseWhy("route/r3", lines)
	want := &why{Key: "route/r3", State: "PENDING", Unmet: []whyDep{
		{dep: dep{Label: "via: gw", Key: "route/r2"}, State: "PENDING", Intended: true, Providable: true,
			Cause: &why{Key: "route/r2", State: "PENDING", Cycle: "route/r2 → x/y → route/r2", Unmet: []whyDep{
				{dep: dep{Label: "iface", Key: "iface/eth2"}, State: "NONEXISTENT", Providable: true},
			}}},
		{dep: dep{Label: "any iface/", AnyOf: []string{"iface/", "bond/"}, Match: "up ones"}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseWhy:\n got %+v\nwant %+v", got, want)
	}
	for _, bad := range [][]string{
		{"other/key is PENDING"},
		{"route/r3 is PENDING", "  no arrow here: PENDING, intended, a descriptor handles it"},
		{"route/r3 is PENDING", "  a -> b: PENDING, intended, a descriptor handles it", "    c is PENDING"},
		{"route/r3 is PENDING", "      too deep"},
		{"route/r3 is pending"},
	} {
		if w := parseWhy("route/r3", bad); w.Raw != strings.Join(bad, "\n") || w.Key != "" {
			t.Errorf("parseWhy(%q) = %+v, want the lines as they are", bad, w)
		}
	}
}
