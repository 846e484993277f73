package boltstore

import (
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
