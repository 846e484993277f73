package boltstore

import (
	"bytes"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

// sourcesBucket holds, by source name, the state a source keeps beyond
// its values (nb.SourceStore); created by the first SaveSource, so that
// files of agents before it open as they are.
var sourcesBucket = []byte("sources")

var _ nb.SourceStore = (*Store)(nil)

// LoadSource returns the record SaveSource wrote for source (nil: none).
func (s *Store) LoadSource(source string) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(sourcesBucket); b != nil {
			out = slices.Clone(b.Get([]byte(source)))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: %s: %w", s.path, err)
	}
	return out, nil
}

// SaveSource writes the record of source (nil removes it), synced to disk
// before it returns.
func (s *Store) SaveSource(source string, data []byte) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(sourcesBucket)
		if err != nil {
			return err
		}
		if data == nil {
			return b.Delete([]byte(source))
		}
		return b.Put([]byte(source), data)
	})
	if err != nil {
		return fmt.Errorf("boltstore: %s: source %q: %w", s.path, source, err)
	}
	return nil
}

// entriesBucket holds a bucket by source name, of the entries of
// nb.SourceEntryStore; created by the first WriteSourceEntries.
var entriesBucket = []byte("source-entries")

var _ nb.SourceEntryStore = (*Store)(nil)

// ReadSourceEntries calls fn with each entry of source, in key order.
func (s *Store) ReadSourceEntries(source string, fn func(key, value []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		top := tx.Bucket(entriesBucket)
		if top == nil {
			return nil
		}
		b := top.Bucket([]byte(source))
		if b == nil {
			return nil
		}
		return b.ForEach(fn)
	})
}

// WriteSourceEntries makes the changes of source's entries in order and
// removes its SaveSource record, in one transaction synced to disk before
// it returns.
func (s *Store) WriteSourceEntries(source string, changes []nb.SourceEntry) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		top, err := tx.CreateBucketIfNotExists(entriesBucket)
		if err != nil {
			return err
		}
		b, err := top.CreateBucketIfNotExists([]byte(source))
		if err != nil {
			return err
		}
		for _, c := range changes {
			switch {
			case c.Prefix:
				var keys [][]byte
				cur := b.Cursor()
				for k, _ := cur.Seek(c.Key); k != nil && bytes.HasPrefix(k, c.Key); k, _ = cur.Next() {
					keys = append(keys, slices.Clone(k))
				}
				for _, k := range keys {
					if err := b.Delete(k); err != nil {
						return fmt.Errorf("entry %q: %w", k, err)
					}
				}
			case c.Value == nil:
				if err := b.Delete(c.Key); err != nil {
					return fmt.Errorf("entry %q: %w", c.Key, err)
				}
			default:
				if err := b.Put(c.Key, c.Value); err != nil {
					return fmt.Errorf("entry %q: %w", c.Key, err)
				}
			}
		}
		if old := tx.Bucket(sourcesBucket); old != nil && old.Get([]byte(source)) != nil {
			return old.Delete([]byte(source))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("boltstore: %s: source %q: %w", s.path, source, err)
	}
	return nil
}
