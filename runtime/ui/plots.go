package ui

import (
	"context"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/graphviz"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// The plots' ring: one bucket per minute of the last hour, fixed in size.
const (
	ringMinutes = 60
	// durBins are the bins of a minute's transaction durations: bin i
	// holds the durations below durBase·2^((i+1)/4) (the last bin
	// everything longer), so a percentile is within 19 % of the truth.
	durBins = 128
	durBase = time.Microsecond
)

// bucket is one minute of the ring.
type bucket struct {
	// minute is the bucket's Unix minute (0: empty).
	minute int64
	txns   int
	// failed are the executed operations that failed; retried the
	// executed operations of retries.
	failed, retried int
	// drifted are the values drift checks found changed or gone behind
	// the agent's back; repaired the calls that repaired them.
	drifted, repaired int
	dur               [durBins]uint32
	// states is the last sample of the values by state in this minute
	// (nil: none taken).
	states map[string]int
}

// ring holds the plots' data: a fixed number of 1-minute buckets.
type ring struct {
	// feeding serialises the feeds (each reads the history once).
	feeding sync.Mutex
	mu      sync.Mutex
	b       [ringMinutes]bucket
	lastSeq uint64
	// lastStart is when the newest transaction counted began.
	lastStart time.Time
	// missed counts the transactions the history dropped before the
	// ring read them.
	missed uint64
}

// durBin is the bin of a duration.
func durBin(d time.Duration) int {
	if d < durBase {
		return 0
	}
	i := int(math.Floor(4 * math.Log2(float64(d)/float64(durBase))))
	return min(max(i, 0), durBins-1)
}

// binTop is the upper bound of bin i.
func binTop(i int) time.Duration {
	return time.Duration(float64(durBase) * math.Pow(2, float64(i+1)/4))
}

// at returns the bucket of minute m, emptied if it held an older minute;
// nil when m is older than the bucket's minute (out of the ring).
func (r *ring) at(m int64) *bucket {
	b := &r.b[((m%ringMinutes)+ringMinutes)%ringMinutes]
	switch {
	case b.minute == m:
	case b.minute < m:
		*b = bucket{minute: m}
	default:
		return nil
	}
	return b
}

// addTxn counts one transaction in the minute it started.
func (r *ring) addTxn(start time.Time, took time.Duration, failed, retried int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.at(start.Unix() / 60)
	if b == nil {
		return
	}
	b.txns++
	b.failed += failed
	b.retried += retried
	b.dur[durBin(took)]++
}

// addDrift counts the drift a drift check found, and its repairs, in the
// minute it started.
func (r *ring) addDrift(start time.Time, drifted, repaired int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b := r.at(start.Unix() / 60); b != nil {
		b.drifted += drifted
		b.repaired += repaired
	}
}

// sample records the values by state at t.
func (r *ring) sample(t time.Time, counts map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b := r.at(t.Unix() / 60); b != nil {
		b.states = counts
	}
}

// minuteView is one minute of the plots.
type minuteView struct {
	// Ago is how many minutes before now's minute (59 … 0).
	Ago             int
	Txns            int
	P50, P99        time.Duration
	Failed, Retried int
	// Drifted, Repaired: drift found, and the calls that repaired it.
	Drifted, Repaired int
	States            map[string]int
}

// quantile is the upper bound of the bin that holds the q-th of the
// durations.
func quantile(h *[durBins]uint32, n int, q float64) time.Duration {
	if n == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(n)))
	var seen uint64
	for i, c := range h {
		seen += uint64(c)
		if seen >= want && c > 0 {
			return binTop(i)
		}
	}
	return binTop(durBins - 1)
}

// view returns the last hour up to now, oldest first: one entry per
// minute, empty minutes included.
func (r *ring) view(now time.Time) []minuteView {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := now.Unix() / 60
	out := make([]minuteView, ringMinutes)
	for i := range out {
		m := cur - int64(ringMinutes-1-i)
		v := minuteView{Ago: ringMinutes - 1 - i}
		b := &r.b[((m%ringMinutes)+ringMinutes)%ringMinutes]
		if b.minute == m {
			v.Txns, v.Failed, v.Retried, v.States = b.txns, b.failed, b.retried, b.states
			v.Drifted, v.Repaired = b.drifted, b.repaired
			v.P50, v.P99 = quantile(&b.dur, b.txns, 0.5), quantile(&b.dur, b.txns, 0.99)
		}
		out[i] = v
	}
	return out
}

