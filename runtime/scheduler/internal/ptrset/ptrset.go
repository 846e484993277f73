// Package ptrset holds a set of pointers kept in a slice while small.
package ptrset

import (
	"iter"
	"slices"
)

// Set is a set of pointers. Most sets are small (the dependents of a key:
// the routes over an interface): those sit in a slice (a map of a few
// entries costs some 200 bytes); a set that grows beyond few moves to a
// map, so that adding and removing stay O(1) for a key that thousands of
// values need.
type Set[T any] struct {
	few  []*T            // while small (many is nil)
	many map[*T]struct{} // once large (few is nil)
}

// few is the largest set kept in a slice.
const few = 16

// Len returns the number of pointers in the set.
func (s *Set[T]) Len() int { return len(s.few) + len(s.many) }

// Has reports whether the set holds n.
func (s *Set[T]) Has(n *T) bool {
	if s.many != nil {
		_, ok := s.many[n]
		return ok
	}
	return slices.Contains(s.few, n)
}

// Add adds n unless the set holds it, and reports whether it did. A
// large set looks n up once: a set of a million values (the routes over
// one interface) misses the cache on each look-up.
func (s *Set[T]) Add(n *T) bool {
	switch {
	case s.many != nil:
		l := len(s.many)
		s.many[n] = struct{}{}
		return len(s.many) > l
	case slices.Contains(s.few, n):
		return false
	case s.few == nil:
		s.few = append(make([]*T, 0, 4), n)
	case len(s.few) < few:
		s.few = append(s.few, n)
	default:
		s.many = make(map[*T]struct{}, 2*few)
		for _, m := range s.few {
			s.many[m] = struct{}{}
		}
		s.many[n] = struct{}{}
		s.few = nil
	}
	return true
}

// Del removes n and reports whether the set held it.
func (s *Set[T]) Del(n *T) bool {
	if s.many != nil {
		l := len(s.many)
		delete(s.many, n)
		return len(s.many) < l
	}
	i := slices.Index(s.few, n)
	if i < 0 {
		return false
	}
	s.few = slices.Delete(s.few, i, i+1)
	return true
}

// All yields the pointers of the set, in no order.
func (s *Set[T]) All() iter.Seq[*T] {
	return func(yield func(*T) bool) {
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

// Large reports whether the set has moved to a map.
func (s *Set[T]) Large() bool { return s.many != nil }
