package boltstore_test

import (
	"path/filepath"
	"testing"
)

// The last transaction number survives a reopen and never goes back.
func TestLastSeqSurvivesReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	if seq, err := s.LastSeq(); err != nil || seq != 0 {
		t.Fatalf("a new store: LastSeq() = %d, %v; want 0", seq, err)
	}
	for _, seq := range []uint64{1000, 3000, 2000} {
		if err := s.SetLastSeq(seq); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	if seq, err := s.LastSeq(); err != nil || seq != 3000 {
		t.Errorf("reopened: LastSeq() = %d, %v; want 3000", seq, err)
	}
}
