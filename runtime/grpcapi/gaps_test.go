package grpcapi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

// TestConfirmedCommitWithoutChange: a confirmed commit that would make no
// transaction is refused (FAILED_PRECONDITION, naming confirm_within),
// arms no timer, and leaves the source's state as it was, on disk too.
func TestConfirmedCommitWithoutChange(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, kvtest.NewSB(), dir, envOptions{file: []nb.Change{{Key: "iface/f", Value: kvtest.Value("from-file")}}})
	e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a1")}})
	before, err := os.ReadFile(filepath.Join(dir, "grpc.json"))
	if err != nil {
		t.Fatal(err)
	}
	h0, _ := e.client.History(context.Background(), &apiv1.HistoryRequest{})
	for _, c := range []struct {
		name string
		req  *apiv1.CommitRequest
	}{
		// The source intends that value already.
		{"same value", &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a1")}}},
		// The source's state changes, the merged state does not: the
		// file source's value wins.
		{"overridden", &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/f", "from-grpc")}}},
		// A key nobody intends.
		{"delete of nothing", &apiv1.CommitRequest{Deletes: []string{"iface/none"}}},
	} {
		c.req.ConfirmWithin = durationpb.New(time.Hour)
		_, err := e.client.Commit(context.Background(), c.req)
		if status.Code(err) != codes.FailedPrecondition || !strings.HasPrefix(status.Convert(err).Message(), "confirm_within: ") ||
			!strings.Contains(err.Error(), "no transaction to confirm") {
			t.Errorf("%s: %v, want FAILED_PRECONDITION naming confirm_within", c.name, err)
		}
	}
	after, err := os.ReadFile(filepath.Join(dir, "grpc.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("the state file changed:\n%s\nwas\n%s", after, before)
	}
	st, err := e.client.Status(context.Background(), &apiv1.StatusRequest{Key: "iface/f"})
	if err != nil || st.GetStatuses()[0].GetOverridden() != nil {
		t.Errorf("iface/f: the grpc source's value stayed (overridden %v): %v", st.GetStatuses()[0].GetOverridden(), err)
	}
	h1, _ := e.client.History(context.Background(), &apiv1.HistoryRequest{})
	if len(h1.GetRecords()) != len(h0.GetRecords()) {
		t.Errorf("the refused commits made transactions: %v", h1.GetRecords()[len(h0.GetRecords()):])
	}
	// Nothing awaits confirmation: a commit goes through, and a
	// confirmed commit that changes something gets a deadline.
	e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/b", "b")}})
	resp := e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a2")}, ConfirmWithin: durationpb.New(time.Hour)})
	if resp.GetSeq() == 0 || resp.GetConfirmDeadline() == nil {
		t.Fatalf("a confirmed commit with a change: %v", resp)
	}
}

// TestPlanOutcomes: a plan only says, per value, the state it would
// reach, the source that would own it, and warns where another source's
// value wins.
func TestPlanOutcomes(t *testing.T) {
	e := newEnv(t, kvtest.NewSB(), t.TempDir(), envOptions{file: []nb.Change{
		{Key: "iface/f", Value: kvtest.Value("from-file")},
		{Key: "iface/g", Value: kvtest.Value("same")},
	}})
	e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a1"), value("iface/h", "from-grpc")}})
	plan := e.commit(t, &apiv1.CommitRequest{PlanOnly: true, Values: []*apiv1.Value{
		value("iface/a", "a2"),             // an update of the source's own value
		value("iface/n", "n"),              // a new value
		value("route/p", "dep:iface/none"), // pending: its dependency is missing
		value("iface/f", "from-grpc"),      // the file's key: the file wins
		value("iface/g", "same"),           // the file's key, the same value
	}, Deletes: []string{"iface/h"}})
	type want struct{ state, owner, warning string }
	wants := map[string]want{
		"iface/a": {"CONFIGURED", "grpc", ""},
		"iface/n": {"CONFIGURED", "grpc", ""},
		"route/p": {"PENDING", "grpc", ""},
		"iface/f": {"CONFIGURED", "file", "source file sets this key too, with a higher priority: the grpc source's value would not take effect"},
		"iface/g": {"CONFIGURED", "file", ""},
		"iface/h": {"REMOVED", "", ""},
	}
	if len(plan.GetOutcomes()) != len(wants) {
		t.Errorf("outcomes: %v", plan.GetOutcomes())
	}
	for k, w := range wants {
		o := outcome(plan, k)
		if got := (want{o.GetState(), o.GetOwner(), o.GetWarning()}); got != w {
			t.Errorf("%s: %+v, want %+v", k, got, w)
		}
	}
	// Nothing was applied.
	e.want(t, "iface/a", "a1")
	e.want(t, "iface/n", "")
	e.want(t, "iface/h", "from-grpc")

	// Once the grpc source sets the file's key, a plan that keeps it
	// says so too, and a plan with nothing to do still has outcomes.
	e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/f", "from-grpc")}})
	plan = e.commit(t, &apiv1.CommitRequest{PlanOnly: true, Values: []*apiv1.Value{value("iface/f", "from-grpc-2")}})
	if len(plan.GetPlanned()) != 0 {
		t.Errorf("planned: %v", plan.GetPlanned())
	}
	if o := outcome(plan, "iface/f"); o.GetOwner() != "file" || !strings.Contains(o.GetWarning(), "would not take effect") {
		t.Errorf("iface/f: %v", o)
	}
}

// TestDumpPrefix: Dump keeps the keys under a prefix, in every view; a
// prefix that the descriptor's keys cannot start with, and a view that is
// not one, are INVALID_ARGUMENT naming the field.
func TestDumpPrefix(t *testing.T) {
	e := newEnv(t, kvtest.NewSB(), t.TempDir(), envOptions{})
	e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{
		value("iface/a1", "a"), value("iface/a2", "a"), value("iface/b", "b"), value("route/a1", "r"),
	}})
	ctx := context.Background()
	for _, view := range []apiv1.View{apiv1.View_VIEW_INTENDED, apiv1.View_VIEW_SCHEDULER, apiv1.View_VIEW_SOUTHBOUND} {
		for _, c := range []struct {
			prefix, descriptor string
			keys               string
		}{
			{"iface/a", "", "iface/a1 iface/a2"},
			{"iface/a", "iface", "iface/a1 iface/a2"},
			{"i", "", "iface/a1 iface/a2 iface/b"},
			{"route/", "", "route/a1"},
			{"", "", "iface/a1 iface/a2 iface/b route/a1"},
			{"iface/z", "", ""},
		} {
			d, err := e.client.Dump(ctx, &apiv1.DumpRequest{View: view, Prefix: c.prefix, Descriptor_: c.descriptor})
			if err != nil {
				t.Fatalf("dump %s %q: %v", view, c.prefix, err)
			}
			var keys []string
			for _, it := range d.GetItems() {
				keys = append(keys, it.GetKey())
			}
			if got := strings.Join(keys, " "); got != c.keys {
				t.Errorf("dump %s prefix %q descriptor %q: %q, want %q", view, c.prefix, c.descriptor, got, c.keys)
			}
		}
	}
	for _, c := range []struct {
		name string
		req  *apiv1.DumpRequest
		msg  string
	}{
		{"view", &apiv1.DumpRequest{View: apiv1.View(42), Prefix: "iface/"}, "view: 42"},
		{"prefix", &apiv1.DumpRequest{View: apiv1.View_VIEW_INTENDED, Prefix: "route/", Descriptor_: "iface"}, `prefix: no key of descriptor iface`},
	} {
		_, err := e.client.Dump(ctx, c.req)
		if status.Code(err) != codes.InvalidArgument || !strings.HasPrefix(status.Convert(err).Message(), c.msg) {
			t.Errorf("%s: %v, want INVALID_ARGUMENT saying %q", c.name, err, c.msg)
		}
	}
}
