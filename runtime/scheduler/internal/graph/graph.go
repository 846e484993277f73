package graph

import (
	"iter"
	"math"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/google/btree"
	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/chunked"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/ptrset"
)

// Node is the scheduler's record of one key: its fields, which the
// worker alone reads and writes, and the key's published versions, which
// readers reach through the key map (see nodeMap).
type Node struct {
	NodeFields
	// Live is the transaction from which readers see the node's fields
	// (see view), inFlux while the worker changes them (set under the
	// shard's lock; readers read the node under theirs). The journal
	// leaves it alone.
	Live atomic.Uint64
	Old  *ViewRec // the saved versions readers may need, newest first (nodeMap.freeze)
	Tomb bool     // REMOVED, still its key's in the map (a tombstone; see nodeMap.del)
	// doomMark: the node is in its run's doomed (removal.doomAll) when it is graph.dooms.
	DoomMark uint32
}

// NodeFields are the worker's fields of a node. Slices held by a node are
// never mutated in place, only replaced, so that a struct copy is a
// complete snapshot for the journal.
type NodeFields struct {
	Key  string
	Desc kv.Descriptor // nil: UNIMPLEMENTED
	// Intent is the intended value: from the NB, or from the base value for
	// a derived node. nil when nothing is intended.
	Intent proto.Message
	// IntentSeq is the transaction that last set intent (retries of older
	// intents are dropped).
	IntentSeq uint64
	// Deps are the dependencies of intent (nil while invalid); adeps those
	// of applied, held in ad (nil: none; &sameAsDeps: deps, the usual
	// case). The graph indexes both: the first decide when the value can
	// be applied, the second what must stay until it is gone.
	Deps []kv.Dependency
	ad   *[]kv.Dependency
	// Base is the key of the base value of a derived node.
	Base string
	// Applied is what the southbound holds, as far as we know; nil when the
	// value does not exist there.
	Applied  proto.Message
	Metadata any
	// Derived are the keys of the values derived from applied.
	Derived []string
	// Rare holds what few nodes have (nil: none of it); replaced, never
	// modified, when it changes.
	Rare *nodeRare
	// Removing is set while the node is being deleted, so that dependents
	// see the dependency as gone and are deleted first.
	Removing bool
	// Origin of applied: OriginNB (ours) or OriginSB (obtained). (The
	// small fields sit together: the node is 240 bytes, a size class.)
	Origin kv.Origin
	State  State
	LastOp OpKind
	// Retries counts retries of the current intent.
	Retries int32
	// OpSeq is the last transaction that recorded an operation on the
	// node, callSeq the last whose plan made a call on it, and failedSeq
	// the last whose operation on it failed, as txn32 numbers: only ever
	// compared with the current transaction's.
	OpSeq, CallSeq, FailedSeq uint32
	// epoch is the journal epoch of the last snapshot (see begin).
	epoch uint32
	Seq   uint64 // last transaction that changed the node
}

// Txn32 is the short number of transaction seq that nodes keep in opSeq
// and callSeq: never 0 (a new node's marks), and back to 1 after
// 2^32-1 transactions, when the scheduler clears every node's marks
// (clearMarks) so that no old mark passes for the current transaction's.
func Txn32(seq uint64) uint32 { return uint32(seq%math.MaxUint32) + 1 }

// ClearMarks clears the opSeq, callSeq and failedSeq marks of every node.
func (g *Graph) ClearMarks() {
	for _, n := range g.All() {
		n.OpSeq, n.CallSeq, n.FailedSeq = 0, 0, 0
	}
}

// nodeRare is what few nodes have: invalid is the validation error of
// the intent; claimants are the keys of values that derive this key too,
// refused while this value holds it (a configuration conflict); lastErr
// is the error of the value's last operation or read-back.
type nodeRare struct {
	invalid, lastErr error
	Claimants        []string
}

