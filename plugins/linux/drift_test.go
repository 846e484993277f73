//go:build linux

package linux_test

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// waitFor polls cond until it holds, failing after a generous bound (the
// watcher's promise is about a second; the bound leaves room for a loaded
// machine), and returns how long it took.
func waitFor(t testing.TB, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > 15*time.Second {
			t.Fatalf("%s: not after %s", what, time.Since(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start)
	t.Logf("%s: after %s", what, took.Round(time.Millisecond))
	return took
}

// driftValues are an interface of the agent with an address and a route
// over it.
func driftValues() (*linuxinterfaces.Interface, *linuxl3.Route) {
	iface := &linuxinterfaces.Interface{Name: "drift0", Type: linuxinterfaces.Interface_TYPE_BRIDGE, Enabled: true, Mtu: 1400,
		IpAddresses: []string{"10.77.0.1/24"}}
	route := &linuxl3.Route{OutgoingInterface: "drift0", DstNetwork: "10.78.0.0/16", GwAddr: "10.77.0.254"}
	return iface, route
}

func (e *env) hasRoute(dst string) bool {
	_, ipnet, _ := net.ParseCIDR(dst)
	rs, err := e.h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: ipnet}, netlink.RT_FILTER_DST)
	return err == nil && len(rs) > 0
}

func (e *env) mtu(name string) int {
	l, err := e.h.LinkByName(name)
	if err != nil {
		return -1
	}
	return l.Attrs().MTU
}

// TestNetnsDriftRepaired: with the watcher, the agent's own values
// changed or deleted behind its back (ip link set mtu, ip addr del, ip
// route del, ip link del) are noticed with no resync and applied again.
func TestNetnsDriftRepaired(t *testing.T) {
	t.Parallel()
	e := newEnv(t, linux.WithDebounce(20*time.Millisecond))
	e.watchReady()
	iface, route := driftValues()
	e.set(iface, route)
	e.expect(scheduler.CONFIGURED, keyOf(iface), keyOf(route))

	// ip link set drift0 mtu 1300
	if err := e.h.LinkSetMTU(e.link("drift0"), 1300); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "MTU repaired", func() bool { return e.mtu("drift0") == 1400 })

	// ip addr del 10.77.0.1/24 dev drift0 (the route goes with it)
	addr, _ := netlink.ParseAddr("10.77.0.1/24")
	if err := e.h.AddrDel(e.link("drift0"), addr); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "address repaired", func() bool { return slices.Contains(addrsOf(t, e.h, "drift0"), "10.77.0.1/24") })
	waitFor(t, "route back with its address", func() bool { return e.hasRoute("10.78.0.0/16") })

	// ip route del 10.78.0.0/16
	_, dst, _ := net.ParseCIDR("10.78.0.0/16")
	if err := e.h.RouteDel(&netlink.Route{Dst: dst}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "route repaired", func() bool { return e.hasRoute("10.78.0.0/16") })

	// ip link del drift0
	if err := e.h.LinkDel(e.link("drift0")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "interface, address and route repaired", func() bool {
		return e.mtu("drift0") == 1400 && slices.Contains(addrsOf(t, e.h, "drift0"), "10.77.0.1/24") && e.hasRoute("10.78.0.0/16")
	})
	waitFor(t, "all CONFIGURED", func() bool {
		return e.s.Status(keyOf(iface)).State == scheduler.CONFIGURED && e.s.Status(keyOf(route)).State == scheduler.CONFIGURED
	})
}

// TestNetnsDriftReported: with the report policy (set for the agent's
// interfaces), a changed MTU is left as it is and the interface is
// DRIFTED, with the MTU as what differs; a deleted route (policy report
// too, by prefix) is MISSING and not created again.
func TestNetnsDriftReported(t *testing.T) {
	t.Parallel()
	report := scheduler.WithDriftPolicy(func(string, string) (kv.DriftPolicy, bool) { return kv.DriftReport, true })
	e := newEnvWith(t, []scheduler.Option{report}, linux.WithDebounce(20*time.Millisecond))
	e.watchReady()
	iface, route := driftValues()
	e.set(iface, route)

	if err := e.h.LinkSetMTU(e.link("drift0"), 1300); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "interface DRIFTED", func() bool { return e.s.Status(keyOf(iface)).State == scheduler.DRIFTED })
	st := e.s.Status(keyOf(iface))
	if st.Drift == nil || len(st.Drift.Diff) != 1 || st.Drift.Diff[0].Path != "mtu" || st.Drift.Diff[0].Want != "1400" || st.Drift.Diff[0].Found != "1300" {
		t.Errorf("drift: %+v", st.Drift)
	}
	if e.mtu("drift0") != 1300 {
		t.Errorf("report changed the MTU back: %d", e.mtu("drift0"))
	}

	_, dst, _ := net.ParseCIDR("10.78.0.0/16")
	if err := e.h.RouteDel(&netlink.Route{Dst: dst}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "route MISSING", func() bool { return e.s.Status(keyOf(route)).State == scheduler.MISSING })
	if e.hasRoute("10.78.0.0/16") {
		t.Error("report created the route again")
	}
}

// TestNetnsDriftAdopted: with the adopt policy, a changed MTU becomes the
// intended value, with no call back.
func TestNetnsDriftAdopted(t *testing.T) {
	t.Parallel()
	adopt := scheduler.WithDriftPolicy(func(string, string) (kv.DriftPolicy, bool) { return kv.DriftAdopt, true })
	e := newEnvWith(t, []scheduler.Option{adopt}, linux.WithDebounce(20*time.Millisecond))
	e.watchReady()
	iface, route := driftValues()
	e.set(iface, route)
	if err := e.h.LinkSetMTU(e.link("drift0"), 1300); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "MTU adopted", func() bool {
		v, _ := e.s.Status(keyOf(iface)).Value.(*linuxinterfaces.Interface)
		return v.GetMtu() == 1300
	})
	if st := e.s.Status(keyOf(iface)); st.State != scheduler.CONFIGURED {
		t.Errorf("adopted: %v", st.State)
	}
	if e.mtu("drift0") != 1300 {
		t.Errorf("the MTU changed back: %d", e.mtu("drift0"))
	}
}
