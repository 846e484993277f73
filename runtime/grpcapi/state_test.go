package grpcapi

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestInFlightConfirmedCommitRolledBack: a state file written ahead of a
// confirmed commit that never finished (the agent died during it: the
// confirmation awaited has no sequence number) makes the next server
// start with the state before it, and say so.
func TestInFlightConfirmedCommitRolledBack(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sb := kvtest.NewSB()
	s, err := scheduler.New(scheduler.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	d, err := sb.Descriptor(kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "grpc.json")
	st := &state{
		file:    file,
		current: map[string]proto.Message{"iface/a": kvtest.Value("a2"), "iface/b": kvtest.Value("b")},
		pending: &pendingCommit{previous: map[string]proto.Message{"iface/a": kvtest.Value("a1")}},
	}
	if err := st.save(); err != nil {
		t.Fatal(err)
	}
	mux := nb.NewMux(s, nb.WithMuxLogger(quiet), nb.WithLoadDeadline(0))
	defer mux.Close()
	srv, err := NewServer(Config{Scheduler: s, Mux: mux, StateFile: file, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if got := sb.Values(); len(got) != 1 || got["iface/a"] != "a1" {
		t.Fatalf("southbound %v, want iface/a = a1 only", got)
	}
	h := s.History()
	if len(h) != 1 || !strings.Contains(h[0].Description, "rollback of a confirmed commit that was in flight when the agent stopped") {
		t.Fatalf("history %+v", h)
	}
	again, err := loadState(file, srv.models)
	if err != nil || again.pending != nil || len(again.current) != 1 {
		t.Fatalf("the state file after the start: %+v %v", again, err)
	}
}
