package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd/etcdtest"
)

// TestFleet runs four agents on one etcd and drives them with kvctl fleet:
// status lists them present; a rollout in waves of two reaches all of them
// and diff then finds nothing; a rollout of a value that stays PENDING
// stops after its first wave, naming the agent and the value, and writes
// nothing to the next waves' agents; diff reports the pending value; an
// agent that stops is absent.
func TestFleet(t *testing.T) {
	srv := etcdtest.Start(t)
	cl := srv.Dial()
	defer cl.Close()
	dir := t.TempDir()
	var agents []*agentProc
	for i := range 4 {
		name := fmt.Sprintf("f%d", i)
		state := filepath.Join(dir, name)
		a := launchAgent(t, &agentProc{server: "unix:" + state + "/grpc.sock"}, "-memory", "-name", name, "-etcd", srv.URL, "-etcd-status",
			"-file", writeConfig(t, dir, name+".yaml", config), "-state-dir", state, "-http", "", "-grpc", "unix:"+state+"/grpc.sock")
		agents = append(agents, a)
	}
	fleet := func(args ...string) (string, int) {
		t.Helper()
		return kvctl(t, append([]string{"fleet", "--endpoints", srv.URL}, args...)...)
	}
	waitFleet := func(what string, cond func(string) bool, args ...string) string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, _ := fleet(args...)
			if cond(out) {
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: kvctl fleet %s:\n%s", what, strings.Join(args, " "), out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	rows := func(out string) map[string][]string {
		m := map[string][]string{}
		for _, line := range strings.Split(out, "\n")[1:] {
			if f := strings.Fields(line); len(f) > 0 {
				m[f[0]] = f
			}
		}
		return m
	}
	waitFleet("four agents present", func(out string) bool {
		r := rows(out)
		for i := range 4 {
			if f := r[fmt.Sprintf("f%d", i)]; len(f) < 4 || f[1] != "yes" || f[3] != "3" { // veth1, veth2, veth1's address
				return false
			}
		}
		return true
	}, "status")

	good := writeConfig(t, dir, "good.yaml", `linux/interface/lo7: {name: lo7, type: TYPE_LOOPBACK, ipAddresses: ["10.7.0.1/32"]}
linux/interface/lo8: {name: lo8, type: TYPE_LOOPBACK, mtu: 1400}
`)
	out, code := fleet("rollout", "-f", good, "--wave", "50%", "--wave-timeout", "20s", "--agents", "f0,f1,f2,f3")
	if code != 0 || !strings.Contains(out, "wave 1/2: 2 agents healthy") || !strings.Contains(out, "wave 2/2: 2 agents healthy") {
		t.Fatalf("rollout: exit code %d\n%s", code, out)
	}
	for i := range 4 {
		if got, _ := agents[i].kvctl(t, "status", "linux/interface/lo7"); !strings.Contains(got, "CONFIGURED") {
			t.Errorf("f%d after the rollout: %s", i, got)
		}
	}
	waitFleet("no difference", func(out string) bool {
		return strings.TrimSpace(out) == "AGENT\tKEY\tDIFFERS\tERROR" || len(rows(out)) == 0
	}, "diff")

	// A key the agents' file source sets: the file wins, and the
	// rollout stops at once naming it.
	shadowed := writeConfig(t, dir, "shadowed.yaml", `linux/interface/veth2: {name: veth2, type: TYPE_VETH, vethPeer: veth1, mtu: 1400}
`)
	out, code = fleet("rollout", "-f", shadowed, "--wave", "1", "--agents", "f0,f1")
	if code != 1 || !strings.Contains(out, `f0: linux/interface/veth2 SHADOWED: the agent's source "file" sets the key`) {
		t.Fatalf("the rollout of a key the file sets: exit code %d\n%s", code, out)
	}

	// A route whose interface no agent has: PENDING on the first wave's
	// agent, which stops the rollout.
	bad := writeConfig(t, dir, "bad.yaml", `linux/route/nosuch0/10.9.0.0/16: {outgoingInterface: nosuch0, dstNetwork: 10.9.0.0/16}
`)
	out, code = fleet("rollout", "-f", bad, "--wave", "1", "--wave-timeout", "3s", "--agents", "f0,f1,f2,f3")
	if code != 1 || !strings.Contains(out, "wave 1/4 (f0)") || !strings.Contains(out, "f0: linux/route/nosuch0/10.9.0.0/16 PENDING") ||
		!strings.Contains(out, "waves 2 to 4 were not written") {
		t.Fatalf("the rollout of a pending value: exit code %d\n%s", code, out)
	}
	for i := 1; i < 4; i++ {
		resp, err := cl.Get(context.Background(), fmt.Sprintf("/kvdescriptor/f%d/config/linux/route/nosuch0/10.9.0.0/16", i), clientv3.WithCountOnly())
		if err != nil || resp.Count != 0 {
			t.Errorf("f%d got the value of a stopped rollout: %v %v", i, resp, err)
		}
	}
	out, code = fleet("diff")
	if code != 1 || !strings.Contains(out, "f0") || !strings.Contains(out, "PENDING") || !strings.Contains(out, "shadowed") || strings.Contains(out, "f1 ") {
		t.Errorf("diff after the stopped rollout: exit code %d\n%s", code, out)
	}

	// An agent that stops is absent at once (its lease is revoked).
	_ = agents[3].cmd.Process.Signal(syscall.SIGTERM)
	_ = agents[3].cmd.Wait()
	waitFleet("f3 absent", func(out string) bool { f := rows(out)["f3"]; return len(f) > 1 && f[1] == "no" }, "status")

	// Bad usage names the flag.
	if out, code := fleet("rollout", "-f", good, "--wave", "0%"); code != 2 || !strings.Contains(out, "--wave") {
		t.Errorf("--wave 0%%: exit code %d\n%s", code, out)
	}
	if out, code := fleet("diff", "a/b"); code != 2 || !strings.Contains(out, `"a/b"`) {
		t.Errorf("diff a/b: exit code %d\n%s", code, out)
	}
}

// TestFleetRolloutHundredValues rolls 100 values out to one agent that
// never reports: each agent's values are one etcd transaction of 100 puts
// (within etcd's 128 operations), and the reads around it (the values and
// statuses before, the statuses while waiting) must not exceed the limit
// either. The wave then times out, with every value written.
func TestFleetRolloutHundredValues(t *testing.T) {
	srv := etcdtest.Start(t)
	cl := srv.Dial()
	defer cl.Close()
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "linux/interface/lo%d: {name: lo%d, type: TYPE_LOOPBACK}\n", i+1, i+1)
	}
	file := writeConfig(t, t.TempDir(), "hundred.yaml", b.String())
	out, code := kvctl(t, "fleet", "--endpoints", srv.URL, "rollout", "-f", file, "--agents", "h0", "--wave", "1", "--wave-timeout", "2s")
	if code == 0 || strings.Contains(out, "too many operations") || !strings.Contains(out, "wave 1/1") {
		t.Fatalf("rollout to an agent that never reports: exit code %d\n%s", code, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := cl.Get(ctx, "/kvdescriptor/h0/config/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || r.Count != 100 {
		t.Fatalf("values written: %v, %v; want 100", r, err)
	}
}
