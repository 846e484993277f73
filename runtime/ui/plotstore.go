package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// PlotsStore keeps the plots' ring across restarts (Options.PlotsStore):
// Load returns the bytes that Save stored last (nil when none). The agent
// backs it with its state file (runtime/nb/boltstore's Blob).
type PlotsStore interface {
	Load() ([]byte, error)
	Save([]byte) error
}

// DefaultFeedEvery is Feed's interval when given none: twice a minute,
// so that every minute of the ring has a sample of the values by state.
const DefaultFeedEvery = 30 * time.Second

// Feed feeds the plots' ring of page (a handler of New) now and then
// every interval (DefaultFeedEvery when 0) until ctx ends, whether or not
// a page is open: it counts the transactions of the History that the ring
// has not counted, samples the values by state (Stats) and saves the ring
// to Options.PlotsStore. Its calls carry Options.Token, if any. A feed
// that fails is logged (debug) and tried again at the next interval. It
// returns when ctx ends, after one last feed (so the minute of the stop
// has its sample); at once, with an error, for another handler.
func Feed(ctx context.Context, page http.Handler, every time.Duration) error {
	h, ok := page.(*handler)
	if !ok {
		return fmt.Errorf("ui: Feed: %T is not a page of ui.New", page)
	}
	if every < 0 {
		return fmt.Errorf("ui: Feed: interval %v: give zero (the default, %v) or more", every, DefaultFeedEvery)
	}
	if every == 0 {
		every = DefaultFeedEvery
	}
	calls := http.Header{}
	if h.token != "" {
		calls.Set("Authorization", "Bearer "+h.token)
	}
	h.feedEvery.Store(int64(every))
	defer h.feedEvery.Store(0)
	feed := func(ctx context.Context) {
		if err := h.feed(ctx, calls, h.now()); err != nil {
			h.logger.Debug("ui: feeding the plots", "err", err)
		}
	}
	feed(ctx)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			feed(last)
			cancel()
			return nil
		case <-t.C:
			feed(ctx)
		}
	}
}

// The ring's record in a PlotsStore: JSON, the minutes that hold
// something, each minute's durations as [bin, count] pairs (at most 60
// minutes of at most 128 pairs: a few kilobytes at most).
const plotsVersion = 1

type savedRing struct {
	Version   int           `json:"v"`
	LastSeq   uint64        `json:"lastSeq"`
	LastStart int64         `json:"lastStart,omitempty"` // Unix nanoseconds
	Missed    uint64        `json:"missed,omitempty"`
	Minutes   []savedMinute `json:"minutes"`
}

type savedMinute struct {
	Minute   int64       `json:"m"`
	Txns     int         `json:"txns,omitempty"`
	Failed   int         `json:"failed,omitempty"`
	Retried  int         `json:"retried,omitempty"`
	Drifted  int         `json:"drifted,omitempty"`
	Repaired int         `json:"repaired,omitempty"`
	Dur      [][2]uint32 `json:"dur,omitempty"`
	// States: null when no sample was taken in the minute.
	States map[string]int `json:"states"`
}

// encode returns the ring's record.
func (r *ring) encode() ([]byte, error) {
	r.mu.Lock()
	s := savedRing{Version: plotsVersion, LastSeq: r.lastSeq, Missed: r.missed, Minutes: []savedMinute{}}
	if !r.lastStart.IsZero() {
		s.LastStart = r.lastStart.UnixNano()
	}
	for _, b := range r.b {
		if b.minute == 0 {
			continue
		}
		m := savedMinute{Minute: b.minute, Txns: b.txns, Failed: b.failed, Retried: b.retried,
			Drifted: b.drifted, Repaired: b.repaired, States: b.states}
		for i, c := range b.dur {
			if c > 0 {
				m.Dur = append(m.Dur, [2]uint32{uint32(i), c})
			}
		}
		s.Minutes = append(s.Minutes, m)
	}
	r.mu.Unlock()
	return json.Marshal(s)
}

// decodeRing reads a ring's record; an error names what is wrong in it.
func decodeRing(data []byte) (*ring, error) {
	var s savedRing
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	if s.Version != plotsVersion {
		return nil, fmt.Errorf("version %d, not %d", s.Version, plotsVersion)
	}
	if len(s.Minutes) > ringMinutes {
		return nil, fmt.Errorf("%d minutes, more than the ring's %d", len(s.Minutes), ringMinutes)
	}
	r := &ring{lastSeq: s.LastSeq, missed: s.Missed}
	if s.LastStart != 0 {
		r.lastStart = time.Unix(0, s.LastStart)
	}
	seen := map[int64]bool{}
	for i, m := range s.Minutes {
		if m.Minute <= 0 || m.Txns < 0 || m.Failed < 0 || m.Retried < 0 || m.Drifted < 0 || m.Repaired < 0 {
			return nil, fmt.Errorf("minutes[%d]: a minute or a count below zero", i)
		}
		if seen[m.Minute] {
			return nil, fmt.Errorf("minutes[%d]: minute %d again", i, m.Minute)
		}
		seen[m.Minute] = true
		b := r.at(m.Minute)
		if b == nil {
			continue // an older minute than another of its slot: gone
		}
		b.txns, b.failed, b.retried, b.drifted, b.repaired = m.Txns, m.Failed, m.Retried, m.Drifted, m.Repaired
		for _, d := range m.Dur {
			if d[0] >= durBins {
				return nil, fmt.Errorf("minutes[%d]: duration bin %d, past the last (%d)", i, d[0], durBins-1)
			}
			b.dur[d[0]] += d[1]
		}
		for st, n := range m.States {
			if n < 0 {
				return nil, fmt.Errorf("minutes[%d]: states[%s] below zero", i, st)
			}
		}
		b.states = m.States
	}
	return r, nil
}

// loadPlots fills the ring from the store; a record that cannot be read
// (corrupt, or of another version) is ignored, with a warning.
func (h *handler) loadPlots() {
	data, err := h.store.Load()
	if err != nil {
		h.logger.Warn("ui: the plots' record could not be read: the plots start empty", "err", err)
		return
	}
	if data == nil {
		return
	}
	r, err := decodeRing(data)
	if err != nil {
		h.logger.Warn("ui: the plots' record is ignored: the plots start empty", "err", err)
		return
	}
	h.plots = r
	h.saved = data
}

// savePlots saves the ring to the store, if any, when it changed since
// the last save; a failure is logged (the next feed tries again). Called
// with h.plots.feeding held.
func (h *handler) savePlots() {
	if h.store == nil {
		return
	}
	data, err := h.plots.encode()
	if err == nil && bytes.Equal(data, h.saved) {
		return
	}
	if err == nil {
		err = h.store.Save(data)
	}
	if err != nil {
		h.logger.Warn("ui: saving the plots", "err", err)
		return
	}
	h.saved = data
}
