package scheduler

import (
	"maps"
	"slices"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/guard"
)

// ErrPanicked marks the error of a call into a descriptor's code (its
// handler, or the functions of its Spec) that panicked.
var ErrPanicked = guard.ErrPanicked

// PanicError is the error a recovered panic becomes: it names the
// descriptor, the function and the key, and wraps ErrPanicked.
type PanicError = guard.PanicError

// panicked returns the error of a panic recovered from a function of key's
// descriptor since the last look, or nil.
func (r *calling) panicked(key string) error { return r.s.panics.Take(key) }

// reportPanics makes the panics recovered during the run that the
// algorithm did not take up (a Dependencies call on a version other than
// the intent, say) errors of their keys, in key order.
func (r *calling) reportPanics() {
	errs := r.s.panics.Drain()
	for _, key := range slices.Sorted(maps.Keys(errs)) {
		r.keyErr(key, OpNone, errs[key])
	}
}
