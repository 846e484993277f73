//go:build linux

package vpp

import (
	"os"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// newNetns creates a network namespace for the test (gone when its handle
// is closed), switching a locked thread there and back.
func newNetns(t *testing.T) netns.NsHandle {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("this test needs root to create a network namespace (euid %d)", os.Geteuid())
	}
	ns, err := linux.NewNamespace()
	if err != nil {
		t.Fatalf("creating a network namespace: %v", err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

// TestScenarioAfPacketWaitsForLinuxVeth registers the Linux plugin (in a
// fresh network namespace) and the VPP plugin (over the fake) with one
// scheduler: an af_packet interface names a Linux veth by the Linux
// model's label, a dependency that the scheduler alone resolves.
func TestScenarioAfPacketWaitsForLinuxVeth(t *testing.T) {
	ns := newNetns(t)
	lp, err := linux.New(linux.WithNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lp.Close() })
	e := newEnv(t)
	if err := e.s.Register(lp.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)

	af := &vppinterfaces.Interface{Name: "host-veth1", Type: vppinterfaces.Interface_TYPE_AF_PACKET, HostIfName: "veth1", Enabled: true}
	e.set(nil, af)
	e.expect(scheduler.PENDING, "vpp/interface/host-veth1")
	if why, ok := e.s.WhyPending("vpp/interface/host-veth1"); !ok {
		t.Error("no reason why the af_packet interface is pending")
	} else {
		t.Logf("pending: %+v", why)
	}
	if names := e.f.RequestNames(); len(names) != 0 {
		t.Errorf("VPP was asked %v before the veth exists", names)
	}

	txn := e.s.Txn()
	for _, v := range []*linuxinterfaces.Interface{
		{Name: "veth1", Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: "veth2", Enabled: true},
		{Name: "veth2", Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: "veth1", Enabled: true},
	} {
		txn.Set(linuxinterfaces.InterfaceKeyFor(v), v)
	}
	res, err := txn.Commit(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.expect(scheduler.CONFIGURED, "linux/interface/veth1", "linux/interface/veth2", "vpp/interface/host-veth1")
	if _, err := h.LinkByName("veth1"); err != nil {
		t.Errorf("veth1 in the namespace: %v", err)
	}
	order := func(res *scheduler.Result) []string {
		var out []string
		for _, op := range res.Executed {
			out = append(out, op.Kind.String()+" "+op.Key)
		}
		return out
	}
	got := order(res)
	if i, j := slices.Index(got, "CREATE linux/interface/veth1"), slices.Index(got, "CREATE vpp/interface/host-veth1"); i < 0 || j < i {
		t.Errorf("operations %v: want the veth created, then the af_packet interface", got)
	}
	if names := e.f.RequestNames(); len(names) == 0 || names[0] != "af_packet_create_v3" {
		t.Errorf("requests %v, want af_packet_create_v3 first", names)
	}

	// Deleting the veth takes the af_packet interface down first.
	txn = e.s.Txn()
	txn.Delete("linux/interface/veth1")
	txn.Delete("linux/interface/veth2")
	if res, err = txn.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	got = order(res)
	if i, j := slices.Index(got, "DELETE vpp/interface/host-veth1"), slices.Index(got, "DELETE linux/interface/veth1"); i < 0 || j < i {
		t.Errorf("operations %v: want the af_packet interface deleted, then the veth", got)
	}
	e.expect(scheduler.PENDING, "vpp/interface/host-veth1")
	if names := e.f.RequestNames(); !slices.Equal(names, []string{"af_packet_delete"}) {
		t.Errorf("requests %v, want af_packet_delete", names)
	}
	if _, err := h.LinkByName("veth1"); err == nil {
		t.Error("veth1 still exists")
	}
}
