package scheduler

import (
	"slices"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// keyIndex maps keys to descriptors through their key prefixes: one map
// lookup per distinct prefix length, never a scan of all descriptors.
type keyIndex struct {
	byPrefix map[string][]kv.Descriptor
	lens     []int // distinct prefix lengths, longest first
}

func newKeyIndex() keyIndex { return keyIndex{byPrefix: map[string][]kv.Descriptor{}} }

func (x *keyIndex) add(d kv.Descriptor) {
	p := d.KeyPrefix()
	x.byPrefix[p] = append(x.byPrefix[p], d)
	if !slices.Contains(x.lens, len(p)) {
		x.lens = append(x.lens, len(p))
		slices.SortFunc(x.lens, func(a, b int) int { return b - a })
	}
}

// lookup returns the descriptor whose key space holds key, or nil.
func (x *keyIndex) lookup(key string) kv.Descriptor {
	for _, l := range x.lens {
		if l > len(key) {
			continue
		}
		for _, d := range x.byPrefix[key[:l]] {
			if d.IsKey(key) {
				return d
			}
		}
	}
	return nil
}

// covers reports whether some descriptor's key space may hold keys under
// prefix (for "could anything ever provide this?" in why-pending).
func (x *keyIndex) covers(prefix string) bool {
	for p := range x.byPrefix {
		if len(p) <= len(prefix) && prefix[:len(p)] == p || len(p) > len(prefix) && p[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}
