package nb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestMuxApplyWithAndPlan: an update with transaction options returns its
// result; a plan is a dry run over the merged state (another source's key
// of higher priority is not planned) that changes nothing; a reverted
// update leaves the source as it was; the startup's
// description names the initial loads that came with one.
func TestMuxApplyWithAndPlan(t *testing.T) {
	sb := kvtest.NewSB()
	s := agent(t, sb)
	m := newMux(t, s, nb.WithPriorityOrder("file", "remote"), nb.WithSources("remote"))
	ctx := context.Background()
	apply(t, m.Sink("file"), true, set("iface/f", "f"))
	if _, err := m.Plan(ctx, "remote", nb.Update{Changes: []nb.Change{set("iface/a", "a")}}); err == nil {
		t.Fatal("a plan before the startup resync")
	}
	res, err := m.ApplyWith(ctx, "remote", nb.Update{Resync: true, Description: "loaded from its file"})
	if err != nil || res != nil {
		t.Fatalf("the initial load: %v %v", res, err)
	}
	h := s.History()
	if len(h) != 1 || !strings.Contains(h[0].Description, "source remote: loaded from its file") {
		t.Fatalf("startup: %+v", h)
	}
	calls(sb)

	u := nb.Update{Changes: []nb.Change{set("iface/a", "a"), set("iface/f", "mine")}}
	plan, err := m.Plan(ctx, "remote", u)
	if err != nil || !plan.DryRun || len(plan.Planned) != 1 || plan.Planned[0].Key != "iface/a" {
		t.Fatalf("plan: %+v %v", plan, err)
	}
	wantCalls(t, sb)
	if d := m.Desired("remote"); len(d) != 0 {
		t.Fatalf("the plan changed the source: %v", d)
	}

	sb.Fail("iface/a", kvtest.Failure{Op: "create"})
	res, err = m.ApplyWith(ctx, "remote", u, scheduler.Revert())
	if err != nil || res == nil || res.Seq == 0 || !res.Reverted {
		t.Fatalf("apply with Revert: %+v %v", res, err)
	}
	// Reverted: the source intends what it did before.
	if d := m.Desired("remote"); len(d) != 0 {
		t.Fatalf("desired after a reverted update: %v", d)
	}
	if owner, over := m.Owner("iface/f"); owner != "file" || len(over) != 0 {
		t.Fatalf("owner of iface/f: %s %v", owner, over)
	}
	// Nothing of the merged state changes: no transaction.
	res, err = m.ApplyWith(ctx, "remote", nb.Update{Changes: []nb.Change{set("iface/f", "other")}})
	if err != nil || res != nil {
		t.Fatalf("an overridden key: %+v %v", res, err)
	}
}
