package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd/etcdtest"
)

// waitLog waits up to limit for the agent's log to contain s, and reports
// whether it did.
func (a *agentProc) waitLog(limit time.Duration, s string) bool {
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		if strings.Contains(a.log.String(), s) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return strings.Contains(a.log.String(), s)
}

func runIP(args ...string) ([]byte, error) { return exec.Command("ip", args...).CombinedOutput() }

// state is the state of key in the agent's Status ("" when it has no
// value).
func (a *agentProc) state(key string) string {
	a.t.Helper()
	return a.status(key).GetState()
}

// TestAgentEtcdBackBeforeDeadline: etcd is down when the agent starts and
// comes back before the load deadline, holding other values than those
// the agent applied last. The kernel watcher must not have the leftover
// bridges taken for another program's before the startup resync: the
// resync removes the bridge etcd dropped (it is in the agent's record),
// keeps the one it still wants and creates the new one; nothing fails
// afterwards.
func TestAgentEtcdBackBeforeDeadline(t *testing.T) {
	ns, h := newNetns(t)
	srv := etcdtest.Start(t)
	client := srv.NewClient()
	ctx := context.Background()
	prefix := "/kvdescriptor/t6/config/"
	bridge := func(name string) string {
		return fmt.Sprintf(`{"name": %q, "type": "TYPE_BRIDGE", "enabled": true}`, name)
	}
	for _, b := range []string{"brx", "bry"} {
		if _, err := client.Put(ctx, prefix+"linux/interface/"+b, bridge(b)); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, "linux/interface/brf:\n  name: brf\n  type: TYPE_BRIDGE\n  enabled: true\n")
	args := []string{"-name", "t6", "-netns", ns, "-file", cfg, "-etcd", srv.URL, "-state-dir", filepath.Join(dir, "state")}
	a := startAgent(t, append(args, "-load-deadline", "2s")...)
	eventually(t, 30*time.Second, "brf, brx and bry", func() (bool, string) {
		return linkExists(h, "brf") && linkExists(h, "brx") && linkExists(h, "bry"), ""
	})
	a.stop()

	// While the agent is down: etcd drops brx and adds brz, then stops.
	if _, err := client.Delete(ctx, prefix+"linux/interface/brx"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Put(ctx, prefix+"linux/interface/brz", bridge("brz")); err != nil {
		t.Fatal(err)
	}
	srv.Stop()

	b := startAgentNoWait(t, append(args, "-load-deadline", "60s")...)
	// Time for the watcher's first read (50 ms after its first event),
	// had it started: no notification may come before the startup resync.
	if !b.waitLog(30*time.Second, "agent started") {
		t.Fatalf("the agent did not start")
	}
	if b.waitLog(2*time.Second, "(SB notification)") {
		t.Errorf("a kernel notification was applied before the startup resync")
	}
	srv.Start()
	b.waitReady(30 * time.Second)
	eventually(t, 30*time.Second, "brx removed, brz created, bry and brf kept", func() (bool, string) {
		return !linkExists(h, "brx") && linkExists(h, "brz") && linkExists(h, "bry") && linkExists(h, "brf"),
			fmt.Sprintf("brx %v, brz %v, bry %v, brf %v", linkExists(h, "brx"), linkExists(h, "brz"), linkExists(h, "bry"), linkExists(h, "brf"))
	})
	// The watcher's reads after the resync change none of it: a new
	// link of another program makes it read again.
	if out, err := runIP("-n", ns, "link", "add", "other6", "type", "bridge"); err != nil {
		t.Fatalf("ip link add: %v: %s", err, out)
	}
	eventually(t, 30*time.Second, "other6 OBTAINED", func() (bool, string) {
		st := b.state("linux/interface/other6")
		return st == "OBTAINED", st
	})
	for key, want := range map[string]string{
		"linux/interface/brx": "" /* no value: NOT_FOUND */, "linux/interface/bry": "CONFIGURED",
		"linux/interface/brz": "CONFIGURED", "linux/interface/brf": "CONFIGURED",
	} {
		if got := b.state(key); got != want {
			t.Errorf("%s: %s, want %s", key, got, want)
		}
	}
	if linkExists(h, "brx") {
		t.Errorf("brx, dropped by etcd, is still in the kernel")
	}
	if strings.Contains(b.log.String(), "file exists") {
		t.Errorf("a create failed with \"file exists\"")
	}
	b.stop()
}

// TestAgentRouteProtocolIsNotOwnership: the record in the state
// directory, not the route protocol number, says what is the agent's. A
// route with the agent's protocol that was there before its first start
// stays (OBTAINED); two agents in one namespace, with the same number and
// their own state directories, keep each other's routes across restarts;
// -claim-route-protocol deletes the routes with the number that no source
// wants.
func TestAgentRouteProtocolIsNotOwnership(t *testing.T) {
	ns, h := newNetns(t)
	// Another program: ip link add ext7 type bridge; ip route add ... proto 212
	for _, args := range [][]string{
		{"-n", ns, "link", "add", "ext7", "type", "bridge"},
		{"-n", ns, "link", "set", "ext7", "up"},
		{"-n", ns, "route", "add", "10.61.0.0/24", "dev", "ext7", "proto", fmt.Sprint(linux.DefaultRouteProtocol)},
	} {
		if out, err := runIP(args...); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	agentArgs := func(name, bridge, dst string) []string {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "config.yaml")
		writeFile(t, cfg, fmt.Sprintf("linux/interface/%[1]s:\n  name: %[1]s\n  type: TYPE_BRIDGE\n  enabled: true\n"+
			"linux/route/%[1]s/%[2]s:\n  outgoingInterface: %[1]s\n  dstNetwork: %[2]s\n", bridge, dst))
		return []string{"-name", name, "-netns", ns, "-file", cfg, "-state-dir", filepath.Join(dir, "state"), "-load-deadline", "5s"}
	}
	routes := func() map[string]bool { return kernelRoutes(t, h, linux.DefaultRouteProtocol) }
	all := func(dsts ...string) func() (bool, string) {
		return func() (bool, string) {
			got := routes()
			for _, d := range dsts {
				if !got[d] {
					return false, fmt.Sprint(got)
				}
			}
			return true, fmt.Sprint(got)
		}
	}
	argsA := agentArgs("t7a", "da7", "10.62.0.0/24")
	argsB := agentArgs("t7b", "db7", "10.63.0.0/24")

	// First start of A: its route is created, the other program's stays.
	a := startAgent(t, argsA...)
	eventually(t, 30*time.Second, "A's route", all("10.62.0.0/24"))
	if !routes()["10.61.0.0/24"] {
		t.Fatalf("the route with the agent's protocol that it never made was deleted at its first start: %v", routes())
	}
	if st := a.state("linux/route/ext7/10.61.0.0/24"); st != "OBTAINED" {
		t.Errorf("the other program's route: %s, want OBTAINED", st)
	}

	// B in the same namespace, with the same protocol number.
	b := startAgent(t, argsB...)
	eventually(t, 30*time.Second, "B's route", all("10.61.0.0/24", "10.62.0.0/24", "10.63.0.0/24"))
	// Each restarts: a startup resync reads the other's route.
	a.stop()
	a = startAgent(t, argsA...)
	b.stop()
	b = startAgent(t, argsB...)
	// Both have made their startup resync and are ready: nothing of the
	// other's went.
	if ok, got := all("10.61.0.0/24", "10.62.0.0/24", "10.63.0.0/24")(); !ok {
		t.Errorf("after both restarted: %s", got)
	}
	if st := a.state("linux/route/db7/10.63.0.0/24"); st != "OBTAINED" {
		t.Errorf("B's route in A: %s, want OBTAINED", st)
	}
	if st := b.state("linux/route/da7/10.62.0.0/24"); st != "OBTAINED" {
		t.Errorf("A's route in B: %s, want OBTAINED", st)
	}
	b.stop()
	a.stop()

	// A claims the number: what no source of A wants goes, its own stays.
	a = startAgent(t, append(argsA, "-claim-route-protocol")...)
	eventually(t, 30*time.Second, "only A's route", func() (bool, string) {
		got := routes()
		return got["10.62.0.0/24"] && len(got) == 1, fmt.Sprint(got)
	})
	a.stop()
}
