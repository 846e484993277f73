package view

import (
	"fmt"
	"strings"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
)

// UnmetDependency is documented at its alias in the scheduler package.
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

func describeUnmet(d *kv.Dependency) UnmetDependency {
	if d.IsAnyOf() {
		return UnmetDependency{Label: d.Label, AnyOf: d.AnyOf.Prefixes, Match: d.AnyOf.Describe}
	}
	return UnmetDependency{Label: d.Label, Key: d.Key}
}

// PendingReason is documented at its alias in the scheduler package.
type PendingReason struct {
	Key   string
	State graph.State
	Unmet []PendingDependency
	// Cycle lists the members of a dependency cycle the value is part of,
	// when that cycle cannot be created as a unit.
	Cycle []string
}

// PendingDependency is documented at its alias in the scheduler package.
type PendingDependency struct {
	UnmetDependency
	// State is the state of the missing key (plain dependencies).
	State graph.State
	// Intended tells whether the missing key (or, for AnyOf, some key under
	// its prefixes) is in the intended state at all.
	Intended bool
	// Providable tells whether a registered descriptor handles the key (or
	// keys under the prefixes): false means nothing could ever create it.
	Providable bool
	// Cause explains why the target is missing when it is itself PENDING.
	// A dependency with no Cause is a root of the chain.
	Cause *PendingReason
}

// WhyPending explains why key is PENDING.
func (v viewRead) WhyPending(key string) *PendingReason {
	return v.why(key, map[string]bool{})
}

func (v viewRead) why(key string, visiting map[string]bool) *PendingReason {
	n := v.Get(key)
	if n == nil || n.State != graph.PENDING {
		return nil
	}
	visiting[key] = true
	defer delete(visiting, key)
	r := &PendingReason{Key: key, State: n.State, Cycle: v.cycleThrough(key, n)}
	for _, d := range v.unmetDeps(key, n) {
		u := describeUnmet(d)
		pd := PendingDependency{UnmetDependency: u, Providable: v.providable(u)}
		if u.Key != "" {
			if t := v.Get(u.Key); t != nil {
				pd.State = t.State
				pd.Intended = t.Intent() != nil
				if t.State == graph.PENDING && !visiting[u.Key] {
					pd.Cause = v.why(u.Key, visiting)
				}
			}
		} else {
			pd.Intended = v.someUnder(&d.AnyOf, func(r *graph.ViewRec) bool { return r.Intent() != nil })
		}
		r.Unmet = append(r.Unmet, pd)
	}
	return r
}

// Roots returns the root dependencies of the chain: those with no Cause.
func (r *PendingReason) Roots() []PendingDependency {
	var out []PendingDependency
	for _, d := range r.Unmet {
		if d.Cause != nil {
			out = append(out, d.Cause.Roots()...)
		} else {
			out = append(out, d)
		}
	}
	return out
}

// String renders the chain as an indented tree, e.g.
//
//	route/r1 is PENDING
//	  interface -> iface/eth0: PENDING, intended
//	    iface/eth0 is PENDING
//	      bridge -> bd/b1: NONEXISTENT, not intended, a descriptor handles it
func (r *PendingReason) String() string {
	var b strings.Builder
	r.write(&b, "")
	return b.String()
}

func (r *PendingReason) write(b *strings.Builder, indent string) {
	fmt.Fprintf(b, "%s%s is %s", indent, r.Key, r.State)
	if len(r.Cycle) > 0 {
		fmt.Fprintf(b, " (dependency cycle: %s)", strings.Join(r.Cycle, " -> "))
	}
	b.WriteByte('\n')
	for _, d := range r.Unmet {
		b.WriteString(indent + "  " + d.UnmetDependency.String() + ": ")
		if d.Key != "" {
			b.WriteString(d.State.String() + ", ")
		}
		intended, handles := "intended", "a"
		if !d.Intended {
			intended = "not intended"
		}
		if !d.Providable {
			handles = "no"
		}
		fmt.Fprintf(b, "%s, %s descriptor handles it\n", intended, handles)
		if d.Cause != nil {
			d.Cause.write(b, indent+"    ")
		}
	}
}