// ClaimantKeys returns the keys of n's claimants, InvalidErr the
// validation error of its intent, LastErr the error of its last
// operation (nil: none).
func (n *NodeFields) ClaimantKeys() []string { return n.rareOr().Claimants }

func (n *NodeFields) InvalidErr() error { return n.rareOr().invalid }

func (n *NodeFields) LastErr() error { return n.rareOr().lastErr }

func (n *NodeFields) rareOr() *nodeRare {
	if n.Rare == nil {
		return &noRare
	}
	return n.Rare
}

var noRare nodeRare

// SetRare sets n's invalid error and claimants, SetLastErr its last
// error (a new nodeRare: the journal's snapshots share the old one).
func (n *Node) SetRare(invalid error, claimants []string) {
	n.putRare(nodeRare{invalid, n.LastErr(), claimants})
}

func (n *Node) SetLastErr(err error) {
	if err != nil || n.Rare != nil { // nil on a node without rare fields: nothing to do
		n.putRare(nodeRare{n.InvalidErr(), err, n.ClaimantKeys()})
	}
}

func (n *Node) putRare(r nodeRare) {
	if o := n.rareOr(); SameValue(o.invalid, r.invalid) && SameValue(o.lastErr, r.lastErr) && sameKeys(o.Claimants, r.Claimants) {
		return // unchanged
	}
	if n.Rare = nil; r.invalid != nil || r.lastErr != nil || len(r.Claimants) > 0 {
		n.Rare = new(nodeRare) // not &r: r would be on the heap at every call
		*n.Rare = r
	}
}

func (n *Node) Exists() bool { return n.Applied != nil && !n.Removing }

// Label returns the node's label, or the key for UNIMPLEMENTED values.
func (n *Node) Label() string {
	if n.Desc == nil {
		return n.Key
	}
	return n.Desc.Label(n.Key)
}

// Graph holds the nodes and the indexes that resolve dependencies. All its
// mutations go through methods that record an undo entry while a journal is
// open, so a simulated or reverted transaction can be rolled back at a cost
// proportional to what it touched.
type Graph struct {
	// Nodes maps keys to nodes, and to their published versions (see
	// nodeMap).
	Nodes NodeMap
	// dependents: key -> the nodes with a plain dependency on it.
	dependents map[string]nodeSet
	// anyOf: prefix -> the nodes with an AnyOf dependency on it.
	anyOf map[string]nodeSet
	// anyOfLens counts AnyOf prefixes per length, to find the prefixes of a
	// key with one map lookup per distinct length.
	anyOfLens []lenCount
	// Existing orders the keys of existing values, for AnyOf scans. It is
	// kept from the first AnyOf dependency on (existingOn): a graph without
	// any pays nothing for it.
	Existing   *btree.BTreeG[string]
	ExistingOn bool
	// KeySpaces are the key prefixes of the registered descriptors; skip,
	// those that no AnyOf prefix linked or looked up since the index
	// started reaches (neither is a prefix of the other): existing leaves
	// their keys out (routes, under AnyOf prefixes of interface addresses).
	KeySpaces, skip []string
	// Unimplemented holds the keys without a descriptor.
	Unimplemented stringSet
	// Unsure maps the keys of values whose outcome is unknown to the
	// version the southbound may hold (see unsure.go). Not journaled: a
	// simulation's calls do not fail.
	Unsure map[string]proto.Message

	// ExistingGen counts the changes of existing, so that the view
	// clones it again only after a change.
	ExistingGen uint64
	// Added counts the nodes added (see current), began what it was when
	// the journal opened.
	Added, Began uint64

	journal chunked.List[undo]
	saved   chunked.List[NodeFields]
	epoch   uint32
	Dooms   uint32 // the mark of the newest doomed set (see removal.newDoomed)
	Open    bool
	// Dirty lists the nodes changed, added or removed since
	// the last publish (see jobs.publish), journal open or not; a key
	// may be listed more than once.
	Dirty chunked.List[*Node]
}

