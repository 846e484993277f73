package scheduler_test

import (
	"context"
	"sync"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// keyRecorder is a string-keyed handler that records the keys it gets and,
// when other is set, calls other's Create with its own context and the
// texts in probe, recording the errors.
type keyRecorder struct {
	mu     sync.Mutex
	keys   []string
	other  kv.Descriptor
	probe  []string
	probed []error
}

func (h *keyRecorder) Create(ctx context.Context, key string, _ *wrapperspb.StringValue) (struct{}, error) {
	h.mu.Lock()
	h.keys = append(h.keys, key)
	other, probe := h.other, h.probe
	h.mu.Unlock()
	for _, p := range probe {
		_, err := other.Create(ctx, p, wrapperspb.String("x"))
		h.mu.Lock()
		h.probed = append(h.probed, err)
		h.mu.Unlock()
	}
	return struct{}{}, nil
}

func (h *keyRecorder) Delete(context.Context, string, *wrapperspb.StringValue, struct{}) error {
	return nil
}

// TestCallKeysMatchedOnlyForTheirDescriptor: a string-keyed descriptor
// without ParseKey takes the keys of the scheduler's calls as matched (the
// scheduler matched them when it resolved their descriptor); the context
// of a call vouches for the called descriptor's keys only. A handler that
// passes its context on to another descriptor with a text that is not a
// key of it (a key of its own descriptor, or no key at all) gets the
// "not a key" error, and the other handler never sees the text.
func TestCallKeysMatchedOnlyForTheirDescriptor(t *testing.T) {
	t.Parallel()
	s := newScheduler(t)
	hb := &keyRecorder{}
	b, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, struct{}]{Name: "b", KeyTemplate: "b/{name}"}, kv.Handler[string, *wrapperspb.StringValue, struct{}](hb))
	if err != nil {
		t.Fatal(err)
	}
	ha := &keyRecorder{other: b, probe: []string{"a/x", "b/x/y", "b/ok2"}}
	a, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, struct{}]{Name: "a", KeyTemplate: "a/{name}"}, kv.Handler[string, *wrapperspb.StringValue, struct{}](ha))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(a, b); err != nil {
		t.Fatal(err)
	}
	res, err := s.Txn().Set("a/x", wrapperspb.String("v")).Set("b/ok", wrapperspb.String("v")).Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Executed) != 2 {
		t.Fatalf("executed %v", res.Executed)
	}
	if len(ha.probed) != 3 || ha.probed[0] == nil || ha.probed[1] == nil || ha.probed[2] != nil {
		t.Errorf("b's Create under a's call context: %v; want errors for a/x and b/x/y, none for b/ok2", ha.probed)
	}
	for _, e := range ha.probed[:2] {
		if e != nil && kv.IsRetriable(e) {
			t.Errorf("%v is retriable", e)
		}
	}
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if len(hb.keys) != 2 || !containsAll(hb.keys, "b/ok", "b/ok2") {
		t.Errorf("b's handler got %q; want b/ok and b/ok2 only", hb.keys)
	}
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}
