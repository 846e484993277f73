package main

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvdescriptor/kvdescriptor/runtime/metrics"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/boltstore"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestAgentSeqAfterRestart: transaction numbers go on across restarts, a
// clean stop or a SIGKILL: the first transaction of a restarted agent has a
// number above every number before it, so that `kvctl confirm N` or
// `rollback --to N` meant before the restart cannot reach another
// transaction.
func TestAgentSeqAfterRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	state := filepath.Join(dir, "state")
	args := []string{"-name", "ts", "-memory", "-file", cfg, "-state-dir", state}
	history := func(a *agentProc) []uint64 {
		var recs []struct {
			Seq uint64 `json:"seq"`
		}
		a.getJSON("/history", &recs)
		seqs := make([]uint64, len(recs))
		for i, r := range recs {
			seqs[i] = r.Seq
		}
		return seqs
	}
	var before uint64 // the highest number so far
	for i, stop := range []string{"SIGTERM", "SIGKILL", "SIGTERM"} {
		writeFile(t, cfg, fmt.Sprintf("linux/interface/br%d: {name: br%d, type: TYPE_BRIDGE}\n", i, i))
		a := startAgent(t, args...)
		n := len(history(a))
		// One more transaction: the file edited.
		writeFile(t, cfg, fmt.Sprintf("linux/interface/br%d: {name: br%d, type: TYPE_BRIDGE, mtu: 1400}\n", i, i))
		var seqs []uint64
		eventually(t, 10*time.Second, "the edit applied", func() (bool, string) {
			seqs = history(a)
			return n > 0 && len(seqs) > n, fmt.Sprint(seqs)
		})
		if seqs[0] <= before {
			t.Errorf("run %d: the first transaction is #%d, not after #%d of the run before; numbers %v", i, seqs[0], before, seqs)
		}
		for j := 1; j < len(seqs); j++ {
			if seqs[j] <= seqs[j-1] {
				t.Errorf("run %d: numbers %v do not increase", i, seqs)
			}
		}
		before = seqs[len(seqs)-1]
		if stop == "SIGKILL" {
			a.kill()
		} else {
			a.stop()
		}
	}
}

// The keeper reserves numbers ahead of the transactions: after any
// transaction, the number stored is above it, by at least half a block.
func TestSeqKeeperReservesAhead(t *testing.T) {
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	k, last, err := newSeqKeeper(m, store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || last != 0 {
		t.Fatalf("a new store: after %d, %v", last, err)
	}
	for seq := last + 1; seq <= last+3*seqBlock; seq++ {
		k.TxnDone(&scheduler.Record{Seq: seq})
		stored, err := store.LastSeq()
		if err != nil {
			t.Fatal(err)
		}
		if stored < seq+seqBlock/2 {
			t.Fatalf("after transaction #%d the store holds %d, not half a block (%d) ahead", seq, stored, seqBlock/2)
		}
	}
	k.TxnDone(&scheduler.Record{DryRun: true}) // takes no number
}
