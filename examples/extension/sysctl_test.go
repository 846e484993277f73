package extension

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kvdescriptor/kvdescriptor/examples/agent/ext"
	sysctlv1 "github.com/kvdescriptor/kvdescriptor/generated/examples/sysctl/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name, namespace, sysctl string
		// invalid lists the fields named, in order; none: valid.
		invalid []string
		// allowList: the extension allows blue and green only.
		allowList bool
	}{
		{name: "ipv4 forwarding", namespace: "blue", sysctl: "net.ipv4.ip_forward"},
		{name: "dash and underscore", namespace: "blue", sysctl: "net.ipv6.conf.veth-0_a.forwarding"},
		{name: "empty part", namespace: "blue", sysctl: "net..ipv4", invalid: []string{"name"}},
		{name: "leading dot", namespace: "blue", sysctl: ".net.ipv4", invalid: []string{"name"}},
		{name: "trailing dot", namespace: "blue", sysctl: "net.ipv4.", invalid: []string{"name"}},
		{name: "slash", namespace: "blue", sysctl: "net/ipv4/ip_forward", invalid: []string{"name"}},
		{name: "space", namespace: "blue", sysctl: "net.ipv4 ip_forward", invalid: []string{"name"}},
		{name: "dot-dot namespace", namespace: "..", sysctl: "net.ipv4.ip_forward", invalid: []string{"namespace"}},
		{name: "both", namespace: "a/b", sysctl: "kernel.*", invalid: []string{"namespace", "name"}},
		{name: "path out of the netns directory", namespace: "../../proc/1/ns/net", sysctl: "net.ipv4.ip_forward", invalid: []string{"namespace"}},
		// With an allow-list (blue, green): others are INVALID.
		{name: "allowed", namespace: "green", sysctl: "net.ipv4.ip_forward", allowList: true},
		{name: "not allowed", namespace: "red", sysctl: "net.ipv4.ip_forward", allowList: true, invalid: []string{"namespace"}},
		{name: "not allowed and a path", namespace: "../red", sysctl: "net.ipv4.ip_forward", allowList: true, invalid: []string{"namespace"}},
	}
	descs, err := New(ext.Env{})
	if err != nil {
		t.Fatal(err)
	}
	limited, err := New(ext.Env{AllowedNetns: []string{"blue", "green"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := descs[0]
			if tt.allowList {
				d = limited[0]
			}
			v := &sysctlv1.Sysctl{Namespace: tt.namespace, Name: tt.sysctl, Value: "1"}
			err := d.Validate(sysctlv1.SysctlKeyFor(v), v)
			var got []string
			if inv, ok := err.(*kv.InvalidValueError); ok {
				got = inv.FieldNames()
			} else if err != nil {
				t.Fatalf("error %T %v, want a *kv.InvalidValueError", err, err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.invalid) {
				t.Errorf("invalid fields %q (%v), want %q", got, err, tt.invalid)
			}
		})
	}
}

// TestMemory: over the agent's in-memory southbound the extension
// builds no descriptor (it would change the real kernel).
func TestMemory(t *testing.T) {
	descs, err := New(ext.Env{Memory: true})
	if err != nil || len(descs) != 0 {
		t.Errorf("New over memory: %d descriptors, error %v; want none", len(descs), err)
	}
	if names := ext.Names(); len(names) != 1 || names[0] != "sysctl" {
		t.Errorf("registered extensions %q, want [sysctl]", names)
	}
}

