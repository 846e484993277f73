package boltstore_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
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

// A source's entries: written in order (puts, deletes, deletes by
// prefix), read back in key order after a reopen; a write removes the
// source's single record; a write that fails changes nothing.
func TestSourceEntries(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "applied.db")
	s := open(t, path)
	if err := s.SaveSource("api", []byte("old")); err != nil {
		t.Fatal(err)
	}
	err := s.WriteSourceEntries("api", []nb.SourceEntry{
		{Key: []byte("c/a"), Value: []byte("1")},
		{Key: []byte("c/b"), Value: []byte("2")},
		{Key: []byte("p/a"), Value: []byte("0")},
		{Key: []byte("p/b"), Value: []byte("0")},
		{Key: []byte("h"), Value: []byte("header")},
		{Key: []byte("c/b")},
		{Key: []byte("p/"), Prefix: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := s.LoadSource("api"); b != nil || err != nil {
		t.Fatalf("the record stayed: %q %v", b, err)
	}
	s.Close()
	s = open(t, path)
	defer s.Close()
	read := func() string {
		t.Helper()
		var out []string
		if err := s.ReadSourceEntries("api", func(k, v []byte) error {
			out = append(out, string(k)+"="+string(v))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, " ")
	}
	if got, want := read(), "c/a=1 h=header"; got != want {
		t.Fatalf("after a reopen: %q, want %q", got, want)
	}
	// An empty key fails in bbolt: the put before it is not made.
	err = s.WriteSourceEntries("api", []nb.SourceEntry{{Key: []byte("c/z"), Value: []byte("9")}, {Key: nil, Value: []byte("x")}})
	if err == nil || !strings.Contains(err.Error(), `source "api"`) {
		t.Fatalf("a write with an empty key: %v", err)
	}
	if got, want := read(), "c/a=1 h=header"; got != want {
		t.Fatalf("after a failed write: %q, want %q", got, want)
	}
	if ok, err := nb.HasSourceState(s, "api"); !ok || err != nil {
		t.Fatalf("HasSourceState(api) = %v, %v", ok, err)
	}
	if ok, err := nb.HasSourceState(s, "other"); ok || err != nil {
		t.Fatalf("HasSourceState(other) = %v, %v", ok, err)
	}
}
