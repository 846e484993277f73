// Package grouping tells whether the calls of a plan are independent of
// each other, so that they may go in one batch or run concurrently.
package grouping

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// firstCall is what tells whether a call is independent of others, kept
// for the first call of a group until a second one comes.
type firstCall struct {
	key, base   string
	deps, adeps []kv.Dependency
}

// Group holds the keys of the group being formed, to tell whether one
// more call is independent of its calls. Groups are mostly small (the
// routes of one interface): the keys are kept in slices, looked through,
// and put in maps only when a group beyond groupScan is looked up (most
// large groups never are: see join).
type Group struct {
	// keys are the group's keys; needed the keys of the descriptor that
	// its values depend on (and their bases); anyOf the AnyOf
	// dependencies of its values that a key of the descriptor may
	// satisfy.
	keys, needed keyList
	anyOf        []kv.AnyOf
	// prefix is the key prefix of the group's descriptor, which each of
	// its keys has: a dependency on a key without it (a route's on its
	// interface), or an AnyOf dependency none of whose prefixes overlaps
	// it, is met by no call of the group, and is not looked at again.
	prefix string
	// first is the call that starts the group being formed.
	first firstCall
}

// groupScan is the size up to which a group's keys are looked through
// rather than hashed.
const groupScan = 16

// Start makes the call on key (its value's base, the dependencies of its
// value and of the applied one) the first of a group: it is looked at
// only when a second call comes (see Open).
func (g *Group) Start(key, base string, deps, adeps []kv.Dependency) {
	g.first = firstCall{key, base, deps, adeps}
}

// Open starts forming a group of calls of the descriptor of key prefix
// prefix, with the first call given to Start.
func (g *Group) Open(prefix string) {
	g.reset(prefix)
	g.add(g.first.key, g.first.base, g.first.deps, g.first.adeps)
}

func (g *Group) reset(prefix string) {
	g.keys.reset()
	g.needed.reset()
	clear(g.anyOf)
	g.anyOf = g.anyOf[:0]
	g.prefix = prefix
}

// keyList is a list of keys, looked through while short and put in a map
// (the keys added since the last look-up) once longer.
type keyList struct {
	list []string
	set  map[string]struct{}
	// hashed counts the keys of list in set.
	hashed int
}

func (l *keyList) add(k string) { l.list = append(l.list, k) }

func (l *keyList) reset() {
	clear(l.list)
	l.list = l.list[:0]
	if l.hashed > 0 {
		clear(l.set)
		l.hashed = 0
	}
}

func (l *keyList) has(k string) bool {
	if len(l.list) <= groupScan {
		return slices.Contains(l.list, k)
	}
	if l.set == nil {
		l.set = map[string]struct{}{}
	}
	for _, key := range l.list[l.hashed:] {
		l.set[key] = struct{}{}
	}
	l.hashed = len(l.list)
	_, ok := l.set[k]
	return ok
}

// overlaps reports whether a key of the group's descriptor may have one
// of prefixes.
func (g *Group) overlaps(prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(p, g.prefix) || strings.HasPrefix(g.prefix, p) {
			return true
		}
	}
	return false
}

// mine reports whether key may be a key of the group's descriptor.
func (g *Group) mine(key string) bool { return strings.HasPrefix(key, g.prefix) }

// add adds the call on key (its value's base, the dependencies of its
// value and of the applied one) to the group.
func (g *Group) add(key, base string, deps, adeps []kv.Dependency) {
	g.keys.add(key)
	if base != "" && g.mine(base) {
		g.needed.add(base)
	}
	g.addDeps(deps)
	g.addDeps(adeps)
}

// addDeps adds the dependencies deps of a call of the group. A key needed
// by the call before is listed once.
func (g *Group) addDeps(deps []kv.Dependency) {
	for i := range deps {
		d := &deps[i]
		switch {
		case !d.IsAnyOf():
			if !g.mine(d.Key) {
				continue
			}
			if n := len(g.needed.list); n == 0 || g.needed.list[n-1] != d.Key {
				g.needed.add(d.Key)
			}
		case g.overlaps(d.AnyOf.Prefixes):
			g.anyOf = append(g.anyOf, d.AnyOf)
		}
	}
}

// Join adds the call on key (base, deps and adeps as for add) to the group
// when it depends on no call of the group, and no call of the group on it
// (a delete's order is the reverse of its dependencies', so both
// directions count); it reports whether it did. One pass over the
// dependencies decides, in the usual case of a call none of whose
// dependencies a key of the group's descriptor may meet.
func (g *Group) Join(key, base string, deps, adeps []kv.Dependency, first bool) bool {
	if !first && g.keys.has(key) || g.needed.has(key) {
		// A second call on a value (only a value called before in the
		// transaction may be in the group), or one the group needs.
		return false
	}
	for _, a := range g.anyOf {
		if hasAnyPrefix(key, a.Prefixes) {
			return false
		}
	}
	own := base != "" && g.mine(base)
	if own && g.keys.has(base) {
		return false
	}
	for _, list := range [2][]kv.Dependency{deps, adeps} {
		for i := range list {
			d := &list[i]
			if !d.IsAnyOf() {
				if g.mine(d.Key) {
					if g.keys.has(d.Key) {
						return false
					}
					own = true
				}
				continue
			}
			if !g.overlaps(d.AnyOf.Prefixes) {
				continue
			}
			for _, k := range g.keys.list {
				if hasAnyPrefix(k, d.AnyOf.Prefixes) {
					return false
				}
			}
			own = true
		}
	}
	if own {
		g.add(key, base, deps, adeps)
		return true
	}
	g.keys.add(key)
	return true
}

func hasAnyPrefix(key string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Mode says how the calls of a descriptor may be grouped.
type Mode uint8

// The modes.
const (
	None       Mode = iota // one call at a time
	Batch                  // in one batch (kv.Batcher)
	Concurrent             // as concurrent calls (kv.Concurrent)
)

// Info is how a descriptor's calls may be grouped: the mode, and for
// concurrent calls how many may run at once.
type Info struct {
	Mode    Mode
	Workers int
}

// InfoOf asks d how its calls may be grouped; concurrency is whether
// concurrent calls are allowed at all.
func InfoOf(d kv.Descriptor, concurrency bool, logger *slog.Logger) Info {
	g := Info{Workers: 1}
	switch {
	case d.CanBatch():
		g.Mode = Batch
	case concurrency:
		if n := concurrentCalls(d, logger); n > 1 {
			g.Mode, g.Workers = Concurrent, n
		}
	}
	return g
}

// concurrentCalls asks d's handler how many calls may run at once; a
// panic counts as one.
func concurrentCalls(d kv.Descriptor, logger *slog.Logger) (n int) {
	defer func() {
		if p := recover(); p != nil {
			logger.Error("ConcurrentCalls panicked; the descriptor's calls are made one at a time", "descriptor", d.Name(), "panic", fmt.Sprint(p))
			n = 1
		}
	}()
	return d.ConcurrentCalls()
}
