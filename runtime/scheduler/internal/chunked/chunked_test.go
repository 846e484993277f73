package chunked

import "testing"

// TestListAcrossChunks: entries keep their index across chunk boundaries,
// Chunks lists them in order, and Reset empties the list keeping at most
// two chunks.
func TestListAcrossChunks(t *testing.T) {
	var l List[int]
	const n = 3*chunkSize + 5
	for i := range n {
		if got := l.Push(i * 2); got != i {
			t.Fatalf("Push %d returned %d", i, got)
		}
	}
	if l.Len() != n || *l.At(chunkSize + 1) != 2*(chunkSize+1) || *l.At(n - 1) != 2*(n-1) {
		t.Fatalf("Len %d, At(%d) %d, At(%d) %d", l.Len(), chunkSize+1, *l.At(chunkSize + 1), n-1, *l.At(n - 1))
	}
	i := 0
	for _, ch := range l.Chunks() {
		for _, v := range ch {
			if v != 2*i {
				t.Fatalf("entry %d is %d", i, v)
			}
			i++
		}
	}
	if i != n {
		t.Fatalf("Chunks hold %d entries, want %d", i, n)
	}
	l.Reset()
	if l.Len() != 0 || len(l.Chunks()) > 2 {
		t.Fatalf("after Reset: Len %d, %d chunks", l.Len(), len(l.Chunks()))
	}
	if l.Push(7) != 0 || *l.At(0) != 7 {
		t.Fatal("a push after Reset does not start at 0")
	}
}
