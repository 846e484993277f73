package scheduler

import (
	"iter"
	"sync"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/txnlog"
)

// nodeMap maps each key to its node, which is also what readers see of
// the key (see view), with the versions saved while it changes (old).
// The worker is the only writer: it locks one shard to add or remove an
// entry, to freeze a node (save its version) and to trim versions.
// Readers lock a shard for reading, to copy out what one value (or a
// shard, for each) shows. A node taken out stays, REMOVED (a tombstone),
// while readers may need what was published of it.
type nodeMap struct {
	shards [nodeShards]nodeShard
	n      int     // the nodes
	recs   recSlab // saved versions, a few dozen at a time
}

// inFlux is node.live while the worker changes the node: readers read
// its old versions.
const inFlux = ^uint64(0)

// nodeShards is the number of shards (shardOf keeps the top 6 bits).
const nodeShards = 64

type nodeShard struct {
	mu sync.RWMutex
	// m holds the nodes and the tombstones; tombs counts the tombstones.
	m     map[string]*node
	tombs int
	_     [64 - 40]byte // a cache line each
}

// shardOf spreads keys over the shards. Only the spread matters (a
// shard's lock is held briefly either way), so two words of the key, its
// middle and its end, are mixed instead of hashing all of it: the map
// hashes the key again.
func shardOf(key string) uint32 {
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

func (m *nodeMap) shard(key string) *nodeShard { return &m.shards[shardOf(key)] }

// get returns the node of key, or nil (the worker: no lock).
func (m *nodeMap) get(key string) *node {
	n := m.shards[shardOf(key)].m[key]
	if n != nil && n.state == REMOVED {
		n = nil // a tombstone
	}
	return n
}

// len returns the number of nodes.
func (m *nodeMap) len() int { return m.n }

// set makes n the node of key (a node put back by a rollback, or a new
// one).
func (m *nodeMap) set(key string, n *node) {
	sh := m.shard(key)
	switch old := sh.m[key]; {
	case old == n && n.state == REMOVED: // its own tombstone: back as it is
		sh.tombs, n.tomb = sh.tombs-1, false
		m.n++
		return
	case old == n:
		return
	case old != nil && old.state != REMOVED:
		m.freeze(old) // replaced: what readers saw of it is kept
		m.n--         // add counts n
	}
	m.add(sh, key, n)
}

// add makes n the node of key, which has none: set without the lookup
// of what key had while the shard holds no tombstone. n is changing
// (inFlux) until the job's publish: readers see what the key had before.
func (m *nodeMap) add(sh *nodeShard, key string, n *node) {
	m.n++
	var t *node
	if sh.tombs > 0 && sh.m[key] != nil && sh.m[key].state == REMOVED { // the key's tombstone
		t = sh.m[key]
		sh.tombs, t.tomb = sh.tombs-1, false
	}
	sh.mu.Lock()
	n.live.Store(inFlux) // under the lock: a node put back may have been seen
	if sh.m == nil {
		sh.m = map[string]*node{}
	}
	if t != nil { // n takes the key's versions over
		if n.old, t.old = t.old, nil; t.live.Load() != inFlux { // published as gone: so it stays until n is
			m.recs.left = 32 // the slab's size
			gone := m.recs.next()
			gone.pub, gone.flags, gone.prev = t.live.Load(), recGone, n.old
			n.old = gone
		}
	}
	sh.m[key] = n
	sh.mu.Unlock()
}

// freeze marks n as changing, before the worker's first change to it
// since its publish: what readers saw of it is kept as the newest old
// version of its key until the next publish.
func (m *nodeMap) freeze(n *node) {
	if n.live.Load() == inFlux {
		return
	}
	sh := m.shard(n.key)
	m.recs.left = 32 // the slab's size
	r := m.recs.next()
	if r.pub, r.flags = n.live.Load(), recGone; n.state != REMOVED {
		setRec(r, n, n.old, r.pub, &m.recs)
	}
	sh.mu.Lock()
	r.prev, n.old = n.old, r
	n.live.Store(inFlux)
	sh.mu.Unlock()
}

// publish makes n's fields what readers see from transaction pub on. It
// reports whether its key keeps old versions (to be trimmed) and, with
// watch, whether what readers see of the key changed. n not changing, or
// no longer in the map: false, false.
func (m *nodeMap) publish(n *node, pub uint64, watch bool) (olds, changed bool) {
	if n.live.Load() != inFlux || n.state == REMOVED && !n.tomb {
		return false, false
	}
	head := n.old // what readers saw
	if was := head != nil && !head.gone(); watch {
		changed = was != (n.state != REMOVED) || was && n.state != REMOVED && (n.seq != head.seq ||
			n.state != head.state || n.applied != head.applied() || n.intent != head.intent() ||
			n.lastOp != head.lastOp || !sameValue(head.m().lastErr, n.lastErr))
	}
	n.live.Store(pub) // no lock: readers load live before the fields; freeze locks
	return head != nil, changed
}

// trim drops the old versions of n that no reader at oldest or later
// needs, and n, a tombstone, with the last; true: some are left.
func (m *nodeMap) trim(n *node, oldest uint64) (left bool) {
	sh := m.shard(n.key)
	r := n.old
	if r == nil || n.state == REMOVED && !n.tomb {
		return false // none, or gone to the key's new node
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if n.live.Load() <= oldest {
		if n.old = nil; n.state == REMOVED {
			delete(sh.m, n.key)
			sh.tombs, n.tomb = sh.tombs-1, false
		}
		return false
	}
	for r != nil && r.pub > oldest {
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
func (m *nodeMap) reserve(n int) {
	per := n / nodeShards
	if per < 64 {
		return // small: growing costs little
	}
	for i := range m.shards {
		sh := &m.shards[i]
		if len(sh.m) >= per/8 {
			continue
		}
		bigger := make(map[string]*node, len(sh.m)+per)
		sh.mu.Lock()
		for k, e := range sh.m {
			bigger[k] = e
		}
		sh.m = bigger
		sh.mu.Unlock()
	}
}

// del takes the node of key out, REMOVED (see graph.current). Its key
// keeps it as a tombstone while readers may need what was published of
// it (until its publish or a trim); a node never published whose key has
// no old versions leaves the map at once.
func (m *nodeMap) del(key string) {
	sh := m.shard(key)
	n := sh.m[key]
	if n == nil || n.state == REMOVED {
		return
	}
	m.n--
	m.freeze(n)
	n.state = REMOVED
	if n.old != nil {
		sh.tombs, n.tomb = sh.tombs+1, true
		return
	}
	sh.mu.Lock()
	delete(sh.m, key)
	sh.mu.Unlock()
}

// all yields every key and node, in no order (the worker: no lock). The
// loop body may add and remove nodes.
func (m *nodeMap) all() iter.Seq2[string, *node] {
	return func(yield func(string, *node) bool) {
		for i := range m.shards {
			for k, n := range m.shards[i].m {
				if n.state == REMOVED {
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
func (sh *nodeShard) version(key string, n *node, seq uint64, slab *recSlab) *viewRec {
	live := n.live.Load()
	if live <= seq && n.state != REMOVED {
		r := slab.next()
		setRec(r, n, nil, live, slab)
		return r
	}
	r := n.old
	for live > seq && r != nil && r.pub > seq {
		r = r.prev
	}
	if live <= seq || r == nil || r.gone() {
		return nil
	}
	return r
}

// load returns what a reader at seq sees of key, or nil (readers).
func (m *nodeMap) load(key string, seq uint64) (r *viewRec) {
	sh := m.shard(key)
	sh.mu.RLock()
	if n := sh.m[key]; n != nil {
		r = sh.version(key, n, seq, &recSlab{left: 1})
	}
	sh.mu.RUnlock()
	return r
}

// each calls fn for each value a reader at seq sees until fn returns
// false (readers). A shard's versions are copied out before fn sees them:
// fn may read the map again (taking a shard's lock twice could deadlock).
func (m *nodeMap) each(seq uint64, fn func(key string, r *viewRec) bool) {
	var buf []keyRec
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.RLock()
		buf = buf[:0]
		slab := recSlab{left: len(sh.m)}
		for k, n := range sh.m {
			if r := sh.version(k, n, seq, &slab); r != nil {
				buf = append(buf, keyRec{k, r})
			}
		}
		sh.mu.RUnlock()
		for _, kr := range buf {
			if !fn(kr.key, kr.rec) {
				return
			}
		}
	}
}
