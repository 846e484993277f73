package grouping

import (
	"fmt"
	"log/slog"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

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
