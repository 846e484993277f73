package graph

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
	undoCover                       // skip key space target again
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
	n *Node
}

// Begin opens the journal.
func (g *Graph) Begin() {
	g.Commit() // empty
	g.Open, g.Began = true, g.Added
	if g.epoch++; g.epoch == 0 {
		// Once every 2^32 journals: no node's epoch may pass for the
		// new one's.
		for _, n := range g.All() {
			n.epoch = 0
		}
		g.epoch = 1
	}
}

// Commit closes the journal, keeping every change.
func (g *Graph) Commit() {
	g.Open = false
	g.journal.Reset()
	g.saved.Reset()
}

// Rollback undoes every change since begin, newest first.
func (g *Graph) Rollback() {
	for i := g.journal.Len() - 1; i >= 0; i-- {
		u := g.journal.At(i)
		switch u.kind {
		case undoNode:
			u.n.NodeFields = *g.saved.At(int(u.saved))
		case undoAddNode:
			g.Nodes.Del(u.n) // REMOVED: out of the graph (see current)
		case undoDelNode:
			// Back in the graph; its fields come back with its snapshot
			// (older in the journal), or it goes again (undoAddNode).
			g.Nodes.Set(u.n.Key, u.n)
			u.n.State = NONEXISTENT
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
			g.ExistingOn = false
		case undoAddExisting:
			g.Existing.Delete(u.target)
			g.ExistingGen++
		case undoDelExisting:
			g.Existing.ReplaceOrInsert(u.target)
			g.ExistingGen++
		case undoAddUnimpl:
			delete(g.Unimplemented, u.target)
		case undoDelUnimpl:
			g.Unimplemented[u.target] = struct{}{}
		case undoCover:
			g.skip = append(g.skip, u.target)
		}
	}
	g.Commit()
}

func (g *Graph) record(u undo) {
	if g.Open {
		g.journal.Push(u)
	}
}

// Touch snapshots n before its first change in the open journal, marks
// it dirty, and freezes what readers see of it until the job's publish
// (see nodeMap.freeze).
func (g *Graph) Touch(n *Node) {
	switch {
	case n.epoch != g.epoch:
		if g.Open {
			g.journal.Push(undo{kind: undoNode, n: n, saved: int32(g.saved.Push(n.NodeFields))})
		}
		n.epoch = g.epoch
	case n.Live.Load() == InFlux:
		return
	}
	g.Nodes.Freeze(n)
	g.Dirty.Push(n)
}
