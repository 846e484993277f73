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

// Status returns the status of key (State NONEXISTENT when unknown).
func (s *Scheduler) Status(key string) Status {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.statusLocked(key, true)
}

// Statuses returns the statuses of the keys starting with prefix ("" for
// all), sorted by key.
func (s *Scheduler) Statuses(prefix string) []Status {
	return s.statuses(func(n *node) bool { return strings.HasPrefix(n.key, prefix) })
}

// DescriptorStatuses returns the statuses of the keys of one descriptor,
// sorted by key.
func (s *Scheduler) DescriptorStatuses(name string) []Status {
	return s.statuses(func(n *node) bool { return n.desc != nil && n.desc.Name() == name })
}

func (s *Scheduler) statuses(keep func(*node) bool) []Status {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var keys []string
	for k, n := range s.g.nodes {
		if keep(n) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := make([]Status, len(keys))
	for i, k := range keys {
		out[i] = s.statusLocked(k, true)
	}
	return out
}

// statusLocked builds the status of key; the caller holds s.mu.
func (s *Scheduler) statusLocked(key string, detail bool) Status {
	n := s.g.nodes[key]
	if n == nil {
		return Status{Key: key, State: NONEXISTENT}
	}
	st := Status{
		Key: key, State: n.state, Origin: n.origin, Value: n.intent, Applied: n.applied, Metadata: n.metadata,
		Base: n.base, LastOp: n.lastOp, LastErr: n.lastErr, Seq: n.seq,
	}
	if n.desc != nil {
		st.Descriptor = n.desc.Name()
	}
	if st.Value == nil {
		st.Value = n.applied
	}
	if len(n.derived) > 0 {
		st.Derived = append([]string(nil), n.derived...)
	}
	if detail && n.state == PENDING {
		st.Unmet = s.unmet(n)
		if cycle := s.cycleThrough(n); len(cycle) > 0 {
			st.Details = append(st.Details, "dependency cycle: "+strings.Join(cycle, " -> "))
		}
	}
	return st
}

// unmet lists the unmet dependencies of n.
func (s *Scheduler) unmet(n *node) []UnmetDependency {
	deps := s.unmetDeps(n)
	out := make([]UnmetDependency, len(deps))
	for i, d := range deps {
		out[i] = describeUnmet(d)
	}
	return out
}

func describeUnmet(d *kv.Dependency) UnmetDependency {
	if d.IsAnyOf() {
		return UnmetDependency{Label: d.Label, AnyOf: d.AnyOf.Prefixes, Match: d.AnyOf.Describe}
	}
	return UnmetDependency{Label: d.Label, Key: d.Key}
}

// unmetDeps returns the dependencies of n that are not satisfied.
func (s *Scheduler) unmetDeps(n *node) []*kv.Dependency {
	var out []*kv.Dependency
	for i := range n.deps {
		d := &n.deps[i]
		if d.IsAnyOf() {
			if s.g.anyOfSatisfied(&d.AnyOf) == "" {
				out = append(out, d)
			}
		} else if t := s.g.nodes[d.Key]; t == nil || !t.exists() {
			out = append(out, d)
		}
	}
	return out
}

// cycleThrough returns a dependency cycle through n over values that do not
// exist (n first and last), or nil.
func (s *Scheduler) cycleThrough(n *node) []string {
	seen := map[string]bool{}
	var path []string
	var dfs func(m *node) bool
	dfs = func(m *node) bool {
		path = append(path, m.key)
		for i := range m.deps {
			d := &m.deps[i]
			if d.IsAnyOf() {
				continue
			}
			if d.Key == n.key {
				path = append(path, n.key)
				return true
			}
			t := s.g.nodes[d.Key]
			if t == nil || t.exists() || seen[t.key] || len(seen) > s.opts.maxCycle {
				continue
			}
			seen[t.key] = true
			if dfs(t) {
				return true
			}
		}
		path = path[:len(path)-1]
		return false
	}
	seen[n.key] = true
	if dfs(n) {
		return path
	}
	return nil
}

// Origin is re-exported for callers that only import the scheduler.
type Origin = kv.Origin
