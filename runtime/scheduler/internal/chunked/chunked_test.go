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

// TestGrowingAcrossChunks: entries keep their index while the first chunk
// grows and across chunks; a slice of one chunk holds what was added;
// Reset keeps a first chunk of at most small and drops a larger one.
func TestGrowingAcrossChunks(t *testing.T) {
	var l Growing[int]
	l.Start(10, 64)
	const n = GrowingChunk + 100
	for i := range n {
		if p := l.Add(i); *p != i {
			t.Fatalf("Add %d returned %d", i, *p)
		}
	}
	if l.Len() != n || *l.At(5) != 5 || *l.At(GrowingChunk + 7) != GrowingChunk+7 || !l.StartsChunk(GrowingChunk) || l.StartsChunk(GrowingChunk+1) {
		t.Fatal("Len, At or StartsChunk")
	}
	if s := l.Slice(GrowingChunk+2, GrowingChunk+5); len(s) != 3 || s[0] != GrowingChunk+2 || s[2] != GrowingChunk+4 {
		t.Fatalf("Slice = %v", s)
	}
	l.Reset()
	if l.Len() != 0 || len(l.chunks) != 0 {
		t.Fatalf("after Reset of a large list: Len %d, %d chunks kept", l.Len(), len(l.chunks))
	}
	l.Start(4, 64)
	l.Add(1)
	l.Reset()
	if len(l.chunks) != 1 || cap(l.chunks[0]) != 64 {
		t.Fatalf("after Reset of a small list: %d chunks, want its first kept", len(l.chunks))
	}
}
