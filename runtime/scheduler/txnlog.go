package scheduler

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
)

// logOps writes the plan (before execution) or the executed operations
// (after) of a transaction as one log record. The cost is linear in the
// number of operations: one pass into one builder. Values are included at
// debug level only.
func (s *Scheduler) logOps(res *Result, ops []Op, planned bool) {
	ctx := context.Background()
	l := s.opts.logger
	if !l.Enabled(ctx, slog.LevelInfo) {
		return
	}
	seq, kind := slog.Uint64("seq", res.Seq), slog.String("kind", res.Kind.String())
	if !planned && res.Err == nil && sameOps(res.Planned, ops) {
		// The plan, logged just before, already lists them: a constant
		// message, the rest as attributes (cheap to format). Batches are an
		// execution detail: the record counts them (Result.Batches), the
		// log reads as without them.
		logRecord(ctx, l, slog.LevelInfo, res.End, "transaction executed as planned", seq, kind,
			slog.Int("operations", len(ops)), slog.Duration("took", res.End.Sub(res.Start)))
		return
	}
	withValues := l.Enabled(ctx, slog.LevelDebug)
	var b strings.Builder
	b.Grow(64 + 64*min(len(ops), maxLoggedOps))
	writeTxnHeader(&b, res, planned, len(ops))
	switch {
	case !withValues && len(ops) > maxLoggedOps:
		// A record of tens of thousands of lines helps nobody at Info.
		writeOps(&b, ops[:maxLoggedOps], false)
		b.WriteString("\n  ... and ")
		b.WriteString(strconv.Itoa(len(ops) - maxLoggedOps))
		b.WriteString(" more (the debug level lists them all, with values)")
	default:
		writeOps(&b, ops, withValues)
	}
	if planned {
		logRecord(ctx, l, slog.LevelInfo, time.Now(), b.String(), seq, kind)
		return
	}
	level := slog.LevelInfo
	if res.Err != nil {
		level = slog.LevelWarn
	}
	logRecord(ctx, l, level, res.End, b.String(), seq, kind, slog.Duration("took", res.End.Sub(res.Start)))
}

// logRecord is Logger.LogAttrs without the caller's program counter: the
// source of a transaction record would always be this file, and reading
// the stack for it costs more than formatting a short record. t is the
// record's time (a record of the executed transaction is written as it
// ends: at Result.End).
func logRecord(ctx context.Context, l *slog.Logger, level slog.Level, t time.Time, msg string, attrs ...slog.Attr) {
	h := l.Handler()
	if !h.Enabled(ctx, level) {
		return
	}
	r := slog.NewRecord(t, level, msg, 0)
	r.AddAttrs(attrs...)
	_ = h.Handle(ctx, r)
}

func writeTxnHeader(b *strings.Builder, res *Result, planned bool, n int) {
	if res.DryRun {
		b.WriteString("dry-run transaction")
	} else {
		b.WriteString("transaction #")
		b.WriteString(strconv.FormatUint(res.Seq, 10))
	}
	b.WriteString(" (")
	b.WriteString(res.Kind.String())
	if res.Description != "" {
		b.WriteString(": ")
		b.WriteString(res.Description)
	}
	b.WriteString(")")
	switch {
	case planned:
		b.WriteString(" plan, ")
	case res.Reverted:
		b.WriteString(" executed and REVERTED, ")
	default:
		b.WriteString(" executed, ")
	}
	b.WriteString(strconv.Itoa(n))
	if n == 1 {
		b.WriteString(" operation")
	} else {
		b.WriteString(" operations")
	}
	if n > 0 {
		b.WriteString(":")
	}
}

// maxLoggedOps caps the operations listed by one record at Info level.
const maxLoggedOps = 1000

// sameOps reports whether the executed operations are exactly the plan.
func sameOps(plan, done []Op) bool {
	if len(plan) != len(done) {
		return false
	}
	for i := range plan {
		p, d := &plan[i], &done[i]
		if p.Key != d.Key || p.Kind != d.Kind || p.Flags != d.Flags || d.Err != nil {
			return false
		}
	}
	return true
}

// writeOps appends one line per operation: index, kind, key, flags, error.
func writeOps(b *strings.Builder, ops []Op, withValues bool) {
	var num [20]byte
	for i, o := range ops {
		b.WriteString("\n  ")
		b.Write(strconv.AppendInt(num[:0], int64(i+1), 10))
		b.WriteString(". ")
		b.WriteString(o.Kind.String())
		b.WriteByte(' ')
		b.WriteString(logSafe(o.Key))
		if o.Flags != 0 {
			b.WriteString(" [")
			o.Flags.appendTo(b)
			b.WriteByte(']')
		}
		if o.Err != nil {
			b.WriteString(" error: ")
			b.WriteString(logSafe(o.Err.Error()))
		}
		if withValues && o.Value != nil {
			b.WriteString("\n     value: ")
			b.WriteString(prototext.MarshalOptions{}.Format(o.Value))
		}
	}
}

// FormatOps renders operations the way the transaction log does.
func FormatOps(ops []Op) string {
	var b strings.Builder
	writeOps(&b, ops, false)
	return strings.TrimPrefix(b.String(), "\n")
}

// NewLogHandler returns a slog handler that writes each record as its level
// and message, then its attributes as key=value, with multi-line messages
// (the transaction log) kept readable instead of quoted.
func NewLogHandler(w io.Writer, level slog.Leveler) slog.Handler {
	if level == nil {
		level = slog.LevelInfo
	}
	return &logHandler{w: w, level: level, mu: &sync.Mutex{}}
}

type logHandler struct {
	w     io.Writer
	level slog.Leveler
	attrs []slog.Attr
	mu    *sync.Mutex
}

func (h *logHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	// Attributes go on the first line, so that they never read as part of
	// the last line of a multi-line message (the transaction log).
	first, rest, multi := strings.Cut(r.Message, "\n")
	b.WriteString(r.Level.String())
	b.WriteByte(' ')
	b.WriteString(first)
	write := func(a slog.Attr) bool {
		b.WriteByte(' ')
		b.WriteString(logSafe(a.Key))
		b.WriteByte('=')
		b.WriteString(logSafe(a.Value.String()))
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	if multi {
		b.WriteByte('\n')
		b.WriteString(rest)
	}
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return &c
}

func (h *logHandler) WithGroup(string) slog.Handler { return h }

// logSafe returns s as it is, or quoted (Go syntax) when it holds a
// control character: a key or error text from outside (an unknown key, a
// retrieved one) can then neither split a log line nor forge one.
func logSafe(s string) string {
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
		if hasControl(word(s[i : i+8])) {
			return strconv.Quote(s)
		}
	}
	if n%8 != 0 && hasControl(word(s[n-8:])) {
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
