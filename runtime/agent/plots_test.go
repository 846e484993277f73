package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/boltstore"
)

// plotBars returns the bars of the plot id on the operator page at base:
// the value of each, by minutes ago.
func plotBars(t *testing.T, base, id string) map[int]int {
	t.Helper()
	resp, err := http.Get(base + "/ui/plots")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	page := string(b)
	i := strings.Index(page, `id="`+id+`"`)
	if resp.StatusCode != http.StatusOK || i < 0 {
		t.Fatalf("the plots page: %d, no %s:\n%s", resp.StatusCode, id, page)
	}
	page = page[i : i+strings.Index(page[i:], "</svg>")]
	out := map[int]int{}
	for _, m := range regexp.MustCompile(`data-ago="(\d+)" data-value="(\d+)"`).FindAllStringSubmatch(page, -1) {
		var ago, v int
		fmt.Sscan(m[1], &ago)
		fmt.Sscan(m[2], &v)
		out[ago] = v
	}
	return out
}

func total(bars map[int]int) int {
	n := 0
	for _, v := range bars {
		n += v
	}
	return n
}

// savedPlots is the plots' record of the HTTP listener's page in the state
// file of a stopped agent: its last transaction, its transactions and
// whether a sample of the values by state has n configured.
func savedPlots(t *testing.T, state string, n int) (last uint64, txns int, sampled bool) {
	t.Helper()
	store, err := boltstore.Open(filepath.Join(state, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := store.Blob("ui.plots.http").Load()
	store.Close()
	if err != nil || data == nil {
		t.Fatalf("the plots' record in the state file: %q %v", data, err)
	}
	var saved struct {
		LastSeq uint64 `json:"lastSeq"`
		Minutes []struct {
			Txns   int            `json:"txns"`
			States map[string]int `json:"states"`
		} `json:"minutes"`
	}
	if err := json.Unmarshal(data, &saved); err != nil {
		t.Fatalf("the plots' record: %v: %s", err, data)
	}
	for _, m := range saved.Minutes {
		txns += m.Txns
		sampled = sampled || m.States["CONFIGURED"] == n
	}
	t.Logf("the plots' record: %s", data)
	return saved.LastSeq, txns, sampled
}

// TestPlotsAcrossRestart: the operator page's plots are fed while the
// agent runs, page open or not, and kept in its state file: after a stop
// and a start, the transactions per minute of the runs before are still
// counted, each once (though the history, of 2 records here, no longer
// holds them), and the values by state sampled are in the state file.
func TestPlotsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	state := filepath.Join(dir, "state")
	writeFile(t, file, "x/a: one\n")
	sb := kvtest.NewSB()
	edit := func(addr string) func(*Config) {
		return func(c *Config) { c.HTTP.Address, c.History.Records = addr, 2 }
	}
	// change writes the file and waits for its transaction; the newest
	// number.
	change := func(r *running, data string) uint64 {
		t.Helper()
		s := r.a.Scheduler()
		h := waitHistory(t, s, 1)
		last := h[len(h)-1].Seq
		writeFile(t, file, data)
		end := time.Now().Add(30 * time.Second)
		for h := s.History(); h[len(h)-1].Seq <= last; h = s.History() {
			if time.Now().After(end) {
				t.Fatalf("%q: no transaction after #%d in 30 s", data, last)
			}
			time.Sleep(10 * time.Millisecond)
		}
		h = s.History()
		return h[len(h)-1].Seq
	}
	// Run 1: each change is read on the page (which feeds the plots).
	r := startTestAgent(t, sb, file, state, edit(anyPort))
	addr := httpAddr(t, r)
	var last uint64
	for _, v := range []string{"two", "three", "four"} {
		last = change(r, fmt.Sprintf("x/a: %s\nx/b: %s\n", v, v))
		plotBars(t, "http://"+addr, "plot-txns")
	}
	r.stop(t)
	saved, txns, sampled := savedPlots(t, state, 2)
	if saved != last || txns < 4 || !sampled {
		t.Fatalf("after run 1 the plots' record: up to #%d (want #%d), %d transactions (want 4 or more), a sample of 2 configured: %v",
			saved, last, txns, sampled)
	}

	// Run 2: no page is read; the agent feeds the plots itself.
	r = startTestAgent(t, sb, file, state, edit(anyPort))
	last = change(r, "x/a: five\nx/b: five\nx/c: five\n")
	var run2 int
	for _, rec := range r.a.Scheduler().History() {
		if rec.Seq > saved {
			run2++
		}
	}
	r.stop(t)
	saved2, txns2, sampled := savedPlots(t, state, 3)
	if saved2 != last || txns2 < txns+run2 || !sampled {
		t.Fatalf("after run 2 (no page read) the plots' record: up to #%d (want #%d), %d transactions (want %d and more), a sample of 3 configured: %v",
			saved2, last, txns2, txns+run2, sampled)
	}

	// Run 3: the page counts the runs before's transactions and the
	// new ones, each once.
	r = startTestAgent(t, sb, file, state, edit(anyPort))
	defer r.stop(t)
	addr = httpAddr(t, r)
	waitHistory(t, r.a.Scheduler(), 1)
	want := txns2
	for _, rec := range r.a.Scheduler().History() {
		if rec.Seq > saved2 {
			want++
		}
	}
	// A transaction may begin between the read of the history and of the
	// page: the page may count one more than want, never fewer.
	bars := plotBars(t, "http://"+addr, "plot-txns")
	if got := total(bars); got < want || got > want+1 {
		t.Errorf("after the restarts the page counts %d transactions %v, want %d (%d of the runs before)", got, bars, want, txns2)
	}
}
