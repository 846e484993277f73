package scheduler

import (
	"iter"
	"slices"
)

type stringSet map[string]struct{}

// nodeSet is a set of nodes: the dependents of a key. Pointers compare
// and hash cheaper than keys, and a node is unlinked before it leaves the
// graph (settle), so a set never holds a node that is gone. Most keys have
// a few dependents (the routes over an interface): those sit in a slice
// (a map of a few entries costs some 200 bytes); a set that grows beyond
// nodeSetFew moves to a map, so that adding and removing stay O(1) for a
// key that thousands of values need.
type nodeSet struct {
	few  []*node            // while small (many is nil)
	many map[*node]struct{} // once large (few is nil)
}

// nodeSetFew is the largest set kept in a slice.
const nodeSetFew = 16

func (s *nodeSet) len() int { return len(s.few) + len(s.many) }

func (s *nodeSet) has(n *node) bool {
	if s.many != nil {
		_, ok := s.many[n]
		return ok
	}
	return slices.Contains(s.few, n)
}

// add adds n, which the set does not hold.
func (s *nodeSet) add(n *node) {
	switch {
	case s.many != nil:
		s.many[n] = struct{}{}
	case s.few == nil:
		s.few = append(make([]*node, 0, 4), n)
	case len(s.few) < nodeSetFew:
		s.few = append(s.few, n)
	default:
		s.many = make(map[*node]struct{}, 2*nodeSetFew)
		for _, m := range s.few {
			s.many[m] = struct{}{}
		}
		s.many[n] = struct{}{}
		s.few = nil
	}
}

// del removes n and reports whether the set held it.
func (s *nodeSet) del(n *node) bool {
	if s.many != nil {
		_, ok := s.many[n]
		delete(s.many, n)
		return ok
	}
	i := slices.Index(s.few, n)
	if i < 0 {
		return false
	}
	s.few = slices.Delete(s.few, i, i+1)
	return true
}

// all yields the nodes of the set, in no order.
func (s *nodeSet) all() iter.Seq[*node] {
	return func(yield func(*node) bool) {
		for _, n := range s.few {
			if !yield(n) {
				return
			}
		}
		for n := range s.many {
			if !yield(n) {
				return
			}
		}
	}
}
