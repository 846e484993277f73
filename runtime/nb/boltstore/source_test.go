package boltstore_test

import (
	"path/filepath"
	"testing"
)

// A source's record survives a reopen, apart from the applied values; nil
// removes it.
func TestSourceRecords(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "applied.db")
	s := open(t, path)
	if b, err := s.LoadSource("api"); b != nil || err != nil {
		t.Fatalf("a new store: %q, %v", b, err)
	}
	if err := s.SaveSource("api", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveSource("other", []byte("two")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, path)
	defer s.Close()
	if b, err := s.LoadSource("api"); string(b) != "one" || err != nil {
		t.Fatalf("after a reopen: %q, %v", b, err)
	}
	if recs, err := s.Load(); len(recs) != 0 || err != nil {
		t.Fatalf("the records of sources show as applied values: %v %v", recs, err)
	}
	if err := s.SaveSource("api", nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.LoadSource("api"); b != nil {
		t.Fatalf("after the removal: %q", b)
	}
	if b, _ := s.LoadSource("other"); string(b) != "two" {
		t.Fatalf("another source's record: %q", b)
	}
}
