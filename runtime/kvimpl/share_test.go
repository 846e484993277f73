package kvimpl_test

import (
	"sync"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvimpl"
)

// TestShareDependencies: values with the inputs of the value before them
// get the same list, computed once; other inputs compute a new one, and
// the result is always the list of the value at hand, even when callers
// race.
func TestShareDependencies(t *testing.T) {
	calls := 0
	var mu sync.Mutex
	deps := func(_ string, v *wrapperspb.StringValue) []kv.Dependency {
		mu.Lock()
		calls++
		mu.Unlock()
		return []kv.Dependency{{Label: "interface", Key: "if/" + v.GetValue()}}
	}
	shared := kvimpl.ShareDependencies(deps, func(v *wrapperspb.StringValue) string { return v.GetValue() })

	a1 := shared("r/1", wrapperspb.String("eth0"))
	a2 := shared("r/2", wrapperspb.String("eth0"))
	if &a1[0] != &a2[0] || calls != 1 {
		t.Errorf("two values over eth0: shared %v, %d calls; want one list, one call", &a1[0] == &a2[0], calls)
	}
	b := shared("r/3", wrapperspb.String("eth1"))
	if b[0].Key != "if/eth1" || calls != 2 {
		t.Errorf("a value over eth1 got %v after %d calls", b, calls)
	}
	if a3 := shared("r/4", wrapperspb.String("eth0")); a3[0].Key != "if/eth0" {
		t.Errorf("back to eth0: got %v", a3)
	}

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				name := []string{"eth0", "eth1", "eth2"}[(g+i)%3]
				if got := shared("r", wrapperspb.String(name)); got[0].Key != "if/"+name {
					t.Errorf("%s: got %v", name, got)
					return
				}
			}
		}()
	}
	wg.Wait()
}
