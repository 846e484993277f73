package boltstore_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb/boltstore"
)

// History records come back in the order of their numbers (not of their
// writing) after a reopen, without those dropped; an error of the reader
// stops the reading.
func TestHistoryRecords(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	read := func() string {
		t.Helper()
		var out string
		if err := s.ReadHistory(func(seq uint64, data []byte) error {
			out += fmt.Sprintf("%d=%s ", seq, data)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := read(); got != "" {
		t.Fatalf("a new store's history: %q", got)
	}
	rec := func(seq uint64) boltstore.HistoryRecord {
		return boltstore.HistoryRecord{Seq: seq, Data: []byte(fmt.Sprint("r", seq))}
	}
	if err := s.WriteHistory([]boltstore.HistoryRecord{rec(300), rec(2)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteHistory([]boltstore.HistoryRecord{rec(1000)}, []uint64{2, 7}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	if got, want := read(), "300=r300 1000=r1000 "; got != want {
		t.Errorf("after a reopen: %q, want %q", got, want)
	}
	stop := errors.New("stop")
	n := 0
	if err := s.ReadHistory(func(uint64, []byte) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("a reader's error: %v after %d records", err, n)
	}
}
