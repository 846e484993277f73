package scheduler

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/prototext"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/txnlog"
)

// logOps writes the plan (before execution) or the executed operations
// (after) of a transaction as one log record. The cost is linear in the
// number of operations: one pass into one builder. Values are included at
// debug level only.
func (s *executor) logOps(res *Result, ops []Op, planned bool) {
	ctx := context.Background()
	l := s.opts.logger
	if !l.Enabled(ctx, slog.LevelInfo) {
		return
	}
	// The records name the kind in the plan's header, not as an attribute:
	// a TextHandler quotes every text with a space, byte by byte.
	seq := slog.Uint64("seq", res.Seq)
	if !planned && res.Err == nil && sameOps(res.Planned, ops) {
		// The plan, logged just before, already lists them: a constant
		// message with no space to quote, the rest as attributes. Batches are an
		// execution detail: the record counts them (Result.Batches), the
		// log reads as without them.
		logRecord(ctx, l, slog.LevelInfo, res.End, "executed-as-planned", seq,
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
		logRecord(ctx, l, slog.LevelInfo, time.Now(), b.String(), seq)
		return
	}
	level := slog.LevelInfo
	if res.Err != nil {
		level = slog.LevelWarn
	}
	logRecord(ctx, l, level, res.End, b.String(), seq, slog.Duration("took", res.End.Sub(res.Start)))
}

// logRecord is Logger.LogAttrs without the caller's program counter (the
// source would always be this file, and reading the stack costs more than
// a short record), for a level that logOps found enabled (Info or Warn). t
// is the record's time: a record of the execution is written at Result.End.
func logRecord(ctx context.Context, l *slog.Logger, level slog.Level, t time.Time, msg string, attrs ...slog.Attr) {
	r := slog.NewRecord(t, level, msg, 0)
	r.AddAttrs(attrs...)
	_ = l.Handler().Handle(ctx, r)
}

func writeTxnHeader(b *strings.Builder, res *Result, planned bool, n int) {
	switch {
	case res.DryRun:
		b.WriteString("dry-run plan")
	case planned:
		b.WriteString("plan #")
	default:
		b.WriteString("executed #")
	}
	if !res.DryRun {
		var num [20]byte
		b.Write(strconv.AppendUint(num[:0], res.Seq, 10))
	}
	b.WriteString(" (")
	b.WriteString(res.Kind.String())
	if res.Description != "" {
		b.WriteString(": ")
		b.WriteString(res.Description)
	}
	b.WriteByte(')')
	if res.Reverted && !planned {
		b.WriteString(" and REVERTED")
	}
	if n == 0 {
		b.WriteString(": no operations")
		return
	}
	b.WriteByte(':')
}

// maxLoggedOps caps the operations listed by one record at Info level.
const maxLoggedOps = 1000

// sameOps reports whether the executed operations are exactly the plan.
func sameOps(plan, done []Op) bool {
	for i := 0; i < len(plan) && len(plan) == len(done); i++ {
		if p, d := &plan[i], &done[i]; p.Key != d.Key || p.Kind != d.Kind || p.Flags != d.Flags || d.Err != nil {
			return false
		}
	}
	return len(plan) == len(done)
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
		b.WriteString(txnlog.Safe(o.Key))
		if o.Flags != 0 {
			b.WriteString(" [")
			o.Flags.AppendTo(b)
			b.WriteByte(']')
		}
		if o.Err != nil {
			b.WriteString(" error: ")
			b.WriteString(txnlog.Safe(o.Err.Error()))
		}
		if withValues && o.Value != nil {
			b.WriteString("\n     value: ")
			b.WriteString(prototext.MarshalOptions{}.Format(kv.Redact(o.Value)))
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
func NewLogHandler(w io.Writer, level slog.Leveler) slog.Handler { return txnlog.NewHandler(w, level) }
