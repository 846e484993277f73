package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd/etcdtest"
)

// The agent's end-to-end tests run the built binary, as root, against
// network namespaces they create; without root they fail (never skip).

var agentBin string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "agent-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	agentBin = filepath.Join(dir, "agent")
	if out, err := exec.Command("go", "build", "-o", agentBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the agent's end-to-end tests need root (network namespaces)")
	}
}

// newNetns creates a named network namespace, removed at cleanup.
func newNetns(t *testing.T) (string, *netlink.Handle) {
	t.Helper()
	needRoot(t)
	name := fmt.Sprintf("kvdt-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Close()
		ns.Close()
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del: %v: %s", err, out)
		}
	})
	return name, h
}

// agentProc is a running agent.
type agentProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string
	log    *syncBuffer
	exited chan error
	done   bool
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// httpBound returns the base URL of the agent's HTTP listener, from the
// address its log says it bound ("" until it says so): the agent listens
// on port 0, so that no other process can take its port first.
func (a *agentProc) httpBound() string {
	const mark = " listener=http address="
	log := a.log.String()
	i := strings.Index(log, mark)
	if i < 0 {
		return ""
	}
	addr, _, _ := strings.Cut(log[i+len(mark):], " ")
	return "http://" + addr
}

// startAgent starts the agent with args (plus -http on port 0) and
// waits until it is ready.
func startAgent(t *testing.T, args ...string) *agentProc {
	t.Helper()
	a := startAgentNoWait(t, args...)
	a.waitReady(30 * time.Second)
	return a
}

func startAgentNoWait(t *testing.T, args ...string) *agentProc {
	t.Helper()
	a := &agentProc{t: t, log: &syncBuffer{}, exited: make(chan error, 1)}
	a.cmd = exec.Command(agentBin, append(args, "-http", "127.0.0.1:0", "-log-level", "debug")...)
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.exited <- a.cmd.Wait() }()
	t.Cleanup(func() {
		if !a.done {
			a.stop()
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", a.log.String())
		}
	})
	return a
}

