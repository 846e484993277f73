package scheduler

type undoKind uint8

const (
	undoNode        undoKind = iota // restore *n = saved
	undoAddNode                     // delete nodes[key]
	undoDelNode                     // nodes[key] = n
	undoAddDep                      // remove dependents[target][n]
	undoDelDep                      // add dependents[target][n]
	undoAddAnyOf                    // remove anyOf[target][n]
	undoDelAnyOf                    // add anyOf[target][n]
	undoExistingOn                  // existingOn = false
	undoAddExisting                 // existing.Delete(key)
	undoDelExisting                 // existing.ReplaceOrInsert(key)
	undoAddUnimpl                   // delete unimplemented[key]
	undoDelUnimpl                   // unimplemented[key]
)

// undo is one journal entry (32 bytes: a large transaction journals a
// few per value). Node snapshots live in graph.saved, so that the entries
// of index changes stay small.
type undo struct {
	kind undoKind
	// saved is the index of the snapshot in graph.saved (undoNode).
	saved int32
	// target is the key of the index entry (dependents, anyOf), or the
	// key of the change (existing, unimplemented).
	target string
	// n is the node changed, added, removed or linked.
	n *node
}

// begin opens the journal.
func (g *graph) begin() {
	g.commit() // empty
	g.open, g.began = true, g.added
	if g.epoch++; g.epoch == 0 {
		// Once every 2^32 journals: no node's epoch may pass for the
		// new one's.
		for _, n := range g.all() {
			n.epoch = 0
		}
		g.epoch = 1
	}
}

// commit closes the journal, keeping every change.
func (g *graph) commit() {
	g.open = false
	g.journal.Reset()
	g.saved.Reset()
}

// rollback undoes every change since begin, newest first, and calls
// restored for each node whose fields were restored or that was removed
// again (restored with nil when the node no longer exists).
func (g *graph) rollback(restored func(key string, n *node)) {
	if restored == nil {
		restored = func(string, *node) {}
	}
	for i := g.journal.Len() - 1; i >= 0; i-- {
		u := g.journal.At(i)
		switch u.kind {
		case undoNode:
			u.n.nodeFields = *g.saved.At(int(u.saved))
			restored(u.n.key, u.n)
		case undoAddNode:
			g.nodes.del(u.n.key) // REMOVED: out of the graph (see current)
			restored(u.n.key, nil)
		case undoDelNode:
			// Back in the graph; its fields come back with its snapshot
			// (older in the journal), or it goes again (undoAddNode).
			g.nodes.set(u.n.key, u.n)
			u.n.state = NONEXISTENT
			restored(u.n.key, u.n)
		case undoAddDep:
			g.setDel(g.dependents, u.target, u.n)
		case undoDelDep:
			g.setAdd(g.dependents, u.target, u.n)
		case undoAddAnyOf:
			g.setDel(g.anyOf, u.target, u.n)
			g.anyOfLen(len(u.target), -1)
		case undoDelAnyOf:
			g.setAdd(g.anyOf, u.target, u.n)
			g.anyOfLen(len(u.target), +1)
		case undoExistingOn:
			g.existingOn = false
		case undoAddExisting:
			g.existing.Delete(u.target)
			g.existingGen++
		case undoDelExisting:
			g.existing.ReplaceOrInsert(u.target)
			g.existingGen++
		case undoAddUnimpl:
			delete(g.unimplemented, u.target)
		case undoDelUnimpl:
			g.unimplemented[u.target] = struct{}{}
		}
	}
	g.commit()
}

func (g *graph) record(u undo) {
	if g.open {
		g.journal.Push(u)
	}
}

// touch snapshots n before its first change in the open journal, marks
// it dirty, and freezes what readers see of it until the job's publish
// (see nodeMap.freeze).
func (g *graph) touch(n *node) {
	switch {
	case n.epoch != g.epoch:
		if g.open {
			g.journal.Push(undo{kind: undoNode, n: n, saved: int32(g.saved.Push(n.nodeFields))})
		}
		n.epoch = g.epoch
	case n.live.Load() == inFlux:
		return
	}
	g.nodes.freeze(n)
	g.dirty.Push(n)
}
