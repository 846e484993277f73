package ui_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestUIPlotsInBrowser: the plots page in headless Chromium draws, from
// the fixture's history, one bar per minute that began transactions with
// their count, two duration points for each, one sample of the values by
// state, and the failed operation of #3 (screenshot kept).
func TestUIPlotsInBrowser(t *testing.T) {
	_, a := fixture(t)
	b := newBrowser(t)
	base := serveAgent(t, a) + "/ui/"
	// The minutes the fixture's transactions began in (usually one; two
	// if it ran across a minute's end).
	perMinute := map[int64]int{}
	failedAt := map[int64]int{}
	for _, rec := range a.s.History() {
		m := rec.Start.Unix() / 60
		perMinute[m]++
		for _, op := range rec.Executed {
			if op.Err != nil {
				failedAt[m]++
			}
		}
	}
	// The page counts minutes ago from its own clock, read while it is
	// served: between before and after, which differ when the load
	// (seconds, on a loaded machine) crosses a minute's end.
	before := time.Now().Unix() / 60
	dom := b.load("plots", base+"plots")
	after := time.Now().Unix() / 60
	plot := func(id string) string {
		i := strings.Index(dom, `<svg xmlns="http://www.w3.org/2000/svg" class="plot" id="`+id+`"`)
		if i < 0 {
			t.Fatalf("no plot %s in the page:\n%s", id, dom)
		}
		j := strings.Index(dom[i:], "</svg>")
		return dom[i : i+j]
	}
	bars := regexp.MustCompile(`<rect class="bar"[^>]*data-ago="(\d+)" data-value="(\d+)"`)
	got := map[string]bool{}
	for _, m := range bars.FindAllStringSubmatch(plot("plot-txns"), -1) {
		got[m[1]+"="+m[2]] = true
	}
	if len(got) != len(perMinute) {
		t.Errorf("plot-txns: %d bars %v, want %d %v", len(got), got, len(perMinute), perMinute)
	}
	// The bars of the history's minutes, counted from the page's minute
	// now (false if one lacks).
	drawnAt := func(now int64) bool {
		for m, n := range perMinute {
			if !got[fmt.Sprintf("%d=%d", now-m, n)] {
				return false
			}
		}
		return true
	}
	if !drawnAt(before) && !drawnAt(after) {
		t.Errorf("plot-txns: bars %v (minutes ago=count), want the history's %v (minute=count) counted from minute %d or %d", got, perMinute, before, after)
	}
	if n := strings.Count(plot("plot-duration"), `<circle class="pt"`); n != 2*len(perMinute) {
		t.Errorf("plot-duration: %d points, want %d", n, 2*len(perMinute))
	}
	if n := strings.Count(plot("plot-states"), `<circle class="pt"`); n < 1 {
		t.Errorf("plot-states: no sample")
	}
	var failed int
	for _, m := range bars.FindAllStringSubmatch(plot("plot-failures"), -1) {
		var v int
		fmt.Sscan(m[2], &v)
		failed += v
	}
	if failed != 1 || len(failedAt) != 1 {
		t.Errorf("plot-failures: %d failed operations drawn (history: %v), want 1", failed, failedAt)
	}
	if strings.Contains(dom, "<script") && !strings.Contains(dom, `<script src="static/live.js">`) {
		t.Errorf("the plots page has a script of its own")
	}
	if t.Failed() {
		t.Logf("the page:\n%s", dom)
	}
}
