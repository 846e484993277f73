package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func planConfig(mtu int, routes ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "linux/interface/veth0: {name: veth0, type: TYPE_VETH, vethPeer: veth1, enabled: true, mtu: %d}\n", mtu)
	b.WriteString("linux/interface/veth1: {name: veth1, type: TYPE_VETH, vethPeer: veth0, enabled: true}\n")
	for _, dst := range routes {
		fmt.Fprintf(&b, "linux/route/veth0/%s: {outgoingInterface: veth0, dstNetwork: %s}\n", dst, dst)
	}
	return b.String()
}

type opsOnly struct {
	Seq         uint64 `json:"seq,string"`
	Description string `json:"description"`
	Planned     []struct {
		Key string `json:"key"`
		Op  string `json:"kind"`
	} `json:"planned"`
	Executed []struct {
		Key string `json:"key"`
		Op  string `json:"kind"`
	} `json:"executed"`
}

// TestAgentPlanFileIsTheApply: POST /v1/plan/file previews exactly
// what writing that file executes, the deletes of the keys the new file
// drops included (it is a dry run of the file source's own apply).
func TestAgentPlanFileIsTheApply(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, planConfig(1500, "10.20.0.0/16", "10.21.0.0/16"))
	a := startAgent(t, "-name", "tp", "-memory", "-file", cfg, "-state-dir", filepath.Join(dir, "state"))
	r2 := "linux/route/veth0/10.21.0.0/16"
	eventually(t, 20*time.Second, "R2 configured", func() (bool, string) {
		code, body := a.get("/v1/status?key=" + r2)
		return code == http.StatusOK && strings.Contains(body, `"CONFIGURED"`), body
	})

	next := planConfig(1400, "10.20.0.0/16", "10.22.0.0/16")
	resp, err := http.Post(a.base+"/v1/plan/file", "application/yaml", strings.NewReader(next))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var plan opsOnly
	if err := json.Unmarshal(body, &plan); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/plan/file: %d %s (%v)", resp.StatusCode, body, err)
	}
	var planned []string
	for _, op := range plan.Planned {
		planned = append(planned, op.Op+" "+op.Key)
	}
	if !slices.Contains(planned, "DELETE "+r2) {
		t.Errorf("the preview does not delete R2: %v", planned)
	}

	var before []opsOnly
	a.getJSON("/scheduler/txn-history", &before)
	last := before[len(before)-1].Seq
	writeFile(t, cfg, next)
	var rec opsOnly
	eventually(t, 20*time.Second, "the file's transaction", func() (bool, string) {
		var h []opsOnly
		a.getJSON("/scheduler/txn-history", &h)
		for _, r := range h {
			if r.Seq > last && strings.Contains(r.Description, "source file") {
				rec = r
				return true, ""
			}
		}
		return false, fmt.Sprint(h)
	})
	var executed []string
	for _, op := range rec.Executed {
		executed = append(executed, op.Op+" "+op.Key)
	}
	if strings.Join(planned, "\n") != strings.Join(executed, "\n") {
		t.Fatalf("the preview differs from what writing the file executed:\n--- preview\n%s\n--- executed\n%s",
			strings.Join(planned, "\n"), strings.Join(executed, "\n"))
	}
}
