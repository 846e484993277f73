//go:build linux

package linux_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"google.golang.org/protobuf/proto"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// newL30Netns creates a named network namespace, kvd-l30-XXXXXXXX, and
// deletes it at the end of the test.
func newL30Netns(t testing.TB) (string, netns.NsHandle) {
	t.Helper()
	requireRoot(t)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "kvd-l30-" + hex.EncodeToString(b)
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

// run runs a command and returns its output, failing the test on an error.
func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// resyncOps starts a second agent (plugin and scheduler) on ns, as after
// a restart, and runs its startup resync of values with the record of
// the first: the operations it executed, "KIND key", sorted. Retrieve
// must find what the first agent made as intended for it to do nothing.
func resyncOps(t *testing.T, ns netns.NsHandle, extra []kv.Descriptor, values ...proto.Message) []string {
	t.Helper()
	return resyncOpsWith(t, ns, nil, extra, values...)
}

// resyncOpsWith is resyncOps with a plugin built with opts.
func resyncOpsWith(t *testing.T, ns netns.NsHandle, opts []linux.Option, extra []kv.Descriptor, values ...proto.Message) []string {
	t.Helper()
	p, err := linux.New(append([]linux.Option{linux.WithNamespace(ns)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, err := scheduler.New(scheduler.WithLogger(slog.New(scheduler.NewLogHandler(testWriter{t}, slog.LevelInfo))))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if err := s.Register(append(p.Descriptors(), extra...)...); err != nil {
		t.Fatal(err)
	}
	var record []scheduler.KeyValue
	txn := s.Txn(scheduler.FullResync())
	for _, v := range values {
		k := anyKey(v)
		record = append(record, scheduler.KeyValue{Key: k, Value: proto.Clone(v)})
		txn.Set(k, proto.Clone(v))
	}
	res, err := txn.With(scheduler.Remembered(record...)).Commit(context.Background())
	if err != nil {
		t.Fatalf("startup resync: %v", err)
	}
	var ops []string
	for _, o := range res.Executed {
		if o.Kind != scheduler.OpNone {
			ops = append(ops, o.Kind.String()+" "+o.Key)
		}
	}
	slices.Sort(ops)
	return ops
}

func anyKey(v proto.Message) string {
	if v, ok := v.(*vppinterfaces.Interface); ok {
		return vppinterfaces.InterfaceKeyFor(v)
	}
	return nftKey(v)
}

// TestNetnsLoopback configures the namespace's lo (never created nor
// deleted): addresses and MTU in place, adopted by Retrieve, and left
// (without the addresses) by Delete.
func TestNetnsLoopback(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	index := e.link("lo").Attrs().Index
	v := &linuxinterfaces.Interface{Name: "loop", Type: linuxinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, Mtu: 9000, IpAddresses: []string{"10.30.0.1/32"}}
	e.set(v)
	e.expect(scheduler.CONFIGURED, keyOf(v))
	if lo := e.link("lo"); lo.Attrs().MTU != 9000 || lo.Attrs().Index != index {
		t.Errorf("lo: MTU %d index %d, want 9000 and %d", lo.Attrs().MTU, lo.Attrs().Index, index)
	}
	if got := addrsOf(t, e.h, "lo"); !slices.Contains(got, "10.30.0.1/32") {
		t.Errorf("lo addresses %q, want 10.30.0.1/32 among them", got)
	}

	// In place: MTU.
	v = proto.Clone(v).(*linuxinterfaces.Interface)
	v.Mtu = 16000
	res := e.set(v)
	if !slices.ContainsFunc(res.Executed, func(o scheduler.Op) bool { return o.Key == keyOf(v) && o.Kind == scheduler.OpUpdate }) {
		t.Errorf("the MTU change was not an update:\n%s", scheduler.FormatOps(res.Executed))
	}
	if lo := e.link("lo"); lo.Attrs().MTU != 16000 {
		t.Errorf("lo MTU %d, want 16000", lo.Attrs().MTU)
	}

	// Retrieve adopts it: a restarted agent does nothing; with the MTU
	// changed behind its back, it updates only that.
	if ops := resyncOps(t, e.ns, nil, v); len(ops) != 0 {
		t.Errorf("resync over a configured loopback executed %q", ops)
	}
	if err := e.h.LinkSetMTU(e.link("lo"), 1500); err != nil {
		t.Fatal(err)
	}
	if ops := resyncOps(t, e.ns, nil, v); !slices.Equal(ops, []string{"UPDATE " + keyOf(v)}) {
		t.Errorf("resync over a loopback with another MTU executed %q, want its update", ops)
	}

	// host_if_name is not for a loopback (always lo): INVALID.
	bad := proto.Clone(v).(*linuxinterfaces.Interface)
	bad.Name, bad.HostIfName = "loop2", "lo"
	_, _ = e.s.Txn().Set(keyOf(bad), bad).Commit(e.ctx) // fails: INVALID
	if st := e.s.Status(keyOf(bad)); st.State != scheduler.INVALID || !strings.Contains(fmt.Sprint(st.LastErr), "host_if_name") {
		t.Errorf("a loopback with host_if_name: %s (%v), want INVALID naming host_if_name", st.State, st.LastErr)
	}
	e.commit(e.s.Txn().Delete(keyOf(bad)))

	e.commit(e.s.Txn().Delete(keyOf(v)))
	e.expect(scheduler.NONEXISTENT, keyOf(v))
	if lo := e.link("lo"); lo.Attrs().Index != index || lo.Attrs().Flags&0x1 == 0 {
		t.Errorf("lo after delete: index %d, flags %v: want it left (index %d, up)", lo.Attrs().Index, lo.Attrs().Flags, index)
	}
	if got := addrsOf(t, e.h, "lo"); slices.Contains(got, "10.30.0.1/32") {
		t.Errorf("lo keeps the deleted value's address: %q", got)
	}
}

// TestNetnsExistingInterface configures an interface something else
// created: retried while it is missing, configured when it appears,
// updated in place, adopted by Retrieve, and left by Delete with the
// state and MTU it had (only the value's addresses go).
func TestNetnsExistingInterface(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := &linuxinterfaces.Interface{Name: "uplink", HostIfName: "ext30", Type: linuxinterfaces.Interface_TYPE_EXISTING, Enabled: true, Mtu: 1400, IpAddresses: []string{"10.30.2.1/24"}}
	txn := e.s.Txn(scheduler.Retry(scheduler.RetryPolicy{Period: 20 * time.Millisecond, MaxAttempts: 1000}))
	_, _ = txn.Set(keyOf(v), v).Commit(e.ctx) // fails, retried
	if st := e.s.Status(keyOf(v)); st.State != scheduler.RETRYING {
		t.Fatalf("an existing interface that does not exist: %s (%v), want RETRYING", st.State, st.LastErr)
	}
	e.noLink("ext30")

	// Something else creates it (a bridge here): the retry configures it.
	if err := e.h.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "ext30"}}); err != nil {
		t.Fatal(err)
	}
	index := e.link("ext30").Attrs().Index
	e.eventually(scheduler.CONFIGURED, keyOf(v))
	addrKey := linuxinterfaces.InterfaceIpAddressesKey{Name: "uplink", IpAddresses: netip.MustParsePrefix("10.30.2.1/24")}.String()
	e.eventually(scheduler.CONFIGURED, addrKey)
	if l := e.link("ext30"); l.Attrs().MTU != 1400 || l.Attrs().Flags&0x1 == 0 {
		t.Errorf("ext30: MTU %d flags %v, want 1400 and up", l.Attrs().MTU, l.Attrs().Flags)
	}
	if got := addrsOf(t, e.h, "ext30"); !slices.Equal(got, []string{"10.30.2.1/24"}) {
		t.Errorf("ext30 addresses %q", got)
	}

	// In place: MTU and state, the same link.
	v = proto.Clone(v).(*linuxinterfaces.Interface)
	v.Mtu, v.Enabled = 1300, false
	e.set(v)
	e.expect(scheduler.CONFIGURED, keyOf(v))
	if l := e.link("ext30"); l.Attrs().Index != index || l.Attrs().MTU != 1300 || l.Attrs().Flags&0x1 != 0 {
		t.Errorf("ext30 after the update: index %d MTU %d flags %v, want %d, 1300, down", l.Attrs().Index, l.Attrs().MTU, l.Attrs().Flags, index)
	}
	// Another link is another value: refused, the link left alone.
	other := proto.Clone(v).(*linuxinterfaces.Interface)
	other.HostIfName = "ext31"
	_, _ = e.s.Txn().Set(keyOf(other), other).Commit(e.ctx) // fails: refused
	if st := e.s.Status(keyOf(v)); st.State != scheduler.FAILED || !strings.Contains(fmt.Sprint(st.LastErr), "host_if_name") {
		t.Errorf("changing the link of an existing interface: %s (%v), want FAILED naming host_if_name", st.State, st.LastErr)
	}
	e.link("ext30")
	e.set(v)
	e.expect(scheduler.CONFIGURED, keyOf(v))

	if ops := resyncOps(t, e.ns, nil, v); len(ops) != 0 {
		t.Errorf("resync over a configured existing interface executed %q", ops)
	}

	e.commit(e.s.Txn().Delete(keyOf(v)))
	e.expect(scheduler.NONEXISTENT, keyOf(v), addrKey)
	l := e.link("ext30")
	if l.Attrs().Index != index || l.Attrs().MTU != 1300 {
		t.Errorf("ext30 after delete: index %d MTU %d, want it left as it was (%d, 1300)", l.Attrs().Index, l.Attrs().MTU, index)
	}
	if got := addrsOf(t, e.h, "ext30"); len(got) != 0 {
		t.Errorf("ext30 keeps the addresses of the deleted value: %q", got)
	}
}

// fakeVppTaps stands for the VPP plugin's TAP interfaces: it refuses what
// VPP would (not a TAP, no host name) and makes the Linux end as VPP does,
// a TAP device in its own namespace (ip -n NS tuntap add), which it
// deletes with the TAP. VPP cannot delete a Linux end that was moved away
// from its namespace, and neither can this fake.
type fakeVppTaps struct{ ns string }

func (f fakeVppTaps) Create(_ context.Context, _ vppinterfaces.InterfaceKey, v *vppinterfaces.Interface) (struct{}, error) {
	if v.GetType() != vppinterfaces.Interface_TYPE_TAP || v.GetTap().GetHostIfName() == "" {
		return struct{}{}, kv.NonRetriable(fmt.Errorf("fake VPP: %s: only TAPs with a host_if_name", v.GetName()))
	}
	out, err := exec.Command("ip", "-n", f.ns, "tuntap", "add", "dev", v.GetTap().GetHostIfName(), "mode", "tap").CombinedOutput()
	if err != nil {
		return struct{}{}, fmt.Errorf("fake VPP: tuntap add %s: %v: %s", v.GetTap().GetHostIfName(), err, out)
	}
	return struct{}{}, nil
}

func (f fakeVppTaps) Delete(_ context.Context, _ vppinterfaces.InterfaceKey, v *vppinterfaces.Interface, _ struct{}) error {
	out, err := exec.Command("ip", "-n", f.ns, "link", "del", v.GetTap().GetHostIfName()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("fake VPP: delete %s: %v: %s", v.GetTap().GetHostIfName(), err, out)
	}
	return nil
}

// Retrieve reports the TAPs whose Linux end exists, in VPP's namespace
// or moved elsewhere (VPP still has the TAP then).
func (f fakeVppTaps) Retrieve(_ context.Context, correlate []vppinterfaces.InterfaceItem[struct{}]) ([]vppinterfaces.InterfaceItem[struct{}], error) {
	var out []vppinterfaces.InterfaceItem[struct{}]
	for _, c := range correlate {
		if exec.Command("sh", "-c", "ip -all netns exec ip link show dev "+c.Value.GetTap().GetHostIfName()+" 2>/dev/null | grep -q "+c.Value.GetTap().GetHostIfName()).Run() == nil {
			out = append(out, vppinterfaces.InterfaceItem[struct{}]{Key: c.Key, Value: c.Value, Origin: kv.OriginNB})
		}
	}
	return out, nil
}

// TestNetnsTapToVpp: the Linux end of a VPP TAP waits (PENDING) for the
// VPP TAP, is moved into its namespace and configured when VPP made it,
// updated in place, adopted by Retrieve, and deleted (moved back for VPP
// to delete) before the VPP TAP goes.
func TestNetnsTapToVpp(t *testing.T) {
	t.Parallel()
	vppNs, vppHandle := newL30Netns(t)
	appNs, appHandle := newL30Netns(t)
	p, err := linux.New(linux.WithNamespace(vppHandle))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	s, err := scheduler.New(scheduler.WithLogger(slog.New(scheduler.NewLogHandler(testWriter{t}, slog.LevelInfo))))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() { _ = s.Close(ctx) })
	vd, err := vppinterfaces.NewInterfaceDescriptor[struct{}](fakeVppTaps{ns: vppNs})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(append(p.Descriptors(), vd)...); err != nil {
		t.Fatal(err)
	}
	app, err := netlink.NewHandleAt(appHandle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(app.Close)
	e := &env{t: t, ctx: ctx, ns: vppHandle, p: p, s: s}

	lv := &linuxinterfaces.Interface{Name: "vtap30", Type: linuxinterfaces.Interface_TYPE_TAP_TO_VPP, VppTap: "tap0", Namespace: appNs, Enabled: true, Mtu: 1400, IpAddresses: []string{"10.30.3.1/24"}}
	vv := &vppinterfaces.Interface{Name: "tap0", Type: vppinterfaces.Interface_TYPE_TAP, Tap: &vppinterfaces.Interface_Tap{HostIfName: "vtap30"}, Enabled: true}
	e.set(lv)
	e.expect(scheduler.PENDING, keyOf(lv))
	if why, ok := s.WhyPending(keyOf(lv)); !ok || !strings.Contains(fmt.Sprint(why), "vpp/interface/tap0") {
		t.Errorf("pending for %+v, want the VPP TAP", why)
	}

	e.commit(s.Txn().Set(anyKey(vv), vv))
	e.expect(scheduler.CONFIGURED, keyOf(lv), anyKey(vv))
	l, err := app.LinkByName("vtap30")
	if err != nil {
		t.Fatalf("vtap30 in the application's namespace: %v", err)
	}
	if l.Attrs().MTU != 1400 || l.Attrs().Flags&0x1 == 0 {
		t.Errorf("vtap30: MTU %d flags %v, want 1400 and up", l.Attrs().MTU, l.Attrs().Flags)
	}
	if got := addrsOf(t, app, "vtap30"); !slices.Equal(got, []string{"10.30.3.1/24"}) {
		t.Errorf("vtap30 addresses %q", got)
	}
	if out := run(t, "ip", "-n", vppNs, "link", "show"); strings.Contains(out, "vtap30") {
		t.Errorf("vtap30 is still in VPP's namespace:\n%s", out)
	}

	// In place: MTU.
	lv = proto.Clone(lv).(*linuxinterfaces.Interface)
	lv.Mtu = 1350
	res := e.set(lv)
	if !slices.ContainsFunc(res.Executed, func(o scheduler.Op) bool { return o.Key == keyOf(lv) && o.Kind == scheduler.OpUpdate }) {
		t.Errorf("the MTU change was not an update:\n%s", scheduler.FormatOps(res.Executed))
	}
	if l, err := app.LinkByName("vtap30"); err != nil || l.Attrs().MTU != 1350 {
		t.Errorf("vtap30 after the update: %v, %v", l, err)
	}

	vdR, err := vppinterfaces.NewInterfaceDescriptor[struct{}](fakeVppTaps{ns: vppNs})
	if err != nil {
		t.Fatal(err)
	}
	if ops := resyncOps(t, vppHandle, []kv.Descriptor{vdR}, lv, vv); len(ops) != 0 {
		t.Errorf("resync over a configured TAP end executed %q", ops)
	}

	// The VPP TAP goes: the Linux end goes first, moved back to VPP's
	// namespace (else the fake VPP could not delete it), and waits again.
	res = e.commit(s.Txn().Delete(anyKey(vv)))
	i, j := slices.IndexFunc(res.Executed, func(o scheduler.Op) bool { return o.Key == keyOf(lv) && o.Kind == scheduler.OpDelete }),
		slices.IndexFunc(res.Executed, func(o scheduler.Op) bool { return o.Key == anyKey(vv) && o.Kind == scheduler.OpDelete })
	if i < 0 || j < 0 || i > j {
		t.Errorf("want the Linux end deleted before the VPP TAP:\n%s", scheduler.FormatOps(res.Executed))
	}
	e.expect(scheduler.PENDING, keyOf(lv))
	e.expect(scheduler.NONEXISTENT, anyKey(vv))
	if _, err := app.LinkByName("vtap30"); err == nil {
		t.Error("vtap30 is still in the application's namespace")
	}
	if out := run(t, "ip", "-n", vppNs, "link", "show"); strings.Contains(out, "vtap30") {
		t.Errorf("vtap30 survived its VPP TAP:\n%s", out)
	}
	e.commit(s.Txn().Delete(keyOf(lv)))
	e.expect(scheduler.NONEXISTENT, keyOf(lv))
}
