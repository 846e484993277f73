package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd/etcdtest"
)

// The extension of examples/extension, linked into the agent by
// extensions.go: a sysctl of a network namespace, a model the agent's
// code never names.

// nsSysctl reads a sysctl in the named network namespace, the way an
// operator would.
func nsSysctl(t *testing.T, ns, name string) string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "cat", "/proc/sys/"+strings.ReplaceAll(name, ".", "/")).CombinedOutput()
	if err != nil {
		t.Fatalf("read %s in %s: %v: %s", name, ns, err, out)
	}
	return strings.TrimSpace(string(out))
}

// flip returns the other value of a 0/1 sysctl.
func flip(v string) string {
	if v == "0" {
		return "1"
	}
	return "0"
}

func sysctlEntry(ns, name, value string) string {
	return "linux/sysctl/" + ns + "/" + name + ":\n  namespace: " + ns + "\n  name: " + name + "\n  value: \"" + value + "\"\n"
}

var (
	kvctlOnce sync.Once
	kvctlPath string
	kvctlErr  error
)

// kvctlBinary builds cmd/kvctl once, next to the agent binary.
func kvctlBinary(t *testing.T) string {
	t.Helper()
	kvctlOnce.Do(func() {
		kvctlPath = filepath.Join(filepath.Dir(agentBin), "kvctl")
		if out, err := exec.Command("go", "build", "-o", kvctlPath, "../../cmd/kvctl").CombinedOutput(); err != nil {
			kvctlErr = &buildError{err, string(out)}
		}
	})
	if kvctlErr != nil {
		t.Fatal(kvctlErr)
	}
	return kvctlPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build kvctl: " + e.err.Error() + "\n" + e.out }

// TestExtSysctl (root: network namespaces): the agent, built with the
// sysctl extension, takes sysctls from its file and etcd sources and its
// gRPC API, writes them under /proc/sys inside the namespace, reports them
// CONFIGURED through the HTTP API and kvctl, an invalid name INVALID with
// the field named; removing one from the file restores the value found
// before the agent first wrote it.
func TestExtSysctl(t *testing.T) {
	ns, _ := newNetns(t)
	srv := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const (
		fromFile = "net.ipv4.ip_forward"
		fromEtcd = "net.ipv6.conf.all.forwarding"
		fromGRPC = "net.ipv4.icmp_echo_ignore_all"
		invalid  = "net..ipv4.ip_forward"
	)
	before := map[string]string{}
	for _, name := range []string{fromFile, fromEtcd, fromGRPC} {
		before[name] = nsSysctl(t, ns, name)
	}
	key := func(name string) string { return "linux/sysctl/" + ns + "/" + name }

	if _, err := srv.NewClient().Put(ctx, "/kvdescriptor/tx/config/"+key(fromEtcd),
		`{"namespace": "`+ns+`", "name": "`+fromEtcd+`", "value": "`+flip(before[fromEtcd])+`"}`); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, sysctlEntry(ns, fromFile, flip(before[fromFile]))+sysctlEntry(ns, invalid, "1"))
	state := filepath.Join(dir, "state")
	a := startAgent(t, "-name", "tx", "-netns", ns, "-file", cfg, "-etcd", srv.URL, "-state-dir", state, "-load-deadline", "5s")
	if !strings.Contains(a.log.String(), "names=sysctl") {
		t.Errorf("the agent's log does not name the extension:\n%s", a.log.String())
	}

	// The file's and etcd's sysctls, in the namespace.
	for _, name := range []string{fromFile, fromEtcd} {
		want := flip(before[name])
		eventually(t, 30*time.Second, name+" in the namespace", func() (bool, string) {
			got := nsSysctl(t, ns, name)
			return got == want, "got " + got + ", want " + want
		})
	}

	// The API over HTTP: CONFIGURED; the invalid name INVALID, naming the
	// field.
	for name, owner := range map[string]string{fromFile: "file", fromEtcd: "etcd"} {
		if st := a.status(key(name)); st.GetState() != "CONFIGURED" || st.GetOwner() != owner {
			t.Errorf("%s: %v, want CONFIGURED, owned by %s", key(name), st, owner)
		}
	}
	if bad := a.status(key(invalid)); bad.GetState() != "INVALID" || !strings.Contains(bad.GetError(), `name: "net..ipv4.ip_forward" is not a sysctl name`) {
		t.Errorf("%s: %v, want INVALID naming the field", key(invalid), bad)
	}

	// The gRPC API: a sysctl committed as JSON, applied and CONFIGURED.
	c := grpcClient(t, filepath.Join(state, "grpc.sock"))
	resp, err := c.Commit(ctx, &apiv1.CommitRequest{Wait: true, Values: []*apiv1.Value{{
		Key:   key(fromGRPC),
		Value: &apiv1.Value_Json{Json: `{"namespace": "` + ns + `", "name": "` + fromGRPC + `", "value": "` + flip(before[fromGRPC]) + `"}`},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if o := resp.GetOutcomes(); len(o) != 1 || o[0].GetState() != "CONFIGURED" {
		t.Errorf("the gRPC commit's outcomes: %v", o)
	}
	if got := nsSysctl(t, ns, fromGRPC); got != flip(before[fromGRPC]) {
		t.Errorf("%s after the gRPC commit: %s", fromGRPC, got)
	}

	// kvctl, over the gRPC API.
	out, err := exec.Command(kvctlBinary(t), "--server", "unix:"+filepath.Join(state, "grpc.sock"), "status", "linux/sysctl/").CombinedOutput()
	if err != nil {
		t.Fatalf("kvctl status: %v\n%s", err, out)
	}
	for _, want := range []string{key(fromFile) + " ", key(fromEtcd) + " ", key(fromGRPC) + " ", key(invalid) + " "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kvctl status does not list %s:\n%s", strings.TrimSpace(want), out)
		}
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, key(fromFile)+" ") && !strings.Contains(line, "CONFIGURED") ||
			strings.HasPrefix(line, key(invalid)+" ") && !strings.Contains(line, "INVALID") {
			t.Errorf("kvctl status: %q", line)
		}
	}

	// Removed from the file: the value found before is restored; etcd's
	// stays.
	writeFile(t, cfg, sysctlEntry(ns, invalid, "1"))
	eventually(t, 30*time.Second, fromFile+" restored", func() (bool, string) {
		got := nsSysctl(t, ns, fromFile)
		return got == before[fromFile], "got " + got + ", want " + before[fromFile]
	})
	if got := nsSysctl(t, ns, fromEtcd); got != flip(before[fromEtcd]) {
		t.Errorf("%s, etcd's, is %s after the file changed", fromEtcd, got)
	}
	a.stop()
}
