package graph

import (
	"iter"
	"sync"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/txnlog"
)

// NodeMap maps each key to its node, which is also what readers see of
// the key (see view), with the versions saved while it changes (old).
// The worker is the only writer: it locks one shard to add or remove an
// entry, to freeze a node (save its version) and to trim versions.
// Readers lock a shard for reading, to copy out what one value (or a
// shard, for each) shows. A node taken out stays, REMOVED (a tombstone),
// while readers may need what was published of it.
type NodeMap struct {
	Shards [NodeShards]nodeShard
	n      int     // the nodes
	recs   recSlab // saved versions, a few dozen at a time
}

// InFlux is node.live while the worker changes the node: readers read
// its old versions.
const InFlux = ^uint64(0)

// NodeShards is the number of shards (shardOf keeps the top 6 bits).
const NodeShards = 64

type nodeShard struct {
	mu sync.RWMutex
	// M holds the nodes and the tombstones; tombs counts the tombstones.
	M     map[string]*Node
	Tombs int
	_     [64 - 40]byte // a cache line each
}

// ShardOf spreads keys over the shards. Only the spread matters (a
// shard's lock is held briefly either way), so two words of the key, its
// middle and its end, are mixed instead of hashing all of it: the map
// hashes the key again.
func ShardOf(key string) uint32 {
	n := len(key)
	var h uint64
	if n >= 8 {
		h = txnlog.Word(key[n-8:]) ^ txnlog.Word(key[(n-8)/2:])*0x9E3779B97F4A7C15
	} else if n > 0 {
		h = uint64(key[0]) | uint64(key[n/2])<<8 | uint64(key[n-1])<<16
	}
	h = (h ^ uint64(n)) * 0xBF58476D1CE4E5B9
	return uint32(h >> (64 - 6)) // 64 shards
}

func (m *NodeMap) Shard(key string) *nodeShard { return &m.Shards[ShardOf(key)] }

// Get returns the node of key, or nil (the worker: no lock).
func (m *NodeMap) Get(key string) *Node {
	n := m.Shards[ShardOf(key)].M[key]
	if n != nil && n.State == REMOVED {
		n = nil // a tombstone
	}
	return n
}

// Len returns the number of nodes.
func (m *NodeMap) Len() int { return m.n }

// Set makes n the node of key (a node put back by a rollback, or a new
// one).
func (m *NodeMap) Set(key string, n *Node) {
	sh := m.Shard(key)
	switch old := sh.M[key]; {
	case old == n && n.State == REMOVED: // its own tombstone: back as it is
		sh.Tombs, n.Tomb = sh.Tombs-1, false
		m.n++
		return
	case old == n:
		return
	case old != nil && old.State != REMOVED:
		m.Freeze(old) // replaced: what readers saw of it is kept
		m.n--         // add counts n
	}
	m.Add(sh, key, n)
}

// Add makes n the node of key, which has none: set without the lookup
// of what key had while the shard holds no tombstone. n is changing
// (inFlux) until the job's publish: readers see what the key had before.
func (m *NodeMap) Add(sh *nodeShard, key string, n *Node) {
	m.n++
	var t *Node
	if sh.Tombs > 0 && sh.M[key] != nil && sh.M[key].State == REMOVED { // the key's tombstone
		t = sh.M[key]
		sh.Tombs, t.Tomb = sh.Tombs-1, false
	}
	sh.mu.Lock()
	n.Live.Store(InFlux) // under the lock: a node put back may have been seen
	if sh.M == nil {
		sh.M = map[string]*Node{}
	}
	if t != nil { // n takes the key's versions over
		if n.Old, t.Old = t.Old, nil; t.Live.Load() != InFlux { // published as gone: so it stays until n is
			m.recs.left = 32 // the slab's size
			gone := m.recs.next()
			gone.Pub, gone.Flags, gone.prev = t.Live.Load(), recGone, n.Old
			n.Old = gone
		}
	}
	sh.M[key] = n
	sh.mu.Unlock()
}

// Freeze marks n as changing, before the worker's first change to it
// since its publish: what readers saw of it is kept as the newest old
// version of its key until the next publish.
func (m *NodeMap) Freeze(n *Node) {
	if n.Live.Load() == InFlux {
		return
	}
	sh := m.Shard(n.Key)
	m.recs.left = 32 // the slab's size
	r := m.recs.next()
	if r.Pub, r.Flags = n.Live.Load(), recGone; n.State != REMOVED {
		setRec(r, n, n.Old, r.Pub, &m.recs)
	}
	sh.mu.Lock()
	r.prev, n.Old = n.Old, r
	n.Live.Store(InFlux)
	sh.mu.Unlock()
}

