//go:build linux

package linux_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// linkNames lists the links of a namespace.
func linkNames(t *testing.T, ns netns.NsHandle) []string {
	t.Helper()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range links {
		out = append(out, l.Attrs().Name)
	}
	slices.Sort(out)
	return out
}

// expectInvalidNamespace commits v and checks that the value is INVALID
// with the field namespace named (and only it), the reason containing
// reason.
func (e *env) expectInvalidNamespace(v *linuxinterfaces.Interface, reason string) {
	e.t.Helper()
	_, err := e.s.Txn().Set(keyOf(v), v).Commit(e.ctx)
	var inv *kv.InvalidValueError
	if !errors.As(err, &inv) {
		e.t.Fatalf("namespace %q: commit error %v, want a *kv.InvalidValueError", v.GetNamespace(), err)
	}
	if got := inv.FieldNames(); !slices.Equal(got, []string{"namespace"}) {
		e.t.Errorf("namespace %q: invalid fields %q, want [namespace] (%v)", v.GetNamespace(), got, err)
	}
	if !strings.Contains(err.Error(), reason) {
		e.t.Errorf("namespace %q: error %q, want it to say %q", v.GetNamespace(), err, reason)
	}
	e.expect(scheduler.INVALID, keyOf(v))
}

// TestNamespaceIsAPlainName: a namespace name that is a path out of the
// netns directory (here to a namespace that the test process holds, as
// ../../proc/1/ns/net would be the host's) is INVALID naming namespace,
// and nothing is created in the namespace it points to.
func TestNamespaceIsAPlainName(t *testing.T) {
	e := newEnv(t)
	victim := newNetns(t)
	before := linkNames(t, victim)
	escape := fmt.Sprintf("../../proc/self/fd/%d", int(victim))
	for _, name := range []string{escape, "..", "a b", "blue\x00", strings.Repeat("n", 256)} {
		e.expectInvalidNamespace(&linuxinterfaces.Interface{Name: "esc0", Type: linuxinterfaces.Interface_TYPE_BRIDGE, Namespace: name}, "not a plain name")
	}
	if after := linkNames(t, victim); !slices.Equal(before, after) {
		t.Errorf("links of the victim namespace: %q, before %q: something was created there", after, before)
	}
}

// TestAllowedNamespaces: with an allow-list, a value naming another
// namespace is INVALID naming namespace and nothing is created there; an
// allowed namespace and the plugin's own are configured.
func TestAllowedNamespaces(t *testing.T) {
	allowed, allowedNs := newNamedNetns(t)
	victim, victimNs := newNamedNetns(t)
	e := newEnv(t, linux.WithAllowedNamespaces(allowed))
	before := linkNames(t, victimNs)

	e.expectInvalidNamespace(&linuxinterfaces.Interface{Name: "vic0", Type: linuxinterfaces.Interface_TYPE_BRIDGE, Namespace: victim},
		fmt.Sprintf("%q is not among the namespaces the plugin may configure (the plugin's own and %q)", victim, allowed))
	if after := linkNames(t, victimNs); !slices.Equal(before, after) {
		t.Errorf("links of the victim namespace: %q, before %q: something was created there", after, before)
	}

	ok := &linuxinterfaces.Interface{Name: "ok0", Type: linuxinterfaces.Interface_TYPE_BRIDGE, Namespace: allowed}
	own := &linuxinterfaces.Interface{Name: "own0", Type: linuxinterfaces.Interface_TYPE_BRIDGE}
	e.set(ok, own)
	e.expect(scheduler.CONFIGURED, keyOf(ok), keyOf(own))
	if !slices.Contains(linkNames(t, allowedNs), "ok0") {
		t.Errorf("ok0 is not in the allowed namespace %s", allowed)
	}
	e.link("own0")

	// No names: only the plugin's own.
	e2 := newEnv(t, linux.WithAllowedNamespaces())
	e2.expectInvalidNamespace(&linuxinterfaces.Interface{Name: "ok1", Type: linuxinterfaces.Interface_TYPE_BRIDGE, Namespace: allowed}, "only the plugin's own")
	e2.set(own)
	e2.expect(scheduler.CONFIGURED, keyOf(own))
}

// TestAllowedNamespacesChecked: the allow-list holds namespace names.
func TestAllowedNamespacesChecked(t *testing.T) {
	for _, name := range []string{"", "../x", "a/b"} {
		if p, err := linux.New(linux.WithAllowedNamespaces(name)); err == nil {
			_ = p.Close()
			t.Errorf("WithAllowedNamespaces(%q) was accepted", name)
		} else if !strings.Contains(err.Error(), "allowed network namespace") {
			t.Errorf("WithAllowedNamespaces(%q): %v, want it to name the allowed namespace", name, err)
		}
	}
}

// TestKernelNames: the kernel's name is host_if_name (the schema checks
// it) or, when that is empty, the label (the plugin checks it): each
// refusal names its field once.
func TestKernelNames(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		v     *linuxinterfaces.Interface
		field string
	}{
		{&linuxinterfaces.Interface{Name: "a-label-of-16-by", Type: linuxinterfaces.Interface_TYPE_BRIDGE}, "name"},
		{&linuxinterfaces.Interface{Name: "br:0", Type: linuxinterfaces.Interface_TYPE_BRIDGE}, "name"},
		{&linuxinterfaces.Interface{Name: "br0", HostIfName: "a-name-of-16-byt", Type: linuxinterfaces.Interface_TYPE_BRIDGE}, "host_if_name"},
		{&linuxinterfaces.Interface{Name: "br0", HostIfName: "br/0", Type: linuxinterfaces.Interface_TYPE_BRIDGE}, "host_if_name"},
	} {
		_, err := e.s.Txn().Set(keyOf(tc.v), tc.v).Commit(e.ctx)
		var inv *kv.InvalidValueError
		if !errors.As(err, &inv) || !slices.Equal(inv.FieldNames(), []string{tc.field}) {
			t.Errorf("%v: %v; want INVALID naming %s once", tc.v, err, tc.field)
		}
	}
	// A long label is fine with a kernel name of its own.
	ok := &linuxinterfaces.Interface{Name: "a-label-of-16-by", HostIfName: "br16", Type: linuxinterfaces.Interface_TYPE_BRIDGE}
	e.set(ok)
	e.expect(scheduler.CONFIGURED, keyOf(ok))
	e.link("br16")
}
