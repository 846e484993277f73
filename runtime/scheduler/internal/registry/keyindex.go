// Package registry holds what the scheduler derives from its registered
// descriptors: the index that finds the descriptor of a key, and the order
// of their Retrieves.
package registry

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// Index maps keys to descriptors through their key prefixes: at most
// one map lookup per distinct prefix length, never a scan of all
// descriptors. A length is tried only when the key's byte at the end of
// that length is the last byte of a prefix of that length (a '/' most
// often), so that a key usually costs one lookup, however many lengths
// there are.
type Index struct {
	byPrefix map[string][]kv.Descriptor
	lens     []prefixLen // distinct prefix lengths, longest first
}

// prefixLen is a length of prefixes and the set of their last bytes.
type prefixLen struct {
	n    int
	last [4]uint64 // bit b: a prefix of length n ends with byte b
}

// mayEnd reports whether key may have a prefix of length l.n.
func (l *prefixLen) mayEnd(key string) bool {
	if l.n > len(key) {
		return false
	}
	if l.n == 0 {
		return true
	}
	b := key[l.n-1]
	return l.last[b>>6]&(1<<(b&63)) != 0
}

// New returns an empty index.
func New() Index { return Index{byPrefix: map[string][]kv.Descriptor{}} }

// Add adds d to the index.
func (x *Index) Add(d kv.Descriptor) {
	p := d.KeyPrefix()
	x.byPrefix[p] = append(x.byPrefix[p], d)
	i := slices.IndexFunc(x.lens, func(l prefixLen) bool { return l.n == len(p) })
	if i < 0 {
		x.lens = append(x.lens, prefixLen{n: len(p)})
		slices.SortFunc(x.lens, func(a, b prefixLen) int { return b.n - a.n })
		i = slices.IndexFunc(x.lens, func(l prefixLen) bool { return l.n == len(p) })
	}
	if len(p) > 0 {
		b := p[len(p)-1]
		x.lens[i].last[b>>6] |= 1 << (b & 63)
	}
}

// Clone returns a copy that later additions to x leave alone.
func (x *Index) Clone() Index {
	c := Index{byPrefix: make(map[string][]kv.Descriptor, len(x.byPrefix)), lens: slices.Clone(x.lens)}
	for p, ds := range x.byPrefix {
		c.byPrefix[p] = slices.Clone(ds)
	}
	return c
}

// Lookup returns the descriptor whose key space holds key, or nil.
func (x *Index) Lookup(key string) kv.Descriptor {
	for i := range x.lens {
		l := &x.lens[i]
		if !l.mayEnd(key) {
			continue
		}
		for _, d := range x.byPrefix[key[:l.n]] {
			if d.IsKey(key) {
				return d
			}
		}
	}
	return nil
}

// Covers reports whether some descriptor's key space may hold keys under
// prefix (for "could anything ever provide this?" in why-pending).
func (x *Index) Covers(prefix string) bool {
	for p := range x.byPrefix {
		if len(p) <= len(prefix) && prefix[:len(p)] == p || len(p) > len(prefix) && p[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

// Resolve returns the descriptor of a new value's key: the one whose key
// space holds it, or, when none does but a single descriptor has the
// longest prefix of the key, that descriptor as a misfit. A key under a
// model's prefix that its template rejects was almost always built from a
// field out of format (an address 10.0.0.256): its value is INVALID,
// naming the field, rather than UNIMPLEMENTED. With several descriptors at
// that prefix nobody can tell which was meant: nil (UNIMPLEMENTED).
func (x *Index) Resolve(key string) kv.Descriptor {
	if d := x.Lookup(key); d != nil {
		return d
	}
	for i := range x.lens {
		l := &x.lens[i]
		if !l.mayEnd(key) {
			continue
		}
		if ds := x.byPrefix[key[:l.n]]; len(ds) == 1 {
			return &misfit{Descriptor: ds[0]}
		} else if len(ds) > 1 {
			return nil
		}
	}
	return nil
}

// IsMisfit reports whether d is a descriptor given a key outside its key space.
func IsMisfit(d kv.Descriptor) bool {
	_, ok := d.(*misfit)
	return ok
}

// Unwrap returns the descriptor a misfit wraps, or nil when d is none.
func Unwrap(d kv.Descriptor) kv.Descriptor {
	if m, ok := d.(*misfit); ok {
		return m.Descriptor
	}
	return nil
}

// misfit is a descriptor given a key outside its key space: every value is
// INVALID, so nothing of it reaches the southbound.
type misfit struct{ kv.Descriptor }

// Validate names the fields the descriptor's own validation finds wrong
// (the one that spoilt the key, usually), or else the key.
func (m *misfit) Validate(key string, v proto.Message) error {
	if err := m.Descriptor.Validate(key, v); err != nil {
		return err
	}
	why := "is outside the key space of descriptor " + m.Name()
	if t := m.KeyTemplate(); t != nil {
		why = "does not match the key template " + t.String() + " of descriptor " + m.Name()
	}
	return &kv.InvalidValueError{Key: key, Fields: []kv.FieldError{{Field: "(key)", Reason: why}}}
}

func (m *misfit) Dependencies(string, proto.Message) []kv.Dependency { return nil }
func (m *misfit) Derived(string, proto.Message) []kv.Derived         { return nil }

// RetrieveOrder orders the descriptors that can Retrieve so that each comes
// after those named in its RetrieveDependencies (ties by name). A cycle is
// an error naming its members. Names of unregistered descriptors are
// ignored: they may be registered later.
func RetrieveOrder(ds []kv.Descriptor) ([]kv.Descriptor, error) {
	byName := map[string]kv.Descriptor{}
	for _, d := range ds {
		byName[d.Name()] = d
	}
	names := slices.Sorted(maps.Keys(byName))
	const (
		unvisited = iota
		visiting
		done
	)
	mark := map[string]int{}
	var order []kv.Descriptor
	var path []string
	var visit func(name string) error
	visit = func(name string) error {
		switch mark[name] {
		case done:
			return nil
		case visiting:
			i := slices.Index(path, name)
			return fmt.Errorf("RetrieveDependencies form a cycle: %s", strings.Join(append(slices.Clone(path[i:]), name), " -> "))
		}
		mark[name] = visiting
		path = append(path, name)
		deps := slices.Clone(byName[name].RetrieveDependencies())
		slices.Sort(deps)
		for _, dep := range deps {
			if _, ok := byName[dep]; ok {
				if err := visit(dep); err != nil {
					return err
				}
			}
		}
		path = path[:len(path)-1]
		mark[name] = done
		if d := byName[name]; d.CanRetrieve() {
			order = append(order, d)
		}
		return nil
	}
	for _, name := range names {
		if err := visit(name); err != nil {
			return nil, err
		}
	}
	return order, nil
}
