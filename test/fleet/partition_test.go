package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	etcdsrc "github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd"
)

// partitionValue is generation gen of the partition scenario's value pK.
func partitionValue(k, gen int) ifc {
	return ifc{Name: fmt.Sprintf("p%d", k), Type: "TYPE_BRIDGE", Enabled: true, MTU: 1400 + gen,
		Addrs: []string{fmt.Sprintf("10.250.%d.%d/32", k, gen)}}
}

// partition cuts the partitioned agent's proxies for d. Before, it writes
// p1..p20 (generation 1) and waits for the agent to apply them; while cut,
// the controller updates p1..p10 twice more and p1..p5 three times,
// deletes p11..p20, re-adds p16..p20, adds p21..p25 and deletes p21 and
// p22 again, and compacts etcd at its current revision (the agent's watch
// revision is gone). After the heal, the agent must converge to exactly
// the latest values: its southbound (read through its API) holds the
// latest generation of every key and none of the deleted ones, its
// statuses say so, every other value it had is still there, and the
// transactions it ran since the cut set only the latest values (nothing
// stale applied, nothing from the partition's intermediate generations).
func (f *fleet) partition(t *testing.T, d time.Duration) {
	parent := f.t
	f.t = t // the helpers fail this test
	defer func() { f.t = parent }()
	name := f.partitioned
	prefix := "/kvdescriptor/" + name + "/config/"
	final := map[string]ifc{}
	put := func(k, gen int) clientv3.Op {
		v := partitionValue(k, gen)
		key := "linux/interface/" + v.Name
		final[key] = v
		return clientv3.OpPut(prefix+key, v.json())
	}
	del := func(k int) clientv3.Op {
		key := fmt.Sprintf("linux/interface/p%d", k)
		delete(final, key)
		return clientv3.OpDelete(prefix + key)
	}
	var ops []clientv3.Op
	for k := 1; k <= 20; k++ {
		ops = append(ops, put(k, 1))
	}
	f.txn(ops)
	before := maps.Clone(final)
	for k, v := range final {
		f.setWant(name, k, v)
	}
	f.waitAgent(name, time.Now())
	if got := f.southbound(name, "linux/interface/p"); !maps.EqualFunc(got, before, ifcEqual) {
		t.Fatalf("agent %s before the partition: southbound %v, want %v", name, got, before)
	}
	seq0 := f.lastSeq(name)
	logAt := len(f.logs[0].String())

	// The partition.
	cut := time.Now()
	for _, p := range f.proxies {
		p.Cut()
	}
	t.Logf("partition: %s cut from the cluster for %v (its proxies drop every connection and refuse new ones)", name, d)
	steps := []func(){
		func() { // updates and deletes
			var ops []clientv3.Op
			for k := 1; k <= 10; k++ {
				ops = append(ops, put(k, 2))
			}
			for k := 11; k <= 20; k++ {
				ops = append(ops, del(k))
			}
			f.txn(ops)
		},
		func() { // updates, re-adds, adds
			var ops []clientv3.Op
			for k := 1; k <= 10; k++ {
				ops = append(ops, put(k, 3))
			}
			for k := 16; k <= 25; k++ {
				ops = append(ops, put(k, 3))
			}
			f.txn(ops)
		},
		func() { // updates and deletes of what was just added; compaction
			var ops []clientv3.Op
			for k := 1; k <= 5; k++ {
				ops = append(ops, put(k, 4))
			}
			ops = append(ops, del(21), del(22))
			f.txn(ops)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rev := f.revision()
			if _, err := f.cl.Compact(ctx, rev); err != nil {
				t.Fatal(err)
			}
			t.Logf("partition: compacted at revision %d", rev)
		},
	}
	for i, step := range steps {
		waitUntil(cut.Add(d * time.Duration(i+1) / time.Duration(len(steps)+1)))
		step()
	}
	waitUntil(cut.Add(d))
	// Nothing reached the agent: its southbound holds what it had.
	if got := f.southbound(name, "linux/interface/p"); !maps.EqualFunc(got, before, ifcEqual) {
		t.Fatalf("agent %s during the partition: southbound %v, want the values before it, %v", name, got, before)
	}
	alive := len(f.get(f.aliveKey(name)).Kvs) == 1
	healed := time.Now()
	for _, p := range f.proxies {
		p.Heal()
	}
	t.Logf("partition: healed after %v (the agent's presence key %s at the heal)", healed.Sub(cut).Round(time.Millisecond),
		map[bool]string{true: "still there", false: "expired"}[alive])

	// Convergence: the southbound first, then the statuses.
	for k := range before {
		delete(f.want[name], k)
	}
	for k, v := range final {
		f.setWant(name, k, v)
	}
	deadline := time.Now().Add(converge)
	var sb map[string]ifc
	for {
		sb = f.southbound(name, "linux/interface/p")
		if maps.EqualFunc(sb, final, ifcEqual) {
			break
		}
		for k, v := range sb {
			if w, ok := final[k]; (!ok || !ifcEqual(v, w)) && !ifcEqual(v, before[k]) {
				t.Errorf("agent %s applied %s = %s: neither the latest value (%s) nor the one before the partition", name, k, v.json(), w.json())
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent %s: southbound %v %v after the heal; want %v", name, sb, converge, final)
		}
		time.Sleep(50 * time.Millisecond)
	}
	sbAt := time.Since(healed)
	f.waitAgent(name, healed)
	statusAt := time.Since(healed)
	f.waitAlive()
	aliveAt := time.Since(healed)
	f.verify()
	f.checkHistory(t, name, seq0, final)
	if t.Failed() {
		return
	}
	resyncs := strings.Count(f.logs[0].String()[logAt:], "etcd source: resync")
	t.Logf("partition of %v: southbound converged %v after the heal, statuses %v, presence %v; 0 lost updates, 0 wrong deletes, nothing stale applied (%d values checked; %d transactions since the cut checked); %d resync attempts logged",
		d, sbAt.Round(time.Millisecond), statusAt.Round(time.Millisecond), aliveAt.Round(time.Millisecond), len(final), f.historyChecked, resyncs)
	fmt.Printf("BenchmarkFleet/partition_%ds/agents=%d\t1\t%d southbound-ms\t%d status-ms\n", int(d.Seconds()), len(f.names),
		sbAt.Milliseconds(), statusAt.Milliseconds())
}

func waitUntil(at time.Time) {
	if d := time.Until(at); d > 0 {
		time.Sleep(d)
	}
}

func ifcEqual(a, b ifc) bool {
	return a.Name == b.Name && a.Type == b.Type && a.Enabled == b.Enabled && a.MTU == b.MTU && slices.Equal(a.Addrs, b.Addrs)
}

func (f *fleet) aliveKey(name string) string { return etcdsrc.DefaultFleetPrefix + "alive/" + name }

// kvctl runs kvctl against agent name's API and returns its output.
func (f *fleet) kvctl(name string, args ...string) []byte {
	f.t.Helper()
	args = append([]string{"--server", "unix:" + f.dirs[name] + "/g.sock", "-o", "json"}, args...)
	out, err := exec.Command(kvctlBin, args...).Output()
	if err != nil {
		f.t.Fatalf("kvctl %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// southbound reads what agent name's southbound holds (kvctl dump --view
// sb) of the interfaces whose keys start with prefix.
func (f *fleet) southbound(name, prefix string) map[string]ifc {
	f.t.Helper()
	var resp struct {
		Items []struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		} `json:"items"`
	}
	if err := json.Unmarshal(f.kvctl(name, "dump", "--view", "sb", prefix), &resp); err != nil {
		f.t.Fatal(err)
	}
	got := map[string]ifc{}
	addrs := map[string][]string{}
	for _, it := range resp.Items {
		// An interface's addresses are derived values of their own:
		// <key>/address/<address>.
		if key, addr, ok := strings.Cut(it.Key, "/address/"); ok {
			addrs[key] = append(addrs[key], addr)
			continue
		}
		var v ifc
		if err := json.Unmarshal(it.Value, &v); err != nil {
			f.t.Fatalf("%s: %v", it.Key, err)
		}
		got[it.Key] = v
	}
	for key, a := range addrs {
		v, ok := got[key]
		if !ok {
			f.t.Fatalf("agent %s: the southbound has an address of %s and not %s", name, key, key)
		}
		slices.Sort(a)
		v.Addrs = a
		got[key] = v
	}
	return got
}

type historyRecord struct {
	Seq         uint64 `json:"seq,string"`
	Description string `json:"description"`
	Values      []struct {
		Key string          `json:"key"`
		Any json.RawMessage `json:"any"`
	} `json:"values"`
}

func (f *fleet) history(name string) []historyRecord {
	f.t.Helper()
	var resp struct {
		Records []historyRecord `json:"records"`
	}
	if err := json.Unmarshal(f.kvctl(name, "history"), &resp); err != nil {
		f.t.Fatal(err)
	}
	return resp.Records
}

// lastSeq is agent name's last transaction.
func (f *fleet) lastSeq(name string) uint64 {
	var seq uint64
	for _, r := range f.history(name) {
		seq = max(seq, r.Seq)
	}
	return seq
}

// checkHistory checks the transactions agent name ran after seq0: every
// partition value they set is its latest value, and every one they
// delete is deleted at the end.
func (f *fleet) checkHistory(t *testing.T, name string, seq0 uint64, final map[string]ifc) {
	f.historyChecked = 0
	for _, r := range f.history(name) {
		if r.Seq <= seq0 {
			continue
		}
		f.historyChecked++
		for _, v := range r.Values {
			if !strings.HasPrefix(v.Key, "linux/interface/p") {
				continue
			}
			w, ok := final[v.Key]
			if len(v.Any) == 0 || string(v.Any) == "null" {
				if ok {
					t.Errorf("agent %s: transaction %d (%s) deleted %s, which is %s", name, r.Seq, r.Description, v.Key, w.json())
				}
				continue
			}
			var got ifc
			if err := json.Unmarshal(v.Any, &got); err != nil {
				t.Fatalf("transaction %d: %s: %v", r.Seq, v.Key, err)
			}
			// The record holds the value without its derived fields
			// (the addresses are values of their own); the MTU
			// carries the generation.
			got.Addrs = w.Addrs
			if !ok || !ifcEqual(got, w) {
				t.Errorf("agent %s: transaction %d (%s) set %s = %s, a stale value (latest: %s)", name, r.Seq, r.Description, v.Key, got.json(), w.json())
			}
		}
	}
	if f.historyChecked == 0 {
		t.Errorf("agent %s: no transaction after %d: the heal applied nothing", name, seq0)
	}
}

// waitAgent waits until agent name's summary counts its values CONFIGURED
// and nothing else (from since, to the bound converge).
func (f *fleet) waitAgent(name string, since time.Time) {
	f.t.Helper()
	want := map[string]int{name: f.statusCount(name)}
	c := &commits{at: map[string]time.Time{name: since}}
	sub := &fleet{t: f.t, cl: f.cl, names: []string{name}}
	if _, err := sub.waitConverged(want, c); err != nil {
		f.t.Fatal(err)
	}
}
