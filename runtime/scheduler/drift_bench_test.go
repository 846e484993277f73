package scheduler_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// echoSB is a southbound that holds exactly what it was given: Retrieve
// returns a copy of each value asked about (so that the comparison is a
// real one, not of the same message), as a VPP dump of the values would.
// The values are flat messages of seven scalar fields, about a route's
// (descriptorpb.FieldDescriptorProto stands in for a model's message).
type echoSB struct{}

func (echoSB) Create(context.Context, string, *descriptorpb.FieldDescriptorProto) (struct{}, error) {
	return struct{}{}, nil
}
func (echoSB) Delete(context.Context, string, *descriptorpb.FieldDescriptorProto, struct{}) error {
	return nil
}
func (echoSB) Retrieve(_ context.Context, correlate []kv.Item[string, *descriptorpb.FieldDescriptorProto, struct{}]) ([]kv.Item[string, *descriptorpb.FieldDescriptorProto, struct{}], error) {
	out := make([]kv.Item[string, *descriptorpb.FieldDescriptorProto, struct{}], len(correlate))
	for i, it := range correlate {
		out[i] = kv.Item[string, *descriptorpb.FieldDescriptorProto, struct{}]{Key: it.Key, Value: proto.Clone(it.Value).(*descriptorpb.FieldDescriptorProto), Origin: kv.OriginNB}
	}
	return out, nil
}

// driftCheckInterval is the agent's default interval of the periodic drift
// check (runtime/agent: drift.check_interval).
const driftCheckInterval = 60 * time.Second

// BenchmarkDriftCheck measures one pass of the periodic drift check over
// 100,000 values of ours that have not drifted, in slices of
// DefaultDriftSlice values (what WithDriftCheck does over its interval):
// each slice is a Retrieve of its values and their comparison. It reports
// the cost of a pass, per value, and the share of one core it takes at
// the agent's default interval (the budget: under 1 %).
func BenchmarkDriftCheck(b *testing.B) {
	const n = 100_000
	s, err := scheduler.New(scheduler.WithLogger(quiet), scheduler.WithTxnLog(false))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	d, err := kv.NewDescriptor(kv.Spec[string, *descriptorpb.FieldDescriptorProto, struct{}]{Name: "echo", KeyPrefix: "echo/"}, kv.Handler[string, *descriptorpb.FieldDescriptorProto, struct{}](echoSB{}))
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Register(d); err != nil {
		b.Fatal(err)
	}
	keys := make([]string, n)
	for i := 0; i < n; i += 10_000 {
		txn := s.Txn()
		for j := i; j < i+10_000; j++ {
			keys[j] = fmt.Sprintf("echo/route/%06d", j)
			v := &descriptorpb.FieldDescriptorProto{Name: proto.String(fmt.Sprintf("10.%d.%d.0/24", j>>8&255, j&255)), Number: proto.Int32(int32(j % 7)),
				TypeName: proto.String("192.168.0.1"), Extendee: proto.String("if1"), DefaultValue: proto.String("1"), JsonName: proto.String("main"), Proto3Optional: proto.Bool(true)}
			txn.Set(keys[j], v)
		}
		if _, err := txn.Commit(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	for range b.N {
		for i := 0; i < n; i += scheduler.DefaultDriftSlice {
			res, err := s.CheckDrift(ctx, scheduler.DriftCheck{Keys: keys[i:min(n, i+scheduler.DefaultDriftSlice)]})
			if err != nil || res.Seq != 0 {
				b.Fatalf("a check of values that did not drift: %v, seq %d", err, res.Seq)
			}
		}
	}
	wall := time.Since(start) / time.Duration(b.N)
	// The process's CPU time (the worker, the Retrieve, the garbage
	// collector): on a shared machine the wall time counts the waits
	// for a core too.
	pass := (cpuTime() - cpu0) / time.Duration(b.N)
	b.ReportMetric(float64(pass.Nanoseconds())/n, "cpu-ns/value")
	b.ReportMetric(float64(pass.Milliseconds()), "cpu-ms/pass")
	b.ReportMetric(float64(wall.Milliseconds()), "wall-ms/pass")
	b.ReportMetric(100*pass.Seconds()/driftCheckInterval.Seconds(), "%core@60s")
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