// TestHandlerInNamespace (root: a network namespace): Create writes
// inside the namespace and keeps the value found; Update keeps that
// original; Retrieve reads the value, taking white space as equal;
// Delete restores the original, or, when it is unknown, leaves the value.
func TestHandlerInNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root (a network namespace)")
	}
	ns := fmt.Sprintf("kvdx-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	read := func(name string) string {
		t.Helper()
		out, err := exec.Command("ip", "netns", "exec", ns, "cat", "/proc/sys/"+strings.ReplaceAll(name, ".", "/")).CombinedOutput()
		if err != nil {
			t.Fatalf("read %s: %v: %s", name, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	hostBefore, err := os.ReadFile("/proc/sys/net/ipv4/ping_group_range")
	if err != nil {
		t.Fatal(err)
	}

	h := handler{logger: slog.New(slog.DiscardHandler), procSys: "/proc/sys"}
	ctx := context.Background()
	// A vector of two numbers, which the kernel writes back with a tab.
	k := sysctlv1.SysctlKey{Namespace: ns, Name: "net.ipv4.ping_group_range"}
	orig := read(k.Name)
	v1 := &sysctlv1.Sysctl{Namespace: ns, Name: k.Name, Value: "100 200"}
	meta, err := h.Create(ctx, k, v1)
	if err != nil {
		t.Fatal(err)
	}
	if !meta.Known || meta.Value != orig {
		t.Errorf("Create's metadata %+v, want the original %q", meta, orig)
	}
	if got := read(k.Name); strings.Join(strings.Fields(got), " ") != "100 200" {
		t.Errorf("in the namespace: %q, want 100 200", got)
	}
	if after, _ := os.ReadFile("/proc/sys/net/ipv4/ping_group_range"); string(after) != string(hostBefore) {
		t.Errorf("the test's own namespace changed: %q, was %q", after, hostBefore)
	}

	items, err := h.Retrieve(ctx, []sysctlv1.SysctlItem[Original]{{Key: k, Value: v1, Metadata: meta}})
	if err != nil || len(items) != 1 || items[0].Value.GetValue() != "100 200" || items[0].Metadata != meta {
		t.Errorf("Retrieve: %+v, %v; want the value as intended, with its metadata", items, err)
	}

	v2 := &sysctlv1.Sysctl{Namespace: ns, Name: k.Name, Value: "300 400"}
	if meta, err = h.Update(ctx, k, v1, v2, meta); err != nil || meta.Value != orig {
		t.Errorf("Update: metadata %+v, error %v; want the original %q kept", meta, err, orig)
	}
	items, err = h.Retrieve(ctx, []sysctlv1.SysctlItem[Original]{{Key: k, Value: v1, Metadata: meta}})
	if err != nil || len(items) != 1 || strings.Join(strings.Fields(items[0].Value.GetValue()), " ") != "300 400" {
		t.Errorf("Retrieve after the update: %+v, %v", items, err)
	}

	if err := h.Delete(ctx, k, v2, meta); err != nil {
		t.Fatal(err)
	}
	if got := read(k.Name); got != orig {
		t.Errorf("after Delete: %q, want the original %q", got, orig)
	}

	// An unknown original (the agent restarted): Delete leaves the value.
	if _, err := h.Create(ctx, k, v1); err != nil {
		t.Fatal(err)
	}
	if err := h.Delete(ctx, k, v1, Original{}); err != nil {
		t.Fatal(err)
	}
	if got := read(k.Name); strings.Join(strings.Fields(got), " ") != "100 200" {
		t.Errorf("Delete with no known original changed the value to %q", got)
	}

	// A namespace that is not there: Create fails (retriable: it may come),
	// Retrieve finds nothing, Delete has nothing to do.
	gone := sysctlv1.SysctlKey{Namespace: ns + "-gone", Name: k.Name}
	if _, err := h.Create(ctx, gone, v1); err == nil || !kv.IsRetriable(err) {
		t.Errorf("Create in a missing namespace: %v, want a retriable error", err)
	}
	if items, err := h.Retrieve(ctx, []sysctlv1.SysctlItem[Original]{{Key: gone, Value: v1}}); err != nil || len(items) != 0 {
		t.Errorf("Retrieve in a missing namespace: %v, %v", items, err)
	}
	if err := h.Delete(ctx, gone, v1, Original{Value: "1", Known: true}); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("Delete in a missing namespace: %v, want kv.ErrNotFound", err)
	}
}
