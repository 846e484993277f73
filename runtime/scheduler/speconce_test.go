package scheduler_test

import (
	"context"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// TestSpecFunctionsRunOncePerValue: checking what a spec computes (issue
// 28, defect 7) costs no extra call of its Dependencies or Derived: a
// transaction creating bases that each derive a value and depend on a
// key calls each function once per value set, whatever the number of
// values (the checks use the result the scheduler computes anyway).
func TestSpecFunctionsRunOncePerValue(t *testing.T) {
	t.Parallel()
	type sv = *wrapperspb.StringValue
	var deps, derived atomic.Int32
	d, err := kv.NewDescriptor(kv.Spec[string, sv, struct{}]{
		Name:        "once",
		KeyTemplate: "once/{name}",
		Dependencies: func(_ string, v sv) []kv.Dependency {
			if deps.Add(1); v.GetValue() == "parent" {
				return nil
			}
			return []kv.Dependency{{Label: "parent", Key: "once/parent"}}
		},
		Derived: func(key string, v sv) []kv.Derived {
			derived.Add(1)
			return []kv.Derived{{Key: "oncex/" + v.GetValue(), Value: v}}
		},
	}, kv.Handler[string, sv, struct{}](&recordingHandler{}))
	if err != nil {
		t.Fatal(err)
	}
	dd, err := kv.NewDescriptor(kv.Spec[string, sv, struct{}]{Name: "oncex", KeyTemplate: "oncex/{name}"},
		kv.Handler[string, sv, struct{}](&recordingHandler{}))
	if err != nil {
		t.Fatal(err)
	}
	s := newScheduler(t)
	for _, desc := range []kv.Descriptor{d, dd} {
		if err := s.Register(desc); err != nil {
			t.Fatal(err)
		}
	}
	txn := s.Txn().Set("once/parent", wrapperspb.String("parent"))
	for _, n := range []string{"a", "b", "c"} {
		txn.Set("once/"+n, wrapperspb.String(n))
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if deps.Load() != 4 || derived.Load() != 4 {
		t.Errorf("Dependencies ran %d times, Derived %d, for 4 values: want 4 and 4", deps.Load(), derived.Load())
	}
	// One value more, in a transaction of its own.
	deps.Store(0)
	derived.Store(0)
	if _, err := s.Txn().Set("once/d", wrapperspb.String("d")).Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if deps.Load() != 1 || derived.Load() != 1 {
		t.Errorf("Dependencies ran %d times, Derived %d, for 1 value: want 1 and 1", deps.Load(), derived.Load())
	}
}
