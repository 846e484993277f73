package main

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
)

func bridge(name string) *apiv1.Value {
	return &apiv1.Value{
		Key:      "linux/interface/" + name,
		Value:    &apiv1.Value_Json{Json: `{"name": "` + name + `", "type": "TYPE_BRIDGE", "enabled": true}`},
		JsonType: "linux.interfaces.v1.Interface",
	}
}

// TestAgentGRPC: the agent binary (in-memory southbound) serves the gRPC
// API on a Unix socket of its state directory: a commit of the api
// source, the file source's key left to the file, and a commit awaiting
// confirmation when the agent stops, rolled back by its next start.
func TestAgentGRPC(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, "linux/interface/br0: {name: br0, type: TYPE_BRIDGE, enabled: true}\n")
	state := filepath.Join(dir, "state")
	args := []string{"-name", "tg", "-memory", "-file", cfg, "-state-dir", state}
	a := startAgent(t, args...)
	c := grpcClient(t, filepath.Join(state, "grpc.sock"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	resp, err := c.Commit(ctx, &apiv1.CommitRequest{Values: []*apiv1.Value{bridge("br1"), bridge("br0")}, Wait: true, Description: "over gRPC"})
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]string{}
	for _, o := range resp.GetOutcomes() {
		owners[o.GetKey()] = o.GetOwner() + " " + o.GetState()
	}
	if owners["linux/interface/br1"] != "api CONFIGURED" || owners["linux/interface/br0"] != "file CONFIGURED" || !resp.GetSettled() {
		t.Fatalf("outcomes: %v", resp)
	}
	_, err = c.Commit(ctx, &apiv1.CommitRequest{Values: []*apiv1.Value{{Key: "linux/nothing/x", Value: &apiv1.Value_Json{Json: "{}"}}}})
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), `values[0].key: "linux/nothing/x" is not a key of any model`) {
		t.Fatalf("bad key: %v", err)
	}

	// A commit awaiting confirmation when the agent stops.
	pending, err := c.Commit(ctx, &apiv1.CommitRequest{Values: []*apiv1.Value{bridge("br2")}, ConfirmWithin: durationpb.New(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := c.Status(ctx, &apiv1.StatusRequest{Key: "linux/interface/br2"}); err != nil || st.GetStatuses()[0].GetState() != "CONFIGURED" {
		t.Fatalf("br2: %v %v", st, err)
	}
	a.stop()

	startAgent(t, args...)
	c = grpcClient(t, filepath.Join(state, "grpc.sock"))
	if _, err := c.Status(ctx, &apiv1.StatusRequest{Key: "linux/interface/br2"}); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("br2 after the restart: %v", err)
	}
	st, err := c.Status(ctx, &apiv1.StatusRequest{Owner: "api"})
	if err != nil || len(st.GetStatuses()) != 1 || st.GetStatuses()[0].GetKey() != "linux/interface/br1" {
		t.Fatalf("the api source's values after the restart: %v %v", st, err)
	}
	h, err := c.History(ctx, &apiv1.HistoryRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := "rollback of commit " + strconv.FormatUint(pending.GetSeq(), 10) + ", which awaited confirmation when the agent stopped"
	found := false
	for _, r := range h.GetRecords() {
		found = found || strings.Contains(r.GetDescription(), want)
	}
	if !found {
		t.Fatalf("no record says %q: %v", want, h)
	}
	if _, err := c.Confirm(ctx, &apiv1.ConfirmRequest{Seq: pending.GetSeq()}); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("confirm after the restart: %v", err)
	}
}
