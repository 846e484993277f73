// Package txnlog holds the text handler of the transaction log and the
// quoting of texts from outside that it writes.
package txnlog

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
)

// NewHandler returns a slog handler that writes each record as its level
// and message, then its attributes as key=value, with multi-line messages
// kept readable instead of quoted.
func NewHandler(w io.Writer, level slog.Leveler) slog.Handler {
	if level == nil {
		level = slog.LevelInfo
	}
	return &logHandler{w: w, level: level, out: &output{buf: buffer{b: make([]byte, 0, 512)}}}
}

type logHandler struct {
	w     io.Writer
	level slog.Leveler
	attrs []slog.Attr
	out   *output
}

// output is what a handler and its WithAttrs copies share: one buffer,
// which a record is written into and out of under the lock (cheaper than
// a pool of buffers: the writer's lock is taken anyway).
type output struct {
	mu  sync.Mutex
	buf buffer
}

// maxKept is the largest buffer kept for the next record (one of a large
// transaction's plan is let go).
const maxKept = 64 << 10

func (h *logHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

type buffer struct{ b []byte }

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	buf := &h.out.buf
	// Attributes go on the first line, so that they never read as part of
	// the last line of a multi-line message (the transaction log).
	first, rest, multi := strings.Cut(r.Message, "\n")
	buf.b = append(append(append(buf.b[:0], r.Level.String()...), ' '), first...)
	for _, a := range h.attrs {
		buf.appendAttr(a)
	}
	r.Attrs(func(a slog.Attr) bool { buf.appendAttr(a); return true })
	if multi {
		buf.b = append(append(buf.b, '\n'), rest...)
	}
	buf.b = append(buf.b, '\n')
	_, err := h.w.Write(buf.b)
	if cap(buf.b) > maxKept {
		buf.b = make([]byte, 0, 512)
	}
	return err
}

// appendAttr appends " key=value", numbers without a string in between.
func (buf *buffer) appendAttr(a slog.Attr) {
	buf.b = append(append(append(buf.b, ' '), Safe(a.Key)...), '=')
	switch a.Value.Kind() {
	case slog.KindInt64:
		buf.b = strconv.AppendInt(buf.b, a.Value.Int64(), 10)
	case slog.KindUint64:
		buf.b = strconv.AppendUint(buf.b, a.Value.Uint64(), 10)
	case slog.KindDuration:
		buf.b = AppendDuration(buf.b, a.Value.Duration())
	default:
		buf.b = append(buf.b, Safe(a.Value.String())...)
	}
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return &c
}

func (h *logHandler) WithGroup(string) slog.Handler { return h }

// Safe returns s as it is, or quoted (Go syntax) when it holds a
// control character: a key or error text from outside (an unknown key, a
// retrieved one) can then neither split a log line nor forge one.
func Safe(s string) string {
	// Eight bytes at a time: a key or an error rarely holds a control
	// character. A text of eight bytes or more ends with its last eight
	// (which may overlap the word before); a shorter one is looked at a
	// byte at a time.
	n := len(s)
	if n < 8 {
		for i := range n {
			if c := s[i]; c < 0x20 || c == 0x7f {
				return strconv.Quote(s)
			}
		}
		return s
	}
	for i := 0; i+8 <= n; i += 8 {
		if hasControl(Word(s[i : i+8])) {
			return strconv.Quote(s)
		}
	}
	if n%8 != 0 && hasControl(Word(s[n-8:])) {
		return strconv.Quote(s)
	}
	return s
}

// hasControl reports whether one of the eight bytes of w is below 0x20
// or equal to 0x7f: the expression has a high bit set exactly when one is
// (a borrow of the subtractions starts only at such a byte).
func hasControl(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	return ((w-0x20*ones)&^w|((w^0x7f*ones)-ones)&^(w^0x7f*ones))&highs != 0
}

// Word reads 8 bytes of s as a little-endian number.
func Word(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// AppendDuration appends d as d.String() writes it ("1.5ms", "2m0.5s"),
// with no allocation: every transaction's record says how long it took.
func AppendDuration(b []byte, d time.Duration) []byte {
	u := uint64(d)
	if d < 0 {
		b = append(b, '-')
		u = -u
	}
	switch {
	case u == 0:
		return append(b, "0s"...)
	case u < uint64(time.Microsecond):
		return append(strconv.AppendUint(b, u, 10), "ns"...)
	case u < uint64(time.Millisecond):
		return append(appendFrac(b, u, 3), "µs"...)
	case u < uint64(time.Second):
		return append(appendFrac(b, u, 6), "ms"...)
	}
	if h := u / uint64(time.Hour); h > 0 {
		b = append(strconv.AppendUint(b, h, 10), 'h')
		u -= h * uint64(time.Hour)
		b = append(strconv.AppendUint(b, u/uint64(time.Minute), 10), 'm')
	} else if m := u / uint64(time.Minute); m > 0 {
		b = append(strconv.AppendUint(b, m, 10), 'm')
	}
	u %= uint64(time.Minute)
	return append(appendFrac(b, u, 9), 's')
}

// appendFrac appends u / 10^digits with its fraction, trailing zeros
// (and a point left alone) dropped.
func appendFrac(b []byte, u uint64, digits int) []byte {
	pow := uint64(1)
	for range digits {
		pow *= 10
	}
	b = strconv.AppendUint(b, u/pow, 10)
	frac := u % pow
	if frac == 0 {
		return b
	}
	for frac%10 == 0 {
		frac /= 10
		digits--
	}
	b = append(b, '.')
	var tmp [9]byte
	for i := digits - 1; i >= 0; i-- {
		tmp[i] = byte('0' + frac%10)
		frac /= 10
	}
	return append(b, tmp[:digits]...)
}
