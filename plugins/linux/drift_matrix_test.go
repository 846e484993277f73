//go:build linux

package linux_test

import (
	"net"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"

	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestNetnsDriftAdoptedDeletion: with the adopt policy, a route deleted
// behind our back is noticed through the watcher and its absence adopted:
// MISSING, flagged with the policy, and not created again.
func TestNetnsDriftAdoptedDeletion(t *testing.T) {
	t.Parallel()
	adopt := scheduler.WithDriftPolicy(func(string, string) (kv.DriftPolicy, bool) { return kv.DriftAdopt, true })
	e := newEnvWith(t, []scheduler.Option{adopt}, linux.WithDebounce(20*time.Millisecond))
	e.watchReady()
	iface, route := driftValues()
	e.set(iface, route)
	e.expect(scheduler.CONFIGURED, keyOf(iface), keyOf(route))

	_, dst, _ := net.ParseCIDR("10.78.0.0/16")
	if err := e.h.RouteDel(&netlink.Route{Dst: dst}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "route MISSING", func() bool { return e.s.Status(keyOf(route)).State == scheduler.MISSING })
	st := e.s.Status(keyOf(route))
	if st.Drift == nil || !st.Drift.Missing || st.Drift.Policy != kv.DriftAdopt {
		t.Errorf("drift: %+v", st.Drift)
	}
	// A later event of the namespace (a new MTU, adopted too)
	// makes the watcher check again; the route stays gone.
	if err := e.h.LinkSetMTU(e.link("drift0"), 1300); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "MTU adopted", func() bool {
		v, _ := e.s.Status(keyOf(iface)).Value.(*linuxinterfaces.Interface)
		return v.GetMtu() == 1300
	})
	if e.hasRoute("10.78.0.0/16") {
		t.Error("adopt created the route again")
	}
	if st := e.s.Status(keyOf(route)); st.State != scheduler.MISSING {
		t.Errorf("route after another check: %v", st.State)
	}
}

// neighbourHW returns the link-layer address of the permanent neighbour
// ip on drift0, or "" when there is none.
func (e *env) neighbourHW(ip string) string {
	ns, err := e.h.NeighList(e.link("drift0").Attrs().Index, netlink.FAMILY_V4)
	if err != nil {
		return ""
	}
	for _, n := range ns {
		if n.IP.String() == ip && n.State&netlink.NUD_PERMANENT != 0 {
			return n.HardwareAddr.String()
		}
	}
	return ""
}

// TestNetnsDriftNeighbour: a neighbour of ours deleted (ip neigh del) and
// then changed (ip neigh replace ... lladdr) behind our back is noticed
// through the watcher's neighbour events and repaired.
func TestNetnsDriftNeighbour(t *testing.T) {
	t.Parallel()
	e := newEnv(t, linux.WithDebounce(20*time.Millisecond))
	e.watchReady()
	iface, _ := driftValues()
	nb := &linuxl3.Neighbour{Interface: "drift0", IpAddress: "10.77.0.9", HwAddress: "02:00:00:00:77:09"}
	e.set(iface, nb)
	e.expect(scheduler.CONFIGURED, keyOf(iface), keyOf(nb))
	if got := e.neighbourHW("10.77.0.9"); got != "02:00:00:00:77:09" {
		t.Fatalf("neighbour in the kernel: %q", got)
	}
	kernel := func(hw string) *netlink.Neigh {
		mac, _ := net.ParseMAC(hw)
		return &netlink.Neigh{LinkIndex: e.link("drift0").Attrs().Index, Family: netlink.FAMILY_V4, State: netlink.NUD_PERMANENT,
			IP: net.ParseIP("10.77.0.9"), HardwareAddr: mac}
	}

	// ip neigh del 10.77.0.9 dev drift0
	if err := e.h.NeighDel(kernel("02:00:00:00:77:09")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "neighbour repaired", func() bool { return e.neighbourHW("10.77.0.9") == "02:00:00:00:77:09" })

	// ip neigh replace 10.77.0.9 lladdr 02:00:00:00:77:aa dev drift0 nud permanent
	if err := e.h.NeighSet(kernel("02:00:00:00:77:aa")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "neighbour's address repaired", func() bool { return e.neighbourHW("10.77.0.9") == "02:00:00:00:77:09" })
	waitFor(t, "CONFIGURED", func() bool { return e.s.Status(keyOf(nb)).State == scheduler.CONFIGURED })
}
