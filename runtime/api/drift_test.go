package api_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestStatusDrift: a value that drifted (reported, not repaired) has its
// state DRIFTED and its drift in the API's status: the policy and what
// differs, field by field.
func TestStatusDrift(t *testing.T) {
	t.Parallel()
	report := scheduler.WithDriftPolicy(func(string, string) (kv.DriftPolicy, bool) { return kv.DriftReport, true })
	e := newEnv(t, envOptions{file: []nb.Change{{Key: "iface/f", Value: kvtest.Value("mtu:1500")}}, sopts: []scheduler.Option{report}})
	ctx := context.Background()
	e.sb.Put("iface/f", "mtu:1400")
	if _, err := e.s.CheckDrift(ctx, scheduler.DriftCheck{Keys: []string{"iface/f"}}); err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.Status(ctx, connect.NewRequest(&apiv1.StatusRequest{Key: "iface/f"}))
	if err != nil {
		t.Fatal(err)
	}
	st := res.Msg.GetStatuses()[0]
	d := st.GetDrift()
	if st.GetState() != "DRIFTED" || d == nil || d.GetPolicy() != "report" || d.GetMissing() || len(d.GetDiff()) != 1 ||
		d.GetDiff()[0].GetPath() != "value" || d.GetDiff()[0].GetWant() != `"mtu:1500"` || d.GetDiff()[0].GetFound() != `"mtu:1400"` || d.GetNoticed() == nil {
		t.Errorf("status: %s, drift %v", st.GetState(), d)
	}
}
