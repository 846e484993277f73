package kv

import (
	"net/netip"
	"strings"

	"google.golang.org/protobuf/proto"
)

// Dependency is one thing a value needs before it can be created: either a
// plain key, or (when Key is empty) any existing key matched by AnyOf.
// While a dependency is unmet the value stays PENDING; when a met dependency
// goes away, the value is deleted first and becomes PENDING again.
type Dependency struct {
	// Label names the dependency in status and logs, e.g. "interface".
	Label string
	// Key is the key that must exist. Empty for an AnyOf dependency.
	Key string
	// AnyOf is satisfied by any existing key under one of its prefixes that
	// passes its predicate. Used only when Key is empty.
	AnyOf AnyOf
}

// IsAnyOf reports whether d is an AnyOf dependency.
func (d Dependency) IsAnyOf() bool { return d.Key == "" }

// String describes the dependency for logs: the key, or the AnyOf prefixes.
func (d Dependency) String() string {
	if !d.IsAnyOf() {
		return d.Label + " -> " + d.Key
	}
	s := d.Label + " -> any of " + strings.Join(d.AnyOf.Prefixes, ", ")
	if d.AnyOf.Describe != "" {
		s += " (" + d.AnyOf.Describe + ")"
	}
	return s
}

// AnyOf is a dependency satisfied by any existing key that starts with one
// of Prefixes and, when Match is set, passes Match. The scheduler resolves
// it through an index of keys by prefix, so its cost does not grow with the
// number of unrelated keys.
type AnyOf struct {
	// Prefixes are key prefixes; at least one.
	Prefixes []string
	// Match filters the keys under the prefixes; nil accepts every key. It
	// must depend only on the key and be cheap: it runs for every candidate.
	Match func(key string) bool
	// Describe says in words what Match accepts, for status and logs.
	Describe string
}

// Accepts reports whether key satisfies the AnyOf dependency.
func (a *AnyOf) Accepts(key string) bool {
	for _, p := range a.Prefixes {
		if strings.HasPrefix(key, p) {
			return a.Match == nil || a.Match(key)
		}
	}
	return false
}

// Derived is a value derived from a base value: it has its own key, its own
// descriptor and its own dependencies, and it lives and dies with its base.
type Derived struct {
	Key   string
	Value proto.Message
}

// NetworkContains returns an AnyOf predicate for keys that end with an IP
// network ("…/10.0.0.1/24"): it accepts a key whose network contains addr.
// This is the built-in "IP in prefix" predicate: a route's gateway is
// reachable once an address whose network contains it exists.
func NetworkContains(addr netip.Addr) func(key string) bool {
	return func(key string) bool {
		slash := strings.LastIndexByte(key, '/')
		if slash <= 0 {
			return false
		}
		start := strings.LastIndexByte(key[:slash], '/') + 1
		p, err := netip.ParsePrefix(key[start:])
		return err == nil && p.Contains(addr)
	}
}
