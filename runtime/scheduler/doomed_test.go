package scheduler_test

import (
	"context"
	"slices"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestDoomedValueThatStaysLetsItsDependentGo: a transaction that deletes
// a value and sets one that needs it holds the second back while the
// first is to go; when the delete fails and the value stays, the held
// value is created at the end of the pass. The marks of what a
// transaction removes are released without a look-up of each removed
// key (issue 28): the one that stayed must still be found.
func TestDoomedValueThatStaysLetsItsDependentGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, sb := harnessScheduler(t, "iface", "route")
	txn := s.Txn()
	for _, k := range []string{"iface/a", "iface/x", "iface/z"} {
		txn.Set(k, kvtest.Value("up"))
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	sb.Fail("iface/x", kvtest.Failure{Op: "delete", Terminal: true})
	// Deleted alongside: values that go, before and after the one that
	// stays (in key order and in the transaction's).
	_, err := s.Txn().Delete("iface/a").Delete("iface/x").Delete("iface/z").Set("route/r", kvtest.Value("dep:iface/x")).Commit(ctx)
	if err == nil {
		t.Fatal("the delete of iface/x did not fail")
	}
	if st := s.Status("iface/x"); st.State == scheduler.REMOVED {
		t.Fatalf("iface/x: %s, want it still there", st.State)
	}
	if st := s.Status("route/r"); st.State != scheduler.CONFIGURED {
		t.Errorf("route/r: %s (%v), want CONFIGURED: what it needs stayed", st.State, st.LastErr)
	}
	vals := sb.Values()
	if _, ok := vals["route/r"]; !ok {
		t.Error("route/r is not in the southbound")
	}
	for _, k := range []string{"iface/a", "iface/z"} {
		if _, ok := vals[k]; ok {
			t.Errorf("%s is still in the southbound", k)
		}
	}
}

// TestRecreateDoomsWhatNeedsTheOldVersion: a value the transaction
// re-creates (its descriptor cannot update it, or the change needs a
// re-create) is deleted on the way, with what needs it. A value of the
// same transaction that needs it, decided before it, is held back until
// it is created again, instead of being created on the old version and
// deleted again with it.
func TestRecreateDoomsWhatNeedsTheOldVersion(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		cfg      kvtest.Config
		old, new string
	}{
		{"no update", kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}", NoUpdate: true}, "up", "up mtu"},
		{"needs recreate", kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"}, "recreate:a", "recreate:b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			sb := kvtest.NewSB()
			s := newScheduler(t)
			for _, cfg := range []kvtest.Config{c.cfg, {Name: "route", KeyTemplate: "route/{name}"}} {
				if err := s.Register(harness(t, sb, cfg)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Txn().Set("iface/x", kvtest.Value(c.old)).Commit(ctx); err != nil {
				t.Fatal(err)
			}
			sb.TakeCalls()
			if _, err := s.Txn().Set("route/r", kvtest.Value("dep:iface/x")).Set("iface/x", kvtest.Value(c.new)).Commit(ctx); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, call := range sb.TakeCalls() {
				got = append(got, call.Op+" "+call.Key)
			}
			want := []string{"delete iface/x", "create iface/x", "create route/r"}
			if !slices.Equal(got, want) {
				t.Errorf("calls %q, want %q", got, want)
			}
			if st := s.Status("route/r"); st.State != scheduler.CONFIGURED {
				t.Errorf("route/r: %s (%v), want CONFIGURED", st.State, st.LastErr)
			}
		})
	}
}

// TestRecreatedDerivedDoomsWhatNeedsIt: the same for a derived value that
// its base's new version derives with other contents, when the derived
// value's descriptor cannot update it.
func TestRecreatedDerivedDoomsWhatNeedsIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb := kvtest.NewSB()
	s := newScheduler(t)
	for _, cfg := range []kvtest.Config{
		{Name: "iface", KeyTemplate: "iface/{name}"},
		{Name: "addr", KeyTemplate: "addr/{name}", NoUpdate: true},
		{Name: "route", KeyTemplate: "route/{name}"},
	} {
		if err := s.Register(harness(t, sb, cfg)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Txn().Set("iface/x", kvtest.Value("derive:addr/x1[a]")).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	sb.TakeCalls()
	if _, err := s.Txn().Set("route/r", kvtest.Value("dep:addr/x1")).Set("iface/x", kvtest.Value("derive:addr/x1[b]")).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, call := range sb.TakeCalls() {
		got = append(got, call.Op+" "+call.Key)
	}
	if slices.Index(got, "create route/r") != len(got)-1 || slices.Contains(got, "delete route/r") {
		t.Errorf("calls %q, want route/r created once, last (after addr/x1 is created again)", got)
	}
	if st := s.Status("route/r"); st.State != scheduler.CONFIGURED {
		t.Errorf("route/r: %s (%v), want CONFIGURED", st.State, st.LastErr)
	}
}
