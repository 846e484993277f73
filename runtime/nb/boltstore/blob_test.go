package boltstore

import (
	"path/filepath"
	"testing"
)

// A blob is nil until saved, then what was saved last, across a reopen;
// blobs of other names are apart.
func TestBlob(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	b := s.Blob("ui.plots")
	if got, err := b.Load(); err != nil || got != nil {
		t.Fatalf("a blob never saved: %q %v, want nil", got, err)
	}
	for _, v := range []string{"one", "two"} {
		if err := b.Save([]byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Blob("other").Save([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Blob("ui.plots").Load(); err != nil || string(got) != "two" {
		t.Errorf("after a reopen: %q %v, want two", got, err)
	}
	if got, err := s.Blob("other").Load(); err != nil || string(got) != "x" {
		t.Errorf("the other blob: %q %v, want x", got, err)
	}
	if _, err := s.Blob("").Load(); err == nil {
		t.Error("a blob without a name: no error")
	}
}
