package scheduler

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/view"
)

// TestNodeMap: a reader sees a key's node from its publish on, and the
// version saved when the node began to change until then; a key whose
// node is taken out stays, a tombstone, while readers may need what was
// published of it; len counts nodes only.
func TestNodeMap(t *testing.T) {
	if size := unsafe.Sizeof(graph.Node{}); size > 240 {
		t.Errorf("a node is %d bytes, over the 240-byte size class", size)
	}
	var m graph.NodeMap
	a, b := &graph.Node{NodeFields: graph.NodeFields{Key: "a", State: CONFIGURED, Seq: 1}}, &graph.Node{NodeFields: graph.NodeFields{Key: "b"}}
	m.Set("a", a)
	m.Set("b", b)
	m.Set("a", a) // again: still one node
	if m.Len() != 2 || m.Get("a") != a || m.Get("c") != nil {
		t.Fatalf("len %d, a %p, c %p", m.Len(), m.Get("a"), m.Get("c"))
	}
	if r := m.Load("a", 5); r != nil {
		t.Fatalf("a node not yet published is seen: %+v", r)
	}

	// Never published: the entry goes with the node (a rolled-back
	// create leaves nothing behind).
	m.Del(b)
	if _, ok := m.Shard("b").M["b"]; ok || m.Len() != 1 {
		t.Fatalf("an unpublished key outlived its node (len %d)", m.Len())
	}

	// Published at 2: seen from 2 on, as the node is.
	if olds, _ := m.Publish(a, 2, false); olds {
		t.Fatal("a new key has old versions")
	}
	if r := m.Load("a", 1); r != nil {
		t.Fatalf("seen before its publish: %+v", r)
	}
	if r := m.Load("a", 2); r == nil || r.State != CONFIGURED || r.Seq != 1 || r.Pub != 2 {
		t.Fatalf("at 2: %+v, want CONFIGURED seq 1", r)
	}

	// Changing: readers see the saved version, whatever the worker does
	// to the node, until it is published again.
	m.Freeze(a)
	a.State, a.Seq = FAILED, 3
	if r := m.Load("a", 2); r == nil || r.State != CONFIGURED || r.Seq != 1 {
		t.Fatalf("while changing: %+v, want the published CONFIGURED seq 1", r)
	}
	if olds, changed := m.Publish(a, 3, true); !olds || !changed {
		t.Fatalf("publish: old versions %v, changed %v; want both", olds, changed)
	}
	if r := m.Load("a", 2); r == nil || r.State != CONFIGURED {
		t.Fatalf("a reader at 2 after the publish of 3: %+v, want CONFIGURED", r)
	}
	if r := m.Load("a", 3); r == nil || r.State != FAILED {
		t.Fatalf("at 3: %+v, want FAILED", r)
	}
	if m.Trim(a, 2) {
		// a reader at 2 keeps the version: left for the next trim
	} else {
		t.Fatal("trim at 2 dropped the version a reader at 2 needs")
	}
	if m.Trim(a, 3) || a.Old != nil {
		t.Fatal("trim at 3 kept a version no reader needs")
	}

	// Taken out: a tombstone while a reader may need what was published.
	m.Del(a)
	if m.Len() != 0 || m.Get("a") != nil || a.State != REMOVED {
		t.Fatalf("after del: len %d, node %p, state %v", m.Len(), m.Get("a"), a.State)
	}
	if r := m.Load("a", 3); r == nil || r.State != FAILED {
		t.Fatalf("a reader at 3 after the delete, unpublished: %+v, want FAILED", r)
	}
	m.Del(a) // REMOVED already: nothing to count
	if m.Len() != 0 {
		t.Fatalf("len %d after a second del", m.Len())
	}
	for k := range m.All() {
		t.Errorf("all yields %s, which has no node", k)
	}
	m.Publish(a, 4, false)
	if r := m.Load("a", 4); r != nil {
		t.Fatalf("at 4, after the delete: %+v, want none", r)
	}

	// A new node of the key, not yet published: readers at 3 and 4 see
	// the key as it was.
	a2 := &graph.Node{NodeFields: graph.NodeFields{Key: "a", State: CONFIGURED, Seq: 5}}
	m.Set("a", a2)
	if m.Len() != 1 || m.Get("a") != a2 {
		t.Fatal("a new node of a key with a tombstone")
	}
	if r3, r4 := m.Load("a", 3), m.Load("a", 4); r3 == nil || r3.State != FAILED || r4 != nil {
		t.Fatalf("before the new node's publish: at 3 %+v (want FAILED), at 4 %+v (want none)", r3, r4)
	}
	m.Publish(a2, 5, false)
	if r := m.Load("a", 5); r == nil || r.Seq != 5 {
		t.Fatalf("at 5: %+v", r)
	}
	m.Trim(a2, 5)
	if a2.Old != nil {
		t.Error("versions kept that no reader needs")
	}
	n := 0
	m.Each(5, func(k string, r *graph.ViewRec) bool {
		n++
		if k != "a" || r.Seq != 5 {
			t.Errorf("each: %s %+v", k, r)
		}
		return true
	})
	if n != 1 {
		t.Errorf("each saw %d values, want 1", n)
	}
}

// TestShardOfSpreads: keys that differ in a few characters anywhere land
// in many shards.
func TestShardOfSpreads(t *testing.T) {
	for _, format := range []string{"w/route/%d", "linux/interface/eth%d/address/10.0.0.1/24", "vpp/bd/bd1/interface/tap%d", "%d", "x/%d/y"} {
		seen := map[uint32]int{}
		for i := range 4096 {
			seen[graph.ShardOf(fmt.Sprintf(format, i))]++
		}
		for sh, n := range seen {
			if n > 4096/graph.NodeShards*3 {
				t.Errorf("%s: shard %d holds %d of 4096 keys", format, sh, n)
			}
		}
		if len(seen) < graph.NodeShards*3/4 {
			t.Errorf("%s: %d shards used of %d", format, len(seen), graph.NodeShards)
		}
	}
}

