package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestNodeMap: an entry lives while the key has a node or versions, and
// len counts nodes only.
func TestNodeMap(t *testing.T) {
	var m nodeMap
	a, b := &node{key: "a"}, &node{key: "b"}
	m.set("a", a)
	m.set("b", b)
	m.set("a", a) // again: still one node
	if m.len() != 2 || m.get("a") != a || m.get("c") != nil {
		t.Fatalf("len %d, a %p, c %p", m.len(), m.get("a"), m.get("c"))
	}
	s := &viewSlot{}
	m.setSlot("a", s)
	m.del("a")
	if m.len() != 1 || m.get("a") != nil || m.load("a") != s {
		t.Fatalf("after del: len %d, node %p, slot %p: the versions must outlive the node", m.len(), m.get("a"), m.load("a"))
	}
	m.del("a") // no node: nothing to count
	if m.len() != 1 {
		t.Fatalf("len %d after a second del", m.len())
	}
	var keys []string
	for k := range m.all() {
		keys = append(keys, k)
	}
	if !slices.Equal(keys, []string{"b"}) {
		t.Errorf("all: %v, want [b] (a key with versions only has no node)", keys)
	}
	m.dropSlot("a", &viewSlot{}) // not its versions: kept
	if m.load("a") != s {
		t.Fatal("dropSlot took another slot's entry")
	}
	m.dropSlot("a", s)
	if _, ok := m.shard("a").m["a"]; ok {
		t.Error("an entry with neither node nor versions is kept")
	}
	m.setSlot("b", s)
	m.dropSlot("b", s)
	if m.get("b") != b || m.load("b") != nil {
		t.Error("dropSlot of a key with a node must keep the node")
	}
}

// TestShardOfSpreads: keys that differ in a few characters anywhere land
// in many shards.
func TestShardOfSpreads(t *testing.T) {
	for _, format := range []string{"w/route/%d", "linux/interface/eth%d/address/10.0.0.1/24", "vpp/bd/bd1/interface/tap%d", "%d", "x/%d/y"} {
		seen := map[uint32]int{}
		for i := range 4096 {
			seen[shardOf(fmt.Sprintf(format, i))]++
		}
		for sh, n := range seen {
			if n > 4096/nodeShards*3 {
				t.Errorf("%s: shard %d holds %d of 4096 keys", format, sh, n)
			}
		}
		if len(seen) < nodeShards*3/4 {
			t.Errorf("%s: %d shards used of %d", format, len(seen), nodeShards)
		}
	}
}

// TestLogSafeFindsEveryControlByte: the word-at-a-time scan quotes a text
// exactly when the byte-by-byte rule would, whatever the byte and its
// place.
func TestLogSafeFindsEveryControlByte(t *testing.T) {
	naive := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] == 0x7f {
				return true
			}
		}
		return false
	}
	for _, n := range []int{1, 7, 8, 9, 16, 23} {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				b := []byte(strings.Repeat("a\xc3\xa9", n)[:n])
				b[pos] = byte(c)
				s := string(b)
				if quoted := logSafe(s) != s; quoted != naive(s) {
					t.Fatalf("logSafe(%q) quoted=%v, want %v", s, quoted, naive(s))
				}
			}
		}
	}
}
