package scheduler_test

import (
	"context"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
)

// TestWhyPendingProvidable: WhyPending says of each unmet dependency
// whether a registered descriptor could provide it, by the same rule as
// the status's details (a key in a key space, or an AnyOf prefix that a
// key space reaches).
func TestWhyPendingProvidable(t *testing.T) {
	t.Parallel()
	s := newScheduler(t)
	sb := kvtest.NewSB()
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
		t.Fatal(err)
	}
	_, err := s.Txn().
		Set("iface/a", kvtest.Value("dep:nosuch/x")).
		Set("iface/c", kvtest.Value("any:nosuch/")).
		Set("iface/d", kvtest.Value("dep:iface/z")).
		Set("iface/e", kvtest.Value("any:iface/zz")).
		Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{"iface/a": false, "iface/c": false, "iface/d": true, "iface/e": true} {
		r, ok := s.WhyPending(key)
		if !ok || len(r.Unmet) != 1 {
			t.Errorf("%s: WhyPending = %+v, %v; want one unmet dependency", key, r, ok)
			continue
		}
		if got := r.Unmet[0].Providable; got != want {
			t.Errorf("%s: Providable = %v, want %v", key, got, want)
		}
	}
}