func NewGraph() *Graph {
	return &Graph{
		dependents:    map[string]nodeSet{},
		anyOf:         map[string]nodeSet{},
		Existing:      btree.NewG[string](32, func(a, b string) bool { return a < b }),
		Unimplemented: stringSet{},
	}
}

// Reserve makes room for a transaction of n keys: its new nodes, and
// the values they derive (a quarter more).
func (g *Graph) Reserve(n int) { g.Nodes.reserve(n + n/4) }

// Node returns the node of key, or nil.
func (g *Graph) Node(key string) *Node { return g.Nodes.Get(key) }

// All yields every key and its node, in no order.
func (g *Graph) All() iter.Seq2[string, *Node] { return g.Nodes.All() }

// AddNode adds n, a new node of a key that has none (every caller has
// just looked the key up).
func (g *Graph) AddNode(n *Node) {
	n.epoch = g.epoch // a new node needs no snapshot
	g.Added++
	g.Nodes.Add(g.Nodes.Shard(n.Key), n.Key, n)
	g.Dirty.Push(n)
	g.record(undo{kind: undoAddNode, n: n})
}

func (g *Graph) DelNode(n *Node) {
	g.Nodes.Del(n)
	g.Dirty.Push(n)
	g.record(undo{kind: undoDelNode, n: n})
}

func (g *Graph) setAdd(m map[string]nodeSet, target string, n *Node) bool {
	set := m[target]
	if !set.Add(n) {
		return false
	}
	m[target] = set
	return true
}

func (g *Graph) setDel(m map[string]nodeSet, target string, n *Node) bool {
	set := m[target]
	if !set.Del(n) {
		return false
	}
	if set.Len() == 0 {
		delete(m, target)
	} else {
		m[target] = set
	}
	return true
}

// lenCount counts the AnyOf edges whose prefix has length len. There are
// few distinct lengths, so a slice scanned in order beats a map.
type lenCount struct{ len, n int }

func (g *Graph) anyOfLen(l, delta int) {
	for i := range g.anyOfLens {
		if c := &g.anyOfLens[i]; c.len == l {
			if c.n += delta; c.n <= 0 {
				g.anyOfLens = slices.Delete(g.anyOfLens, i, i+1)
			}
			return
		}
	}
	if delta > 0 {
		g.anyOfLens = append(g.anyOfLens, lenCount{len: l, n: delta})
	}
}

// Adeps returns the dependencies of n's applied value.
func (n *Node) Adeps() []kv.Dependency {
	if n.ad == &sameAsDeps {
		return n.Deps
	} else if n.ad != nil {
		return *n.ad
	}
	return nil
}

var sameAsDeps []kv.Dependency

// SetDeps sets the dependencies of n's intent and of its applied value,
// and indexes the union of their edges.
func (g *Graph) SetDeps(n *Node, deps, adeps []kv.Dependency) {
	// A version listing the same keys keeps the node's lists: nothing to re-index.
	deps, adeps = keepEqual(deps, n.Deps), keepEqual(adeps, n.Adeps())
	if sameDeps(n.Deps, deps) && sameDeps(n.Adeps(), adeps) {
		return
	}
	g.Touch(n)
	oldDeps, oldADeps := n.Deps, n.Adeps()
	switch n.Deps = deps; {
	case len(adeps) == 0:
		n.ad = nil
	case sameDeps(adeps, deps):
		n.ad = &sameAsDeps
	default:
		n.ad = &[]kv.Dependency{}
		*n.ad = adeps
	}
	// A list that is one of the new lists keeps all its edges, and a list
	// that is the other list of the pair adds none (the common case: a
	// value applied as intended has deps and adeps the same slice).
	for _, list := range [2][]kv.Dependency{oldDeps, oldADeps} {
		if len(list) == 0 || sameDeps(list, deps) || sameDeps(list, adeps) {
			continue
		}
		for i := range list {
			g.unlinkUnlessIn(n, &list[i], deps, adeps)
		}
	}
	for j, list := range [2][]kv.Dependency{deps, adeps} {
		if len(list) == 0 || (j == 1 && sameDeps(list, deps)) || sameDeps(list, oldDeps) || sameDeps(list, oldADeps) {
			continue
		}
		for i := range list {
			g.link(n, &list[i])
		}
	}
}

