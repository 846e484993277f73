package scheduler

import (
	"slices"
	"strings"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// UnmetDependency is a dependency of a PENDING value that is not satisfied.
type UnmetDependency struct {
	Label string
	// Key is the missing key of a plain dependency.
	Key string
	// AnyOf are the prefixes of an AnyOf dependency, and Match describes
	// its predicate.
	AnyOf []string
	Match string
}

func (u UnmetDependency) String() string {
	if u.Key != "" {
		return u.Label + " -> " + u.Key
	}
	s := u.Label + " -> any of " + strings.Join(u.AnyOf, ", ")
	if u.Match != "" {
		s += " (" + u.Match + ")"
	}
	return s
}

// Status returns the status of key (State NONEXISTENT when unknown), as
// the last finished transaction left it.
func (s *Scheduler) Status(key string) Status {
	r := s.view.read()
	defer r.done()
	return r.status(key, true)
}

// Statuses returns the statuses of the keys starting with prefix ("" for
// all), sorted by key.
func (s *Scheduler) Statuses(prefix string) []Status {
	return s.statuses(func(key string, _ *viewRec) bool { return strings.HasPrefix(key, prefix) })
}

// DescriptorStatuses returns the statuses of the keys of one descriptor,
// sorted by key.
func (s *Scheduler) DescriptorStatuses(name string) []Status {
	return s.statuses(func(_ string, r *viewRec) bool { return r.desc != nil && r.desc.Name() == name })
}

// statuses returns the statuses of the values keep accepts, sorted by
// key. The values are picked and sorted first, as keys and versions, and
// each status is built once, in its place: no second lookup of a key, and
// no moving of statuses around. (The read is released even if an AnyOf
// predicate panics.)
func (s *Scheduler) statuses(keep func(string, *viewRec) bool) []Status {
	r := s.view.read()
	defer r.done()
	var picked []keyRec
	r.each(func(k string, rec *viewRec) bool {
		if keep(k, rec) {
			picked = append(picked, keyRec{k, rec})
		}
		return true
	})
	slices.SortFunc(picked, func(a, b keyRec) int { return strings.Compare(a.key, b.key) })
	out := make([]Status, len(picked))
	for i, p := range picked {
		out[i] = r.statusOf(p.key, p.rec, true)
	}
	return out
}

// keyRec is a key and its version, as a read sees it.
type keyRec struct {
	key string
	rec *viewRec
}

func describeUnmet(d *kv.Dependency) UnmetDependency {
	if d.IsAnyOf() {
		return UnmetDependency{Label: d.Label, AnyOf: d.AnyOf.Prefixes, Match: d.AnyOf.Describe}
	}
	return UnmetDependency{Label: d.Label, Key: d.Key}
}

// Origin is re-exported for callers that only import the scheduler.
type Origin = kv.Origin
