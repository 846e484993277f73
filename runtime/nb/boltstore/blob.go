package boltstore

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// blobBucket holds small records that the agent keeps across restarts
// beside the applied values, each under its name: the operator page's
// plots (runtime/ui), for one.
var blobBucket = []byte("blobs")

// Blob is one named record of the store, read and written whole: the
// store of a small piece of state kept across restarts (ui.Options.Store
// takes one). Make it with Store.Blob.
type Blob struct {
	s    *Store
	name []byte
}

// Blob returns the record named name (not empty): Load reads it, Save
// replaces it.
func (s *Store) Blob(name string) *Blob { return &Blob{s: s, name: []byte(name)} }

// Load returns the record's bytes; nil (and no error) when it was never
// saved.
func (b *Blob) Load() ([]byte, error) {
	if len(b.name) == 0 {
		return nil, errors.New("boltstore: a blob needs a name")
	}
	var out []byte
	err := b.s.db.View(func(tx *bolt.Tx) error {
		if bk := tx.Bucket(blobBucket); bk != nil {
			if v := bk.Get(b.name); v != nil {
				out = append([]byte{}, v...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: %s: blob %q: %w", b.s.path, b.name, err)
	}
	return out, nil
}

// Save replaces the record's bytes, in one bbolt transaction (written to
// disk when it returns).
func (b *Blob) Save(data []byte) error {
	if len(b.name) == 0 {
		return errors.New("boltstore: a blob needs a name")
	}
	err := b.s.db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(blobBucket)
		if err != nil {
			return err
		}
		return bk.Put(b.name, data)
	})
	if err != nil {
		return fmt.Errorf("boltstore: %s: blob %q: %w", b.s.path, b.name, err)
	}
	return nil
}