// keepEqual returns old for a list of the same plain dependencies as new
// (labels and keys: an AnyOf's predicate cannot be compared), else new.
func keepEqual(new, old []kv.Dependency) []kv.Dependency {
	if len(new) != len(old) || sameDeps(new, old) {
		return new
	}
	for i := range new {
		if new[i].IsAnyOf() || new[i].Key != old[i].Key || new[i].Label != old[i].Label {
			return new
		}
	}
	return old
}

// sameDeps reports whether a and b are the same slice.
func sameDeps(a, b []kv.Dependency) bool { return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) }

func (g *Graph) link(n *Node, d *kv.Dependency) {
	if !d.IsAnyOf() {
		if g.setAdd(g.dependents, d.Key, n) {
			g.record(undo{kind: undoAddDep, n: n, target: d.Key})
		}
		return
	}
	g.keepExisting()
	g.Cover(&d.AnyOf)
	for _, p := range d.AnyOf.Prefixes {
		if g.setAdd(g.anyOf, p, n) {
			g.anyOfLen(len(p), +1)
			g.record(undo{kind: undoAddAnyOf, n: n, target: p})
		}
	}
}

// keepExisting starts keeping the index of existing keys, filled from the
// graph once (journaled, like every change, so a rolled-back simulation
// leaves it as it was).
func (g *Graph) keepExisting() {
	if g.ExistingOn {
		return
	}
	g.ExistingOn = true
	g.record(undo{kind: undoExistingOn})
	g.skip = append(g.skip[:0], g.KeySpaces...)
	g.fillExisting("")
}

// fillExisting indexes the existing keys under prefix.
func (g *Graph) fillExisting(prefix string) {
	for key, n := range g.All() {
		if n.Exists() && strings.HasPrefix(key, prefix) {
			g.SetExisting(key, true)
		}
	}
}

// Cover indexes the key spaces that the prefixes of a reach (once each:
// a scan of the graph), so that a look-up of a finds every key.
func (g *Graph) Cover(a *kv.AnyOf) {
	for i := 0; g.ExistingOn && i < len(g.skip); i++ {
		if space := g.skip[i]; slices.ContainsFunc(a.Prefixes, func(p string) bool {
			return strings.HasPrefix(p, space) || strings.HasPrefix(space, p)
		}) {
			g.skip = slices.Delete(g.skip, i, i+1)
			i--
			g.record(undo{kind: undoCover, target: space})
			g.fillExisting(space)
		}
	}
}

// unlinkUnlessIn removes the edges of d that no dependency in the lists has.
func (g *Graph) unlinkUnlessIn(n *Node, d *kv.Dependency, lists ...[]kv.Dependency) {
	has := func(plain bool, target string) bool {
		for _, l := range lists {
			for i := range l {
				if plain && !l[i].IsAnyOf() && l[i].Key == target {
					return true
				}
				if !plain && l[i].IsAnyOf() {
					for _, p := range l[i].AnyOf.Prefixes {
						if p == target {
							return true
						}
					}
				}
			}
		}
		return false
	}
	if !d.IsAnyOf() {
		if !has(true, d.Key) && g.setDel(g.dependents, d.Key, n) {
			g.record(undo{kind: undoDelDep, n: n, target: d.Key})
		}
		return
	}
	for _, p := range d.AnyOf.Prefixes {
		if !has(false, p) && g.setDel(g.anyOf, p, n) {
			g.anyOfLen(len(p), -1)
			g.record(undo{kind: undoDelAnyOf, n: n, target: p})
		}
	}
}

