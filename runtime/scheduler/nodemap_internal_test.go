package scheduler

import (
	"fmt"
	"strings"
	"testing"
)

// TestNodeMap: a key gets its versions with its node; the entry lives
// while the key has a node or published versions; len counts nodes only.
func TestNodeMap(t *testing.T) {
	var m nodeMap
	a, b := &node{nodeFields: nodeFields{key: "a"}}, &node{nodeFields: nodeFields{key: "b"}}
	m.set("a", a)
	m.set("b", b)
	s := m.load("a")
	m.set("a", a) // again: still one node, the same versions
	if m.len() != 2 || m.get("a") != a || m.get("c") != nil || s == nil || m.load("a") != s {
		t.Fatalf("len %d, a %p, c %p, slot %p then %p", m.len(), m.get("a"), m.get("c"), s, m.load("a"))
	}

	// Never published: the entry goes with the node (a rolled-back
	// create leaves nothing behind).
	m.del("b")
	if _, ok := m.shard("b").m["b"]; ok || m.len() != 1 {
		t.Fatalf("an unpublished key outlived its node (len %d)", m.len())
	}

	// Published: the versions outlive the node.
	s.head.Store(&viewRec{pub: 1})
	m.del("a")
	if m.len() != 0 || m.get("a") != nil || m.load("a") != s {
		t.Fatalf("after del: len %d, node %p, slot %p: the versions must outlive the node", m.len(), m.get("a"), m.load("a"))
	}
	m.del("a") // no node: nothing to count
	if m.len() != 0 {
		t.Fatalf("len %d after a second del", m.len())
	}
	for k := range m.all() {
		t.Errorf("all yields %s, which has no node", k)
	}
	if a.state != REMOVED {
		t.Fatalf("a node taken out is %v, want REMOVED", a.state)
	}
	m.set("a", a)         // back: the same versions go on
	a.state = NONEXISTENT // live again (a rollback restores its fields)
	if m.load("a") != s || m.len() != 1 || m.get("a") != a {
		t.Fatal("a key that comes back lost its versions")
	}
	a2 := &node{nodeFields: nodeFields{key: "a"}}
	m.del("a")
	m.set("a", a2) // a new node of the key: it takes the versions over
	if m.load("a") != s || m.len() != 1 || m.get("a") != a2 || a2.slot != s {
		t.Fatal("a new node of a key with versions does not take them over")
	}
	m.del("a")
	m.dropSlot("a", &viewSlot{}) // not its versions: kept
	if m.load("a") != s {
		t.Fatal("dropSlot took another slot's entry")
	}
	m.dropSlot("a", s)
	if _, ok := m.shard("a").m["a"]; ok {
		t.Error("an entry with neither node nor versions is kept")
	}
	c := &node{nodeFields: nodeFields{key: "c"}}
	m.set("c", c)
	sc := m.load("c")
	m.dropSlot("c", sc)
	if m.get("c") != c || m.load("c") != sc {
		t.Error("dropSlot of a key with a node must keep the node and its versions")
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

// TestFlagsNames: the names of any set of flags, in flagNames' order,
// space-separated; a bit no flag has is not written.
func TestFlagsNames(t *testing.T) {
	for f := range 1 << 16 {
		var want []string
		for i, n := range flagNames {
			if f&(1<<i) != 0 {
				want = append(want, n)
			}
		}
		if got := Flags(f).String(); got != strings.Join(want, " ") {
			t.Fatalf("Flags(%#x) = %q, want %q", f, got, strings.Join(want, " "))
		}
	}
}
