//go:build linux

package linux_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// requireRoot fails (never skips) a test that cannot create network
// namespaces: CI runs these tests as root and must notice when it cannot.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("this test needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network namespaces; run it as root (euid is %d)", os.Geteuid())
	}
}

// newNetns creates an unnamed network namespace for the test; it is gone
// when its handle is closed at the end of the test. The calling thread is
// locked while it is switched, and switched back.
func newNetns(t testing.TB) netns.NsHandle {
	t.Helper()
	requireRoot(t)
	ns, err := linux.OnLockedThread(func() (netns.NsHandle, error) { return netns.New() })
	if err != nil {
		t.Fatalf("creating a network namespace: %v", err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

// newNamedNetns creates a named network namespace (/var/run/netns/NAME)
// and deletes it at the end of the test.
func newNamedNetns(t testing.TB) (string, netns.NsHandle) {
	t.Helper()
	requireRoot(t)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "kvdtest-" + hex.EncodeToString(b)
	ns, err := linux.OnLockedThread(func() (netns.NsHandle, error) { return netns.NewNamed(name) })
	if err != nil {
		t.Fatalf("creating network namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		ns.Close()
		if err := netns.DeleteNamed(name); err != nil {
			t.Errorf("deleting network namespace %s: %v", name, err)
		}
	})
	return name, ns
}

// env is one test's namespace, plugin and scheduler.
type env struct {
	t   testing.TB
	ctx context.Context
	ns  netns.NsHandle
	h   *netlink.Handle // the test's own view of the namespace
	p   *linux.Plugin
	s   *scheduler.Scheduler
	// handled holds the keys of the interfaces that a report of the
	// watcher (watch) named, once that report was handled to its end
	// (notification and drift check).
	handledMu sync.Mutex
	handled   map[string]bool
}

func newEnv(t testing.TB, opts ...linux.Option) *env {
	t.Helper()
	return newEnvWith(t, nil, opts...)
}

// newEnvWith is newEnv with options of the scheduler too.
func newEnvWith(t testing.TB, sopts []scheduler.Option, opts ...linux.Option) *env {
	t.Helper()
	ns := newNetns(t)
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatalf("netlink handle: %v", err)
	}
	t.Cleanup(h.Close)
	// lo up, as a namespace's own programs would have it.
	if lo, err := h.LinkByName("lo"); err == nil {
		_ = h.LinkSetUp(lo)
	}
	p, err := linux.New(append([]linux.Option{linux.WithNamespace(ns)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	logger := slog.New(scheduler.NewLogHandler(testWriter{t}, slog.LevelInfo))
	s, err := scheduler.New(append([]scheduler.Option{scheduler.WithLogger(logger)}, sopts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() {
		if err := s.Close(ctx); err != nil {
			t.Errorf("closing the scheduler: %v", err)
		}
	})
	if err := s.Register(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, ns: ns, h: h, p: p, s: s}
}

// testWriter sends log output to t.Log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// commit commits the transaction and fails the test on an error.
func (e *env) commit(txn *scheduler.Txn) *scheduler.Result {
	e.t.Helper()
	res, err := txn.Commit(e.ctx)
	if err != nil {
		e.t.Fatalf("commit: %v", err)
	}
	return res
}

// set commits the values, keyed by their generated keys.
func (e *env) set(values ...proto.Message) *scheduler.Result {
	e.t.Helper()
	txn := e.s.Txn()
	for _, v := range values {
		txn.Set(keyOf(v), v)
	}
	return e.commit(txn)
}

func keyOf(v proto.Message) string {
	switch v := v.(type) {
	case *linuxinterfaces.Interface:
		return linuxinterfaces.InterfaceKeyFor(v)
	case *linuxl3.Route:
		return linuxl3.RouteKeyFor(v)
	case *linuxl3.Neighbour:
		return linuxl3.NeighbourKeyFor(v)
	case *linuxl3.Rule:
		return linuxl3.RuleKeyFor(v)
	}
	panic(fmt.Sprintf("no key for %T", v))
}

// expect checks the state of keys.
func (e *env) expect(state scheduler.State, keys ...string) {
	e.t.Helper()
	for _, k := range keys {
		if st := e.s.Status(k); st.State != state {
			e.t.Errorf("%s: %s (last error: %v), want %s", k, st.State, st.LastErr, state)
		}
	}
}

// eventually waits up to 30s for key to reach state (a bound for a
// loaded machine, under -race; it returns as soon as the state is there).
func (e *env) eventually(state scheduler.State, key string) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if e.s.Status(key).State == state {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := e.s.Status(key)
	e.t.Fatalf("%s: %s after 30s (last error: %v), want %s", key, st.State, st.LastErr, state)
}

// link returns the kernel link of the given name in the test's namespace.
func (e *env) link(name string) netlink.Link {
	e.t.Helper()
	l, err := e.h.LinkByName(name)
	if err != nil {
		e.t.Fatalf("ip link show %s: %v", name, err)
	}
	return l
}

func (e *env) noLink(name string) {
	e.t.Helper()
	if l, err := e.h.LinkByName(name); err == nil {
		e.t.Errorf("link %s (%s) still exists", name, l.Type())
	}
}

// addrs returns the addresses of a link (without IPv6 link-local ones),
// sorted.
func addrsOf(t testing.TB, h *netlink.Handle, name string) []string {
	t.Helper()
	l, err := h.LinkByName(name)
	if err != nil {
		t.Fatalf("ip link show %s: %v", name, err)
	}
	list, err := h.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatalf("ip addr show dev %s: %v", name, err)
	}
	var out []string
	for _, a := range list {
		if a.IP.IsLinkLocalUnicast() {
			continue
		}
		out = append(out, a.IPNet.String())
	}
	slices.Sort(out)
	return out
}

// ourRoutes lists the routes of the namespace with the given protocol, as
// "dst via gw dev name metric m table t".
func ourRoutes(t testing.TB, h *netlink.Handle, proto int) []string {
	t.Helper()
	list, err := h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Protocol: netlink.RouteProtocol(proto)}, netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatalf("ip route show table all: %v", err)
	}
	var out []string
	for _, r := range list {
		name := fmt.Sprint(r.LinkIndex)
		if l, err := h.LinkByIndex(r.LinkIndex); err == nil {
			name = l.Attrs().Name
		}
		s := r.Dst.String()
		if r.Gw != nil {
			s += " via " + r.Gw.String()
		}
		out = append(out, fmt.Sprintf("%s dev %s metric %d table %d", s, name, r.Priority, r.Table))
	}
	slices.Sort(out)
	return out
}

// kernelSupports reports whether the kernel can create links of a kind,
// by creating one in a scratch namespace.
var kernelSupports = sync.OnceValue(func() map[string]error {
	out := map[string]error{}
	ns, err := linux.OnLockedThread(func() (netns.NsHandle, error) { return netns.New() })
	if err != nil {
		return map[string]error{"": err}
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return map[string]error{"": err}
	}
	defer h.Close()
	parent := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "probe0"}}
	out["bridge"] = h.LinkAdd(parent)
	for kind, l := range map[string]netlink.Link{
		"dummy": &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: "probe1"}},
		"vrf":   &netlink.Vrf{LinkAttrs: netlink.LinkAttrs{Name: "probe2"}, Table: 10},
		"vlan":  &netlink.Vlan{LinkAttrs: netlink.LinkAttrs{Name: "probe3", ParentIndex: parent.Index}, VlanId: 10},
	} {
		out[kind] = h.LinkAdd(l)
	}
	return out
})

// kernelHas reports whether the kernel creates links of a kind: false
// when it answers that the type is not supported (its module missing);
// any other failure of the probe fails the test.
func kernelHas(t *testing.T, kind string) bool {
	t.Helper()
	sup := kernelSupports()
	if err := sup[""]; err != nil {
		t.Fatalf("probing the kernel: %v", err)
	}
	err := sup[kind]
	switch {
	case err == nil:
		return true
	case errors.Is(err, unix.EOPNOTSUPP):
		return false
	default:
		t.Fatalf("probing %s link support: %v", kind, err)
		return false
	}
}
