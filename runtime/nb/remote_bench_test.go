package nb_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

// BenchmarkRemoteCommitOne: the cost of a commit of one key to a remote
// source that holds n values, over a bbolt store in a file (its state
// recorded ahead of the transaction and after it). The file's size after
// the run is reported too, and the bytes allocated per commit for each
// value the source holds (B/value: copies of the source's state show as
// about 40 bytes each).
func BenchmarkRemoteCommitOne(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			e := newRemoteEnv(b, kvtest.NewSB(), dir, nil)
			u := nb.Update{Changes: make([]nb.Change, 0, n)}
			for i := range n {
				u.Changes = append(u.Changes, nb.Change{Key: fmt.Sprintf("iface/if%06d", i), Value: kvtest.Value(fmt.Sprintf("value of interface %d", i))})
			}
			ctx := context.Background()
			if _, _, err := e.remote.Commit(ctx, u, 0); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				one := nb.Update{Changes: []nb.Change{{Key: "iface/if000007", Value: kvtest.Value(fmt.Sprintf("changed %d", i))}}}
				if _, _, err := e.remote.Commit(ctx, one, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(n), "B/value")
			if fi, err := os.Stat(e.store.Path()); err == nil {
				b.ReportMetric(float64(fi.Size())/(1<<20), "file-MiB")
			}
		})
	}
}
