package ptrset

import "testing"

// TestSetSmallAndLarge: the set answers the same in a slice and, past
// few, in a map; deleting what it does not hold reports false.
func TestSetSmallAndLarge(t *testing.T) {
	xs := make([]int, 3*few)
	var s Set[int]
	for i := range xs {
		s.Add(&xs[i])
		if s.Len() != i+1 || !s.Has(&xs[i]) || s.Large() != (i+1 > few) {
			t.Fatalf("after %d adds: Len %d, Has %v, Large %v", i+1, s.Len(), s.Has(&xs[i]), s.Large())
		}
	}
	n := 0
	for p := range s.All() {
		if !s.Has(p) {
			t.Fatal("All yields a pointer the set does not hold")
		}
		n++
	}
	if n != len(xs) {
		t.Fatalf("All yields %d, want %d", n, len(xs))
	}
	var other int
	if s.Del(&other) || !s.Del(&xs[0]) || s.Has(&xs[0]) || s.Len() != len(xs)-1 {
		t.Fatal("Del")
	}
	var small Set[int]
	small.Add(&xs[0])
	small.Add(&xs[1])
	if small.Del(&other) || !small.Del(&xs[0]) || small.Has(&xs[0]) || !small.Has(&xs[1]) || small.Len() != 1 {
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
