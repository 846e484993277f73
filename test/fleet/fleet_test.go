// Package fleet measures a fleet of real agent processes on a real
// 3-member etcd cluster: a fleet-wide change, the leader killed during a
// change, a follower killed and restarted, compaction during a change, a
// rollout in waves with kvctl fleet rollout, and the load the fleet puts
// on etcd. Figures are logged (t.Logf), never asserted; the test asserts
// only that every agent converges (within a generous bound) with nothing
// lost and nothing wrongly deleted.
//
// The CI run uses 10 agents; BENCHMARKS.md ("Fleet on etcd") gives the
// long command (KVD_FLEET_AGENTS=200).
package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	etcdsrc "github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd/etcdtest"
)

var agentBin, kvctlBin string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "kvfleet-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	agentBin = filepath.Join(dir, "agent")
	kvctlBin = filepath.Join(dir, "kvctl")
	// Without -race: the agents' memory is what a fleet would see.
	for bin, pkg := range map[string]string{agentBin: "../../examples/agent", kvctlBin: "../../cmd/kvctl"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, out)
			return 1
		}
	}
	return m.Run()
}

// envInt reads a positive integer from the environment, or def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// perAgent is the number of values of one change at one agent.
const perAgent = 100

// converge is the generous bound of a convergence (a loaded machine).
const converge = 5 * time.Minute

type fleet struct {
	t      *testing.T
	c      *etcdtest.Cluster
	cl     *clientv3.Client
	names  []string
	procs  []*exec.Cmd
	logs   []*syncBuffer
	dirs   map[string]string // each agent's state directory
	rounds int
	// want are the values each agent must have CONFIGURED, by agent and
	// configuration key.
	want map[string]map[string]ifc
	// netns are the agents in network namespaces (the Linux plugin) and
	// their namespaces; the others use the in-memory southbound.
	netns map[string]string
	// proxies are the partitioned agent's (partitioned) routes to the
	// members.
	proxies     []*proxy
	partitioned string
	// historyChecked counts the transactions checkHistory read.
	historyChecked int
}

// ifc is a linux/interface value the harness writes.
type ifc struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Enabled bool     `json:"enabled,omitempty"`
	MTU     int      `json:"mtu,omitempty"`
	Addrs   []string `json:"ipAddresses,omitempty"`
}

func (v ifc) json() string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// statusKeys are the keys the agent writes a status of for v at key: the
// value's and its addresses' (derived values).
func (v ifc) statusKeys(key string) []string {
	keys := []string{key}
	for _, a := range v.Addrs {
		keys = append(keys, key+"/address/"+a)
	}
	return keys
}

// value is the value of the i-th interface of a change at agent name: a
// bridge, which the Linux plugin creates in the namespace of an agent in
// one (with an address), and the in-memory southbound keeps.
func (f *fleet) value(name string, i int) ifc {
	v := ifc{Name: fmt.Sprintf("if%d", i), Type: "TYPE_BRIDGE", Enabled: true}
	if f.netns[name] != "" {
		v.Addrs = []string{fmt.Sprintf("10.%d.%d.1/32", i>>8, i&255)}
	}
	return v
}

// statusCount is the number of statuses agent name must write.
func (f *fleet) statusCount(name string) int {
	n := 0
	for k, v := range f.want[name] {
		n += len(v.statusKeys(k))
	}
	return n
}

type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.b) < 1<<20 {
		b.b = append(b.b, p...)
	}
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.b)
}

