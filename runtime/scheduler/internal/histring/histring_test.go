package histring

import (
	"testing"
	"time"
)

type entry struct {
	n   int
	end time.Time
}

func (e *entry) Weight() int    { return 1 }
func (e *entry) End() time.Time { return e.end }

// TestRingKeepsByCountAndAge: the ring returns the last Max entries,
// drops those older than MaxAge before the newest, and keeps nothing
// when Max is 0.
func TestRingKeepsByCountAndAge(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var r Ring[*entry]
	r.Max = 3
	var live []*entry
	for i := range 10 {
		live = r.Add(&entry{n: i, end: t0.Add(time.Duration(i) * time.Second)})
	}
	if len(live) != 3 || live[0].n != 7 || live[2].n != 9 {
		t.Fatalf("count: live = %v, want entries 7 to 9", ns(live))
	}
	aged := Ring[*entry]{Max: 100, MaxAge: 2500 * time.Millisecond}
	for i := range 10 {
		live = aged.Add(&entry{n: i, end: t0.Add(time.Duration(i) * time.Second)})
	}
	if len(live) != 3 || live[0].n != 7 {
		t.Fatalf("age: live = %v, want entries 7 to 9", ns(live))
	}
	off := Ring[*entry]{}
	if live := off.Add(&entry{end: t0}); live != nil {
		t.Fatalf("Max 0: live = %v, want none", ns(live))
	}
}

// TestRingNeverWritesWhatReadersHold: a slice Add returned stays as it was
// while the ring goes on (appends go beyond its length; compaction copies).
func TestRingNeverWritesWhatReadersHold(t *testing.T) {
	r := Ring[*entry]{Max: 4}
	r.Add(&entry{n: 0})
	held := r.Add(&entry{n: 1})
	want := ns(held)
	for i := 2; i < 200; i++ {
		r.Add(&entry{n: i})
	}
	if got := ns(held); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("held slice changed: %v, want %v", got, want)
	}
}

func ns(es []*entry) []int {
	var out []int
	for _, e := range es {
		out = append(out, e.n)
	}
	return out
}
