package etcd

import (
	"math/rand/v2"
	"time"
)

// backoff is the sequence of delays between the source's attempts to
// load while etcd does not answer: a step that starts at min and doubles
// up to max, and a delay drawn at random between half the step and the
// step, so that the agents of a fleet that lost etcd together (an etcd
// restart) do not all come back at the same instants.
type backoff struct {
	min, max time.Duration
	step     time.Duration
}

// next is the delay before the next attempt, in [step/2, step].
func (b *backoff) next() time.Duration {
	if b.step == 0 {
		b.step = b.min
	}
	half := b.step / 2
	d := half + rand.N(b.step-half+1)
	b.step = min(2*b.step, b.max)
	return d
}

// reset starts the sequence again at min (etcd answered).
func (b *backoff) reset() { b.step = 0 }
