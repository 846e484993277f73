package agent

import (
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb/boltstore"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// A record read back from its encoding is the record, but for the
// metadata (not kept) and the errors (kept as their text); operations
// executed as planned still share the planned ones.
func TestHistoryRecordEncoding(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 23, 0, 0, 0, time.UTC)
	planned := []scheduler.Op{
		{Key: "x/a", Kind: scheduler.OpCreate, State: scheduler.CONFIGURED, Value: wrapperspb.String("a"), Called: true, Metadata: 7},
		{Key: "x/b", Kind: scheduler.OpUpdate, State: scheduler.FAILED, Flags: scheduler.FlagRetry, Value: wrapperspb.String("b2"),
			PrevValue: wrapperspb.String("b1"), Err: errors.New("boom"), Called: true},
		{Key: "x/c", Kind: scheduler.OpDelete, State: scheduler.REMOVED, PrevValue: wrapperspb.String("c")},
	}
	rec := &scheduler.Record{
		Seq: 42, Kind: scheduler.NBTxn, Description: "three",
		Values:  []scheduler.KeyValue{{Key: "x/a", Value: wrapperspb.String("a")}, {Key: "x/c"}},
		Planned: planned, Executed: planned[:2],
		Errors:  []scheduler.KeyError{{Key: "x/b", Op: scheduler.OpUpdate, Err: errors.New("boom")}},
		Batches: 1, BatchedOps: 2, Start: t0, End: t0.Add(time.Second),
	}
	data, err := encodeRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRecord(data)
	if err != nil {
		t.Fatal(err)
	}
	want := *rec
	want.Planned = append([]scheduler.Op(nil), planned...)
	want.Planned[0].Metadata = nil
	want.Executed = want.Planned[:2]
	errText := cmp.Comparer(func(a, b error) bool { return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error()) })
	if diff := cmp.Diff(want, got, protocmp.Transform(), errText); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
	if &got.Executed[0] != &got.Planned[0] {
		t.Error("executed as planned, read back apart")
	}
	if _, err := decodeRecord([]byte("not gob")); err == nil {
		t.Error("garbage decoded")
	}
}

// The keeper writes every record of a real transaction, bounded by count
// and age as the scheduler's history is; a new keeper reads them back.
func TestHistoryKeeperRetention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	open := func(max int, maxAge time.Duration) (*boltstore.Store, []scheduler.Record, *historyKeeper) {
		t.Helper()
		store, err := boltstore.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		recs, h, err := loadHistory(store, quiet, max, maxAge, prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		return store, recs, h
	}
	seqs := func(recs []scheduler.Record) []uint64 {
		var out []uint64
		for _, r := range recs {
			out = append(out, r.Seq)
		}
		return out
	}
	t0 := time.Now()
	store, recs, h := open(3, 0)
	if len(recs) != 0 {
		t.Fatalf("a new store has records %v", seqs(recs))
	}
	for seq := uint64(1); seq <= 5; seq++ {
		h.txnDone(&scheduler.Record{Seq: seq, Description: "t", End: t0.Add(time.Duration(seq) * time.Minute)})
	}
	h.txnDone(&scheduler.Record{Seq: 6, DryRun: true})
	h.close()
	store.Close()

	store, recs, h = open(3, 10*time.Minute)
	if got := seqs(recs); !cmp.Equal(got, []uint64{3, 4, 5}) {
		t.Fatalf("after a restart: %v, want the 3 last: [3 4 5]", got)
	}
	// An hour later: the age bound drops all but the newest.
	h.txnDone(&scheduler.Record{Seq: 7, End: t0.Add(time.Hour)})
	h.close()
	store.Close()
	store, recs, h = open(3, 10*time.Minute)
	defer store.Close()
	defer h.close()
	if got := seqs(recs); !cmp.Equal(got, []uint64{7}) {
		t.Fatalf("after the age bound: %v, want [7]", got)
	}
}

// benchRecord is a transaction record of n values, each created.
func benchRecord(n int) *scheduler.Record {
	t0 := time.Now()
	rec := &scheduler.Record{Seq: 1, Kind: scheduler.NBTxn, Description: "bench", Start: t0, End: t0}
	for i := range n {
		key := "x/" + strconv.Itoa(i)
		v := wrapperspb.String("value " + strconv.Itoa(i))
		rec.Values = append(rec.Values, scheduler.KeyValue{Key: key, Value: v})
		rec.Planned = append(rec.Planned, scheduler.Op{Key: key, Kind: scheduler.OpCreate, State: scheduler.CONFIGURED, Value: v, Called: true})
	}
	rec.Executed = rec.Planned
	return rec
}

// BenchmarkHistoryEncode: the writer's cost of a record of 10,000 values
// (per value: ns/op / 10,000).
func BenchmarkHistoryEncode(b *testing.B) {
	rec := benchRecord(10000)
	b.ReportAllocs()
	var size int
	for b.Loop() {
		data, err := encodeRecord(rec)
		if err != nil {
			b.Fatal(err)
		}
		size = len(data)
	}
	b.ReportMetric(float64(size), "bytes/record")
}

// BenchmarkHistoryDecode: reading such a record back at start.
func BenchmarkHistoryDecode(b *testing.B) {
	data, err := encodeRecord(benchRecord(10000))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeRecord(data); err != nil {
			b.Fatal(err)
		}
	}
}
