package docs

import (
	"regexp"
	"strings"
	"testing"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
)

// TestAPIDocRPCs fails when an RPC of the AgentService is not in the gRPC
// table of docs/api.md, or the table names one the service lacks.
func TestAPIDocRPCs(t *testing.T) {
	t.Parallel()
	sec := section(t, readRepoFile(t, "docs/api.md"), "## gRPC")
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\| ([^|]+) \|`).FindAllStringSubmatch(sec, -1) {
		for _, n := range regexp.MustCompile(`\x60(\w+)\x60`).FindAllStringSubmatch(m[1], -1) {
			documented[n[1]] = true
		}
	}
	svcs := apiv1.File_kvdescriptor_api_v1_api_proto.Services()
	if svcs.Len() == 0 {
		t.Fatal("api.proto has no service")
	}
	methods := map[string]bool{}
	for i := range svcs.Len() {
		ms := svcs.Get(i).Methods()
		for j := range ms.Len() {
			methods[string(ms.Get(j).Name())] = true
		}
	}
	for name := range methods {
		if !documented[name] {
			t.Errorf("docs/api.md ## gRPC does not document the RPC %s", name)
		}
	}
	for name := range documented {
		if !methods[name] && strings.ToUpper(name[:1]) == name[:1] {
			t.Errorf("docs/api.md ## gRPC documents %s, which the service does not have", name)
		}
	}
}
