// Package ptrset holds a set of pointers kept in a slice while small.
package ptrset

import (
	"slices"
	"unsafe"
)

// Set is a set of pointers. Most sets are small (the dependents of a key:
// the routes over an interface): those sit in a slice (a map of a few
// entries costs some 200 bytes); a set that grows beyond few moves to a
// table, so that adding and removing stay O(1) for a key that thousands of
// values need. The table is an open-addressing hash set (linear probing,
// at most half full, deletion by shifting back) whose hash keeps the order
// of addresses within each 64 kB of memory: values allocated one after the
// other (the routes of one transaction) sit in neighbouring slots, so that
// adding or removing them in that order walks the table, where a map,
// which scatters them, misses the cache on each of a million pointers.
type Set[T any] struct {
	few   []*T // while small (many is nil)
	many  []*T // once large: the table (nil: an empty slot)
	count int  // in many
}

// few is the largest set kept in a slice.
const few = 16

// Len returns the number of pointers in the set.
func (s *Set[T]) Len() int { return len(s.few) + s.count }

// Add adds n unless the set holds it, and reports whether it did.
func (s *Set[T]) Add(n *T) bool {
	switch {
	case s.many != nil:
		i, ok := s.find(s.many, n)
		if !ok {
			s.many[i], s.count = n, s.count+1
			if 2*s.count > len(s.many) {
				s.rehash(2 * len(s.many))
			}
		}
		return !ok
	case slices.Contains(s.few, n):
		return false
	case s.few == nil:
		s.few = append(make([]*T, 0, 4), n)
	case len(s.few) < few:
		s.few = append(s.few, n)
	default:
		s.few, s.count = append(s.few, n), len(s.few)+1
		s.rehash(4 * few)
		s.few = nil
	}
	return true
}

// rehash moves the set into a table of size slots.
func (s *Set[T]) rehash(size int) {
	t := make([]*T, size)
	for _, list := range [2][]*T{s.few, s.many} {
		for _, n := range list {
			if n != nil {
				i, _ := s.find(t, n)
				t[i] = n
			}
		}
	}
	s.many = t
}

// home is the slot where the probe for n starts in a table of size slots.
func home[T any](n *T, size int) int {
	a := uint64(uintptr(unsafe.Pointer(n)))
	return int(((a>>16)*0x9E3779B97F4A7C15>>20 + a>>4) & uint64(size-1)) // 64 kB blocks scattered
}

// find returns the slot of n in t, or the empty one where it would go.
func (s *Set[T]) find(t []*T, n *T) (int, bool) {
	for i := home(n, len(t)); ; i = (i + 1) & (len(t) - 1) {
		if t[i] == n || t[i] == nil {
			return i, t[i] == n
		}
	}
}

// Del removes n and reports whether the set held it. In the table, the
// entries after it in its run move back into the hole when it is on their
// path (from their home to their slot): no marker of n is left.
func (s *Set[T]) Del(n *T) bool {
	if s.many == nil {
		i := slices.Index(s.few, n)
		if i >= 0 {
			s.few = slices.Delete(s.few, i, i+1)
		}
		return i >= 0
	}
	i, ok := s.find(s.many, n)
	for mask, j := len(s.many)-1, i+1; ok && s.many[j&mask] != nil; j++ {
		if j &= mask; (j-home(s.many[j], len(s.many)))&mask >= (j-i)&mask {
			s.many[i], i = s.many[j], j
		}
	}
	if ok {
		s.many[i], s.count = nil, s.count-1
	}
	return ok
}

// AppendTo appends the pointers of the set to out, in no order.
func (s *Set[T]) AppendTo(out []*T) []*T {
	out = append(out, s.few...)
	for _, n := range s.many {
		if n != nil {
			out = append(out, n)
		}
	}
	return out
}
