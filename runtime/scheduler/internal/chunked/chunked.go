// Package chunked holds an append-only list kept in fixed-size chunks.
package chunked

// chunkSize is the number of entries of one chunk.
const chunkSize = 1024

// List is an append-only list kept in fixed-size chunks, so that growing it
// never copies what it holds, however large a transaction is. Reset keeps
// a few chunks for the next transaction and lets the rest go.
type List[T any] struct {
	list [][]T
	n    int
}

// Push appends x and returns its index.
func (c *List[T]) Push(x T) int {
	i := c.n
	if i/chunkSize == len(c.list) {
		c.list = append(c.list, make([]T, 0, chunkSize))
	}
	ch := &c.list[i/chunkSize]
	*ch = append(*ch, x)
	c.n++
	return i
}

// At returns the entry of index i.
func (c *List[T]) At(i int) *T { return &c.list[i/chunkSize][i%chunkSize] }

// Len returns the number of entries.
func (c *List[T]) Len() int { return c.n }

// Chunks returns the entries, chunk by chunk, in order.
func (c *List[T]) Chunks() [][]T { return c.list }

// Reset empties the list, keeping its first chunks.
func (c *List[T]) Reset() {
	const keep = 2
	for i := range c.list {
		clear(c.list[i])
		c.list[i] = c.list[i][:0]
	}
	if len(c.list) > keep {
		clear(c.list[keep:])
		c.list = c.list[:keep]
	}
	c.n = 0
}

// Growing holds a list in chunks of GrowingChunk entries, so that a list
// that grows large copies nothing and leaves no outgrown arrays to the
// collector; the first chunk grows as a slice up to GrowingChunk. A run of
// entries within one chunk is one slice (see Slice).
type Growing[T any] struct {
	chunks [][]T
	n      int
	// size is the number of entries the list was sized for, small the
	// size of a first chunk that Reset keeps (see Start).
	size, small int
}

// GrowingChunk is the number of entries of a chunk of a Growing list.
const GrowingChunk = 4096

// Start makes the list ready for about size entries; a list whose first
// chunk is at most small keeps it when reset.
func (l *Growing[T]) Start(size, small int) {
	l.small = small
	if l.n > 0 {
		l.Reset()
	}
	l.size = size
	if len(l.chunks) == 0 {
		l.chunks = append(l.chunks, make([]T, 0, min(max(size, small), GrowingChunk)))
	} else if size > cap(l.chunks[0]) {
		l.chunks[0] = make([]T, 0, min(size, GrowingChunk))
	}
}

// Len returns the number of entries.
func (l *Growing[T]) Len() int { return l.n }

// At returns entry i.
func (l *Growing[T]) At(i int) *T { return &l.chunks[i/GrowingChunk][i%GrowingChunk] }

// Add appends c, and returns it.
func (l *Growing[T]) Add(c T) *T {
	k := l.n / GrowingChunk
	if k == len(l.chunks) {
		// Sized for what the list was expected to hold beyond the chunks
		// before, or small when it holds more than expected (it doubles).
		size := l.size - l.n
		if size <= 0 {
			size = l.small
		}
		l.chunks = append(l.chunks, make([]T, 0, min(size, GrowingChunk)))
	}
	ch := &l.chunks[k]
	if len(*ch) == cap(*ch) {
		// The first chunk, started small: it doubles, up to GrowingChunk.
		bigger := make([]T, len(*ch), min(max(2*cap(*ch), 8), GrowingChunk))
		copy(bigger, *ch)
		*ch = bigger
	}
	*ch = append(*ch, c)
	l.n++
	return &(*ch)[len(*ch)-1]
}

// StartsChunk reports whether entry i starts a chunk.
func (l *Growing[T]) StartsChunk(i int) bool { return i%GrowingChunk == 0 }

// Slice returns the entries [i, end), which must be in one chunk.
func (l *Growing[T]) Slice(i, end int) []T {
	o := i % GrowingChunk
	return l.chunks[i/GrowingChunk][o : o+end-i]
}

// Reset empties the list, keeping its first chunk unless it grew beyond
// small.
func (l *Growing[T]) Reset() {
	if len(l.chunks) == 0 {
		return
	}
	first := l.chunks[0]
	clear(l.chunks)
	if cap(first) > l.small {
		l.chunks, l.n = l.chunks[:0], 0
		return
	}
	clear(first)
	l.chunks, l.n = append(l.chunks[:0], first[:0]), 0
}
