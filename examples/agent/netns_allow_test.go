package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd/etcdtest"
)

// The namespace escape (issue 27): a value whose namespace is a path
// (../../proc/PID/ns/net, where PID lives in another namespace) or a
// namespace outside the agent's allow-list is INVALID naming namespace,
// whichever source it comes from, and nothing appears in the namespace it
// names.

// escapeEnv is the namespaces of an escape test: the agent's, an allowed
// one, and a victim that a process lives in.
type escapeEnv struct {
	agentNs string
	agentH  *netlink.Handle
	allowed string
	allowH  *netlink.Handle
	victim  string
	before  []string // the victim's links before the agent starts
	escape  string   // a path out of /var/run/netns into the victim
}

func newEscapeEnv(t *testing.T) *escapeEnv {
	t.Helper()
	e := &escapeEnv{}
	e.agentNs, e.agentH = newNetns(t)
	e.allowed, e.allowH = newNetns(t)
	e.victim, _ = newNetns(t)
	// A process in the victim namespace: /proc/PID/ns/net is its
	// namespace, as /proc/1/ns/net is the host's.
	holder := exec.Command("ip", "netns", "exec", e.victim, "sleep", "3600")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = holder.Process.Kill()
		_ = holder.Wait()
	})
	proc := fmt.Sprintf("/proc/%d/ns/net", holder.Process.Pid)
	eventually(t, 30*time.Second, "the holder process in the victim namespace", func() (bool, string) {
		return sameFile(proc, filepath.Join("/var/run/netns", e.victim)), proc
	})
	e.escape = "../.." + proc
	e.before = nsLinks(t, e.victim)
	return e
}

// sameFile reports whether two paths are the same namespace file.
func sameFile(a, b string) bool {
	var sa, sb syscall.Stat_t
	return syscall.Stat(a, &sa) == nil && syscall.Stat(b, &sb) == nil && sa.Ino == sb.Ino && sa.Dev == sb.Dev
}

// nsLinks lists the links of a namespace as `ip -n NAME link` shows them.
func nsLinks(t *testing.T, name string) []string {
	t.Helper()
	out, err := exec.Command("ip", "-n", name, "-o", "link", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("ip -n %s link: %v: %s", name, err, out)
	}
	var links []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			links = append(links, name)
		}
	}
	slices.Sort(links)
	return links
}

// values are the test's values, as JSON by key: two refused (a path, a
// namespace not allowed), two configured (the allowed namespace, the
// agent's own).
func (e *escapeEnv) values() map[string]string {
	bridge := func(name, ns string) string {
		b, _ := json.Marshal(map[string]string{"name": name, "type": "TYPE_BRIDGE", "namespace": ns})
		return string(b)
	}
	return map[string]string{
		"linux/interface/esc0": bridge("esc0", e.escape),
		"linux/interface/vic0": bridge("vic0", e.victim),
		"linux/interface/ok0":  bridge("ok0", e.allowed),
		"linux/interface/own0": `{"name": "own0", "type": "TYPE_BRIDGE"}`,
	}
}

// checkNothingEscaped: esc0 and vic0 are INVALID naming namespace (their
// state and error as state(key) reports them), the victim's links are as
// they were, the refused bridges exist nowhere the test can see, and the
// others are configured where they belong.
func (e *escapeEnv) checkNothingEscaped(t *testing.T, state func(key string) (string, string)) {
	t.Helper()
	for key, want := range map[string]string{
		"linux/interface/esc0": fmt.Sprintf("namespace: %q is not a plain name: it holds '/' at offset 2", e.escape),
		"linux/interface/vic0": fmt.Sprintf("namespace: %q is not among the namespaces the plugin may configure", e.victim),
	} {
		st, errText := state(key)
		if st != "INVALID" || !strings.Contains(errText, want) {
			t.Errorf("%s: %s %q; want INVALID saying %q", key, st, errText, want)
		}
	}
	for _, key := range []string{"linux/interface/ok0", "linux/interface/own0"} {
		if st, errText := state(key); st != "CONFIGURED" {
			t.Errorf("%s: %s %q; want CONFIGURED", key, st, errText)
		}
	}
	if after := nsLinks(t, e.victim); !slices.Equal(after, e.before) {
		t.Errorf("ip -n %s link: %q, before %q: the agent created something in the victim namespace", e.victim, after, e.before)
	}
	for _, l := range []string{"esc0", "vic0"} {
		if linkExists(e.agentH, l) || linkExists(e.allowH, l) {
			t.Errorf("%s exists in the agent's or the allowed namespace", l)
		}
		if _, err := netlink.LinkByName(l); err == nil {
			t.Errorf("%s exists in the test's (the host's) namespace", l)
		}
	}
	if !linkExists(e.allowH, "ok0") || !linkExists(e.agentH, "own0") {
		t.Errorf("ok0 in %s: %v, own0 in %s: %v; want both", e.allowed, linkExists(e.allowH, "ok0"), e.agentNs, linkExists(e.agentH, "own0"))
	}
}