// TestFleet runs the scenarios in order on one cluster and one fleet.
func TestFleet(t *testing.T) {
	n := envInt(t, "KVD_FLEET_AGENTS", 10)
	rest := time.Duration(envInt(t, "KVD_FLEET_REST_SECONDS", 5)) * time.Second
	c := etcdtest.StartCluster(t, 3)
	cl := c.Dial()
	defer cl.Close()
	partition := time.Duration(envInt(t, "KVD_FLEET_PARTITION_SECONDS", 5)) * time.Second
	f := &fleet{t: t, c: c, cl: cl, want: map[string]map[string]ifc{}, dirs: map[string]string{}, netns: map[string]string{}}
	dir, err := os.MkdirTemp("", "kvfleet")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Agent a0 reaches the members through proxies, which the partition
	// scenario cuts; the next KVD_FLEET_NETNS agents (1 by default when
	// root) each configure a network namespace of their own.
	for _, ep := range c.Endpoints() {
		f.proxies = append(f.proxies, startProxy(t, ep))
	}
	nns := envIntOrZero(t, "KVD_FLEET_NETNS", netnsDefault())
	if nns > n-1 {
		t.Fatalf("KVD_FLEET_NETNS=%d: at most %d (the agents but a0)", nns, n-1)
	}
	start := time.Now()
	for i := range n {
		name := fmt.Sprintf("a%d", i)
		eps := c.Endpoints()
		if i == 0 {
			f.partitioned = name
			eps = nil
			for _, p := range f.proxies {
				eps = append(eps, p.URL())
			}
		}
		ns := ""
		if i >= 1 && i <= nns {
			ns = addNetns(t, i)
			f.netns[name] = ns
		}
		f.startAgent(dir, name, eps, ns)
	}
	f.waitAlive()
	t.Logf("fleet: %d agents (%d in network namespaces, %s through proxies) on a 3-member etcd cluster present in %v",
		n, nns, f.partitioned, time.Since(start).Round(time.Millisecond))
	f.resources("started, empty")

	// a. A fleet-wide change.
	t.Run("change", func(t *testing.T) { f.change(t, "fleet-wide change", nil) })
	f.resources("after 1 change")

	// d. etcd's load at rest: the revision does not move unless someone
	// writes; the presence leases' keep-alives are not writes.
	f.atRest(rest)

	// b. The leader killed with SIGKILL during a change, restarted after.
	t.Run("leader-killed", func(t *testing.T) {
		var killed int
		f.change(t, "leader killed during the change", func() {
			killed = f.c.Leader(time.Minute)
			if killed < 0 {
				t.Fatal("no leader")
			}
			f.c.Member(killed).Kill()
			t.Logf("killed the leader, member %d", killed)
		})
		t0 := time.Now()
		next := f.c.Leader(time.Minute)
		t.Logf("new leader: member %d", next)
		f.c.Restart(killed)
		t.Logf("member %d restarted and answering in %v", killed, time.Since(t0).Round(time.Millisecond))
	})

	// c. A follower killed with SIGKILL during a change and restarted
	// during the same change.
	t.Run("follower-killed", func(t *testing.T) {
		leader := f.c.Leader(time.Minute)
		follower := (leader + 1) % f.c.Size()
		f.c.Member(follower).Kill()
		t.Logf("killed follower member %d", follower)
		f.change(t, "follower killed before the change, restarted during it", func() {
			f.c.Restart(follower)
			t.Logf("member %d restarted", follower)
		})
	})

	// e. Compaction at the current revision during a change: the agents'
	// watches that lag are compacted and they resync.
	t.Run("compaction", func(t *testing.T) {
		f.change(t, "compaction during the change", func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := f.cl.Get(ctx, "compact-probe")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.cl.Compact(ctx, r.Header.Revision); err != nil {
				t.Fatal(err)
			}
			t.Logf("compacted at revision %d", r.Header.Revision)
		})
	})
	// g. An agent partitioned from the cluster while its values change
	// and etcd compacts; it converges to the latest values after.
	t.Run("partition", func(t *testing.T) { f.partition(t, partition) })

	// f. A rollout of 100 values to every agent with kvctl fleet rollout,
	// in waves of 10 %, each gated on the previous one's health.
	t.Run("rollout", func(t *testing.T) { f.rollout(t, dir) })
	f.resources("after all changes")
	f.watchCount("end")
	f.stopAgents()
}

// envIntOrZero reads a non-negative integer from the environment, or def.
func envIntOrZero(t *testing.T, name string, def int) int {
	t.Helper()
	if os.Getenv(name) == "0" {
		return 0
	}
	return envInt(t, name, def)
}

// netnsDefault is the number of agents in network namespaces by default:
// one when the test can create namespaces (root, with ip), else none.
func netnsDefault() int {
	if os.Geteuid() != 0 {
		return 0
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return 0
	}
	return 1
}

// addNetns creates a network namespace for agent i, deleted when the test
// ends; its name has the worktree's and the process's in it.
func addNetns(t *testing.T, i int) string {
	t.Helper()
	ns := fmt.Sprintf("kvfleet-fleet-%d-%d", os.Getpid(), i)
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v\n%s", ns, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v\n%s", ns, err, out)
		}
	})
	return ns
}

