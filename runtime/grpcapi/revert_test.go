package grpcapi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
)

// TestRevertedCommitNotRecorded: a commit with revert that fails and is
// reverted records nothing: neither the gRPC source's state (grpc.json)
// nor the Mux keeps its values, and an agent started again over the same
// state directory does not apply them.
func TestRevertedCommitNotRecorded(t *testing.T) {
	sb, dir := kvtest.NewSB(), t.TempDir()
	e := newEnv(t, sb, dir, envOptions{})
	e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a1")}})
	sb.Fail("iface/c", kvtest.Failure{Op: "create", Times: -1, Terminal: true})
	resp := e.commit(t, &apiv1.CommitRequest{
		Values: []*apiv1.Value{value("iface/a", "a2"), value("iface/b", "b"), value("iface/c", "c")},
		Revert: true,
	})
	if !resp.GetReverted() {
		t.Fatalf("the commit was not reverted: %v", resp)
	}
	e.want(t, "iface/a", "a1")
	e.want(t, "iface/b", "")
	if d := e.mux.Desired("grpc"); len(d) != 1 || d["iface/a"] == nil {
		t.Fatalf("the Mux holds, for the grpc source, %v: want iface/a only", d)
	}
	b, err := os.ReadFile(filepath.Join(dir, "grpc.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"iface/b", "iface/c"} {
		if strings.Contains(string(b), k) {
			t.Fatalf("grpc.json records %s of the reverted commit: %s", k, b)
		}
	}
	// A later commit does not bring them back either.
	e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/d", "d")}})
	e.want(t, "iface/b", "")
	e.stop()
	sb.ClearFailures()

	e = newEnv(t, sb, dir, envOptions{})
	e.want(t, "iface/a", "a1")
	e.want(t, "iface/d", "d")
	e.want(t, "iface/b", "")
	e.want(t, "iface/c", "")
	st, err := e.client.Status(context.Background(), &apiv1.StatusRequest{Owner: "grpc"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range st.GetStatuses() {
		keys = append(keys, s.GetKey())
	}
	if strings.Join(keys, " ") != "iface/a iface/d" {
		t.Fatalf("the grpc source's values after the restart: %v", keys)
	}
}
