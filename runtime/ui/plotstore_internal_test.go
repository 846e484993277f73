package ui

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
)

// fakeService answers History and Stats from its fields (the other calls
// are not made by a feed).
type fakeService struct {
	Service
	mu     sync.Mutex
	recs   []*apiv1.Record
	states map[string]uint64
	stats  int // Stats calls
	auth   []string
}

func (f *fakeService) History(_ context.Context, req *connect.Request[apiv1.HistoryRequest]) (*connect.Response[apiv1.HistoryResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.auth = append(f.auth, req.Header().Get("Authorization"))
	return connect.NewResponse(&apiv1.HistoryResponse{Records: append([]*apiv1.Record(nil), f.recs...)}), nil
}

func (f *fakeService) Stats(context.Context, *connect.Request[apiv1.StatsRequest]) (*connect.Response[apiv1.StatsResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats++
	st := map[string]uint64{}
	for k, v := range f.states {
		st[k] = v
	}
	return connect.NewResponse(&apiv1.StatsResponse{States: st}), nil
}

func (f *fakeService) set(states map[string]uint64, recs ...*apiv1.Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recs, f.states = recs, states
}

// rec is a transaction #seq begun at start that took 1 ms, with a failed
// operation when failed.
func rec(seq uint64, start time.Time, failed bool) *apiv1.Record {
	r := &apiv1.Record{Seq: seq, Start: timestamppb.New(start), End: timestamppb.New(start.Add(time.Millisecond))}
	if failed {
		r.Executed = []*apiv1.Op{{Key: "x/a", Error: "boom"}}
	}
	return r
}

// memStore is a PlotsStore in memory.
type memStore struct {
	mu    sync.Mutex
	data  []byte
	saves int
}

func (m *memStore) Load() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Clone(m.data), nil
}

func (m *memStore) Save(b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data, m.saves = bytes.Clone(b), m.saves+1
	return nil
}

// newPage is New's handler over svc with the store, its log in logs.
func newPage(t *testing.T, svc Service, st PlotsStore, logs io.Writer) *handler {
	t.Helper()
	page, err := New(svc, Options{PlotsStore: st, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return page.(*handler)
}

// sums are the ring's totals over the hour to now: transactions, failed
// operations, and the states' samples by minutes ago.
func sums(h *handler, now time.Time) (txns, failed int, states map[int]map[string]int) {
	states = map[int]map[string]int{}
	for _, m := range h.plots.view(now) {
		txns += m.Txns
		failed += m.Failed
		if m.States != nil {
			states[m.Ago] = m.States
		}
	}
	return txns, failed, states
}

// The ring round-trips through its store, the samples of the values by
// state included; a feed after the load counts only the transactions the
// ring had not counted, and a gap in the numbers that the history holds
// across (the numbers an agent skips at a restart) is not counted as
// missed.
func TestPlotsStoreRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 28, 3, 0, 30, 0, time.UTC)
	svc := &fakeService{}
	svc.set(map[string]uint64{"CONFIGURED": 2, "PENDING": 1},
		rec(1, now.Add(-5*time.Minute), false), rec(2, now.Add(-5*time.Minute), true), rec(3, now.Add(-time.Minute), false))
	st := &memStore{}
	var logs bytes.Buffer
	h := newPage(t, svc, st, &logs)
	if err := h.feed(context.Background(), nil, now.Add(-5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	svc.set(map[string]uint64{"CONFIGURED": 3}, svc.recs...)
	if err := h.feed(context.Background(), nil, now); err != nil {
		t.Fatal(err)
	}
	if st.data == nil {
		t.Fatal("nothing saved after a feed")
	}
	if n := len(st.data); n > 2000 {
		t.Errorf("the record is %d bytes: %s", n, st.data)
	}
	txns, failed, states := sums(h, now)
	if txns != 3 || failed != 1 || states[5]["PENDING"] != 1 || states[0]["CONFIGURED"] != 3 {
		t.Fatalf("before the restart: %d transactions, %d failed, states %v", txns, failed, states)
	}
	want := h.plots.view(now)

	// The restart: a new page over the same store sees the same hour.
	h2 := newPage(t, svc, st, &logs)
	got := h2.plots.view(now)
	for i := range want {
		if w, g := want[i], got[i]; w.Txns != g.Txns || w.Failed != g.Failed || w.P50 != g.P50 || w.P99 != g.P99 || len(w.States) != len(g.States) || (w.States == nil) != (g.States == nil) {
			t.Errorf("%d minutes ago after the load: %+v, want %+v", w.Ago, g, w)
		} else {
			for k, v := range w.States {
				if g.States[k] != v {
					t.Errorf("%d minutes ago after the load: states %v, want %v", w.Ago, g.States, w.States)
				}
			}
		}
	}
	// The history after the restart: the same 3, and #1003 (the numbers
	// reserved before the restart are skipped). Only #1003 is new.
	later := now.Add(time.Minute)
	svc.set(map[string]uint64{"CONFIGURED": 4}, append(svc.recs, rec(1003, later, false))...)
	if err := h2.feed(context.Background(), nil, later); err != nil {
		t.Fatal(err)
	}
	txns, failed, states = sums(h2, later)
	if txns != 4 || failed != 1 || states[6]["PENDING"] != 1 || states[1]["CONFIGURED"] != 3 || states[0]["CONFIGURED"] != 4 {
		t.Errorf("after the load and a feed: %d transactions (want 4), %d failed (want 1), states %v", txns, failed, states)
	}
	if h2.plots.missed != 0 {
		t.Errorf("%d transactions said missed across the numbers skipped at a restart, want 0", h2.plots.missed)
	}
	// A history that dropped #1004..#1009 unread: 6 missed.
	svc.set(svc.states, rec(1010, later, false))
	if err := h2.feed(context.Background(), nil, later); err != nil {
		t.Fatal(err)
	}
	if h2.plots.missed != 6 {
		t.Errorf("%d transactions said missed, want 6 (#1004..#1009)", h2.plots.missed)
	}
	saves := st.saves
	if err := h2.feed(context.Background(), nil, later); err != nil {
		t.Fatal(err)
	}
	if st.saves != saves {
		t.Errorf("a feed that changed nothing saved again")
	}
}

// A history whose numbers are below the ring's: what began after the last
// transaction counted is counted, what began before is not counted again.
func TestPlotsNumberingRestarted(t *testing.T) {
	now := time.Date(2026, 11, 28, 3, 0, 30, 0, time.UTC)
	for _, c := range []struct {
		name string
		// after: the history after the first feed (of #500, #501),
		// then the one after that.
		after, then []*apiv1.Record
		// txns: the transactions counted after each.
		txns [2]int
	}{
		{name: "a new numbering",
			after: []*apiv1.Record{rec(1, now.Add(-time.Minute), false), rec(2, now, false)},
			then:  []*apiv1.Record{rec(1, now.Add(-time.Minute), false), rec(2, now, false), rec(3, now, false)},
			txns:  [2]int{4, 5}},
		{name: "the last records lost",
			after: []*apiv1.Record{rec(500, now.Add(-3*time.Minute), false)},
			then:  []*apiv1.Record{rec(500, now.Add(-3*time.Minute), false), rec(1501, now, false)},
			txns:  [2]int{2, 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			svc := &fakeService{}
			svc.set(nil, rec(500, now.Add(-3*time.Minute), false), rec(501, now.Add(-2*time.Minute), false))
			var logs bytes.Buffer
			h := newPage(t, svc, &memStore{}, &logs)
			if err := h.feed(context.Background(), nil, now); err != nil {
				t.Fatal(err)
			}
			svc.set(nil, c.after...)
			if err := h.feed(context.Background(), nil, now); err != nil {
				t.Fatal(err)
			}
			if txns, _, _ := sums(h, now); txns != c.txns[0] {
				t.Errorf("%d transactions, want %d", txns, c.txns[0])
			}
			if !strings.Contains(logs.String(), "numbering restarted") {
				t.Errorf("no warning: %s", logs.String())
			}
			svc.set(nil, c.then...)
			if err := h.feed(context.Background(), nil, now); err != nil {
				t.Fatal(err)
			}
			if txns, _, _ := sums(h, now); txns != c.txns[1] || h.plots.missed != 0 {
				t.Errorf("then: %d transactions (want %d), %d missed (want 0)", txns, c.txns[1], h.plots.missed)
			}
		})
	}
}

// A record that cannot be read is ignored with a warning: the page starts
// with empty plots, and the next feed replaces it.
func TestPlotsStoreBadRecord(t *testing.T) {
	for name, data := range map[string]string{
		"not JSON":      "garbage",
		"other version": `{"v":2,"lastSeq":1,"minutes":[]}`,
		"bad bin":       `{"v":1,"lastSeq":1,"minutes":[{"m":29800000,"txns":1,"dur":[[128,1]],"states":null}]}`,
		"negative":      `{"v":1,"lastSeq":1,"minutes":[{"m":29800000,"txns":-1,"states":null}]}`,
		"minute again":  `{"v":1,"lastSeq":1,"minutes":[{"m":29800000,"states":null},{"m":29800000,"states":null}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			st := &memStore{data: []byte(data)}
			var logs bytes.Buffer
			svc := &fakeService{}
			h := newPage(t, svc, st, &logs)
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "ignored") {
				t.Errorf("no warning: %s", logs.String())
			}
			if h.plots.lastSeq != 0 {
				t.Errorf("the ring's lastSeq: %d, want 0", h.plots.lastSeq)
			}
			if err := h.feed(context.Background(), nil, time.Now()); err != nil {
				t.Fatal(err)
			}
			if _, err := decodeRing(st.data); err != nil {
				t.Errorf("after a feed the record is still bad: %v: %s", err, st.data)
			}
		})
	}
}

// Feed feeds at once and then every interval, with the page's token, and
// returns when its context ends; it refuses a handler not of New.
func TestFeed(t *testing.T) {
	svc := &fakeService{}
	svc.set(map[string]uint64{"CONFIGURED": 1}, rec(1, time.Now(), false))
	st := &memStore{}
	page, err := New(svc, Options{PlotsStore: st, Token: "t0ken", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Feed(ctx, page, time.Millisecond) }()
	end := time.Now().Add(30 * time.Second)
	for {
		svc.mu.Lock()
		n := svc.stats
		svc.mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%d feeds in 30 s, want 3", n)
		}
		time.Sleep(time.Millisecond)
	}
	if got := page.(*handler).feedEvery.Load(); got != int64(time.Millisecond) {
		t.Errorf("while Feed runs the page says it feeds every %v", time.Duration(got))
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Feed: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Feed did not return within 30 s of its context's end")
	}
	svc.mu.Lock()
	for _, a := range svc.auth {
		if a != "Bearer t0ken" {
			t.Errorf("a feed's call had Authorization %q", a)
		}
	}
	svc.mu.Unlock()
	if r, err := decodeRing(st.data); err != nil || r.lastSeq != 1 {
		t.Errorf("the record saved: %v %s", err, st.data)
	}
	if err := Feed(context.Background(), http.NotFoundHandler(), 0); err == nil {
		t.Error("Feed of another handler: no error")
	}
}
