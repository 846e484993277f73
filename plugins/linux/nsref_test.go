//go:build linux

package linux_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// newProcessNetns starts a process in a network namespace of its own
// (unshare -n), as a container would be, and returns its PID; the process
// is killed at the end of the test, and its namespace goes with it.
func newProcessNetns(t *testing.T) int {
	t.Helper()
	requireRoot(t)
	cmd := exec.Command("unshare", "-n", "sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatalf("unshare -n sleep: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// unshare execs sleep once it has moved: wait until the process's
	// namespace differs from ours.
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid)); err == nil && ns != self {
			return cmd.Process.Pid
		}
	}
	t.Fatal("the unshared process did not leave our network namespace in 30s")
	return 0
}

// expectInvalidField commits v and checks that it is INVALID naming only
// field, the reason containing reason.
func (e *env) expectInvalidField(v *linuxinterfaces.Interface, field, reason string) {
	e.t.Helper()
	_, err := e.s.Txn().Set(keyOf(v), v).Commit(e.ctx)
	var inv *kv.InvalidValueError
	if !errors.As(err, &inv) {
		e.t.Fatalf("%v: commit error %v, want a *kv.InvalidValueError", v, err)
	}
	if got := inv.FieldNames(); !slices.Equal(got, []string{field}) || !strings.Contains(err.Error(), reason) {
		e.t.Errorf("%v: invalid fields %q (%v), want [%s] saying %q", v, got, err, field, reason)
	}
	e.expect(scheduler.INVALID, keyOf(v))
}

// TestNetnsNamespaceByPID: an interface in the network namespace of a
// process, named by its PID: created there, updated in place, adopted by
// Retrieve, deleted; refused (naming namespace_pid) when the plugin is
// limited to named namespaces.
func TestNetnsNamespaceByPID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pid := newProcessNetns(t)
	inNs := func() string { return run(t, "nsenter", "-t", fmt.Sprint(pid), "-n", "ip", "-o", "link", "show") }
	v := &linuxinterfaces.Interface{Name: "pid30", Type: linuxinterfaces.Interface_TYPE_BRIDGE, NamespaceKind: linuxinterfaces.Interface_NAMESPACE_KIND_PID, NamespacePid: uint32(pid), Mtu: 1400}
	e.set(v)
	e.expect(scheduler.CONFIGURED, keyOf(v))
	if out := inNs(); !strings.Contains(out, "pid30:") || !strings.Contains(out, "mtu 1400") {
		t.Errorf("pid30 with MTU 1400 is not in the process's namespace:\n%s", out)
	}
	e.noLink("pid30")

	v = proto.Clone(v).(*linuxinterfaces.Interface)
	v.Mtu = 1300
	res := e.set(v)
	if !slices.ContainsFunc(res.Executed, func(o scheduler.Op) bool { return o.Key == keyOf(v) && o.Kind == scheduler.OpUpdate }) {
		t.Errorf("the MTU change was not an update:\n%s", scheduler.FormatOps(res.Executed))
	}
	if out := inNs(); !strings.Contains(out, "mtu 1300") {
		t.Errorf("pid30 after the update:\n%s", out)
	}
	if ops := resyncOps(t, e.ns, nil, v); len(ops) != 0 {
		t.Errorf("resync over an interface in a PID's namespace executed %q", ops)
	}
	e.commit(e.s.Txn().Delete(keyOf(v)))
	if out := inNs(); strings.Contains(out, "pid30") {
		t.Errorf("pid30 survived its delete:\n%s", out)
	}

	limited := newEnv(t, linux.WithAllowedNamespaces())
	limited.expectInvalidField(v, "namespace_pid", "a namespace by PID")
	if out := inNs(); strings.Contains(out, "pid30") {
		t.Errorf("pid30 was created in a namespace the plugin may not configure:\n%s", out)
	}
	// The schema: a PID only with its kind, the kind only with a PID.
	e.expectInvalidField(&linuxinterfaces.Interface{Name: "pid31", Type: linuxinterfaces.Interface_TYPE_BRIDGE, NamespacePid: uint32(pid)}, "namespace_pid", "must be empty")
	e.expectInvalidField(&linuxinterfaces.Interface{Name: "pid32", Type: linuxinterfaces.Interface_TYPE_BRIDGE, NamespaceKind: linuxinterfaces.Interface_NAMESPACE_KIND_PID}, "namespace_pid", "must be set")
}

// TestNetnsNamespaceByPath: an interface in the namespace bound at a path
// under an allowed directory (here the named namespaces' own directory:
// /var/run/netns/NAME by path), created, updated in place, adopted and
// deleted; a path elsewhere, or not in its shortest form, is INVALID
// naming namespace_path, as is every path when no directory is allowed.
func TestNetnsNamespaceByPath(t *testing.T) {
	t.Parallel()
	name, _ := newL30Netns(t)
	path := linux.NetnsDir + "/" + name
	e := newEnv(t, linux.WithNamespaceDirs(linux.NetnsDir))
	inNs := func() string { return run(t, "ip", "-n", name, "-o", "link", "show") }
	v := &linuxinterfaces.Interface{Name: "path30", Type: linuxinterfaces.Interface_TYPE_BRIDGE, NamespaceKind: linuxinterfaces.Interface_NAMESPACE_KIND_PATH, NamespacePath: path, Enabled: true}
	e.set(v)
	e.expect(scheduler.CONFIGURED, keyOf(v))
	if out := inNs(); !strings.Contains(out, "path30:") {
		t.Errorf("path30 is not in %s:\n%s", path, out)
	}
	v = proto.Clone(v).(*linuxinterfaces.Interface)
	v.Mtu = 1280
	e.set(v)
	if out := inNs(); !strings.Contains(out, "mtu 1280") {
		t.Errorf("path30 after the update:\n%s", out)
	}
	if ops := resyncOpsWith(t, e.ns, []linux.Option{linux.WithNamespaceDirs(linux.NetnsDir)}, nil, v); len(ops) != 0 {
		t.Errorf("resync over an interface in a namespace by path executed %q", ops)
	}
	e.commit(e.s.Txn().Delete(keyOf(v)))
	if out := inNs(); strings.Contains(out, "path30") {
		t.Errorf("path30 survived its delete:\n%s", out)
	}

	for p, reason := range map[string]string{
		"/tmp/" + name:                       "not under a directory the plugin allows",
		linux.NetnsDir + "/../netns/" + name: "shortest form",
		"netns/" + name:                      "shortest form",
	} {
		bad := &linuxinterfaces.Interface{Name: "path31", Type: linuxinterfaces.Interface_TYPE_BRIDGE, NamespaceKind: linuxinterfaces.Interface_NAMESPACE_KIND_PATH, NamespacePath: p}
		e.expectInvalidField(bad, "namespace_path", reason)
	}
	none := newEnv(t)
	none.expectInvalidField(v, "namespace_path", "allows no directory")
	if out := inNs(); strings.Contains(out, "path30") {
		t.Errorf("path30 was created although no directory is allowed:\n%s", out)
	}
}
