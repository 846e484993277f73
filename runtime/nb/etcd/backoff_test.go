package etcd

import (
	"testing"
	"time"
)

// TestBackoffJitter: the delays between attempts stay within their
// bounds (half the step to the step, the step doubling from min to max),
// and are not all equal, even once the step has reached max: a fleet of
// agents that lost etcd together does not come back in lockstep.
func TestBackoffJitter(t *testing.T) {
	const lo, hi = 200 * time.Millisecond, 10 * time.Second
	b := &backoff{min: lo, max: hi}
	step := lo
	seen := map[time.Duration]bool{}
	atMax := map[time.Duration]bool{}
	for i := range 200 {
		d := b.next()
		if d < step/2 || d > step {
			t.Fatalf("delay %d: %s, want within [%s, %s]", i, d, step/2, step)
		}
		seen[d] = true
		if step == hi {
			atMax[d] = true
		}
		step = min(2*step, hi)
	}
	if len(atMax) < 2 {
		t.Errorf("the delays at the maximum step are all %v: no jitter", atMax)
	}
	b.reset()
	if d := b.next(); d < lo/2 || d > lo {
		t.Errorf("after reset: %s, want within [%s, %s]", d, lo/2, lo)
	}
	// Two sources (two agents) draw different delays.
	a, c := &backoff{min: lo, max: hi}, &backoff{min: lo, max: hi}
	same := 0
	for range 50 {
		if a.next() == c.next() {
			same++
		}
	}
	if same == 50 {
		t.Error("two sources drew the same 50 delays")
	}
}
