package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd/etcdtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/file"
)

// TestEtcd writes an agent's configuration in a real etcd server with
// kvctl etcd import, put and delete, and reads it with get: an import is
// one etcd transaction; a value the agent makes INVALID is refused by put
// and import with the agent's own error, before anything is written; an
// agent watching the prefix applies what kvctl writes.
func TestEtcd(t *testing.T) {
	srv := etcdtest.Start(t)
	cl := srv.Dial()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	a := launchAgent(t, &agentProc{server: "unix:" + state + "/grpc.sock"}, "-memory", "-name", "edge1", "-etcd", srv.URL,
		"-file", writeConfig(t, dir, "cfg.yaml", config), "-state-dir", state, "-http", "", "-grpc", "unix:"+state+"/grpc.sock")
	e := &etcdTest{t: t, a: a, cl: cl, dir: dir, url: srv.URL}

	e.importAndGet()
	e.refused()
	e.putAndDelete()
}

// etcdTest is the state of TestEtcd: its agent, named edge1, and etcd.
type etcdTest struct {
	t   *testing.T
	a   *agentProc
	cl  *clientv3.Client
	dir string
	url string
}

// etcdPrefix is the configuration prefix of the agent edge1.
const etcdPrefix = "/kvdescriptor/edge1/config/"

// et runs kvctl etcd against the agent edge1's configuration.
func (e *etcdTest) et(args ...string) (string, int) {
	e.t.Helper()
	return kvctl(e.t, append([]string{"etcd", "--endpoints", e.url, "--agent", "edge1"}, args...)...)
}

// importAndGet imports a file: one etcd transaction that the agent
// applies; get reads it back.
func (e *etcdTest) importAndGet() {
	t, a, cl, dir, et, prefix := e.t, e.a, e.cl, e.dir, e.et, etcdPrefix
	t.Helper()
	fleet := writeConfig(t, dir, "fleet.yaml", `linux/interface/e1: {name: e1, type: TYPE_BRIDGE, mtu: 1400}
linux/interface/e2: {name: e2, type: TYPE_DUMMY}
linux/route/e1/10.6.0.0/16: {outgoingInterface: e1, dstNetwork: 10.6.0.0/16}
`)
	out, code := et("import", "-f", fleet)
	if code != 0 || !strings.Contains(out, "imported 3 values, deleted 0 keys, in one etcd transaction") {
		t.Fatalf("etcd import: exit code %d\n%s", code, out)
	}
	kvs := etcdKeys(t, cl, prefix)
	if len(kvs) != 3 {
		t.Fatalf("etcd holds %v after the import", kvs)
	}
	revs := map[int64]bool{}
	for _, kv := range kvs {
		revs[kv.ModRevision] = true
		if !json.Valid(kv.Value) {
			t.Errorf("%s: %q is not protojson", kv.Key, kv.Value)
		}
	}
	if len(revs) != 1 {
		t.Errorf("the import took %d etcd revisions, want 1 (one transaction)", len(revs))
	}
	a.waitFor(t, "the agent to apply the import", func(out string) bool {
		return strings.Count(out, "CONFIGURED") == 3
	}, "status", "--owner", "etcd")

	out, code = et("get")
	if code != 0 || !strings.Contains(out, "linux/interface/e1") || !strings.Contains(out, `"mtu":1400`) || strings.Count(out, "\n") != 4 {
		t.Errorf("etcd get: exit code %d\n%s", code, out)
	}
	out, code = et("-o", "json", "get", "linux/interface/e2")
	if code != 0 || !strings.Contains(out, `"key": "linux/interface/e2"`) || strings.Contains(out, "e1") {
		t.Errorf("etcd get -o json KEY: exit code %d\n%s", code, out)
	}
}

// refused: a value that the agent makes INVALID, written behind kvctl's
// back, is INVALID with an error; kvctl etcd put and import refuse it
// with the same error and write nothing, as they refuse an unknown field
// and an unknown key.
func (e *etcdTest) refused() {
	t, a, cl, dir, et, prefix := e.t, e.a, e.cl, e.dir, e.et, etcdPrefix
	var out string
	var code int
	t.Helper()
	const bad = `{"name": "e3", "type": "TYPE_DUMMY", "mtu": 20}`
	if _, err := cl.Put(context.Background(), prefix+"linux/interface/e3", bad); err != nil {
		t.Fatal(err)
	}
	status := a.waitFor(t, "e3 INVALID", func(out string) bool { return strings.Contains(out, "INVALID") }, "status", "linux/interface/e3")
	agentErr := strings.TrimSpace(status[strings.Index(status, "INVALID")+len("INVALID"):])
	agentErr = strings.TrimSpace(strings.TrimPrefix(agentErr, "etcd"))
	if !strings.Contains(agentErr, "mtu") {
		t.Fatalf("the agent's error of e3 does not name mtu: %q\n%s", agentErr, status)
	}
	if _, err := cl.Delete(context.Background(), prefix+"linux/interface/e3"); err != nil {
		t.Fatal(err)
	}
	out, code = et("put", "linux/interface/e3", bad)
	t.Logf("the agent: %s\nkvctl etcd put: %s", agentErr, out)
	if code != 1 || !strings.Contains(out, agentErr) {
		t.Errorf("etcd put of an INVALID value: exit code %d, want 1 with the agent's error %q\n%s", code, agentErr, out)
	}
	badFile := writeConfig(t, dir, "bad.yaml", "linux/interface/e4: {name: e4, type: TYPE_DUMMY}\nlinux/interface/e3: "+bad+"\n")
	out, code = et("import", "-f", badFile)
	if code != 1 || !strings.Contains(out, agentErr) || !strings.Contains(out, "nothing written") {
		t.Errorf("etcd import of a file with an INVALID value: exit code %d\n%s", code, out)
	}
	out, code = et("put", "linux/interface/e5", "{name: e5, type: TYPE_DUMMY, mtuu: 1400}")
	if code != 1 || !strings.Contains(out, `key "linux/interface/e5"`) || !strings.Contains(out, "mtuu") {
		t.Errorf("etcd put of an unknown field: exit code %d\n%s", code, out)
	}
	out, code = et("put", "no/such/model", "{}")
	if code != 1 || !strings.Contains(out, "no model handles it") {
		t.Errorf("etcd put of an unknown key: exit code %d\n%s", code, out)
	}
	if got := etcdKeys(t, cl, prefix); len(got) != 3 {
		t.Errorf("the refused writes changed etcd: %v", got)
	}
}