// feed adds the transactions of the history that the ring has not seen
// and samples the values by state, through the API (History, Stats), with
// the header calls (the credential); then it saves the ring to the
// store, if any.
func (h *handler) feed(ctx context.Context, calls http.Header, now time.Time) error {
	r := h.plots
	r.feeding.Lock()
	defer r.feeding.Unlock()
	r.mu.Lock()
	last := r.lastSeq
	r.mu.Unlock()
	resp, err := h.svc.History(ctx, withHeader(calls, &apiv1.HistoryRequest{}))
	if err != nil {
		return err
	}
	recs := resp.Msg.GetRecords()
	var oldest, newest uint64
	for _, rec := range recs {
		if s := rec.GetSeq(); s > 0 {
			newest = max(newest, s)
			if oldest == 0 || s < oldest {
				oldest = s
			}
		}
	}
	seen := func(rec *apiv1.Record) bool { return rec.GetSeq() <= last }
	if newest > 0 && newest < last {
		// The history's numbers are below the ring's: they started
		// again (a new state, another agent's), or the history lost
		// its last records (a crash before they were written). Either
		// way, what began after the last transaction counted is new.
		r.mu.Lock()
		after := r.lastStart
		r.lastSeq = 0
		r.mu.Unlock()
		h.logger.Warn("ui: the plots' ring counted transactions up to a number past the history's newest (its numbering restarted, or it lost records): counting what began after the last one counted",
			"ring", last, "history", newest, "after", after)
		last = 0
		seen = func(rec *apiv1.Record) bool { return !timeOf(rec.GetStart()).After(after) }
	}
	if last != 0 && oldest > last+1 {
		// The history no longer holds what follows the ring's last
		// transaction: those left it unread. (When it holds the last
		// one, a gap in the numbers is not a loss: the numbers an
		// agent reserved before a restart are skipped.)
		r.mu.Lock()
		r.missed += oldest - last - 1
		r.mu.Unlock()
	}
	var lastStart time.Time
	for _, rec := range recs {
		if seen(rec) {
			continue
		}
		start, end := timeOf(rec.GetStart()), timeOf(rec.GetEnd())
		if start.After(lastStart) {
			lastStart = start
		}
		if start.IsZero() || now.Sub(start) > ringMinutes*time.Minute {
			continue
		}
		var failed, retried int
		for _, op := range rec.GetExecuted() {
			if op.GetError() != "" {
				failed++
			}
			if slices.Contains(op.GetFlags(), "RETRY") {
				retried++
			}
		}
		r.addTxn(start, max(end.Sub(start), 0), failed, retried)
		if rec.GetKind() == scheduler.DriftCheckTxn.String() {
			drifted, repaired := 0, 0
			for _, op := range rec.GetExecuted() {
				if slices.Contains(op.GetFlags(), "DRIFTED") {
					drifted++
				}
				if op.GetCalled() {
					repaired++
				}
			}
			r.addDrift(start, drifted, repaired)
		}
	}
	r.mu.Lock()
	r.lastSeq = max(r.lastSeq, newest)
	if lastStart.After(r.lastStart) {
		r.lastStart = lastStart
	}
	r.mu.Unlock()
	st, err := h.svc.Stats(ctx, withHeader(calls, &apiv1.StatsRequest{}))
	if err != nil {
		return err
	}
	counts := map[string]int{}
	for s, n := range st.Msg.GetStates() {
		counts[s] = int(n)
	}
	r.sample(now, counts)
	h.savePlots()
	return nil
}

// The plots' geometry, in SVG units.
const (
	plotW, plotH       = 640, 170
	plotLeft, plotTop  = 56, 12
	plotRight, plotBot = 10, 26
)

// series is one line or one set of bars of a plot.
type series struct {
	Name, Class, Color string
	// Y per minute (oldest first); NaN: no point.
	Y []float64
}