func (a *agentProc) waitReady(limit time.Duration) {
	a.t.Helper()
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		if a.base == "" {
			a.base = a.httpBound()
		}
		if code, _ := a.get("/readyz"); a.base != "" && code == http.StatusOK {
			return
		}
		select {
		case err := <-a.exited:
			a.done = true
			a.t.Fatalf("the agent exited: %v\n%s", err, a.log.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	a.t.Fatalf("the agent was not ready within %v", limit)
}

// stop sends SIGTERM and waits for the agent to exit.
func (a *agentProc) stop() {
	a.t.Helper()
	if a.done {
		return
	}
	a.done = true
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-a.exited:
		if err != nil {
			a.t.Errorf("the agent exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		_ = a.cmd.Process.Kill()
		a.t.Errorf("the agent did not stop within 30 s of SIGTERM")
	}
}

// kill sends SIGKILL.
func (a *agentProc) kill() {
	a.done = true
	_ = a.cmd.Process.Kill()
	<-a.exited
}

func (a *agentProc) get(path string) (int, string) {
	if a.base == "" {
		if a.base = a.httpBound(); a.base == "" {
			return 0, "the agent has not said where it listens yet"
		}
	}
	resp, err := http.Get(a.base + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// getJSON decodes a GET's JSON answer into v.
func (a *agentProc) getJSON(path string, v any) {
	a.t.Helper()
	code, body := a.get(path)
	if code != http.StatusOK {
		a.t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		a.t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
}

// eventually retries cond until it holds or limit passes.
func eventually(t *testing.T, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(limit)
	last := ""
	for {
		ok, detail := cond()
		if ok {
			return
		}
		last = detail
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v: %s", what, limit, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func linkExists(h *netlink.Handle, name string) bool {
	_, err := h.LinkByName(name)
	return err == nil
}

// kernelRoutes lists the destinations of the routes with the agent's
// protocol in h's namespace.
func kernelRoutes(t *testing.T, h *netlink.Handle, proto int) map[string]bool {
	t.Helper()
	filter := &netlink.Route{Protocol: netlink.RouteProtocol(proto), Table: 0}
	list, err := h.RouteListFiltered(netlink.FAMILY_ALL, filter, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, r := range list {
		if r.Dst != nil {
			out[r.Dst.String()] = true
		}
	}
	return out
}

const baseConfig = `linux/interface/veth0:
  name: veth0
  type: TYPE_VETH
  vethPeer: veth1
  enabled: true
linux/interface/veth1:
  name: veth1
  type: TYPE_VETH
  vethPeer: veth0
  enabled: true
linux/interface/br0:
  name: br0
  type: TYPE_BRIDGE
  enabled: true
  ipAddresses: ["192.168.50.1/24"]
linux/route/veth0/10.20.0.0/16:
  outgoingInterface: veth0
  dstNetwork: 10.20.0.0/16
  gwAddr: 10.10.0.254
`

const veth0Addressed = `linux/interface/veth0:
  name: veth0
  type: TYPE_VETH
  vethPeer: veth1
  enabled: true
  ipAddresses: ["10.10.0.1/24"]
`

const veth0Plain = `linux/interface/veth0:
  name: veth0
  type: TYPE_VETH
  vethPeer: veth1
  enabled: true
`

// TestAgentFileSource: the agent on a config file in a fresh namespace;
// an edit applies the difference; a corrupt file removes nothing and is
// reported with file and line; the file fixed again applies.
func TestAgentFileSource(t *testing.T) {
	ns, h := newNetns(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, baseConfig)
	a := startAgent(t, "-name", "t1", "-netns", ns, "-file", cfg, "-state-dir", filepath.Join(dir, "state"), "-load-deadline", "5s")

	eventually(t, 30*time.Second, "veth pair and bridge in the namespace", func() (bool, string) {
		return linkExists(h, "veth0") && linkExists(h, "veth1") && linkExists(h, "br0"), ""
	})
	if routes := kernelRoutes(t, h, linux.DefaultRouteProtocol); routes["10.20.0.0/16"] {
		t.Errorf("the route exists before its gateway is reachable")
	}

	// The edit: veth0's address makes the gateway reachable.
	writeFile(t, cfg, strings.Replace(baseConfig, veth0Plain, veth0Addressed, 1))
	eventually(t, 30*time.Second, "the route after the edit", func() (bool, string) {
		return kernelRoutes(t, h, linux.DefaultRouteProtocol)["10.20.0.0/16"], fmt.Sprint(kernelRoutes(t, h, linux.DefaultRouteProtocol))
	})

	// A corrupt file: nothing removed, the error names file and line.
	writeFile(t, cfg, "linux/interface/veth0:\n  name: veth0\n  type: [\n")
	eventually(t, 30*time.Second, "the problem in the log", func() (bool, string) {
		return strings.Contains(a.log.String(), "config.yaml:3"), ""
	})
	writeFile(t, cfg, "linux/interface/nope/x/y:\n  name: x\n")
	eventually(t, 30*time.Second, "the unknown key in the log", func() (bool, string) {
		return strings.Contains(a.log.String(), "linux/interface/nope/x/y"), ""
	})
	time.Sleep(500 * time.Millisecond)
	for _, l := range []string{"veth0", "veth1", "br0"} {
		if !linkExists(h, l) {
			t.Errorf("%s was removed after a bad file", l)
		}
	}
	if !kernelRoutes(t, h, linux.DefaultRouteProtocol)["10.20.0.0/16"] {
		t.Errorf("the route was removed after a bad file")
	}

	// Fixed: br0 left out now, so it goes.
	fixed := strings.Replace(baseConfig, veth0Plain, veth0Addressed, 1)
	fixed = strings.Replace(fixed, "linux/interface/br0:\n  name: br0\n  type: TYPE_BRIDGE\n  enabled: true\n  ipAddresses: [\"192.168.50.1/24\"]\n", "", 1)
	writeFile(t, cfg, fixed)
	eventually(t, 30*time.Second, "br0 removed", func() (bool, string) { return !linkExists(h, "br0"), "" })
	a.stop()
	for _, l := range []string{"veth0", "veth1"} {
		if !linkExists(h, l) {
			t.Errorf("%s was torn down when the agent stopped", l)
		}
	}
}

// changeCalls sums the create, update and delete calls in the agent's
// metrics.
func (a *agentProc) changeCalls() int {
	a.t.Helper()
	code, body := a.get("/metrics")
	if code != http.StatusOK {
		a.t.Fatalf("GET /metrics: %d %s", code, body)
	}
	n := 0
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "kvdescriptor_scheduler_operations_total{") {
			continue
		}
		if !strings.Contains(line, `op="create"`) && !strings.Contains(line, `op="update"`) && !strings.Contains(line, `op="delete"`) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			n += int(v)
		}
	}
	return n
}

// TestAgentRestart: a restart over a configured namespace makes no
// southbound call; a value of ours that the file dropped while the agent
// was down is removed at start; what the agent never created is left.
func TestAgentRestart(t *testing.T) {
	ns, h := newNetns(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	config := strings.Replace(baseConfig, veth0Plain, veth0Addressed, 1)
	writeFile(t, cfg, config)
	args := []string{"-name", "t2", "-netns", ns, "-file", cfg, "-state-dir", filepath.Join(dir, "state"), "-load-deadline", "5s"}
	a := startAgent(t, args...)
	eventually(t, 30*time.Second, "the route", func() (bool, string) {
		return kernelRoutes(t, h, linux.DefaultRouteProtocol)["10.20.0.0/16"], ""
	})
	a.stop()

	// A link made by somebody else, while the agent is down.
	if out, err := exec.Command("ip", "-n", ns, "link", "add", "other0", "type", "bridge").CombinedOutput(); err != nil {
		t.Fatalf("ip link add: %v: %s", err, out)
	}

	b := startAgent(t, args...)
	time.Sleep(300 * time.Millisecond)
	if n := b.changeCalls(); n != 0 {
		t.Errorf("the restart over a configured namespace made %d southbound calls", n)
	}
	b.stop()

	// br0 dropped from the file while the agent is down: it is ours and
	// nothing wants it, so the next start removes it; other0 stays.
	writeFile(t, cfg, strings.Replace(config, "linux/interface/br0:\n  name: br0\n  type: TYPE_BRIDGE\n  enabled: true\n  ipAddresses: [\"192.168.50.1/24\"]\n", "", 1))
	c := startAgent(t, args...)
	eventually(t, 30*time.Second, "br0 removed at start", func() (bool, string) { return !linkExists(h, "br0"), "" })
	if !linkExists(h, "other0") {
		t.Errorf("a link the agent never created was removed")
	}
	for _, l := range []string{"veth0", "veth1"} {
		if !linkExists(h, l) {
			t.Errorf("%s was removed", l)
		}
	}
	c.stop()
}

var (
	killRoutes = flag.Int("agent.kill.routes", 2000, "routes of the SIGKILL test (the documented long run: 5000)")
	killRuns   = flag.Int("agent.kill.runs", 4, "agent runs killed with SIGKILL (the documented long run: 20)")
)

// TestAgentKilled: the agent killed with SIGKILL at random points of a
// large transaction, and restarted, converges every time, never deletes a
// route that was already in place and still wanted, and leaves none of
// ours behind. Between runs the file changes (half the routes replaced),
// so that each run has a large transaction to be killed in; a first run,
// not killed, times how long applying the routes takes, which bounds the
// random moments of the kills.
//
// The long run: go test -run TestAgentKilled ./examples/agent -agent.kill.routes=5000 -agent.kill.runs=20 -timeout 60m
func TestAgentKilled(t *testing.T) {
	ns, h := newNetns(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	args := []string{"-name", "t3", "-netns", ns, "-file", cfg, "-state-dir", filepath.Join(dir, "state"), "-load-deadline", "5s", "-history", "100"}
	n := *killRoutes
	rng := rand.New(rand.NewPCG(1, 2))
	config := func(shift int) map[string]bool {
		want := map[string]bool{}
		var b strings.Builder
		b.WriteString("linux/interface/d0:\n  name: d0\n  type: TYPE_BRIDGE\n  enabled: true\n  ipAddresses: [\"10.0.0.1/16\"]\n")
		for i := shift; i < n+shift; i++ {
			dst := fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256)
			want[dst] = true
			fmt.Fprintf(&b, "linux/route/d0/%s:\n  outgoingInterface: d0\n  dstNetwork: %s\n", dst, dst)
		}
		writeFile(t, cfg, b.String())
		return want
	}
	exactly := func(run int, want map[string]bool) {
		eventually(t, 300*time.Second, fmt.Sprintf("run %d: exactly the %d wanted routes", run, n), func() (bool, string) {
			got := kernelRoutes(t, h, linux.DefaultRouteProtocol)
			extra := 0
			for dst := range got {
				if !want[dst] {
					extra++
				}
			}
			return len(got) == n && extra == 0, fmt.Sprintf("%d routes, %d not wanted", len(got), extra)
		})
	}

	want := config(0)
	start := time.Now()
	a := startAgentNoWait(t, args...)
	exactly(0, want)
	calib := time.Since(start)
	a.stop()
	t.Logf("run 0: %d routes applied from a fresh start in %v", n, calib.Round(time.Millisecond))

	for run := 1; run <= *killRuns; run++ {
		want := config((run % 2) * (n / 2))
		correct := map[string]bool{}
		for dst := range kernelRoutes(t, h, linux.DefaultRouteProtocol) {
			if want[dst] {
				correct[dst] = true
			}
		}
		a := startAgentNoWait(t, args...)
		delay := time.Duration(rng.Float64() * 2 * float64(calib))
		time.Sleep(delay)
		a.kill()
		mid := kernelRoutes(t, h, linux.DefaultRouteProtocol)
		for dst := range correct {
			if !mid[dst] {
				t.Fatalf("run %d: route %s, correct before the run, was deleted", run, dst)
			}
		}
		inMid := 0
		for dst := range mid {
			if want[dst] {
				inMid++
			}
		}
		if f := flaps(a.log.String(), correct); len(f) > 0 {
			t.Fatalf("run %d: the killed agent planned to delete what was correct before the run: %q", run, f)
		}
		b := startAgent(t, args...)
		exactly(run, want)
		after := kernelRoutes(t, h, linux.DefaultRouteProtocol)
		for dst := range correct {
			if !after[dst] {
				t.Fatalf("run %d: route %s, correct before the run, is gone", run, dst)
			}
		}
		b.stop()
		if f := flaps(b.log.String(), correct); len(f) > 0 {
			t.Fatalf("run %d: the restarted agent deleted what was correct before the run: %q", run, f)
		}
		t.Logf("run %d: killed after %v with %d of %d wanted routes in (and %d others), converged after the restart",
			run, delay.Round(time.Millisecond), inMid, n, len(mid)-inMid)
	}
}

// flaps returns the deletes, in an agent's log of TestAgentKilled, of d0,
// its address or a route of correct (by destination): none is ever
// needed, and one would flap what was already in place (a short-lived
// deletion that a look at the kernel after the kill may miss).
func flaps(log string, correct map[string]bool) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		_, rest, ok := strings.Cut(line, ". DELETE ")
		if !ok {
			continue
		}
		key, _, _ := strings.Cut(rest, " ")
		switch {
		case key == "linux/interface/d0" || strings.HasPrefix(key, "linux/interface/d0/"):
		case strings.HasPrefix(key, "linux/route/d0/") && correct[strings.TrimPrefix(key, "linux/route/d0/")]:
		default:
			continue
		}
		if !slices.Contains(out, strings.TrimSpace(rest)) {
			out = append(out, strings.TrimSpace(rest))
		}
	}
	return out
}

const etcdBridge = `{"name": "br9", "type": "TYPE_BRIDGE", "enabled": true}`

// TestAgentFileAndEtcd: two sources own different keys; the etcd source
// resyncs (its server restarted, its data replaced) and the file's keys
// survive; a key both set goes to the file (higher priority) and the
// status says who was overridden. With etcd down at a restart, etcd's
// values stay applied until it loads; the final state equals what the
// file and etcd hold.
func TestAgentFileAndEtcd(t *testing.T) {
	ns, h := newNetns(t)
	srv := etcdtest.Start(t)
	client := srv.NewClient()
	ctx := context.Background()
	prefix := "/kvdescriptor/t4/config/"
	if _, err := client.Put(ctx, prefix+"linux/interface/br9", etcdBridge); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Put(ctx, prefix+"linux/interface/veth0", `{"name": "veth0", "type": "TYPE_VETH", "vethPeer": "veth1", "mtu": 1400}`); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, baseConfig)
	args := []string{"-name", "t4", "-netns", ns, "-file", cfg, "-etcd", srv.URL, "-etcd-status",
		"-state-dir", filepath.Join(dir, "state"), "-load-deadline", "2s"}
	a := startAgent(t, args...)
	eventually(t, 30*time.Second, "both sources applied", func() (bool, string) {
		return linkExists(h, "br9") && linkExists(h, "br0") && linkExists(h, "veth0"), ""
	})
	st := a.status("linux/interface/veth0")
	if st.GetOwner() != "file" || len(st.GetOverridden()) != 1 || st.GetOverridden()[0] != "etcd" {
		t.Errorf("veth0: owner %q, overridden %v; want file over etcd", st.GetOwner(), st.GetOverridden())
	}
	if l, err := h.LinkByName("veth0"); err == nil && l.Attrs().MTU == 1400 {
		t.Errorf("veth0 has etcd's MTU: the file's value should win")
	}
	// The status written back to etcd.
	eventually(t, 30*time.Second, "the status in etcd", func() (bool, string) {
		resp, err := client.Get(ctx, "/kvdescriptor/t4/status/linux/interface/br9")
		return err == nil && len(resp.Kvs) == 1 && strings.Contains(string(resp.Kvs[0].Value), "CONFIGURED"), ""
	})

	// etcd's store replaced: its server restarted on an empty data
	// directory holding another bridge. The source resyncs; the file's
	// keys survive.
	srv.Stop()
	if err := os.RemoveAll(srv.Dir); err != nil {
		t.Fatal(err)
	}
	srv.Start()
	c2 := srv.NewClient()
	if _, err := c2.Put(ctx, prefix+"linux/interface/br8", `{"name": "br8", "type": "TYPE_BRIDGE"}`); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "etcd's resync", func() (bool, string) {
		return linkExists(h, "br8") && !linkExists(h, "br9"), ""
	})
	for _, l := range []string{"br0", "veth0", "veth1"} {
		if !linkExists(h, l) {
			t.Errorf("%s, the file's, was removed by etcd's resync", l)
		}
	}
	a.stop()

	// A restart with etcd down: the file loads, etcd does not; after the
	// deadline the agent starts with etcd's remembered values kept.
	srv.Stop()
	b := startAgentNoWait(t, args...)
	time.Sleep(3 * time.Second)
	if !linkExists(h, "br8") {
		t.Errorf("br8, etcd's, was removed while etcd was unreachable")
	}
	srv.Start()
	b.waitReady(30 * time.Second)
	if !linkExists(h, "br8") || !linkExists(h, "br0") {
		t.Errorf("after etcd came back: br8 %v, br0 %v", linkExists(h, "br8"), linkExists(h, "br0"))
	}
	b.stop()
}

// TestAgentSouthboundView: the API's southbound view reads the kernel
// through Retrieve: an address removed behind the agent's back is missing
// from it while the scheduler still intends it.
func TestAgentSouthboundView(t *testing.T) {
	ns, _ := newNetns(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, baseConfig)
	// The address's drift policy is report: under the default, repair,
	// the watcher sees the kernel drop it and the agent puts it back,
	// possibly before the view below is read.
	conf := filepath.Join(dir, "agent.yaml")
	writeFile(t, conf, "drift: {policies: [{prefix: linux/interface/br0/address/, policy: report}]}\n")
	a := startAgent(t, "-config", conf, "-name", "t5", "-netns", ns, "-file", cfg, "-state-dir", filepath.Join(dir, "state"))
	addr := "linux/interface/br0/address/192.168.50.1/24"
	eventually(t, 30*time.Second, "br0's address", func() (bool, string) {
		code, body := a.get("/scheduler/dump?view=SB&key-prefix=linux/interface/br0/")
		return code == http.StatusOK && strings.Contains(body, addr), body
	})
	if out, err := exec.Command("ip", "-n", ns, "addr", "del", "192.168.50.1/24", "dev", "br0").CombinedOutput(); err != nil {
		t.Fatalf("ip addr del: %v: %s", err, out)
	}
	if code, body := a.get("/scheduler/dump?view=SB&key-prefix=linux/interface/br0/"); code != http.StatusOK || strings.Contains(body, addr) {
		t.Errorf("the southbound view after the address was removed: %d %s", code, body)
	}
	// The watcher's drift check reports the loss (MISSING) and, under report,
	// leaves the kernel alone; the scheduler still intends the address.
	// (Its cached view of applied values drops the address once the check
	// has run, which may be before the view above was read: not checked.)
	eventually(t, 30*time.Second, "the address reported missing", func() (bool, string) {
		var st struct {
			Statuses []struct {
				State    string
				Intended bool
				Drift    struct {
					Missing bool
					Policy  string
				}
			}
		}
		a.getJSON("/v1/status?key="+addr, &st)
		ok := len(st.Statuses) == 1 && st.Statuses[0].State == "MISSING" && st.Statuses[0].Intended &&
			st.Statuses[0].Drift.Missing && st.Statuses[0].Drift.Policy == "report"
		return ok, fmt.Sprintf("%+v", st)
	})
	if code, body := a.get("/scheduler/dump?view=SB&key-prefix=linux/interface/br0/"); code != http.StatusOK || strings.Contains(body, addr) {
		t.Errorf("the southbound view after the drift was reported: %d %s", code, body)
	}
}
