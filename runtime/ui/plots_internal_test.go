package ui

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The bins: a duration is at most its bin's top, and the top is within
// 19 % (2^(1/4)) of it.
func TestDurBins(t *testing.T) {
	for _, d := range []time.Duration{time.Microsecond, 3 * time.Microsecond, time.Millisecond, 1700 * time.Microsecond, time.Second, time.Minute} {
		top := binTop(durBin(d))
		if top <= d || float64(top) > float64(d)*math.Pow(2, 0.25)*1.0001 {
			t.Errorf("%v: bin %d's top is %v", d, durBin(d), top)
		}
	}
	if durBin(0) != 0 || durBin(-time.Second) != 0 || durBin(1000*time.Hour) != durBins-1 {
		t.Errorf("the bins of the extremes: %d %d %d", durBin(0), durBin(-time.Second), durBin(1000*time.Hour))
	}
}

func TestRing(t *testing.T) {
	var r ring
	now := time.Date(2026, 11, 28, 3, 0, 30, 0, time.UTC)
	// This minute: 98 transactions of 1 ms, 2 of 1 s; 3 failed and 5
	// retried operations.
	for i := range 100 {
		d := time.Millisecond
		if i >= 98 {
			d = time.Second
		}
		r.addTxn(now.Add(-time.Duration(i)*time.Millisecond), d, 0, 0)
	}
	r.addTxn(now, time.Millisecond, 3, 5)
	// 10 minutes ago: 1 of 20 ms. 60 minutes ago: out of the hour.
	r.addTxn(now.Add(-10*time.Minute), 20*time.Millisecond, 0, 0)
	r.addTxn(now.Add(-60*time.Minute), time.Millisecond, 0, 0)
	r.sample(now, map[string]int{"CONFIGURED": 7, "PENDING": 2})
	v := r.view(now)
	if len(v) != ringMinutes || v[0].Ago != 59 || v[59].Ago != 0 {
		t.Fatalf("the view: %d minutes, from %d ago to %d ago", len(v), v[0].Ago, v[len(v)-1].Ago)
	}
	cur := v[59]
	if cur.Txns != 101 || cur.Failed != 3 || cur.Retried != 5 {
		t.Errorf("this minute: %d transactions, %d failed, %d retried; want 101, 3, 5", cur.Txns, cur.Failed, cur.Retried)
	}
	near := func(got, want time.Duration) bool { return got >= want && float64(got) <= float64(want)*1.19 }
	if !near(cur.P50, time.Millisecond) || !near(cur.P99, time.Second) {
		t.Errorf("this minute: p50 %v (want ~1ms), p99 %v (want ~1s)", cur.P50, cur.P99)
	}
	if cur.States["CONFIGURED"] != 7 || cur.States["PENDING"] != 2 {
		t.Errorf("this minute's states: %v", cur.States)
	}
	if m := v[49]; m.Txns != 1 || !near(m.P50, 20*time.Millisecond) || !near(m.P99, 20*time.Millisecond) || m.States != nil {
		t.Errorf("10 minutes ago: %+v", m)
	}
	total := 0
	for _, m := range v {
		total += m.Txns
	}
	if total != 102 {
		t.Errorf("the hour holds %d transactions, want 102 (the one of an hour ago is out)", total)
	}
	// An hour later, the ring has moved on: the old minutes are gone,
	// and a transaction older than the ring's minute is not counted.
	later := now.Add(time.Hour)
	r.addTxn(later, time.Millisecond, 0, 0)
	r.addTxn(now, time.Millisecond, 0, 0) // its bucket now holds a newer minute
	v = r.view(later)
	total = 0
	for _, m := range v {
		total += m.Txns
	}
	if total != 1 || v[59].Txns != 1 || v[59].States != nil {
		t.Errorf("an hour later: %d transactions in the hour (want 1), this minute %+v", total, v[59])
	}
}

// The SVG has one bar per minute with transactions and one point per
// minute with a duration.
func TestPlotSVG(t *testing.T) {
	var r ring
	now := time.Date(2026, 11, 28, 3, 0, 30, 0, time.UTC)
	for _, ago := range []int{0, 0, 5, 30} {
		r.addTxn(now.Add(-time.Duration(ago)*time.Minute), time.Millisecond, 1, 0)
	}
	r.sample(now, map[string]int{"CONFIGURED": 3})
	r.addDrift(now, 2, 1)
	r.addDrift(now.Add(-3*time.Minute), 1, 0)
	plots := plotsOf(r.view(now))
	byID := map[string]string{}
	for _, p := range plots {
		byID[p.ID] = string(p.SVG)
	}
	for id, want := range map[string][2]int{
		// id: rect bars, circle points
		"plot-txns":     {3, 0},
		"plot-duration": {0, 6},
		"plot-states":   {0, 1},
		"plot-failures": {3, 0},
		"plot-drift":    {3, 0}, // drift in two minutes, repairs in one
	} {
		svg := byID[id]
		if !strings.HasPrefix(svg, `<svg xmlns="http://www.w3.org/2000/svg" class="plot" id="`+id+`"`) {
			t.Errorf("%s: not an SVG of its id: %.100s", id, svg)
		}
		if n := strings.Count(svg, `<rect class="bar"`); n != want[0] {
			t.Errorf("%s: %d bars, want %d", id, n, want[0])
		}
		if n := strings.Count(svg, `<circle class="pt"`); n != want[1] {
			t.Errorf("%s: %d points, want %d", id, n, want[1])
		}
	}
	if !strings.Contains(byID["plot-txns"], `data-ago="0" data-value="2"`) || !strings.Contains(byID["plot-txns"], `data-ago="30" data-value="1"`) {
		t.Errorf("the transactions' bars: %s", byID["plot-txns"])
	}
}

func TestDarker(t *testing.T) {
	for in, want := range map[string]string{"#b2f2bb": "#6a9170", "#000000": "#000000", "red": "red", "#12345": "#12345"} {
		if got := darker(in); got != want {
			t.Errorf("darker(%q) = %q, want %q", in, got, want)
		}
	}
}
