package agent

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLibraryDeps: the agent package may link etcd, gRPC, bbolt, HTTP and
// OpenTelemetry; a program that uses the scheduler alone, or only
// runtime/kv (generated code), or the northbound's Mux, compiles none of
// them (the scheduler's tracing is a hook, scheduler.Tracer).
func TestLibraryDeps(t *testing.T) {
	t.Parallel()
	heavy := []string{"go.etcd.io/", "google.golang.org/grpc", "go.etcd.io/bbolt", "net/http", "github.com/prometheus/", "go.opentelemetry.io/"}
	for _, pkg := range []string{"../scheduler", "../kv", "../nb"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, h := range heavy {
				if dep == h || strings.HasPrefix(dep, h) {
					t.Errorf("runtime/%s compiles %s", strings.TrimPrefix(pkg, "../"), dep)
				}
			}
		}
	}
	// The check sees what it looks for.
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "go.etcd.io/bbolt\n") || !strings.Contains(string(out), "net/http\n") {
		t.Errorf("go list -deps of runtime/agent shows no bbolt or net/http: %v", err)
	}
}