func (g *Graph) SetExisting(key string, exists bool) {
	if !g.ExistingOn || slices.ContainsFunc(g.skip, func(space string) bool { return strings.HasPrefix(key, space) }) {
		return
	}
	if exists {
		if _, had := g.Existing.ReplaceOrInsert(key); !had {
			g.ExistingGen++
			g.record(undo{kind: undoAddExisting, target: key})
		}
		return
	}
	if _, had := g.Existing.Delete(key); had {
		g.ExistingGen++
		g.record(undo{kind: undoDelExisting, target: key})
	}
}

func (g *Graph) SetUnimplemented(key string, on bool) {
	_, had := g.Unimplemented[key]
	switch {
	case on && !had:
		g.Unimplemented[key] = struct{}{}
		g.record(undo{kind: undoAddUnimpl, target: key})
	case !on && had:
		delete(g.Unimplemented, key)
		g.record(undo{kind: undoDelUnimpl, target: key})
	}
}

// DependentNodes appends to buf[:0] the nodes that depend on key, plainly
// or through an AnyOf prefix of key (whether or not its predicate accepts
// key; callers re-check), in the order of their keys when sorted (else in
// no order, for a caller whose result does not depend on it). A caller
// passes an array of its own frame, so that most calls allocate nothing.
// The caller checks each with Current before using it, when what it does
// in between may take nodes out of the graph.
func (g *Graph) DependentNodes(buf []*Node, key string, sorted bool) []*Node {
	plain := g.dependents[key]
	out := plain.AppendTo(buf[:0])
	for _, c := range g.anyOfLens {
		if c.len <= len(key) {
			set := g.anyOf[key[:c.len]]
			out = set.AppendTo(out)
		}
	}
	if len(out) > 1 && (sorted || len(g.anyOfLens) > 0) { // AnyOf sets may repeat a node
		slices.SortFunc(out, func(a, b *Node) int { return strings.Compare(a.Key, b.Key) })
		out = slices.CompactFunc(out, func(a, b *Node) bool { return a == b })
	}
	return out
}

// Current returns the graph's node of key, given n, what a lookup of key
// returned earlier in the run when the graph's count of added nodes was
// added (n nil: none then). n, while it is in the graph (a node taken
// out is REMOVED; see settleState), and nil, while no node was added
// since, are the answer without a lookup.
func (g *Graph) Current(key string, n *Node, added uint64) *Node {
	switch {
	case n != nil && n.State != REMOVED:
		return n
	case n == nil && g.Added == added:
		return nil
	}
	return g.Node(key)
}

// DependentsOf is the keys of DependentNodes.
func (g *Graph) DependentsOf(key string) []string {
	var out []string
	for _, n := range g.DependentNodes(nil, key, true) {
		out = append(out, n.Key)
	}
	return out
}

// AnyOfSatisfied returns an existing key that satisfies the AnyOf
// dependency, or "", with the keys of except taken as absent. Values
// being removed are not in the index.
func (g *Graph) AnyOfSatisfied(a *kv.AnyOf, except map[string]bool) string {
	g.Cover(a)
	return AnyOfInExcept(g.Existing, a, except)
}

// AnyOfInExcept returns a key of the ordered set existing that satisfies
// the AnyOf dependency, or "", with the keys of except taken as absent.
func AnyOfInExcept(existing *btree.BTreeG[string], a *kv.AnyOf, except map[string]bool) (found string) {
	for _, p := range a.Prefixes {
		existing.AscendGreaterOrEqual(p, func(k string) bool {
			if !strings.HasPrefix(k, p) {
				return false
			}
			if !except[k] && (a.Match == nil || a.Match(k)) {
				found = k
				return false
			}
			return true
		})
		if found != "" {
			return found
		}
	}
	return ""
}

type stringSet map[string]struct{}

// nodeSet is a set of nodes: the dependents of a key. Pointers compare
// and hash cheaper than keys, and a node is unlinked before it leaves the
// graph (settle), so a set never holds a node that is gone.
type nodeSet = ptrset.Set[Node]
