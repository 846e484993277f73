//go:build linux

package linux

// nsGroup is the part of a batch that goes to one namespace: its items, in
// the order of the batch, and the position in the batch of each.
type nsGroup[T any] struct {
	n     *namespace
	at    []int
	items []T
}

// groupByNamespace splits the count operations of a batch by namespace, in
// the order of the batch. prep returns the namespace and item of operation
// i, or the error that fails it alone; fail records that error. first, if
// not nil, is the first group, its slices empty: the caller's to reuse.
func groupByNamespace[T any](count int, first *nsGroup[T], prep func(i int) (*namespace, T, error), fail func(i int, err error)) []*nsGroup[T] {
	var groups []*nsGroup[T]
	byNs := map[*namespace]*nsGroup[T]{}
	for i := range count {
		n, item, err := prep(i)
		if err != nil {
			fail(i, err)
			continue
		}
		g := byNs[n]
		switch {
		case g != nil:
		case first != nil && len(groups) == 0:
			g, first.n = first, n
			byNs[n] = g
			groups = append(groups, g)
		default:
			// Mostly the batch's one group: sized for the rest of it.
			g = &nsGroup[T]{n: n, at: make([]int, 0, count-i), items: make([]T, 0, count-i)}
			byNs[n] = g
			groups = append(groups, g)
		}
		g.at = append(g.at, i)
		g.items = append(g.items, item)
	}
	return groups
}