// plotSVG draws series over the last hour: bars (side by side) or lines
// with a point per minute that has one. id names the <svg>; unit formats
// the axis's values.
func plotSVG(id, title string, bars bool, ss []series, unit func(float64) string) template.HTML {
	var b strings.Builder
	top := 0.0
	for _, s := range ss {
		for _, y := range s.Y {
			if !math.IsNaN(y) {
				top = max(top, y)
			}
		}
	}
	if top == 0 {
		top = 1
	}
	iw, ih := float64(plotW-plotLeft-plotRight), float64(plotH-plotTop-plotBot)
	x := func(i int) float64 { return plotLeft + (float64(i)+0.5)*iw/ringMinutes }
	y := func(v float64) float64 { return plotTop + ih - v/top*ih }
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="plot" id="%s" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`,
		id, plotW, plotH, plotW, plotH, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<title>%s</title>`, template.HTMLEscapeString(title))
	// The axes and their labels: the top value, zero; an hour ago, now.
	fmt.Fprintf(&b, `<g class="axes" stroke="#adb5bd" fill="none"><line x1="%d" y1="%d" x2="%d" y2="%d"/><line x1="%d" y1="%d" x2="%d" y2="%d"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke-dasharray="2,3"/></g>`,
		plotLeft, plotTop, plotLeft, plotH-plotBot, plotLeft, plotH-plotBot, plotW-plotRight, plotH-plotBot,
		plotLeft, plotTop, plotW-plotRight, plotTop)
	fmt.Fprintf(&b, `<g class="labels" font-size="11" fill="#6c757d" font-family="sans-serif">`)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, plotLeft-4, plotTop+4, template.HTMLEscapeString(unit(top)))
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">0</text>`, plotLeft-4, plotH-plotBot+4)
	fmt.Fprintf(&b, `<text x="%d" y="%d">−60 min</text>`, plotLeft, plotH-8)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">−30 min</text>`, x(30), plotH-8)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">now</text>`, plotW-plotRight, plotH-8)
	b.WriteString(`</g>`)
	slot := iw / ringMinutes
	for si, s := range ss {
		fmt.Fprintf(&b, `<g class="series %s" data-series="%s" fill="%s" stroke="%s">`, s.Class, template.HTMLEscapeString(s.Name), s.Color, s.Color)
		if bars {
			bw := slot * 0.8 / float64(len(ss))
			for i, v := range s.Y {
				if math.IsNaN(v) || v == 0 {
					continue
				}
				bx := plotLeft + float64(i)*slot + slot*0.1 + float64(si)*bw
				fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" stroke="none" data-ago="%d" data-value="%g"><title>%s: %s, %d min ago</title></rect>`,
					bx, y(v), bw, y(0)-y(v), ringMinutes-1-i, v, template.HTMLEscapeString(s.Name), template.HTMLEscapeString(unit(v)), ringMinutes-1-i)
			}
		} else {
			var pts []string
			for i, v := range s.Y {
				if !math.IsNaN(v) {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(v)))
				}
			}
			if len(pts) > 1 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke-width="1.5" points="%s"/>`, strings.Join(pts, " "))
			}
			for i, v := range s.Y {
				if !math.IsNaN(v) {
					fmt.Fprintf(&b, `<circle class="pt" cx="%.1f" cy="%.1f" r="2.5" stroke="none" data-ago="%d" data-value="%g"><title>%s: %s, %d min ago</title></circle>`,
						x(i), y(v), ringMinutes-1-i, v, template.HTMLEscapeString(s.Name), template.HTMLEscapeString(unit(v)), ringMinutes-1-i)
				}
			}
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // built here; every text in it escaped
}

// darker is a colour "#rrggbb" darkened, so that the graph's pale fills
// show as lines on white (another form is returned as it is).
func darker(c string) string {
	var r, g, b uint8
	if n, err := fmt.Sscanf(c, "#%02x%02x%02x", &r, &g, &b); err != nil || n != 3 || len(c) != 7 {
		return c
	}
	f := func(v uint8) uint8 { return uint8(float64(v) * 0.6) }
	return fmt.Sprintf("#%02x%02x%02x", f(r), f(g), f(b))
}

// legendItem is one series' name and colour under a plot.
type legendItem struct{ Name, Color string }

type plot struct {
	ID, Title string
	SVG       template.HTML
	Legend    []legendItem
}

type plotsData struct {
	page
	Plots  []plot
	Missed uint64
	// FeedEvery is Feed's interval while it runs (0: none runs).
	FeedEvery time.Duration
}

func count(v float64) string { return fmt.Sprintf("%g", v) }

func millis(v float64) string {
	return time.Duration(v * float64(time.Millisecond)).Round(time.Microsecond).String()
}

// plotsOf draws the plots of the minutes.
func plotsOf(ms []minuteView) []plot {
	nan := math.NaN()
	mk := func(f func(minuteView) float64) []float64 {
		out := make([]float64, len(ms))
		for i, m := range ms {
			out[i] = f(m)
		}
		return out
	}
	var out []plot
	txns := []series{{Name: "transactions", Class: "txns", Color: "#1c7ed6", Y: mk(func(m minuteView) float64 { return float64(m.Txns) })}}
	out = append(out, plot{ID: "plot-txns", Title: "Transactions per minute", SVG: plotSVG("plot-txns", "Transactions per minute", true, txns, count)})
	dur := func(q func(minuteView) time.Duration) func(minuteView) float64 {
		return func(m minuteView) float64 {
			if m.Txns == 0 {
				return nan
			}
			return float64(q(m)) / float64(time.Millisecond)
		}
	}
	durs := []series{
		{Name: "p50", Class: "p50", Color: "#2b8a3e", Y: mk(dur(func(m minuteView) time.Duration { return m.P50 }))},
		{Name: "p99", Class: "p99", Color: "#e8590c", Y: mk(dur(func(m minuteView) time.Duration { return m.P99 }))},
	}
	out = append(out, plot{ID: "plot-duration", Title: "Transaction duration (p50, p99)", SVG: plotSVG("plot-duration", "Transaction duration (p50, p99)", false, durs, millis),
		Legend: []legendItem{{"p50", "#2b8a3e"}, {"p99", "#e8590c"}}})
	var states []series
	var legend []legendItem
	for _, name := range stateNames() {
		seen := false
		y := mk(func(m minuteView) float64 {
			if m.States == nil {
				return nan
			}
			if m.States[name] > 0 {
				seen = true
			}
			return float64(m.States[name])
		})
		if !seen {
			continue
		}
		s, _ := scheduler.ParseState(name)
		c := darker(graphviz.StateColor(s))
		states = append(states, series{Name: name, Class: "st-" + name, Color: c, Y: y})
		legend = append(legend, legendItem{name, c})
	}
	out = append(out, plot{ID: "plot-states", Title: "Values by state", SVG: plotSVG("plot-states", "Values by state", false, states, count), Legend: legend})
	rf := []series{
		{Name: "retried operations", Class: "retried", Color: "#f08c00", Y: mk(func(m minuteView) float64 { return float64(m.Retried) })},
		{Name: "failed operations", Class: "failed", Color: "#c92a2a", Y: mk(func(m minuteView) float64 { return float64(m.Failed) })},
	}
	out = append(out, plot{ID: "plot-failures", Title: "Retries and failures per minute", SVG: plotSVG("plot-failures", "Retries and failures per minute", true, rf, count),
		Legend: []legendItem{{"retried operations", "#f08c00"}, {"failed operations", "#c92a2a"}}})
	dr := []series{
		{Name: "drift found", Class: "drifted", Color: "#ae3ec9", Y: mk(func(m minuteView) float64 { return float64(m.Drifted) })},
		{Name: "repairs", Class: "repaired", Color: "#1971c2", Y: mk(func(m minuteView) float64 { return float64(m.Repaired) })},
	}
	out = append(out, plot{ID: "plot-drift", Title: "Drift and repairs per minute", SVG: plotSVG("plot-drift", "Drift and repairs per minute", true, dr, count),
		Legend: []legendItem{{"drift found", "#ae3ec9"}, {"repairs", "#1971c2"}}})
	return out
}

// plotsPage shows the last hour's plots.
func (h *handler) plotsPage(rq *request) (string, any, error) {
	if _, err := args(rq.r); err != nil {
		return "", nil, err
	}
	now := h.now()
	if err := h.feed(rq.r.Context(), rq.calls, now); err != nil {
		return "", nil, err
	}
	d := plotsData{page: h.newPage(rq, "The last hour", "plots", "v1/stats")}
	d.Plots = plotsOf(h.plots.view(now))
	d.FeedEvery = time.Duration(h.feedEvery.Load())
	h.plots.mu.Lock()
	d.Missed = h.plots.missed
	h.plots.mu.Unlock()
	return "plots", d, nil
}
