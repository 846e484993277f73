package vpp

import (
	"net/netip"
	"testing"
	"time"

	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// routeWeight returns the weight of the first path of driftRoute's route
// in VPP, or -1 when VPP does not hold it.
func (e *env) routeWeight() int {
	w := -1
	e.f.Do(func(f *fakeVPP) {
		for id, r := range f.routes {
			if prefixOf(id.prefix) == netip.MustParsePrefix("10.1.0.0/16") && len(r.route.Paths) > 0 {
				w = int(r.route.Paths[0].Weight)
			}
		}
	})
	return w
}

// setRouteWeightBehindOurBack changes the weight of driftRoute's route in
// VPP, as another client of the binary API would.
func (e *env) setRouteWeightBehindOurBack(w uint32) {
	e.t.Helper()
	changed := false
	e.f.Do(func(f *fakeVPP) {
		for id, r := range f.routes {
			if prefixOf(id.prefix) == netip.MustParsePrefix("10.1.0.0/16") && len(r.route.Paths) > 0 {
				r.route.Paths[0].Weight = uint8(w)
				changed = true
			}
		}
	})
	if !changed {
		e.t.Fatal("VPP holds no path of the route to change")
	}
}

// checkDrift runs n drift checks of key, each to its end: what a check
// (or a repair it started, which runs before the next check) does to the
// value is done when it returns.
func (e *env) checkDrift(n int, key string) {
	e.t.Helper()
	for range n {
		if _, err := e.s.CheckDrift(e.ctx, scheduler.DriftCheck{Keys: []string{key}}); err != nil {
			e.t.Fatalf("drift check of %s: %v", key, err)
		}
	}
}

// TestDriftPolicyMatrix completes, for VPP (which notifies no route
// changes, so the periodic check finds them), the matrix: a value
// deleted and a value modified behind our back, under each policy.
func TestDriftPolicyMatrix(t *testing.T) {
	policy := func(p kv.DriftPolicy) scheduler.Option {
		return scheduler.WithDriftPolicy(func(string, string) (kv.DriftPolicy, bool) { return p, true })
	}
	check := scheduler.WithDriftCheck(100*time.Millisecond, 0)

	t.Run("modified/repair", func(t *testing.T) {
		t.Parallel()
		e := newEnvWith(t, []scheduler.Option{check, policy(kv.DriftRepair)})
		key := e.driftRoute()
		want := e.routeWeight()
		e.setRouteWeightBehindOurBack(uint32(want + 6))
		e.waitFor("weight repaired", func() bool { return e.routeWeight() == want })
		e.eventually(scheduler.CONFIGURED, key)
		if st := e.s.Status(key); st.Drift != nil && st.Drift.Repairs == 0 {
			t.Errorf("repaired, but the drift record counts no repair: %+v", st.Drift)
		}
	})

	t.Run("modified/report", func(t *testing.T) {
		t.Parallel()
		e := newEnvWith(t, []scheduler.Option{check, policy(kv.DriftReport)})
		key := e.driftRoute()
		want := e.routeWeight()
		e.setRouteWeightBehindOurBack(uint32(want + 6))
		e.eventually(scheduler.DRIFTED, key)
		st := e.s.Status(key)
		if st.Drift == nil || st.Drift.Missing || st.Drift.Policy != kv.DriftReport || len(st.Drift.Diff) == 0 {
			t.Fatalf("drift: %+v", st.Drift)
		}
		if d := st.Drift.Diff[0]; d.Path != "weight" {
			t.Errorf("diff names %q, want weight: %+v", d.Path, st.Drift.Diff)
		}
		// More checks run; none touches the route.
		e.checkDrift(3, key)
		if got := e.routeWeight(); got != want+6 {
			t.Errorf("report changed the weight back: %d", got)
		}
		if st := e.s.Status(key); st.State != scheduler.DRIFTED {
			t.Errorf("after more checks: %v", st.State)
		}
	})

	t.Run("modified/adopt", func(t *testing.T) {
		t.Parallel()
		e := newEnvWith(t, []scheduler.Option{check, policy(kv.DriftAdopt)})
		key := e.driftRoute()
		want := e.routeWeight()
		e.setRouteWeightBehindOurBack(uint32(want + 6))
		e.waitFor("weight adopted", func() bool {
			v, _ := e.s.Status(key).Value.(*vppl3.Route)
			return v.GetWeight() == uint32(want+6)
		})
		if st := e.s.Status(key); st.State != scheduler.CONFIGURED {
			t.Errorf("adopted: %v", st.State)
		}
		if got := e.routeWeight(); got != want+6 {
			t.Errorf("adopt changed the weight back: %d", got)
		}
	})

	t.Run("deleted/adopt", func(t *testing.T) {
		t.Parallel()
		e := newEnvWith(t, []scheduler.Option{check, policy(kv.DriftAdopt)})
		key := e.driftRoute()
		e.deleteRouteBehindOurBack()
		e.eventually(scheduler.MISSING, key)
		e.checkDrift(3, key) // more checks run; none creates the route
		if e.hasRoute() {
			t.Error("adopt created the route again")
		}
		st := e.s.Status(key)
		if st.State != scheduler.MISSING || st.Drift == nil || !st.Drift.Missing || st.Drift.Policy != kv.DriftAdopt {
			t.Errorf("status: %v %+v", st.State, st.Drift)
		}
	})
}
