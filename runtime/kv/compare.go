package kv

import "reflect"

// The helpers below are used by generated comparators and validators.

// OrDefault returns v, or def when v is the zero value: a zero field
// compares equal to its default ("MTU 0 is 1500").
func OrDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// EqualUnordered reports whether a and b hold the same elements, in any
// order (as multisets).
func EqualUnordered[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	count := make(map[T]int, len(a))
	for _, x := range a {
		count[x]++
	}
	for _, y := range b {
		if count[y] == 0 {
			return false
		}
		count[y]--
	}
	return true
}

// EqualUnorderedFunc is EqualUnordered with an equality function (for
// messages): every element of a matches a distinct element of b.
func EqualUnorderedFunc[T any](a, b []T, eq func(x, y T) bool) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(b))
outer:
	for _, x := range a {
		for j, y := range b {
			if !used[j] && eq(x, y) {
				used[j] = true
				continue outer
			}
		}
		return false
	}
	return true
}

// SameType reports whether two values of a oneof hold the same case.
func SameType(a, b any) bool { return reflect.TypeOf(a) == reflect.TypeOf(b) }

// FirstDuplicate returns the indexes of the first two equal elements of s.
func FirstDuplicate[T comparable](s []T) (first, second int, found bool) {
	seen := make(map[T]int, len(s))
	for i, x := range s {
		if j, ok := seen[x]; ok {
			return j, i, true
		}
		seen[x] = i
	}
	return 0, 0, false
}

// EqualFormatted reports whether two values of a field of format f are the
// same in key form (2001:DB8::1 and 2001:db8::1 are).
func EqualFormatted(f Format, a, b string) bool {
	return a == b || KeyValue(f, a) == KeyValue(f, b)
}

// EqualFormattedSlices is EqualFormatted for repeated fields, in order or
// (unordered) as multisets.
func EqualFormattedSlices(f Format, a, b []string, unordered bool) bool {
	if len(a) != len(b) {
		return false
	}
	ka, kb := formatAll(f, a), formatAll(f, b)
	if unordered {
		return EqualUnordered(ka, kb)
	}
	for i := range ka {
		if ka[i] != kb[i] {
			return false
		}
	}
	return true
}

// FirstDuplicateFormatted is FirstDuplicate comparing in key form.
func FirstDuplicateFormatted(f Format, s []string) (first, second int, found bool) {
	return FirstDuplicate(formatAll(f, s))
}

func formatAll(f Format, s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = KeyValue(f, x)
	}
	return out
}
