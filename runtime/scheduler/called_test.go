package scheduler_test

import (
	"context"
	"slices"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// calledOps renders the operations as "KIND key" with a "*" for those
// that called the southbound.
func calledOps(ops []scheduler.Op) []string {
	var out []string
	for _, o := range ops {
		s := o.Kind.String() + " " + o.Key
		if o.Called {
			s += " *"
		}
		out = append(out, s)
	}
	return out
}

// TestOpCalled: Op.Called marks exactly the operations that called the
// southbound, in plans, executions and the history, so that a transaction
// that made no call is one that has no Called operation.
func TestOpCalled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, sb := harnessScheduler(t, "iface", "route")
	sb.Fail("iface/b", kvtest.Failure{Op: "create", Terminal: true})
	res, _ := s.Txn().
		Set("iface/a", kvtest.Value("up")).
		Set("iface/b", kvtest.Value("up")).
		Set("route/r", kvtest.Value("dep:iface/x")).
		Commit(ctx)
	want := []string{"CREATE iface/a *", "CREATE iface/b *", "NONE route/r"}
	if got := calledOps(res.Executed); !equalStrings(got, want) {
		t.Errorf("executed %q, want %q", got, want)
	}
	if got := calledOps(res.Planned); !equalStrings(got, want) {
		t.Errorf("planned %q, want %q", got, want)
	}
	hist := s.History()
	if got := calledOps(hist[len(hist)-1].Executed); !equalStrings(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}

	// A startup-like resync over a southbound that holds what is intended
	// makes no call: no operation says it did.
	s2, sb2 := harnessScheduler(t, "iface")
	sb2.Put("iface/a", "up")
	res, err := s2.Txn(scheduler.FullResync()).Set("iface/a", kvtest.Value("up")).Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range res.Executed {
		if o.Called {
			t.Errorf("startup resync: %v says it called the southbound", o)
		}
	}
	if len(res.Executed) == 0 || res.Executed[0].Flags&scheduler.FlagAdopted == 0 {
		t.Errorf("startup resync executed %v, want the value ADOPTED", res.Executed)
	}
	for _, c := range sb2.Calls() {
		if c.Op != "retrieve" {
			t.Errorf("startup resync made the call %v", c)
		}
	}
}

func equalStrings(a, b []string) bool { return slices.Equal(a, b) }

// harnessScheduler returns a scheduler with one kvtest descriptor per name,
// each handling NAME/{name}, over a new in-memory southbound.
func harnessScheduler(t *testing.T, names ...string) (*scheduler.Scheduler, *kvtest.SB) {
	t.Helper()
	sb := kvtest.NewSB()
	s := newScheduler(t)
	for _, name := range names {
		if err := s.Register(harness(t, sb, kvtest.Config{Name: name, KeyTemplate: name + "/{name}"})); err != nil {
			t.Fatal(err)
		}
	}
	return s, sb
}
