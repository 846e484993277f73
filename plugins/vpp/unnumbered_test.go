package vpp

import (
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/api"
	vppif "go.fd.io/govpp/binapi/interface"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestUnnumbered: an interface set unnumbered waits until the numbered
// one has an address, is set once it has, is read back by a resync, is
// moved to another numbered interface (the derived value re-created, the
// interface untouched), and is unset before the numbered interface's last
// address goes.
func TestUnnumbered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const key = "vpp/interface/u1/unnumbered/lo1"
	u1 := &vppinterfaces.Interface{Name: "u1", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, Unnumbered: "lo1"}
	lo1 := loop("lo1")
	e.set(nil, u1, lo1)
	e.expect(scheduler.CONFIGURED, "vpp/interface/u1", "vpp/interface/lo1")
	e.expect(scheduler.PENDING, key)
	e.f.Requests()
	lo1 = &vppinterfaces.Interface{Name: "lo1", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, IpAddresses: []string{"10.0.0.1/24"}}
	e.set(nil, lo1)
	e.expect(scheduler.CONFIGURED, key)
	var u, l uint32
	e.f.Do(func(f *fakeVPP) { u, _ = f.ifIndex("u1"); l, _ = f.ifIndex("lo1") })
	got := e.f.Requests()
	want := []api.Message{&vppif.SwInterfaceAddDelAddress{SwIfIndex: 2, IsAdd: true, Prefix: addrWithPrefix("10.0.0.1/24")},
		&vppif.SwInterfaceSetUnnumbered{SwIfIndex: 2, UnnumberedSwIfIndex: 1, IsAdd: true}}
	if u != 1 || l != 2 {
		t.Fatalf("u1 is %d, lo1 %d", u, l)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	e.resync()
	onlyDumps(t, e.f, "a resync of an unchanged unnumbered interface")
	e.expect(scheduler.CONFIGURED, key)

	// Another numbered interface: unset, set again; u1 itself untouched.
	lo2 := &vppinterfaces.Interface{Name: "lo2", Type: vppinterfaces.Interface_TYPE_LOOPBACK, IpAddresses: []string{"10.0.1.1/24"}}
	u1b := &vppinterfaces.Interface{Name: "u1", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, Unnumbered: "lo2"}
	e.set(nil, lo2, u1b)
	e.expect(scheduler.CONFIGURED, "vpp/interface/u1/unnumbered/lo2")
	var unnum map[uint32]uint32
	e.f.Do(func(f *fakeVPP) { unnum = maps.Clone(f.unnum) })
	if diff := cmp.Diff(map[uint32]uint32{1: 3}, unnum); diff != "" {
		t.Errorf("VPP's unnumbered interfaces (-want +got):\n%s", diff)
	}
	for _, n := range e.f.RequestNames() {
		if n == "delete_loopback" {
			t.Errorf("moving the unnumbered setting sent %s", n)
		}
	}

	// lo2 loses its address: u1 is made numbered first, and waits.
	e.set(nil, &vppinterfaces.Interface{Name: "lo2", Type: vppinterfaces.Interface_TYPE_LOOPBACK})
	names := e.f.RequestNames()
	want2 := []string{"sw_interface_set_unnumbered", "sw_interface_add_del_address"}
	if diff := cmp.Diff(want2, names); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	e.expect(scheduler.PENDING, "vpp/interface/u1/unnumbered/lo2")
	e.f.Do(func(f *fakeVPP) { unnum = maps.Clone(f.unnum) })
	if len(unnum) != 0 {
		t.Errorf("VPP's unnumbered interfaces: %v, want none", unnum)
	}

	// Set by hand between interfaces made by hand: obtained, and left
	// alone by a resync.
	e.f.Do(func(f *fakeVPP) {
		f.ifaces[20] = &vppif.SwInterfaceDetails{SwIfIndex: 20, InterfaceName: "loop20", InterfaceDevType: "Loopback"}
		f.ifaces[21] = &vppif.SwInterfaceDetails{SwIfIndex: 21, InterfaceName: "loop21", InterfaceDevType: "Loopback"}
		f.unnum[21] = 20
	})
	e.resync()
	if st := e.s.Status("vpp/interface/loop21/unnumbered/loop20"); st.State != scheduler.OBTAINED {
		t.Errorf("unnumbered set by hand: %s (%v), want OBTAINED", st.State, st.LastErr)
	}
	onlyDumps(t, e.f, "a resync with an unnumbered interface set by hand")

	// Its own numbered interface: refused before VPP is asked.
	self := &vppinterfaces.Interface{Name: "s", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Unnumbered: "s"}
	e.set(nil, self)
	e.expect(scheduler.INVALID, "vpp/interface/s")
}
