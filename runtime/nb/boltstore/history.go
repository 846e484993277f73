package boltstore

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// historyBucket holds the agent's transaction records: key the number, 8
// bytes big-endian (so that they are in order); value the record in the
// caller's encoding.
var historyBucket = []byte("history")

// HistoryRecord is one transaction record of the history: its number
// and its encoding.
type HistoryRecord struct {
	Seq  uint64
	Data []byte
}

// WriteHistory writes puts and removes the records numbered drop, in one
// transaction, written to disk when it returns.
func (s *Store) WriteHistory(puts []HistoryRecord, drop []uint64) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(historyBucket)
		if err != nil {
			return err
		}
		for _, r := range puts {
			if err := b.Put(binary.BigEndian.AppendUint64(nil, r.Seq), r.Data); err != nil {
				return fmt.Errorf("history record %d: %w", r.Seq, err)
			}
		}
		for _, seq := range drop {
			if err := b.Delete(binary.BigEndian.AppendUint64(nil, seq)); err != nil {
				return fmt.Errorf("history record %d: %w", seq, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("boltstore: %s: %w", s.path, err)
	}
	return nil
}

// ReadHistory calls fn with each history record, in the order of their
// numbers; data is valid only during the call. An error of fn stops the
// reading and is returned.
func (s *Store) ReadHistory(fn func(seq uint64, data []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(historyBucket)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("boltstore: %s: a history key %q is not a transaction number", s.path, k)
			}
			return fn(binary.BigEndian.Uint64(k), v)
		})
	})
}