// httpState reads a value's state and error from the agent's HTTP API,
// waiting for it to be reported.
func httpState(t *testing.T, a *agentProc) func(string) (string, string) {
	return func(key string) (string, string) {
		var st *apiv1.ValueStatus
		eventually(t, 20*time.Second, key+" settled", func() (bool, string) {
			st = a.status(key)
			s := st.GetState()
			return s == "INVALID" || s == "CONFIGURED" || s == "FAILED", st.String()
		})
		return st.GetState(), st.GetError()
	}
}

// TestAgentNamespaceEscapeFile: through the file source, with the
// allow-list from the flag.
func TestAgentNamespaceEscapeFile(t *testing.T) {
	e := newEscapeEnv(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	var b strings.Builder
	for k, v := range e.values() {
		fmt.Fprintf(&b, "%s: %s\n", k, v)
	}
	// The sysctl extension keeps the allow-list too.
	forward := nsSysctl(t, e.victim, "net.ipv4.ip_forward")
	b.WriteString(sysctlEntry(e.victim, "net.ipv4.ip_forward", flip(forward)))
	writeFile(t, cfg, b.String())
	a := startAgent(t, "-name", "tns1", "-netns", e.agentNs, "-netns-allow", e.allowed, "-file", cfg,
		"-state-dir", filepath.Join(dir, "state"), "-grpc", "off")
	state := httpState(t, a)
	e.checkNothingEscaped(t, state)
	key := "linux/sysctl/" + e.victim + "/net.ipv4.ip_forward"
	if st, errText := state(key); st != "INVALID" || !strings.Contains(errText, "namespace: ") {
		t.Errorf("%s: %s %q; want INVALID naming namespace", key, st, errText)
	}
	if got := nsSysctl(t, e.victim, "net.ipv4.ip_forward"); got != forward {
		t.Errorf("net.ipv4.ip_forward in the victim namespace: %s, was %s", got, forward)
	}
}

// TestAgentNamespaceEscapeEtcd: through the etcd source, with the
// allow-list from the configuration file.
func TestAgentNamespaceEscapeEtcd(t *testing.T) {
	e := newEscapeEnv(t)
	srv := etcdtest.Start(t)
	client := srv.NewClient()
	ctx := context.Background()
	for k, v := range e.values() {
		if _, err := client.Put(ctx, "/kvdescriptor/tns2/config/"+k, v); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "agent.yaml")
	writeFile(t, conf, fmt.Sprintf("southbound:\n  linux: {netns: %q, netns_allow: [%q]}\n", e.agentNs, e.allowed))
	a := startAgent(t, "-config", conf, "-name", "tns2", "-etcd", srv.URL, "-etcd-status",
		"-state-dir", filepath.Join(dir, "state"), "-grpc", "off")
	e.checkNothingEscaped(t, httpState(t, a))
	// The status written back to etcd says so too.
	eventually(t, 30*time.Second, "esc0's status in etcd", func() (bool, string) {
		resp, err := client.Get(ctx, "/kvdescriptor/tns2/status/linux/interface/esc0")
		if err != nil || len(resp.Kvs) != 1 {
			return false, fmt.Sprint(err)
		}
		v := string(resp.Kvs[0].Value)
		return strings.Contains(v, "INVALID") && strings.Contains(v, "namespace: "), v
	})
}

// TestAgentNamespaceEscapeGRPC: through the gRPC API, with the allow-list
// from the flag.
func TestAgentNamespaceEscapeGRPC(t *testing.T) {
	e := newEscapeEnv(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, "{}\n")
	state := filepath.Join(dir, "state")
	a := startAgent(t, "-name", "tns3", "-netns", e.agentNs, "-netns-allow", e.allowed, "-file", cfg, "-state-dir", state)
	c := grpcClient(t, filepath.Join(state, "grpc.sock"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var values []*apiv1.Value
	for k, v := range e.values() {
		values = append(values, &apiv1.Value{Key: k, Value: &apiv1.Value_Json{Json: v}, JsonType: "linux.interfaces.v1.Interface"})
	}
	resp, err := c.Commit(ctx, &apiv1.CommitRequest{Values: values, Wait: true, Description: "namespace escape"})
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]*apiv1.Outcome{}
	for _, o := range resp.GetOutcomes() {
		outcomes[o.GetKey()] = o
	}
	e.checkNothingEscaped(t, func(key string) (string, string) {
		o := outcomes[key]
		if o == nil {
			t.Errorf("no outcome for %s: %v", key, resp)
			return "", ""
		}
		return o.GetState(), o.GetError()
	})
	// The HTTP API agrees.
	if st, errText := httpState(t, a)("linux/interface/esc0"); st != "INVALID" || !strings.Contains(errText, "namespace: ") {
		t.Errorf("esc0 over HTTP: %s %q", st, errText)
	}
	if _, err := os.Stat(filepath.Join("/var/run/netns", e.victim)); err != nil {
		t.Errorf("the victim namespace: %v", err)
	}
}
