package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
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
			Seq uint64 `json:"seq,string"`
		}
		a.getJSON("/scheduler/txn-history", &recs)
		seqs := make([]uint64, len(recs))
		for i, r := range recs {
			seqs[i] = r.Seq
		}
		return seqs
	}
	var before uint64 // the highest number so far
	var kept []uint64 // the numbers of the runs before
	for i, stop := range []string{"SIGTERM", "SIGKILL", "SIGTERM"} {
		writeFile(t, cfg, fmt.Sprintf("linux/interface/br%d: {name: br%d, type: TYPE_BRIDGE}\n", i, i))
		a := startAgent(t, args...)
		n := len(history(a))
		// One more transaction: the file edited.
		writeFile(t, cfg, fmt.Sprintf("linux/interface/br%d: {name: br%d, type: TYPE_BRIDGE, mtu: 1400}\n", i, i))
		var seqs []uint64
		eventually(t, 30*time.Second, "the edit applied", func() (bool, string) {
			seqs = history(a)
			return n > 0 && len(seqs) > n, fmt.Sprint(seqs)
		})
		// The history of the runs before is kept, with its numbers.
		if len(seqs) < len(kept) || !slices.Equal(seqs[:len(kept)], kept) {
			t.Fatalf("run %d: history %v does not begin with the runs before's %v", i, seqs, kept)
		}
		if seqs[len(kept)] <= before {
			t.Errorf("run %d: the first transaction is #%d, not after #%d of the run before; numbers %v", i, seqs[len(kept)], before, seqs)
		}
		for j := 1; j < len(seqs); j++ {
			if seqs[j] <= seqs[j-1] {
				t.Errorf("run %d: numbers %v do not increase", i, seqs)
			}
		}
		before, kept = seqs[len(seqs)-1], seqs
		if stop == "SIGKILL" {
			a.waitPersisted(before)
			a.kill()
		} else {
			a.stop()
		}
	}
}

// waitPersisted waits until the agent has written the history record of
// transaction seq to its state directory (its metric says so).
func (a *agentProc) waitPersisted(seq uint64) {
	a.t.Helper()
	re := regexp.MustCompile(`(?m)^kvdescriptor_agent_history_persisted_seq (\S+)$`)
	eventually(a.t, 30*time.Second, fmt.Sprintf("history record #%d written", seq), func() (bool, string) {
		_, body := a.get("/metrics")
		m := re.FindStringSubmatch(body)
		if m == nil {
			return false, "no kvdescriptor_agent_history_persisted_seq in /metrics"
		}
		f, err := strconv.ParseFloat(m[1], 64)
		return err == nil && uint64(f) >= seq, m[0]
	})
}
