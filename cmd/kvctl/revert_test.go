package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestApplyRevertRetryNetns: apply --revert and --retry against an agent
// over the kernel (root only). A VXLAN whose VNI another VXLAN of the
// namespace already has (created behind the agent's back) fails in the
// kernel, retriably (EEXIST). With --revert the bridge committed with
// it is removed again; without, it stays. With --retry the failed
// VXLAN is RETRYING and is created once the other VXLAN is gone; without
// it, it is FAILED. --retry --wait with two attempts ends FAILED, after
// retry transactions.
func TestApplyRevertRetryNetns(t *testing.T) {
	ns, run := startNetnsAgent(t, "retry")
	ip := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	hasLink := func(name string) bool { return strings.Contains(ip("-o", "link", "show"), ": "+name+":") }
	// ip link add xo type vxlan id 7 dstport 4789 dev va
	ip("link", "add", "xo", "type", "vxlan", "id", "7", "dstport", "4789", "dev", "va")
	dir := t.TempDir()
	bad := writeConfig(t, dir, "bad.yaml", "linux/interface/rb1: {name: rb1, type: TYPE_BRIDGE, enabled: true}\n"+
		"linux/interface/rx1: {name: rx1, type: TYPE_VXLAN, parent: va, enabled: true, vxlan: {vni: 7}}\n")

	out, code := run("apply", "-f", bad, "--revert")
	if code != 1 || !strings.Contains(out, "reverted") || !strings.Contains(out, "CREATE linux/interface/rb1") {
		t.Fatalf("apply --revert: exit code %d, want 1 with the bridge created and reverted\n%s", code, out)
	}
	if hasLink("rb1") || hasLink("rx1") {
		t.Errorf("after apply --revert:\n%s", ip("-o", "link", "show"))
	}
	if out, _ := run("status", "--owner", "api"); strings.Contains(out, "rb1") {
		t.Errorf("the reverted commit's values are intended:\n%s", out)
	}

	out, code = run("apply", "-f", bad)
	if code != 1 || strings.Contains(out, "reverted") || !hasLink("rb1") {
		t.Fatalf("apply (best-effort): exit code %d, rb1 %v\n%s", code, hasLink("rb1"), out)
	}
	if out, _ := run("status", "linux/interface/rx1"); !strings.Contains(out, "FAILED") {
		t.Errorf("rx1 without --retry:\n%s", out)
	}
	if out, code := run("delete", "linux/interface/rx1", "linux/interface/rb1"); code != 0 {
		t.Fatalf("delete: exit code %d\n%s", code, out)
	}

	retry := writeConfig(t, dir, "retry.yaml", "linux/interface/rx2: {name: rx2, type: TYPE_VXLAN, parent: va, enabled: true, vxlan: {vni: 7}}\n")
	out, code = run("apply", "-f", retry, "--retry", "--retry-period", "200ms", "--retry-max-period", "1s", "--retry-attempts", "1000")
	if code != 0 || !strings.Contains(out, "retrying linux/interface/rx2: ") {
		t.Fatalf("apply --retry: exit code %d, want 0 saying rx2 is retried\n%s", code, out)
	}
	if out, _ := run("status", "linux/interface/rx2"); !strings.Contains(out, "RETRYING") {
		t.Errorf("rx2 with --retry:\n%s", out)
	}
	// ip link del xo: the next retry creates rx2.
	ip("link", "del", "xo")
	waitRun(t, run, "rx2 CONFIGURED", func(out string) bool { return strings.Contains(out, "CONFIGURED") }, "status", "linux/interface/rx2")
	if !hasLink("rx2") {
		t.Errorf("rx2 CONFIGURED is not in the kernel:\n%s", ip("-o", "link", "show"))
	}

	// rx3 wants the VNI that rx2 holds now: two retries, then FAILED.
	never := writeConfig(t, dir, "never.yaml", "linux/interface/rx3: {name: rx3, type: TYPE_VXLAN, parent: vb, enabled: true, vxlan: {vni: 7}}\n")
	out, code = run("apply", "-f", never, "--retry-attempts", "2", "--retry-period", "100ms", "--wait")
	if code != 1 || !strings.Contains(out, "linux/interface/rx3: ") {
		t.Fatalf("apply --retry-attempts 2 --wait: exit code %d, want 1 naming rx3\n%s", code, out)
	}
	if out, _ := run("status", "linux/interface/rx3"); !strings.Contains(out, "FAILED") {
		t.Errorf("rx3 after its retries:\n%s", out)
	}
	out, _ = run("history")
	if n := strings.Count(out, " retry "); n < 2 {
		t.Errorf("history has %d retry transactions, want 2 or more:\n%s", n, out)
	}
}

// waitRun runs kvctl until its output satisfies cond, at most 30 s.
func waitRun(t *testing.T, run func(args ...string) (string, int), what string, cond func(out string) bool, args ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := run(args...)
		if cond(out) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; kvctl %s says:\n%s", what, strings.Join(args, " "), out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
