package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestAgentHistoryAfterKill: the agent SIGKILLed in the middle of its
// history, then restarted over the same state directory, still answers
// /history, /timeline and /graph as of an earlier transaction for the
// transactions before the kill, as it did before it, with the same
// numbers.
func TestAgentHistoryAfterKill(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	state := filepath.Join(dir, "state")
	args := []string{"-name", "hk", "-memory", "-file", cfg, "-state-dir", state}
	bridge := func(name string, mtu int) string {
		return fmt.Sprintf("linux/interface/%s: {name: %s, type: TYPE_BRIDGE, mtu: %d}\n", name, name, mtu)
	}
	writeFile(t, cfg, bridge("br0", 1400))
	a := startAgent(t, args...)
	type rec struct {
		Seq         uint64          `json:"seq,string"`
		Description string          `json:"description"`
		Executed    json.RawMessage `json:"executed"`
	}
	history := func(a *agentProc) []rec {
		var recs []rec
		a.getJSON("/scheduler/txn-history", &recs)
		return recs
	}
	n := len(history(a))
	for i, mtu := range []int{1500, 1600, 1700} {
		writeFile(t, cfg, bridge("br0", mtu)+bridge("br1", mtu))
		eventually(t, 30*time.Second, "the edit applied", func() (bool, string) {
			return len(history(a)) >= n+i+1, ""
		})
	}
	before := history(a)
	_, timeline := a.get("/scheduler/key-timeline?key=linux/interface/br0")
	mid := before[len(before)-2].Seq
	graphPath := fmt.Sprintf("/v1/graph?seq=%d&format=GRAPH_FORMAT_JSON", mid)
	code, graph := a.get(graphPath)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", graphPath, code, graph)
	}
	a.waitPersisted(before[len(before)-1].Seq)
	a.kill()

	a = startAgent(t, args...)
	after := history(a)
	if len(after) <= len(before) {
		t.Fatalf("after the kill %d records, want the %d before and the startup's", len(after), len(before))
	}
	for i, r := range before {
		g := after[i]
		if g.Seq != r.Seq || g.Description != r.Description || string(g.Executed) != string(r.Executed) {
			t.Errorf("record %d after the kill: #%d %q %s\nwant #%d %q %s", i, g.Seq, g.Description, g.Executed, r.Seq, r.Description, r.Executed)
		}
	}
	var tlBefore, tlAfter []json.RawMessage
	if err := json.Unmarshal([]byte(timeline), &tlBefore); err != nil {
		t.Fatal(err)
	}
	a.getJSON("/scheduler/key-timeline?key=linux/interface/br0", &tlAfter)
	if len(tlAfter) < len(tlBefore) {
		t.Fatalf("the timeline of br0 after the kill has %d entries, want the %d before first", len(tlAfter), len(tlBefore))
	}
	for i := range tlBefore {
		if string(tlAfter[i]) != string(tlBefore[i]) {
			t.Errorf("timeline entry %d after the kill: %s\nwant %s", i, tlAfter[i], tlBefore[i])
		}
	}
	if code, g := a.get(graphPath); code != 200 || g != graph {
		t.Errorf("GET %s after the kill: %d\n%s\nwant\n%s", graphPath, code, g, graph)
	}
}
