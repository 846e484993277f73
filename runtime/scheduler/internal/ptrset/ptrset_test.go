package ptrset

import (
	"math/rand/v2"
	"testing"
)

// TestSetSmallAndLarge: the set answers the same in a slice and, past
// few, in a map; deleting what it does not hold reports false.
func TestSetSmallAndLarge(t *testing.T) {
	xs := make([]int, 3*few)
	var s Set[int]
	for i := range xs {
		s.Add(&xs[i])
		if s.Len() != i+1 || !has(&s, &xs[i]) || (s.many != nil) != (i+1 > few) {
			t.Fatalf("after %d adds: Len %d, Has %v, Large %v", i+1, s.Len(), has(&s, &xs[i]), (s.many != nil))
		}
	}
	n := 0
	for _, p := range s.AppendTo(nil) {
		if !has(&s, p) {
			t.Fatal("AppendTo gives a pointer the set does not hold")
		}
		n++
	}
	if n != len(xs) {
		t.Fatalf("AppendTo gives %d, want %d", n, len(xs))
	}
	var other int
	if s.Del(&other) || !s.Del(&xs[0]) || has(&s, &xs[0]) || s.Len() != len(xs)-1 {
		t.Fatal("Del")
	}
	var small Set[int]
	small.Add(&xs[0])
	small.Add(&xs[1])
	if small.Del(&other) || !small.Del(&xs[0]) || has(&small, &xs[0]) || !has(&small, &xs[1]) || small.Len() != 1 {
		t.Fatal("Del in a small set")
	}
}

// TestSetAddReportsNew: Add of a pointer the set holds adds nothing and
// reports false, in a slice and in a map; of a new one, true.
func TestSetAddReportsNew(t *testing.T) {
	xs := make([]int, 2*few)
	for _, size := range []int{3, len(xs)} {
		var s Set[int]
		for i := range size {
			if !s.Add(&xs[i]) {
				t.Fatalf("size %d: Add of new pointer %d reported false", size, i)
			}
		}
		for i := range size {
			if s.Add(&xs[i]) {
				t.Fatalf("size %d: Add of held pointer %d reported true", size, i)
			}
		}
		if s.Len() != size {
			t.Fatalf("size %d: Len %d after adding each twice", size, s.Len())
		}
	}
}

// TestSetAsMap runs random adds and deletes on a set and on a map of the
// same pointers and compares them after each step: pointers into one array
// (neighbouring addresses, as the table's hash keeps them) and pointers to
// objects of their own, sets past few that grow and shrink.
func TestSetAsMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, kind := range []string{"array", "objects"} {
		ptrs := make([]*[3]int, 5000)
		if kind == "array" {
			arr := make([][3]int, len(ptrs))
			for i := range ptrs {
				ptrs[i] = &arr[i]
			}
		} else {
			for i := range ptrs {
				ptrs[i] = new([3]int)
			}
		}
		for _, span := range []int{40, 700, len(ptrs)} {
			var s Set[[3]int]
			want := map[*[3]int]bool{}
			for step := range 20 * span {
				p := ptrs[r.IntN(span)]
				if r.IntN(3) > 0 {
					if got := s.Add(p); got == want[p] {
						t.Fatalf("%s, span %d, step %d: Add reported %v with the pointer held: %v", kind, span, step, got, want[p])
					}
					want[p] = true
				} else {
					if got := s.Del(p); got != want[p] {
						t.Fatalf("%s, span %d, step %d: Del reported %v, held: %v", kind, span, step, got, want[p])
					}
					delete(want, p)
				}
				if s.Len() != len(want) {
					t.Fatalf("%s, span %d, step %d: Len %d, want %d", kind, span, step, s.Len(), len(want))
				}
			}
			for _, p := range ptrs[:span] {
				if has(&s, p) != want[p] {
					t.Fatalf("%s, span %d: Has %v, want %v", kind, span, has(&s, p), want[p])
				}
			}
			seen := map[*[3]int]bool{}
			for _, p := range s.AppendTo(nil) {
				if seen[p] || !want[p] {
					t.Fatalf("%s, span %d: AppendTo gives %p twice or not held", kind, span, p)
				}
				seen[p] = true
			}
			if len(seen) != len(want) {
				t.Fatalf("%s, span %d: AppendTo gives %d, want %d", kind, span, len(seen), len(want))
			}
			// Emptied in order, as a transaction deletes what another added.
			for _, p := range ptrs[:span] {
				if s.Del(p) != want[p] {
					t.Fatalf("%s, span %d: Del when emptying", kind, span)
				}
				delete(want, p)
			}
			if s.Len() != 0 {
				t.Fatalf("%s, span %d: Len %d after emptying", kind, span, s.Len())
			}
		}
	}
}

// BenchmarkSetLarge adds a million pointers to objects of 240 bytes (a
// scheduler node's size), allocated one after the other, then deletes
// them in the same order: the dependents of an interface with a million
// routes, set and deleted in one transaction each. Per op: one add and
// one delete.
func BenchmarkSetLarge(b *testing.B) {
	const n = 1 << 20
	objs := make([]*[240]byte, n)
	for i := range objs {
		objs[i] = new([240]byte)
	}
	b.ResetTimer()
	for range b.N / n {
		var s Set[[240]byte]
		for _, p := range objs {
			s.Add(p)
		}
		for _, p := range objs {
			s.Del(p)
		}
	}
}

// has reports whether s holds p, as AppendTo gives it.
func has[T any](s *Set[T], p *T) bool {
	for _, q := range s.AppendTo(nil) {
		if q == p {
			return true
		}
	}
	return false
}
