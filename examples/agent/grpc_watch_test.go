package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
)

// TestAgentGRPCWatchLostUpdates: a Watch client of the agent binary with
// a buffer of one update, reading nothing while transactions change forty
// values each, is told, when it reads again, that updates were lost; a
// re-read then gives the last state of every value.
func TestAgentGRPCWatchLostUpdates(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, "linux/interface/br0: {name: br0, type: TYPE_BRIDGE, enabled: true}\n")
	state := filepath.Join(dir, "state")
	startAgent(t, "-name", "tw", "-memory", "-file", cfg, "-state-dir", state)
	sock := filepath.Join(state, "grpc.sock")
	c := grpcClient(t, sock)
	// The watcher's own connection.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := grpcClient(t, sock).Watch(ctx, &apiv1.WatchRequest{Prefix: "linux/interface/lw", Buffer: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	// The header comes once the watch is registered: what is committed
	// after it is seen.
	_ = stream.ResponseHeader()
	w := recver{stream}
	commit := func(mtu int) {
		t.Helper()
		req := &apiv1.CommitRequest{}
		for i := range 40 {
			name := fmt.Sprintf("lw%02d", i)
			req.Values = append(req.Values, &apiv1.Value{
				Key:      "linux/interface/" + name,
				Value:    &apiv1.Value_Json{Json: fmt.Sprintf(`{"name": %q, "type": "TYPE_BRIDGE", "mtu": %d}`, name, mtu)},
				JsonType: "linux.interfaces.v1.Interface",
			})
		}
		if _, err := c.Commit(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	// The first update arrives: the stream is set up.
	commit(1000)
	if m, err := w.Recv(); err != nil || m.GetStatus() == nil {
		t.Fatalf("first: %v %v", m, err)
	}
	// Nothing read while five transactions deliver forty statuses at
	// once each.
	for i := 1; i <= 5; i++ {
		commit(1000 + i)
	}
	var lost uint64
	for lost == 0 {
		m, err := w.Recv()
		if err != nil {
			t.Fatalf("no lost_updates before %v", err)
		}
		lost = m.GetLostUpdates()
	}
	t.Logf("%d updates lost", lost)
	st, err := c.Status(ctx, &apiv1.StatusRequest{Prefix: "linux/interface/lw"})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.GetStatuses()) != 40 {
		t.Fatalf("re-read: %d values, want 40", len(st.GetStatuses()))
	}
	for _, s := range st.GetStatuses() {
		if s.GetState() != "CONFIGURED" || valueMTU(t, s) != 1005 {
			t.Errorf("re-read %s: %s, mtu %d; want CONFIGURED, mtu 1005", s.GetKey(), s.GetState(), valueMTU(t, s))
		}
	}
}

func valueMTU(t *testing.T, s *apiv1.ValueStatus) int {
	t.Helper()
	m, err := s.GetValue().UnmarshalNew()
	if err != nil {
		t.Fatal(err)
	}
	fd := m.ProtoReflect().Descriptor().Fields().ByName("mtu")
	return int(m.ProtoReflect().Get(fd).Uint())
}

// recver reads a server stream one message at a time.
type recver struct {
	st *connect.ServerStreamForClient[apiv1.WatchResponse]
}

func (r recver) Recv() (*apiv1.WatchResponse, error) {
	if r.st.Receive() {
		return r.st.Msg(), nil
	}
	if err := r.st.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}