// Publish makes n's fields what readers see from transaction pub on. It
// reports whether its key keeps old versions (to be trimmed) and, with
// watch, whether what readers see of the key changed. n not changing, or
// no longer in the map: false, false.
func (m *NodeMap) Publish(n *Node, pub uint64, watch bool) (olds, changed bool) {
	if n.Live.Load() != InFlux || n.State == REMOVED && !n.Tomb {
		return false, false
	}
	head := n.Old // what readers saw
	if was := head != nil && !head.gone(); watch {
		changed = was != (n.State != REMOVED) || was && n.State != REMOVED && (n.Seq != head.Seq ||
			n.State != head.State || n.Applied != head.Applied() || n.Intent != head.Intent() ||
			n.LastOp != head.LastOp || !SameValue(head.M().LastErr, n.LastErr()))
	}
	n.Live.Store(pub) // no lock: readers load live before the fields; freeze locks
	return head != nil, changed
}

// Trim drops the old versions of n that no reader at oldest or later
// needs, and n, a tombstone, with the last; true: some are left.
func (m *NodeMap) Trim(n *Node, oldest uint64) (left bool) {
	sh := m.Shard(n.Key)
	r := n.Old
	if r == nil || n.State == REMOVED && !n.Tomb {
		return false // none, or gone to the key's new node
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if n.Live.Load() <= oldest {
		if n.Old = nil; n.State == REMOVED {
			delete(sh.M, n.Key)
			sh.Tombs, n.Tomb = sh.Tombs-1, false
		}
		return false
	}
	for r != nil && r.Pub > oldest {
		r = r.prev
	}
	if r != nil {
		r.prev = nil // older than what oldest sees
	}
	return true
}

// reserve makes room for up to n more keys, spread over the shards, so
// that a large transaction on a small graph (the startup resync of a
// fresh process) does not grow the shard maps step by step: each step
// rehashes the shard and leaves its old table to the collector. Only
// shards that hold few keys for the size are rebuilt (a transaction over
// keys the graph holds, a full resync say, adds none), copied under the
// shard's lock, as growing them would be.
func (m *NodeMap) reserve(n int) {
	per := n / NodeShards
	if per < 64 {
		return // small: growing costs little
	}
	for i := range m.Shards {
		sh := &m.Shards[i]
		if len(sh.M) >= per/8 {
			continue
		}
		bigger := make(map[string]*Node, len(sh.M)+per)
		sh.mu.Lock()
		for k, e := range sh.M {
			bigger[k] = e
		}
		sh.M = bigger
		sh.mu.Unlock()
	}
}

// Del takes n, its key's node unless REMOVED, out, REMOVED (see
// graph.current). Its key keeps it as a tombstone while readers may need
// what was published of it (until its publish or a trim): no map
// look-up. A node never published whose key has no old versions leaves
// the map at once.
func (m *NodeMap) Del(n *Node) {
	if n.State == REMOVED {
		return
	}
	key, sh := n.Key, m.Shard(n.Key)
	m.n--
	m.Freeze(n)
	n.State = REMOVED
	if n.Old != nil {
		sh.Tombs, n.Tomb = sh.Tombs+1, true
		return
	}
	sh.mu.Lock()
	delete(sh.M, key)
	sh.mu.Unlock()
}

// All yields every key and node, in no order (the worker: no lock). The
// loop body may add and remove nodes.
func (m *NodeMap) All() iter.Seq2[string, *Node] {
	return func(yield func(string, *Node) bool) {
		for i := range m.Shards {
			for k, n := range m.Shards[i].M {
				if n.State == REMOVED {
					continue // a tombstone
				}
				if !yield(k, n) {
					return
				}
			}
		}
	}
}

// version returns what a reader at seq sees of n, under the shard's read
// lock: a copy of n's fields (from slab), an old version, or nil.
func (sh *nodeShard) version(key string, n *Node, seq uint64, slab *recSlab) *ViewRec {
	live := n.Live.Load()
	if live <= seq && n.State != REMOVED {
		r := slab.next()
		setRec(r, n, nil, live, slab)
		return r
	}
	r := n.Old
	for live > seq && r != nil && r.Pub > seq {
		r = r.prev
	}
	if live <= seq || r == nil || r.gone() {
		return nil
	}
	return r
}

// Load returns what a reader at seq sees of key, or nil (readers).
func (m *NodeMap) Load(key string, seq uint64) (r *ViewRec) {
	sh := m.Shard(key)
	sh.mu.RLock()
	if n := sh.M[key]; n != nil {
		r = sh.version(key, n, seq, &recSlab{left: 1})
	}
	sh.mu.RUnlock()
	return r
}

// Each calls fn for each value a reader at seq sees until fn returns
// false (readers). A shard's versions are copied out before fn sees them:
// fn may read the map again (taking a shard's lock twice could deadlock).
func (m *NodeMap) Each(seq uint64, fn func(key string, r *ViewRec) bool) {
	var buf []KeyRec
	for i := range m.Shards {
		sh := &m.Shards[i]
		sh.mu.RLock()
		buf = buf[:0]
		slab := recSlab{left: len(sh.M)}
		for k, n := range sh.M {
			if r := sh.version(k, n, seq, &slab); r != nil {
				buf = append(buf, KeyRec{k, r})
			}
		}
		sh.mu.RUnlock()
		for _, kr := range buf {
			if !fn(kr.Key, kr.Rec) {
				return
			}
		}
	}
}