// TestFlagsNames: the names of any set of flags, in flagNames' order,
// space-separated; a bit no flag has is not written.
func TestFlagsNames(t *testing.T) {
	if 1<<len(view.AllFlagNames) > view.HistCalled {
		t.Fatalf("%d flags: the history's bit for Called (%#x) is taken", len(view.AllFlagNames), view.HistCalled)
	}
	for f := range 1 << 16 {
		var want []string
		for i, n := range view.AllFlagNames {
			if f&(1<<i) != 0 {
				want = append(want, n)
			}
		}
		if got := Flags(f).String(); got != strings.Join(want, " ") {
			t.Fatalf("Flags(%#x) = %q, want %q", f, got, strings.Join(want, " "))
		}
	}
}

// TestViewKeepsNoCopies: once transactions have ended and no reader
// reads an older state, the view holds no version apart from the nodes
// (no second copy of a value), and no tombstone; while a reader reads at
// an older state, the versions it needs are kept and it sees them.
func TestViewKeepsNoCopies(t *testing.T) {
	s, err := New(WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	d, err := kv.NewDescriptor(kv.Spec[string, *emptypb.Empty, struct{}]{Name: "x", KeyPrefix: "x/"}, okHandler{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	commit := func(txn *Txn) {
		t.Helper()
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	kept := func() (olds, tombs int) {
		s.lock() // the worker's fields
		defer s.unlock()
		for i := range s.g.Nodes.Shards {
			sh := &s.g.Nodes.Shards[i]
			for _, n := range sh.M {
				if n.Old != nil {
					olds++
				}
			}
			tombs += sh.Tombs
		}
		return olds, tombs
	}
	commit(s.Txn().Set("x/a", &emptypb.Empty{}).Set("x/b", &emptypb.Empty{}).Set("x/c", &emptypb.Empty{}))
	first := s.Status("x/a").Seq
	commit(s.Txn().Delete("x/b").Set("x/d", &emptypb.Empty{}))
	if olds, tombs := kept(); olds != 0 || tombs != 0 {
		t.Fatalf("%d keys with saved versions and %d tombstones kept with no reader, want none", olds, tombs)
	}

	// A reader at the state after the second commit keeps what it sees.
	r := s.view.Read()
	at := r.St.Seq
	commit(s.Txn().Delete("x/a").Set("x/b", &emptypb.Empty{}))
	commit(s.Txn().Set("x/e", &emptypb.Empty{}))
	if olds, tombs := kept(); olds != 1 || tombs != 1 {
		t.Errorf("with a reader at %d: %d keys with saved versions, %d tombstones; want 1 and 1 (x/a: x/b had no entry left)", at, olds, tombs)
	}
	if a, b, e := r.Get("x/a"), r.Get("x/b"), r.Get("x/e"); a == nil || a.Seq != first || b != nil || e != nil {
		t.Errorf("the reader at %d sees x/a %+v (want seq %d), x/b %+v and x/e %+v (want none)", at, a, first, b, e)
	}
	r.Done()
	commit(s.Txn().Set("x/f", &emptypb.Empty{})) // its publish trims
	if olds, tombs := kept(); olds != 0 || tombs != 0 {
		t.Fatalf("after the reader: %d keys with saved versions and %d tombstones, want none", olds, tombs)
	}
	if st := s.Status("x/a"); st.State != NONEXISTENT {
		t.Errorf("x/a after its delete: %v", st.State)
	}
}

// TestNodeMapTombMark: node.tomb, which spares publish and trim a look-up,
// says of every REMOVED node whether the map still holds it for its key,
// through random adds, deletes, rollback-like puts back, publishes and
// trims of a few keys.
func TestNodeMapTombMark(t *testing.T) {
	var m graph.NodeMap
	var nodes []*graph.Node
	keys := []string{"a", "b", "c"}
	rnd := uint64(1)
	next := func(n int) int { rnd = rnd*6364136223846793005 + 1442695040888963407; return int(rnd>>33) % n }
	pub := uint64(1)
	for step := range 3000 {
		key := keys[next(len(keys))]
		switch next(5) {
		case 0: // a new node of the key, as addNode after a miss
			if m.Get(key) == nil {
				n := &graph.Node{NodeFields: graph.NodeFields{Key: key, State: CONFIGURED}}
				nodes = append(nodes, n)
				m.Add(m.Shard(key), key, n)
			}
		case 1:
			if n := m.Get(key); n != nil {
				m.Del(n)
			}
		case 2: // a rollback puts a node of the key back
			for i := len(nodes) - 1; i >= 0; i-- {
				if n := nodes[i]; n.Key == key && n.State == REMOVED {
					m.Set(key, n)
					n.State = NONEXISTENT
					break
				}
			}
		case 3:
			if n := m.Get(key); n != nil {
				m.Freeze(n)
			}
		default:
			pub++
			for _, n := range nodes {
				m.Publish(n, pub, false)
				m.Trim(n, pub-uint64(next(3)))
			}
		}
		for i, n := range nodes {
			if inMap := m.Shard(n.Key).M[n.Key] == n; n.State == REMOVED && n.Tomb != inMap {
				t.Fatalf("step %d: node %d of %s REMOVED, tomb %v, in the map %v", step, i, n.Key, n.Tomb, inMap)
			}
		}
	}
}
