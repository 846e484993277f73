package boltstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/boltstore"
)

func open(t *testing.T, path string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReopenKeepsTheRecords(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "applied.db")
	s := open(t, path)
	if recs, err := s.Load(); err != nil || len(recs) != 0 {
		t.Fatalf("a new store: %v, %v", recs, err)
	}
	puts := []nb.Applied{
		{Key: "a", Source: "file", Value: wrapperspb.String("one")},
		{Key: "b", Source: "etcd", Value: durationpb.New(3 * time.Second)},
		{Key: "c", Source: "file", Value: wrapperspb.String("three")},
	}
	if err := s.Record(puts, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Record([]nb.Applied{{Key: "a", Source: "etcd", Value: wrapperspb.String("uno")}}, []string{"c", "absent"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path)
	defer s.Close()
	recs, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	want := []nb.Applied{
		{Key: "a", Source: "etcd", Value: wrapperspb.String("uno")},
		{Key: "b", Source: "etcd", Value: durationpb.New(3 * time.Second)},
	}
	if !slices.EqualFunc(recs, want, func(x, y nb.Applied) bool {
		return x.Key == y.Key && x.Source == y.Source && proto.Equal(x.Value, y.Value)
	}) {
		t.Errorf("after a reopen: %v, want %v", recs, want)
	}
}

func TestASecondOpenFailsClearly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "applied.db")
	s := open(t, path)
	defer s.Close()
	_, err := boltstore.Open(path, boltstore.WithLockTimeout(50*time.Millisecond))
	if !errors.Is(err, boltstore.ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Errorf("a second open: %v, want ErrLocked naming the file", err)
	}
}

func TestCorruptedFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "applied.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 2000)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := boltstore.Open(path)
	if !errors.Is(err, boltstore.ErrNotStore) || !strings.Contains(err.Error(), path) {
		t.Errorf("a corrupted file: %v, want ErrNotStore naming the file", err)
	}
}

func TestForeignDatabase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket([]byte("something else"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = boltstore.Open(path)
	if !errors.Is(err, boltstore.ErrNotStore) || !strings.Contains(err.Error(), "another program") {
		t.Errorf("another program's database: %v, want ErrNotStore", err)
	}
}

func TestUndecodableRecordIsNamed(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "applied.db")
	s := open(t, path)
	if err := s.Record([]nb.Applied{{Key: "good", Source: "file", Value: wrapperspb.String("x")}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A record whose value's type is not linked in.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Field 1 "file", field 2 an Any of type example.Unknown.
	anyv, err := proto.Marshal(&anypb.Any{TypeUrl: "type.googleapis.com/example.Unknown"})
	if err != nil {
		t.Fatal(err)
	}
	rec := protowire.AppendTag(nil, 1, protowire.BytesType)
	rec = protowire.AppendString(rec, "file")
	rec = protowire.AppendTag(rec, 2, protowire.BytesType)
	rec = protowire.AppendBytes(rec, anyv)
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("applied")).Put([]byte("bad"), rec)
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	recs, err := s.Load()
	if err == nil || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), "example.Unknown") {
		t.Errorf("Load: %v, want an error naming the key and the type", err)
	}
	if len(recs) != 1 || recs[0].Key != "good" {
		t.Errorf("Load returned %v, want the good record", recs)
	}
}
