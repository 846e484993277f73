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
