// Package histring keeps the records of the last transactions, bounded by
// count and age, so that readers may hold what it returned while it goes on.
package histring

import "time"

// Entry is what the ring needs of a record.
type Entry interface {
	// Weight is the number of operations and values the entry holds.
	Weight() int
	// End is when the record's transaction ended.
	End() time.Time
}

// Ring keeps the last records, bounded by count (Max; none when 0) and age
// (MaxAge; no bound when 0). Records are appended by one goroutine (the
// worker, when it publishes a job); what Add returns is read by any.
type Ring[E Entry] struct {
	// buf[head:] are the records, oldest first. The dropped ones before
	// head are still in buf (readers may hold slices of it, so it is
	// never written below len), until a compaction copies the live ones
	// to a new array: once the dropped ones are half of buf, or hold more
	// operations and values than the copy moves pointers (one large
	// transaction dropped is let go at once).
	buf     []E
	head    int
	dropped int // operations and values of buf[:head]
	Max     int
	MaxAge  time.Duration
}

// Add appends e, drops what is out of retention, and returns the live
// entries. Readers keep the slices Add returned: it never writes where
// one of them can see (it appends beyond their length, and copies the
// live entries to a new array to let dropped ones go).
func (h *Ring[E]) Add(e E) []E {
	if h.Max <= 0 {
		return nil
	}
	h.buf = append(h.buf, e)
	over := len(h.buf) - h.head - h.Max
	cut := e.End().Add(-h.MaxAge)
	for h.head < len(h.buf)-1 && (over > 0 || h.MaxAge > 0 && h.buf[h.head].End().Before(cut)) {
		h.dropped += h.buf[h.head].Weight()
		h.head++
		over--
	}
	if h.head > 64 && h.head >= len(h.buf)/2 || h.head > 0 && h.dropped > len(h.buf)-h.head {
		live := h.buf[h.head:]
		h.buf = make([]E, len(live), 2*len(live))
		copy(h.buf, live)
		h.head, h.dropped = 0, 0
	}
	live := h.buf[h.head:]
	return live[:len(live):len(live)]
}
