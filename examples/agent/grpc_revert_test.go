package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
)

// TestAgentGRPCRevertedCommitStaysReverted: a commit with revert whose
// VXLAN fails in the kernel is reverted (its bridge removed); an agent
// restarted over the same state directory applies none of its values: a
// reverted commit records nothing (the store).
func TestAgentGRPCRevertedCommitStaysReverted(t *testing.T) {
	ns, h := newNetns(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, veth0Plain+`linux/interface/veth1: {name: veth1, type: TYPE_VETH, vethPeer: veth0, enabled: true}
`)
	state := filepath.Join(dir, "state")
	args := []string{"-name", "tr", "-netns", ns, "-file", cfg, "-state-dir", state}
	a := startAgent(t, args...)
	eventually(t, 20*time.Second, "veth0", func() (bool, string) { return linkExists(h, "veth0"), "" })
	c := grpcClient(t, filepath.Join(state, "grpc.sock"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// The VXLAN's MTU is beyond what its parent (MTU 1500) allows: the
	// kernel refuses it.
	vxlan := &apiv1.Value{
		Key:      "linux/interface/vx5",
		Value:    &apiv1.Value_Json{Json: `{"name": "vx5", "type": "TYPE_VXLAN", "parent": "veth0", "enabled": true, "mtu": 9000, "vxlan": {"vni": 5}}`},
		JsonType: "linux.interfaces.v1.Interface",
	}
	resp, err := c.Commit(ctx, &apiv1.CommitRequest{Values: []*apiv1.Value{bridge("br5"), vxlan}, Revert: true, Description: "to be reverted"})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.GetReverted() {
		t.Fatalf("the commit was not reverted: %v", resp)
	}
	if linkExists(h, "br5") || linkExists(h, "vx5") {
		t.Fatalf("after the revert br5 %v, vx5 %v exist", linkExists(h, "br5"), linkExists(h, "vx5"))
	}
	lastBefore := resp.GetSeq()
	a.stop()

	startAgent(t, args...)
	c = grpcClient(t, filepath.Join(state, "grpc.sock"))
	st, err := c.Status(ctx, &apiv1.StatusRequest{Owner: "api"})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.GetStatuses()) != 0 {
		t.Fatalf("after the restart the api source sets %v", st.GetStatuses())
	}
	if linkExists(h, "br5") || linkExists(h, "vx5") {
		t.Fatalf("after the restart br5 %v, vx5 %v exist", linkExists(h, "br5"), linkExists(h, "vx5"))
	}
	hist, err := c.History(ctx, &apiv1.HistoryRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// The run before went on after the commit: its watcher may report the
	// VXLAN that the failed create left for a moment (OBTAINED, then gone)
	// after lastBefore. The restart's transactions begin with its startup
	// resync.
	restarted := false
	for _, r := range hist.GetRecords() {
		if r.GetSeq() > lastBefore && strings.HasPrefix(r.GetDescription(), "startup") {
			restarted = true
		}
		if !restarted {
			continue // the history of the run before, kept
		}
		for _, op := range r.GetExecuted() {
			if strings.Contains(op.GetKey(), "br5") || strings.Contains(op.GetKey(), "vx5") {
				t.Errorf("after the restart transaction %d (%s) touches %s", r.GetSeq(), r.GetDescription(), op.GetKey())
			}
		}
	}
	if !restarted {
		t.Errorf("no startup resync after #%d in the history: %v", lastBefore, hist.GetRecords())
	}
}
