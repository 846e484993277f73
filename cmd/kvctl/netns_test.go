package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// netnsConfig is the agent's file source: a veth pair.
const netnsConfig = `linux/interface/va: {name: va, type: TYPE_VETH, vethPeer: vb, enabled: true}
linux/interface/vb: {name: vb, type: TYPE_VETH, vethPeer: va, enabled: true}
`

// TestApplyPlanNetns shows the plan of a file against an agent over the
// kernel, in a network namespace of its own (root only, like the agent's
// tests): the plan changes nothing in the namespace; the apply that
// follows does.
func TestApplyPlanNetns(t *testing.T) {
	ns, run := startNetnsAgent(t, "plan")
	links := func() string {
		out, err := exec.Command("ip", "-n", ns, "-o", "link", "show").CombinedOutput()
		if err != nil {
			t.Fatalf("ip link: %v: %s", err, out)
		}
		return string(out)
	}

	out, code := run("apply", "-f", "netns.yaml", "--plan")
	if code != 0 {
		t.Fatalf("apply --plan: exit code %d\n%s", code, out)
	}
	golden(t, "netns-apply-plan", mask(out))
	if l := links(); strings.Contains(l, "ve0") {
		t.Errorf("the plan created links:\n%s", l)
	}

	out, code = run("apply", "-f", "netns.yaml", "--wait")
	if code != 0 {
		t.Fatalf("apply --wait: exit code %d\n%s", code, out)
	}
	// The agent's own transactions (the kernel's notifications) come
	// and go: the sequence number is masked.
	golden(t, "netns-apply", regexp.MustCompile(`transaction \d+`).ReplaceAllString(mask(out), "transaction N"))
	if l := links(); !strings.Contains(l, "ve0@ve1") && !strings.Contains(l, "ve0@") {
		t.Errorf("apply did not create ve0:\n%s", l)
	}
	if !bytes.Contains([]byte(links()), []byte("mtu 1400")) {
		t.Errorf("apply did not set ve0's MTU:\n%s", links())
	}
}

// startNetnsAgent starts the agent over the kernel in a network namespace
// of its own (named after the test's tag; root only, like the agent's
// tests) with the veth pair of netnsConfig, waits until it configured
// them, and returns the namespace and a function running kvctl against
// the agent.
func startNetnsAgent(t *testing.T, tag string) (string, func(args ...string) (string, int)) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("%s needs root (network namespaces)", t.Name())
	}
	ns := fmt.Sprintf("kvctl-%s-%d", tag, os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			t.Errorf("ip netns del: %v: %s", err, out)
		}
	})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cfg.yaml")
	if err := os.WriteFile(cfg, []byte(netnsConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := "unix:" + filepath.Join(dir, "grpc.sock")
	var log syncBuffer
	// -retry 0: the agent retries no source's transaction of its own accord
	// (its default policy does), so that apply without --retry is FAILED.
	agent := exec.Command(agentBin, "-name", "kvctl-netns", "-netns", ns, "-file", cfg, "-state-dir", dir, "-http", "", "-grpc", sock, "-retry", "0")
	agent.Stdout, agent.Stderr = &log, &log
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = agent.Process.Signal(syscall.SIGTERM)
		_ = agent.Wait()
	})
	run := func(args ...string) (string, int) {
		t.Helper()
		return kvctl(t, append([]string{"--server", sock}, args...)...)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := run("status", "linux/interface/va")
		if strings.Contains(out, "CONFIGURED") {
			return ns, run
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not configure va: %s\n%s", out, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
