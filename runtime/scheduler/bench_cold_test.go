package scheduler_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkColdStart measures step (a) of workload W as an agent meets it
// at startup (issue 15): the first large transaction of a fresh process,
// whose heap starts small and grows during the transaction. Each op runs
// the test binary again (TestColdStartChild, selected by an environment
// variable), which builds the workload, times its first create-all
// transaction, then three more on fresh schedulers in the same process,
// timed like BenchmarkWorkloadW/a-create-all (a collection before each).
// It reports:
//
//	ms-cold           the first transaction (building the Txn and Commit);
//	ms-warm           the median of the three later ones;
//	x-cold/warm       their ratio;
//	B-retained/value  the heap the first transaction left (the scheduler
//	                  alive), over the 6N values.
//
// The child starts with the environment of the parent (GOGC, GOMAXPROCS,
// GODEBUG apply to it) and no change of the garbage collector's settings.
// N=166667 is 1,000,000 values (about 1.5 GB of heap at its peak).
//
//	go test -run='^$' -bench=ColdStart -benchtime=1x ./runtime/scheduler
//	go test -run='^$' -bench='ColdStart/N=10000$' -benchtime=5x ./runtime/scheduler
func BenchmarkColdStart(b *testing.B) {
	for _, n := range []int{10_000, 50_000, 166_667} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			var cold, warm []time.Duration
			var retained float64
			for range b.N {
				r := runColdChild(b, n)
				cold, warm = append(cold, r.cold), append(warm, r.warm)
				retained += r.retained
			}
			c, w := median(cold), median(warm)
			b.ReportMetric(float64(c.Microseconds())/1e3, "ms-cold")
			b.ReportMetric(float64(w.Microseconds())/1e3, "ms-warm")
			b.ReportMetric(float64(c)/float64(w), "x-cold/warm")
			b.ReportMetric(retained/float64(b.N), "B-retained/value")
		})
	}
}

// coldEnv names the environment variable that makes TestColdStartChild
// run: its value is N.
const coldEnv = "KVDESCRIPTOR_COLD_START_N"

// coldResult is what one child process measured.
type coldResult struct {
	cold, warm time.Duration
	retained   float64
}

// runColdChild runs TestColdStartChild in a fresh process of the test
// binary and parses the line it prints.
func runColdChild(b *testing.B, n int) coldResult {
	b.Helper()
	args := []string{"-test.run=^TestColdStartChild$", "-test.count=1"}
	if !*benchTxnLog {
		args = append(args, "-w.txnlog=false")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), coldEnv+"="+strconv.Itoa(n))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		b.Fatalf("cold-start child: %v\n%s", err, out.String())
	}
	for line := range strings.Lines(out.String()) {
		var r coldResult
		var coldNs, warmNs int64
		if _, err := fmt.Sscanf(line, "cold-start: cold-ns=%d warm-ns=%d retained=%g", &coldNs, &warmNs, &r.retained); err == nil {
			r.cold, r.warm = time.Duration(coldNs), time.Duration(warmNs)
			return r
		}
	}
	b.Fatalf("cold-start child printed no result:\n%s", out.String())
	return coldResult{}
}

// TestColdStartChild is BenchmarkColdStart's child process, the test
// binary run again with coldEnv set (the helper-process pattern of
// os/exec's tests). In any other run it is not the child and returns at
// once: it tests nothing, and is not a skip to explain.
func TestColdStartChild(t *testing.T) {
	env := os.Getenv(coldEnv)
	if env == "" {
		return
	}
	n, err := strconv.Atoi(env)
	if err != nil {
		t.Fatal(err)
	}
	w := buildWorkload(n)
	ws := newSched(t, w)
	t0 := time.Now()
	ws.createAll(t)
	cold := time.Since(t0)

	afterCommit := heapAlloc()
	runtime.KeepAlive(ws)
	ws.checkAll(t, w.values())
	ws.close(t)
	ws = nil
	afterValues := heapAlloc() // the workload alone
	retained := float64(int64(afterCommit)-int64(afterValues)) / float64(w.values())

	warm := make([]time.Duration, 3)
	for i := range warm {
		ws := newSched(t, w)
		t0 := time.Now()
		ws.createAll(t)
		warm[i] = time.Since(t0)
		ws.close(t)
		runtime.GC()
	}
	runtime.KeepAlive(w)
	fmt.Printf("cold-start: cold-ns=%d warm-ns=%d retained=%g\n", cold.Nanoseconds(), median(warm).Nanoseconds(), retained)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