func (f *fleet) startAgent(dir, name string, endpoints []string, netns string) {
	f.t.Helper()
	state := filepath.Join(dir, name)
	f.dirs[name] = state
	args := []string{"-name", name, "-etcd", strings.Join(endpoints, ","), "-etcd-status",
		"-http", "", "-grpc", "unix:" + state + "/g.sock", "-state-dir", state}
	if netns != "" {
		args = append(args, "-netns", netns)
	} else {
		args = append(args, "-memory")
	}
	cmd := exec.Command(agentBin, args...)
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	f.names = append(f.names, name)
	f.procs = append(f.procs, cmd)
	f.logs = append(f.logs, log)
}

// stopAgents stops the agents with SIGTERM and waits for them.
func (f *fleet) stopAgents() {
	for _, p := range f.procs {
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range f.procs {
		_ = p.Wait()
	}
}

func (f *fleet) get(prefix string) *clientv3.GetResponse {
	f.t.Helper()
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := f.cl.Get(ctx, prefix, clientv3.WithPrefix())
		cancel()
		if err == nil {
			return r
		}
		if attempt > 60 {
			f.t.Fatalf("get %s: %v", prefix, err)
		}
		time.Sleep(time.Second)
	}
}

// waitAlive waits until every agent's presence key exists.
func (f *fleet) waitAlive() {
	f.t.Helper()
	deadline := time.Now().Add(converge)
	for {
		r := f.get(etcdsrc.DefaultFleetPrefix + "alive/")
		if len(r.Kvs) == len(f.names) {
			return
		}
		for i, p := range f.procs {
			if p.ProcessState != nil {
				f.t.Fatalf("agent %s exited: %s", f.names[i], f.logs[i])
			}
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%d of %d agents present after %v", len(r.Kvs), len(f.names), converge)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// change writes, for every agent, perAgent new loopback interfaces in one
// etcd transaction, calling during (if not nil) after half of the agents'
// transactions; it waits until every agent's summary says all its values
// CONFIGURED, checks each value's status (nothing lost, nothing of the
// earlier changes deleted) and logs the per-agent convergence times and
// etcd's load.
func (f *fleet) change(t *testing.T, what string, during func()) {
	round := f.rounds
	f.rounds++
	rev0 := f.revision()
	m0 := f.metrics()
	// The keys first, so the poller (which starts before the first
	// write, so an agent that converges early is seen early) reads them
	// unchanged.
	txns := map[string][]clientv3.Op{}
	for _, name := range f.names {
		for k := range perAgent {
			v := f.value(name, round*perAgent+k+1)
			key := "linux/interface/" + v.Name
			txns[name] = append(txns[name], clientv3.OpPut("/kvdescriptor/"+name+"/config/"+key, v.json()))
			f.setWant(name, key, v)
		}
	}
	want := map[string]int{}
	for _, name := range f.names {
		want[name] = f.statusCount(name)
	}
	committed := &commits{at: map[string]time.Time{}}
	type result struct {
		times map[string]time.Duration
		err   error
	}
	done := make(chan result, 1)
	go func() {
		times, err := f.waitConverged(want, committed)
		done <- result{times, err}
	}()
	start := time.Now()
	for i, name := range f.names {
		if during != nil && i == len(f.names)/2 {
			during()
		}
		f.txn(txns[name])
		committed.set(name, time.Now())
	}
	written := time.Since(start)
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	times := res.times
	total := time.Since(start)
	f.verify()
	rev1 := f.revision()
	m1 := f.metrics()
	agentWrites := rev1 - rev0 - int64(len(f.names)) // the controller's: one revision per agent
	var ds []time.Duration
	for _, d := range times {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	pct := func(p float64) time.Duration {
		return ds[min(len(ds)-1, int(p*float64(len(ds))))].Round(time.Millisecond)
	}
	n := len(f.names)
	t.Logf("%s: %d agents x %d values; controller transactions written in %v; all CONFIGURED %v after the first; per agent from its transaction: p50 %v p99 %v max %v",
		what, n, perAgent, written.Round(time.Millisecond), total.Round(time.Millisecond), pct(0.5), pct(0.99), pct(1))
	t.Logf("%s: etcd writes by the agents (revisions) %d = %.1f per agent; puts applied %v, txns %v, ranges %v (the harness's polling included); 0 lost updates, 0 wrong deletes (%d values checked)",
		what, agentWrites, float64(agentWrites)/float64(n), m1["etcd_mvcc_put_total"]-m0["etcd_mvcc_put_total"],
		m1["etcd_mvcc_txn_total"]-m0["etcd_mvcc_txn_total"], m1["etcd_mvcc_range_total"]-m0["etcd_mvcc_range_total"], n*f.rounds*perAgent)
	fmt.Printf("BenchmarkFleet/%s/agents=%d\t1\t%d p50-ms\t%d p99-ms\t%d max-ms\t%d total-ms\t%.1f writes/agent\n",
		strings.ReplaceAll(what, " ", "_"), n, pct(0.5).Milliseconds(), pct(0.99).Milliseconds(), pct(1).Milliseconds(),
		total.Milliseconds(), float64(agentWrites)/float64(n))
}

// rollout writes perAgent new values to every agent with kvctl fleet
// rollout --wave 10% and checks them as change does.
func (f *fleet) rollout(t *testing.T, dir string) {
	round := f.rounds
	f.rounds++
	var yaml strings.Builder
	for k := range perAgent {
		// One file for every agent: bridges without an address.
		v := ifc{Name: fmt.Sprintf("if%d", round*perAgent+k+1), Type: "TYPE_BRIDGE", Enabled: true}
		key := "linux/interface/" + v.Name
		fmt.Fprintf(&yaml, "%s: %s\n", key, v.json())
		for _, name := range f.names {
			f.setWant(name, key, v)
		}
	}
	file := filepath.Join(dir, "rollout.yaml")
	if err := os.WriteFile(file, []byte(yaml.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rev0 := f.revision()
	ctx, cancel := context.WithTimeout(context.Background(), 2*converge)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, kvctlBin, "fleet", "--endpoints", strings.Join(f.c.Endpoints(), ","),
		"rollout", "-f", file, "--wave", "10%", "--wave-timeout", converge.String()).CombinedOutput()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("kvctl fleet rollout: %v\n%s", err, out)
	}
	f.verify()
	n := len(f.names)
	agentWrites := f.revision() - rev0 - int64(n)
	t.Logf("rollout of %d values to %d agents in waves of 10%%: %v; etcd writes by the agents %d = %.1f per agent; 0 lost updates, 0 wrong deletes; kvctl said:\n%s",
		perAgent, n, took.Round(time.Millisecond), agentWrites, float64(agentWrites)/float64(n), out)
	fmt.Printf("BenchmarkFleet/rollout_waves_10%%/agents=%d\t1\t%d total-ms\t%.1f writes/agent\n", n, took.Milliseconds(), float64(agentWrites)/float64(n))
}

// txn commits ops in one transaction, again after an error (a transaction
// that committed before its answer was lost writes the same again).
func (f *fleet) txn(ops []clientv3.Op) {
	f.t.Helper()
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := f.cl.Txn(ctx).Then(ops...).Commit()
		cancel()
		if err == nil {
			return
		}
		if attempt > 30 {
			f.t.Fatalf("controller transaction: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// commits are the times the agents' transactions committed.
type commits struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (c *commits) set(name string, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at[name] = t
}

func (c *commits) get(name string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.at[name]
	return t, ok
}

// waitConverged polls the agents' summaries (every 100 ms, from before the
// first write) until each says all its values CONFIGURED (want of them,
// nothing else) and returns, by agent, the time from its transaction's
// commit to the first poll that saw it (the status write-back's one-second
// batch included).
func (f *fleet) waitConverged(want map[string]int, committed *commits) (map[string]time.Duration, error) {
	times := map[string]time.Duration{}
	deadline := time.Now().Add(converge)
	last := map[string]string{}
	for len(times) < len(f.names) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := f.cl.Get(ctx, etcdsrc.DefaultFleetPrefix+"summary/", clientv3.WithPrefix())
		cancel()
		now := time.Now()
		if err == nil {
			for _, kv := range r.Kvs {
				var s etcdsrc.FleetSummary
				if err := json.Unmarshal(kv.Value, &s); err != nil {
					return nil, fmt.Errorf("summary %s: %v", kv.Key, err)
				}
				last[s.Agent] = string(kv.Value)
				if _, done := times[s.Agent]; done {
					continue
				}
				at, ok := committed.get(s.Agent)
				if ok && s.States["CONFIGURED"] == want[s.Agent] && len(s.States) == 1 {
					times[s.Agent] = now.Sub(at)
				}
			}
		}
		if now.After(deadline) {
			var missing []string
			for _, name := range f.names {
				if _, ok := times[name]; !ok {
					missing = append(missing, name+": "+last[name])
				}
			}
			return nil, fmt.Errorf("not converged after %v (last read error %v):\n%s", converge, err, strings.Join(missing, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return times, nil
}

func (f *fleet) setWant(name, key string, v ifc) {
	if f.want[name] == nil {
		f.want[name] = map[string]ifc{}
	}
	f.want[name][key] = v
}

// verify reads every agent's status keys: each value written (and each of
// its addresses) is CONFIGURED (no update lost, no value of an earlier
// change deleted), and there is no other status; in each agent's network
// namespace, the interfaces and addresses are those written.
func (f *fleet) verify() {
	f.t.Helper()
	for _, name := range f.names {
		prefix := "/kvdescriptor/" + name + "/status/"
		r := f.get(prefix)
		got := map[string]string{}
		for _, kv := range r.Kvs {
			var d etcdsrc.StatusDoc
			if err := json.Unmarshal(kv.Value, &d); err != nil {
				f.t.Fatalf("%s: %v", kv.Key, err)
			}
			got[string(kv.Key[len(prefix):])] = d.State
		}
		n := 0
		for key, v := range f.want[name] {
			for _, k := range v.statusKeys(key) {
				n++
				if got[k] != "CONFIGURED" {
					f.t.Errorf("agent %s: %s is %q, want CONFIGURED", name, k, got[k])
				}
			}
		}
		if len(got) != n {
			f.t.Errorf("agent %s: %d statuses, want %d", name, len(got), n)
		}
		if ns := f.netns[name]; ns != "" {
			f.checkNetns(name, ns)
		}
	}
	if f.t.Failed() {
		f.t.FailNow()
	}
}

// checkNetns reads the namespace's interfaces with ip: every bridge
// written exists, up, with exactly its addresses, and there is no other
// interface but lo.
func (f *fleet) checkNetns(name, ns string) {
	f.t.Helper()
	out, err := exec.Command("ip", "-n", ns, "-j", "addr", "show").Output()
	if err != nil {
		f.t.Fatalf("ip -n %s addr show: %v", ns, err)
	}
	var links []struct {
		Ifname   string   `json:"ifname"`
		Flags    []string `json:"flags"`
		AddrInfo []struct {
			Family    string `json:"family"`
			Local     string `json:"local"`
			Prefixlen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		f.t.Fatalf("ip -n %s -j addr show: %v", ns, err)
	}
	seen := map[string]bool{}
	byName := map[string]ifc{}
	for _, v := range f.want[name] {
		byName[v.Name] = v
	}
	for _, l := range links {
		if l.Ifname == "lo" {
			continue
		}
		v, ok := byName[l.Ifname]
		if !ok {
			f.t.Errorf("agent %s: namespace %s has %s, which was not written", name, ns, l.Ifname)
			continue
		}
		seen[l.Ifname] = true
		if !slices.Contains(l.Flags, "UP") {
			f.t.Errorf("agent %s: %s in %s is not up (flags %v)", name, l.Ifname, ns, l.Flags)
		}
		var addrs []string
		for _, a := range l.AddrInfo {
			if a.Family == "inet" {
				addrs = append(addrs, fmt.Sprintf("%s/%d", a.Local, a.Prefixlen))
			}
		}
		slices.Sort(addrs)
		if want := slices.Sorted(slices.Values(v.Addrs)); !slices.Equal(addrs, want) {
			f.t.Errorf("agent %s: %s in %s has addresses %v, want %v", name, l.Ifname, ns, addrs, want)
		}
	}
	if len(seen) != len(byName) {
		f.t.Errorf("agent %s: %d of the %d interfaces written are in %s", name, len(seen), len(byName), ns)
	}
}

func (f *fleet) revision() int64 {
	return f.get("revision-probe").Header.Revision
}

// metrics sums the counters of the running members... of the leader: each
// member applies every write, so one member's counters are the cluster's
// writes (the leader's, which has run throughout a change; a member
// restarted in it has counters from its restart).
func (f *fleet) metrics() map[string]float64 {
	f.t.Helper()
	l := f.c.Leader(time.Minute)
	if l < 0 {
		return map[string]float64{}
	}
	m, err := f.c.Metrics(l)
	if err != nil {
		f.t.Logf("metrics of member %d: %v", l, err)
		return map[string]float64{}
	}
	return m.Values
}

// atRest measures etcd's writes with no change for the window.
func (f *fleet) atRest(window time.Duration) {
	f.t.Helper()
	rev0 := f.revision()
	m0 := f.metrics()
	g0 := f.grpcCalls()
	time.Sleep(window)
	rev1 := f.revision()
	m1 := f.metrics()
	g1 := f.grpcCalls()
	var calls []string
	for method, v := range g1 {
		if d := v - g0[method]; d > 0 {
			calls = append(calls, fmt.Sprintf("%s %v", method, d))
		}
	}
	slices.Sort(calls)
	f.t.Logf("at rest: gRPC calls completed on all members by method: %s", strings.Join(calls, ", "))
	n := len(f.names)
	// The agents' reads (their probes), less the harness's one (the
	// revision read at the end), and the messages on the watch streams
	// (the probes' progress requests).
	ranges := g1["Range"] - g0["Range"] - 1
	watchMsgs := g1["Watch/received"] - g0["Watch/received"]
	keepAlives := g1["LeaseKeepAlive/received"] - g0["LeaseKeepAlive/received"]
	f.t.Logf("at rest: %.2f Ranges per agent per minute, %.2f watch-stream messages (progress requests) and %.2f lease keep-alives per agent per minute",
		ranges/float64(n)/window.Minutes(), watchMsgs/float64(n)/window.Minutes(), keepAlives/float64(n)/window.Minutes())
	fmt.Printf("BenchmarkFleet/at_rest_reads/agents=%d\t1\t%.2f ranges/agent/min\t%.2f watch-msgs/agent/min\n", n,
		ranges/float64(n)/window.Minutes(), watchMsgs/float64(n)/window.Minutes())
	perMin := float64(rev1-rev0) / float64(n) / window.Minutes()
	f.t.Logf("at rest for %v: %d etcd writes (revisions) = %.2f per agent per minute; puts applied %v; gRPC calls completed %v (the harness's reads included)",
		window, rev1-rev0, perMin, m1["etcd_mvcc_put_total"]-m0["etcd_mvcc_put_total"], m1["grpc_server_handled_total"]-m0["grpc_server_handled_total"])
	fmt.Printf("BenchmarkFleet/at_rest/agents=%d\t1\t%.2f writes/agent/min\n", n, perMin)
	f.watchCount("at rest")
}

// grpcCalls sums the members' completed gRPC calls by method.
func (f *fleet) grpcCalls() map[string]float64 {
	sum := map[string]float64{}
	for i := range f.c.Size() {
		if m, err := f.c.Metrics(i); err == nil {
			for k, v := range m.GRPCHandled {
				sum[k] += v
			}
			sum["Watch/received"] += m.GRPCReceived["Watch"]
			sum["LeaseKeepAlive/received"] += m.GRPCReceived["LeaseKeepAlive"]
		}
	}
	return sum
}

// watchCount logs the watches the members hold (summed over the members:
// each client's watch lives on the member it is connected to).
func (f *fleet) watchCount(when string) {
	var watchers, streams float64
	for i := range f.c.Size() {
		if !f.c.Member(i).Running() {
			continue
		}
		m, err := f.c.Metrics(i)
		if err != nil {
			continue
		}
		watchers += m.Values["etcd_debugging_mvcc_watcher_total"]
		streams += m.Values["etcd_debugging_mvcc_watch_stream_total"]
	}
	f.t.Logf("watches (%s): %v watchers on %v watch streams for %d agents", when, watchers, streams, len(f.names))
}

// resources logs the agents' resident memory and open file descriptors.
func (f *fleet) resources(when string) {
	var total, most int64
	var fds, mostFDs int
	for _, p := range f.procs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Process.Pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				total += kb
				most = max(most, kb)
			}
		}
		if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.Process.Pid)); err == nil {
			fds += len(ents)
			mostFDs = max(mostFDs, len(ents))
		}
	}
	n := int64(len(f.procs))
	f.t.Logf("agents (%s): RSS mean %d MiB, max %d MiB, total %d MiB; open fds mean %d, max %d",
		when, total/n/1024, most/1024, total/1024, fds/len(f.procs), mostFDs)
}