// putAndDelete: a put that the agent applies; a delete of a missing key
// deletes nothing; import --prune makes the file the whole configuration.
func (e *etcdTest) putAndDelete() {
	t, a, cl, dir, et, prefix := e.t, e.a, e.cl, e.dir, e.et, etcdPrefix
	var out string
	var code int
	t.Helper()
	out, code = et("put", "linux/interface/e2", "{name: e2, type: TYPE_DUMMY, mtu: 1300}")
	if code != 0 || !strings.Contains(out, "put linux/interface/e2 (revision ") {
		t.Fatalf("etcd put: exit code %d\n%s", code, out)
	}
	a.waitFor(t, "the agent to apply the put", func(out string) bool { return strings.Contains(out, `"mtu":1300`) }, "dump", "linux/interface/e2")

	// delete: all or nothing.
	out, code = et("delete", "linux/interface/e2", "linux/interface/nope")
	if code != 1 || !strings.Contains(out, "linux/interface/nope (nothing deleted)") || len(etcdKeys(t, cl, prefix)) != 3 {
		t.Errorf("etcd delete of a missing key: exit code %d\n%s", code, out)
	}
	if out, code = et("delete", "linux/route/e1/10.6.0.0/16", "linux/interface/e2"); code != 0 || len(etcdKeys(t, cl, prefix)) != 1 {
		t.Errorf("etcd delete: exit code %d\n%s", code, out)
	}

	// --prune: the file is the whole configuration.
	out, code = et("import", "--prune", "-f", writeConfig(t, dir, "only.yaml", "linux/interface/e6: {name: e6, type: TYPE_DUMMY}\n"))
	if code != 0 || !strings.Contains(out, "imported 1 values, deleted 1 keys") {
		t.Errorf("etcd import --prune: exit code %d\n%s", code, out)
	}
	if got := etcdKeys(t, cl, prefix); len(got) != 1 || string(got[0].Key) != prefix+"linux/interface/e6" {
		t.Errorf("after import --prune etcd holds %v", got)
	}
	a.waitFor(t, "the agent to apply the pruned configuration", func(out string) bool {
		return strings.Contains(out, "linux/interface/e6") && !strings.Contains(out, "linux/interface/e1")
	}, "status", "--owner", "etcd")
}

// TestEtcdLimits: an input file larger than the file source reads is
// refused before etcd is asked; an etcd that does not answer is exit code
// 3; TLS flags that cannot be used are bad usage.
func TestEtcdLimits(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", file.DefaultMaxSize)+"\n{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := kvctl(t, "etcd", "--endpoints", "http://127.0.0.1:1", "import", "-f", big)
	if code != 1 || !strings.Contains(out, fmt.Sprintf("larger than %d bytes", file.DefaultMaxSize)) {
		t.Errorf("etcd import of a file over the limit: exit code %d\n%s", code, out)
	}
	start := time.Now()
	out, code = kvctl(t, "--timeout", "2s", "etcd", "--endpoints", "http://127.0.0.1:1", "get")
	if code != 3 || !strings.Contains(out, "cannot reach etcd at http://127.0.0.1:1") {
		t.Errorf("etcd get of an etcd that does not answer: exit code %d after %s\n%s", code, time.Since(start), out)
	}
	for _, args := range [][]string{
		{"etcd", "--ca-file", filepath.Join(dir, "none.pem"), "get"},
		{"etcd", "--cert-file", big, "get"},
		{"etcd", "--username", "root", "get"},
		{"etcd", "put", "linux/interface/x"},
		{"etcd", "import"},
	} {
		if out, code := kvctl(t, args...); code != 2 {
			t.Errorf("kvctl %s: exit code %d, want 2\n%s", strings.Join(args, " "), code, out)
		}
	}
}

func etcdKeys(t *testing.T, cl *clientv3.Client, prefix string) []*mvccpb.KeyValue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cl.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Kvs
}
