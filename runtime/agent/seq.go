package agent

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb/boltstore"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// seqBlock is how many transaction numbers the agent reserves at a time in
// its state store. Numbers stay unique across restarts at the cost of one
// store write per half block of transactions; a restart skips at most a
// block of numbers.
const seqBlock = 1000

// seqKeeper keeps transaction numbers unique across restarts, so that a
// number given before a restart (kvctl confirm N, rollback --to N) never
// names another transaction after it. The scheduler numbers its
// transactions after the number reserved last in the store; the keeper
// reserves the next block, from the scheduler's observer, once half of
// the current one is used, before the number of the next transaction
// goes past the reservation.
type seqKeeper struct {
	store  *boltstore.Store
	logger *slog.Logger

	mu       sync.Mutex
	reserved uint64 // the number stored
}

// newSeqKeeper reads the last number reserved and reserves the first
// block after it; the scheduler's transactions are numbered after the
// number it returns.
func newSeqKeeper(store *boltstore.Store, logger *slog.Logger) (*seqKeeper, uint64, error) {
	last, err := store.LastSeq()
	if err != nil {
		return nil, 0, err
	}
	k := &seqKeeper{store: store, logger: logger}
	if err := k.reserve(last + seqBlock); err != nil {
		return nil, 0, err
	}
	return k, last, nil
}

func (k *seqKeeper) reserve(upTo uint64) error {
	if err := k.store.SetLastSeq(upTo); err != nil {
		return fmt.Errorf("state store: reserving transaction numbers: %w", err)
	}
	k.reserved = upTo
	return nil
}

// txnDone reserves the next block once half of the current one is used:
// the transactions that run meanwhile take numbers still reserved.
func (k *seqKeeper) txnDone(rec *scheduler.Record) {
	if rec.DryRun || rec.Seq == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if rec.Seq+seqBlock/2 < k.reserved {
		return
	}
	if err := k.reserve(rec.Seq + seqBlock); err != nil {
		// Tried again at the next transaction.
		k.logger.Error("transaction numbers may repeat after a restart", "seq", rec.Seq, "error", err)
	}
}
