package txnlog

import (
	"context"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestLogSafeFindsEveryControlByte: the word-at-a-time scan quotes a text
// exactly when the byte-by-byte rule would, whatever the byte and its
// place.
func TestLogSafeFindsEveryControlByte(t *testing.T) {
	naive := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] == 0x7f {
				return true
			}
		}
		return false
	}
	for _, n := range []int{1, 7, 8, 9, 16, 23} {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				b := []byte(strings.Repeat("a\xc3\xa9", n)[:n])
				b[pos] = byte(c)
				s := string(b)
				if quoted := Safe(s) != s; quoted != naive(s) {
					t.Fatalf("Safe(%q) quoted=%v, want %v", s, quoted, naive(s))
				}
			}
		}
	}
}

// TestHandlerWritesRecords: the level, the first line of the message, the
// attributes (the handler's, then the record's; numbers, texts, durations;
// a text with a control character quoted), then the rest of the message.
func TestHandlerWritesRecords(t *testing.T) {
	var out strings.Builder
	h := NewHandler(&out, slog.LevelInfo).WithAttrs([]slog.Attr{slog.String("agent", "a1")})
	r := slog.NewRecord(time.Time{}, slog.LevelWarn, "plan #2:\n  1. CREATE k", 0)
	r.AddAttrs(slog.Uint64("seq", 2), slog.Int("n", -3), slog.Duration("took", 1500*time.Microsecond), slog.String("key", "a\nb"), slog.Bool("ok", true))
	if err := h.Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	want := "WARN plan #2: agent=a1 seq=2 n=-3 took=1.5ms key=\"a\\nb\" ok=true\n  1. CREATE k\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

// TestHandlerAllocatesNothing: a record of texts and numbers is written
// from a reused buffer (the transaction log writes two per transaction).
func TestHandlerAllocatesNothing(t *testing.T) {
	h := NewHandler(io.Discard, slog.LevelInfo)
	r := slog.NewRecord(time.Now(), slog.LevelInfo, "plan #2 (NB transaction):\n  1. UPDATE w/route/3", 0)
	r.AddAttrs(slog.Uint64("seq", 2), slog.Int("operations", 1), slog.String("agent", "a1"))
	ctx := context.Background()
	if allocs := testing.AllocsPerRun(100, func() { _ = h.Handle(ctx, r) }); allocs > 0 && !raceOn {
		t.Errorf("Handle allocates %.1f times per record, want none", allocs)
	}
}

func TestAppendDurationIsString(t *testing.T) {
	ds := []time.Duration{0, 1, 999, 1000, 1001, 1500, 148231, 999999, time.Millisecond, 1234567,
		999999999, time.Second, 1500 * time.Millisecond, time.Minute, 61*time.Second + 5, time.Hour,
		time.Hour + 1, 25*time.Hour + 3*time.Minute + 7*time.Second + 120, math.MaxInt64, math.MinInt64, -1, -1500 * time.Microsecond}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		d := time.Duration(r.Int64N(1 << uint(r.IntN(62)+1)))
		if r.IntN(4) == 0 {
			d = -d
		}
		ds = append(ds, d)
	}
	for _, d := range ds {
		if got := string(AppendDuration(nil, d)); got != d.String() {
			t.Fatalf("AppendDuration(%d) = %q, want %q", int64(d), got, d.String())
		}
	}
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf = AppendDuration(buf[:0], 148231) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
