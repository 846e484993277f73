package vpp

import (
	"net/netip"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/ip"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// driftRoute commits loopback if1 and a route over it, and returns the
// route's key.
func (e *env) driftRoute() string {
	e.t.Helper()
	r := &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.1", OutgoingInterface: "if1"}
	key := vppl3.RouteKeyFor(r)
	if _, err := e.s.Txn().Set(vppinterfaces.InterfaceKeyFor(loop("if1")), loop("if1")).Set(key, r).Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	e.expect(scheduler.CONFIGURED, key)
	return key
}

// deleteRouteBehindOurBack deletes the route of driftRoute with a binary
// API call of its own, as vppctl or another agent would.
func (e *env) deleteRouteBehindOurBack() {
	e.t.Helper()
	ch, err := e.p.conn.NewAPIChannel()
	if err != nil {
		e.t.Fatal(err)
	}
	defer ch.Close()
	path := fib_types.FibPath{SwIfIndex: 1, Weight: 1}
	path.Nh.Address.SetIP4([4]byte{10, 0, 0, 1})
	req := &ip.IPRouteAddDel{Route: ip.IPRoute{Prefix: prefix(netip.MustParsePrefix("10.1.0.0/16")), NPaths: 1, Paths: []fib_types.FibPath{path}}}
	if err := ch.SendRequest(req).ReceiveReply(&ip.IPRouteAddDelReply{}); err != nil {
		e.t.Fatal(err)
	}
	if e.hasRoute() {
		e.t.Fatal("the route is still in VPP after ip_route_add_del is_add=0")
	}
}

func (e *env) hasRoute() bool {
	found := false
	e.f.Do(func(f *fakeVPP) {
		for _, r := range f.tableRoutes(0) {
			if prefixOf(r.Prefix) == netip.MustParsePrefix("10.1.0.0/16") && len(r.Paths) > 0 {
				found = true
			}
		}
	})
	return found
}

func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > 15*time.Second {
			e.t.Fatalf("%s: not after %s", what, time.Since(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDriftPeriodicRepair: VPP notifies no route changes; the periodic
// drift check finds a route deleted behind our back and creates it again.
// The history records a transaction after its calls, and the route was
// CONFIGURED before the check found it gone: the test waits for the
// record, not for the route or the state, which may come first.
func TestDriftPeriodicRepair(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, []scheduler.Option{scheduler.WithDriftCheck(200*time.Millisecond, 0)})
	key := e.driftRoute()
	e.deleteRouteBehindOurBack()
	e.waitFor("a drift check that records the route MISSING and creates it", func() bool {
		for _, rec := range e.s.History() {
			missing, created := false, false
			for _, op := range rec.Executed {
				if rec.Kind == scheduler.DriftCheckTxn && op.Key == key {
					missing = missing || op.Flags&(scheduler.FlagDrifted|scheduler.FlagMissing) == scheduler.FlagDrifted|scheduler.FlagMissing
					created = created || (op.Kind == scheduler.OpCreate && op.Err == nil)
				}
			}
			if missing && created {
				return true
			}
		}
		return false
	})
	if !e.hasRoute() {
		t.Error("the drift check recorded the route created, and it is not in VPP")
	}
	if st := e.s.Status(key); st.State != scheduler.CONFIGURED {
		t.Errorf("after the repair the route is %v (%v)", st.State, st.LastErr)
	}
}

// TestDriftPeriodicReport: with the report policy, the route is MISSING
// and stays gone.
func TestDriftPeriodicReport(t *testing.T) {
	t.Parallel()
	report := scheduler.WithDriftPolicy(func(key, _ string) (kv.DriftPolicy, bool) { return kv.DriftReport, true })
	e := newEnvWith(t, []scheduler.Option{scheduler.WithDriftCheck(200*time.Millisecond, 0), report})
	key := e.driftRoute()
	e.deleteRouteBehindOurBack()
	e.eventually(scheduler.MISSING, key)
	if st := e.s.Status(key); st.Drift == nil || !st.Drift.Missing || st.Drift.Policy != kv.DriftReport {
		t.Errorf("drift: %+v", st.Drift)
	}
	if e.hasRoute() {
		t.Error("report created the route again")
	}
}

// TestDriftCheckAdoptRoute: with the adopt policy, a route whose weight
// changed behind our back is taken as intended (CheckDrift, as the
// periodic check does).
func TestDriftCheckAdoptRoute(t *testing.T) {
	t.Parallel()
	adopt := scheduler.WithDriftPolicy(func(key, _ string) (kv.DriftPolicy, bool) { return kv.DriftAdopt, true })
	e := newEnvWith(t, []scheduler.Option{adopt})
	key := e.driftRoute()
	e.f.Do(func(f *fakeVPP) {
		for id, r := range f.routes {
			if prefixOf(id.prefix) == netip.MustParsePrefix("10.1.0.0/16") && len(r.route.Paths) > 0 {
				r.route.Paths[0].Weight = 7
			}
		}
	})
	if _, err := e.s.CheckDrift(e.ctx, scheduler.DriftCheck{Keys: []string{key}}); err != nil {
		t.Fatal(err)
	}
	st := e.s.Status(key)
	if v, _ := st.Value.(*vppl3.Route); st.State != scheduler.CONFIGURED || v.GetWeight() != 7 {
		t.Errorf("adopted: %v %v", st.State, st.Value)
	}
}
