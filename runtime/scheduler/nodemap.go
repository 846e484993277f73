package scheduler

import (
	"iter"
	"sync"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/txnlog"
)

// nodeMap maps each key to its node (the worker's) and, through the
// node's slot, to its published versions (the readers'): one map entry
// per key serves both, so that the read view costs no second index of
// the keys.
//
// The worker is the only writer. It reads without locking and locks one
// shard only to add or remove an entry. Readers see only the versions
// (node.slot, which they read under the shard's lock), never the node's
// fields, and lock one shard at a time, for reading. A key whose value is
// gone keeps its entry, its node REMOVED (a tombstone), for its versions:
// until trim takes the last version out, or the key gets a node again,
// which takes them over. The worker's lookups skip tombstones. Taking a
// node out thus changes no map, and needs no lock.
type nodeMap struct {
	shards [nodeShards]nodeShard
	// n counts the nodes.
	n int
	// slots hands out versions slots a few hundred at a time.
	slots []viewSlot
}

// nodeShards is the number of shards (shardOf keeps the top 6 bits).
const nodeShards = 64

type nodeShard struct {
	mu sync.RWMutex
	// m holds the nodes, and the tombstones of keys with versions and
	// no node (REMOVED nodes, few and briefly).
	m map[string]*node
	// tombs counts the tombstones in m (the worker's).
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

// entry returns the versions of key (nil: none) and its node (nil: none),
// for the worker (no lock).
func (m *nodeMap) entry(key string) (*viewSlot, *node) {
	n := m.shard(key).m[key]
	switch {
	case n == nil:
		return nil, nil
	case n.state == REMOVED:
		return n.slot, nil
	}
	return n.slot, n
}

// len returns the number of nodes.
func (m *nodeMap) len() int { return m.n }

// set makes n the node of key: n takes the key's versions over, if it
// has any (a node put back by a rollback has them already).
func (m *nodeMap) set(key string, n *node) {
	sh := m.shard(key)
	switch old := sh.m[key]; {
	case old == n && n.state == REMOVED:
		// Its own tombstone: back, with its versions, as it is.
		sh.tombs--
		m.n++
		return
	case old == n:
		return
	case old != nil && old.state != REMOVED:
		m.n-- // replaced: add counts n
	}
	m.add(sh, key, n)
}

// add makes n, a new node, the node of key, which has none: set without
// the lookup of what key had while the shard holds no tombstone.
func (m *nodeMap) add(sh *nodeShard, key string, n *node) {
	m.n++
	slot := n.slot
	if sh.tombs > 0 {
		if t := sh.m[key]; t != nil && t.state == REMOVED { // the key's tombstone: n takes its versions
			slot = t.slot
			sh.tombs--
		}
	}
	if slot == nil {
		if len(m.slots) == 0 {
			m.slots = make([]viewSlot, 256)
		}
		slot = &m.slots[0]
		m.slots = m.slots[1:]
	}
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = map[string]*node{}
	}
	n.slot = slot // under the lock, before readers can see n (they read it under theirs)
	sh.m[key] = n
	sh.mu.Unlock()
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

// del takes the node of key out, REMOVED (see graph.current). A node with
// versions stays in the map as the key's tombstone, for them; readers
// read only its slot, which does not change, so nothing is locked.
func (m *nodeMap) del(key string) {
	sh := m.shard(key)
	n := sh.m[key]
	if n == nil || n.state == REMOVED {
		return
	}
	m.n--
	n.state = REMOVED
	if n.slot.head.Load() != nil {
		sh.tombs++
		return
	}
	sh.mu.Lock()
	delete(sh.m, key)
	sh.mu.Unlock()
}

// dropSlot takes out the versions s of key, down to its deletion, unless
// the key has a node again (whose versions go on in s).
func (m *nodeMap) dropSlot(key string, s *viewSlot) {
	sh := m.shard(key)
	if t := sh.m[key]; t == nil || t.state != REMOVED || t.slot != s || s == nil {
		return
	}
	sh.tombs--
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

// load returns the versions of key, or nil (readers).
func (m *nodeMap) load(key string) *viewSlot {
	sh := m.shard(key)
	var s *viewSlot
	sh.mu.RLock()
	if n := sh.m[key]; n != nil {
		s = n.slot // under the lock: set may give a node put back new versions
	}
	sh.mu.RUnlock()
	return s
}

// eachSlot calls fn for each key with versions until it returns false
// (readers). A shard's keys are copied out before fn sees them: fn may
// read the map again (a reader taking a shard's lock twice would deadlock
// with the worker waiting for it).
func (m *nodeMap) eachSlot(fn func(key string, s *viewSlot) bool) {
	var buf []keySlot
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.RLock()
		buf = buf[:0]
		for k, n := range sh.m {
			buf = append(buf, keySlot{k, n.slot})
		}
		sh.mu.RUnlock()
		for _, ks := range buf {
			if !fn(ks.key, ks.slot) {
				return
			}
		}
	}
}

type keySlot struct {
	key  string
	slot *viewSlot
}
