package agent

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb/boltstore"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// The keeper reserves numbers ahead of the transactions: after any
// transaction, the number stored is above it, by at least half a block.
func TestSeqKeeperReservesAhead(t *testing.T) {
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	k, last, err := newSeqKeeper(store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || last != 0 {
		t.Fatalf("a new store: after %d, %v", last, err)
	}
	for seq := last + 1; seq <= last+3*seqBlock; seq++ {
		k.txnDone(&scheduler.Record{Seq: seq})
		stored, err := store.LastSeq()
		if err != nil {
			t.Fatal(err)
		}
		if stored < seq+seqBlock/2 {
			t.Fatalf("after transaction #%d the store holds %d, not half a block (%d) ahead", seq, stored, seqBlock/2)
		}
	}
	k.txnDone(&scheduler.Record{DryRun: true}) // takes no number
}
