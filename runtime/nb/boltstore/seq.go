package boltstore

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// seqKey holds, in the meta bucket, the transaction number the agent
// reserved last: 8 bytes, big-endian.
var seqKey = []byte("seq")

// LastSeq returns the transaction number stored by SetLastSeq; 0 in a
// store that has none (a new one, or one of an agent before numbers were
// kept).
func (s *Store) LastSeq() (uint64, error) {
	var seq uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(metaBucket).Get(seqKey)
		if b == nil {
			return nil
		}
		if len(b) != 8 {
			return fmt.Errorf("boltstore: %s: the last transaction number is %d bytes long, not 8", s.path, len(b))
		}
		seq = binary.BigEndian.Uint64(b)
		return nil
	})
	return seq, err
}

// SetLastSeq stores seq as the last transaction number, in one bbolt
// transaction (written to disk when it returns). A seq below the stored
// one is ignored: the number never goes back.
func (s *Store) SetLastSeq(seq uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(metaBucket)
		if b := meta.Get(seqKey); len(b) == 8 && binary.BigEndian.Uint64(b) >= seq {
			return nil
		}
		return meta.Put(seqKey, binary.BigEndian.AppendUint64(nil, seq))
	})
}
