//go:build linux

package linux_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// vethPair returns the two ends of a pair, up; a has the addresses.
func vethPair(a, b string, addrs ...string) (*ifc, *ifc) {
	return &ifc{Name: a, Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: b, Enabled: true, IpAddresses: addrs},
		&ifc{Name: b, Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: a, Enabled: true}
}

// TestNetnsRoutePendingUntilGatewayReachable: a route waits, PENDING,
// until an address of its interface has a network that contains the
// gateway; then it is created in the same transaction, updated in place,
// and deleted.
func TestNetnsRoutePendingUntilGatewayReachable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := vethPair("veth0", "veth1")
	r := &linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: "10.20.0.0/16", GwAddr: "10.0.0.254", Metric: 50}
	r6 := &linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: "2001:db8:20::/48", GwAddr: "2001:db8::fe"}
	e.set(r, r6, a, b)
	e.expect(scheduler.CONFIGURED, keyOf(a), keyOf(b))
	e.expect(scheduler.PENDING, keyOf(r), keyOf(r6))
	if got := ourRoutes(t, e.h, e.p.RouteProtocol()); len(got) != 0 {
		t.Fatalf("routes before the gateway is reachable: %q", got)
	}
	// An address in another network does not help.
	a2 := proto.Clone(a).(*ifc)
	a2.IpAddresses = []string{"10.9.0.1/24"}
	e.set(a2)
	e.expect(scheduler.PENDING, keyOf(r))

	a3 := proto.Clone(a).(*ifc)
	a3.IpAddresses = []string{"10.9.0.1/24", "10.0.0.1/24", "2001:db8::1/64"}
	res := e.set(a3)
	e.expect(scheduler.CONFIGURED, keyOf(r), keyOf(r6))
	if !slices.ContainsFunc(res.Executed, func(o scheduler.Op) bool {
		return o.Key == keyOf(r) && o.Kind == scheduler.OpCreate && o.Flags&scheduler.FlagWasPending != 0
	}) {
		t.Errorf("the route was not created by the transaction that made its gateway reachable:\n%s", scheduler.FormatOps(res.Executed))
	}
	want := []string{
		"10.20.0.0/16 via 10.0.0.254 dev veth0 metric 50 table 254",
		"2001:db8:20::/48 via 2001:db8::fe dev veth0 metric 1024 table 254",
	}
	if got := ourRoutes(t, e.h, e.p.RouteProtocol()); !slices.Equal(got, want) {
		t.Errorf("routes %q, want %q", got, want)
	}

	// A new gateway is an update (ip route replace).
	r2 := proto.Clone(r).(*linuxl3.Route)
	r2.GwAddr = "10.0.0.253"
	res = e.set(r2)
	if len(res.Executed) != 1 || res.Executed[0].Kind != scheduler.OpUpdate {
		t.Errorf("a new gateway:\n%s", scheduler.FormatOps(res.Executed))
	}
	want[0] = "10.20.0.0/16 via 10.0.0.253 dev veth0 metric 50 table 254"
	if got := ourRoutes(t, e.h, e.p.RouteProtocol()); !slices.Equal(got, want) {
		t.Errorf("routes %q, want %q", got, want)
	}
	// Another table re-creates.
	r3 := proto.Clone(r2).(*linuxl3.Route)
	r3.Table = 100
	e.set(r3)
	want[0] = "10.20.0.0/16 via 10.0.0.253 dev veth0 metric 50 table 100"
	if got := ourRoutes(t, e.h, e.p.RouteProtocol()); !slices.Equal(got, want) {
		t.Errorf("routes %q, want %q", got, want)
	}
	// The address goes: the route goes first and waits again.
	e.set(a2)
	e.expect(scheduler.PENDING, keyOf(r), keyOf(r6))
	if got := ourRoutes(t, e.h, e.p.RouteProtocol()); len(got) != 0 {
		t.Errorf("routes left: %q", got)
	}
}

// TestNetnsHostRoutesNeverDeleted: routes of the host (another protocol)
// are never reported by Retrieve nor deleted, even with our route to the
// same destination next to them.
func TestNetnsHostRoutesNeverDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := vethPair("veth0", "veth1", "10.0.0.1/24")
	e.set(a, b)
	link := e.link("veth0")
	host := &netlink.Route{LinkIndex: link.Attrs().Index, Dst: mustCIDR("10.50.0.0/16"), Gw: net.ParseIP("10.0.0.9"), Priority: 100, Protocol: unix.RTPROT_STATIC}
	if err := e.h.RouteAdd(host); err != nil {
		t.Fatal(err)
	}
	ours := &linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: "10.50.0.0/16", GwAddr: "10.0.0.254", Metric: 200}
	e.set(ours)
	e.expect(scheduler.CONFIGURED, keyOf(ours))

	got := retrieve(t, e, linuxl3.RouteModelName, nil)
	if len(got) != 1 || got[0].Key != keyOf(ours) {
		t.Errorf("Retrieve reported %v, want only %s", keysOf(got), keyOf(ours))
	}
	e.commit(e.s.Txn().Delete(keyOf(ours)))
	list, err := e.h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: mustCIDR("10.50.0.0/16")}, netlink.RT_FILTER_DST)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Protocol != unix.RTPROT_STATIC || list[0].Priority != 100 {
		t.Errorf("after deleting our route, the kernel has %v; want the host's route only", list)
	}
	// Our route with the host's own metric conflicts: the kernel's error
	// names the command, and the host's route stays.
	clash := &linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: "10.50.0.0/16", GwAddr: "10.0.0.254", Metric: 100}
	_, err = e.s.Txn().Set(keyOf(clash), clash).Commit(e.ctx)
	st := e.s.Status(keyOf(clash))
	if err == nil || st.State != scheduler.FAILED || !errors.Is(st.LastErr, unix.EEXIST) || !strings.Contains(st.LastErr.Error(), "ip route add 10.50.0.0/16 via 10.0.0.254 dev veth0 metric 100") {
		t.Errorf("a clashing route: %s, %v", st.State, st.LastErr)
	}
	e.commit(e.s.Txn().Delete(keyOf(clash)))
	if err := e.h.RouteDel(host); err != nil {
		t.Errorf("the host's route is gone: %v", err)
	}
}

// TestNetnsNeighbours creates, updates and deletes static ARP and NDP
// entries.
func TestNetnsNeighbours(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	br := &ifc{Name: "br0", Type: linuxinterfaces.Interface_TYPE_BRIDGE, Enabled: true}
	n4 := &linuxl3.Neighbour{Interface: "br0", IpAddress: "10.6.0.2", HwAddress: "02:00:00:00:00:02"}
	n6 := &linuxl3.Neighbour{Interface: "br0", IpAddress: "2001:db8::2", HwAddress: "02:00:00:00:00:06"}
	e.set(n4, n6)
	e.expect(scheduler.PENDING, keyOf(n4), keyOf(n6))
	e.set(br)
	e.expect(scheduler.CONFIGURED, keyOf(n4), keyOf(n6))
	check := func(want map[string]string) {
		t.Helper()
		list, err := e.h.NeighList(e.link("br0").Attrs().Index, netlink.FAMILY_ALL)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, n := range list {
			if n.State&netlink.NUD_PERMANENT != 0 && !n.IP.IsLinkLocalMulticast() && !n.IP.IsMulticast() {
				got[n.IP.String()] = n.HardwareAddr.String()
			}
		}
		if !mapsEqual(got, want) {
			t.Errorf("permanent entries %v, want %v", got, want)
		}
	}
	check(map[string]string{"10.6.0.2": "02:00:00:00:00:02", "2001:db8::2": "02:00:00:00:00:06"})
	u := proto.Clone(n4).(*linuxl3.Neighbour)
	u.HwAddress = "02:00:00:00:00:03"
	res := e.set(u)
	if len(res.Executed) != 1 || res.Executed[0].Kind != scheduler.OpUpdate {
		t.Errorf("a new MAC address:\n%s", scheduler.FormatOps(res.Executed))
	}
	check(map[string]string{"10.6.0.2": "02:00:00:00:00:03", "2001:db8::2": "02:00:00:00:00:06"})
	e.commit(e.s.Txn().Delete(keyOf(n6)))
	check(map[string]string{"10.6.0.2": "02:00:00:00:00:03"})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func mustCIDR(s string) *net.IPNet {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	return n
}

// retrieve calls a descriptor's Retrieve with correlate (nil: the values
// the scheduler holds as CONFIGURED, with their metadata).
func retrieve(t testing.TB, e *env, name string, correlate []kv.Item[string, proto.Message, any]) []kv.Item[string, proto.Message, any] {
	t.Helper()
	d, ok := e.s.Descriptor(name)
	if !ok {
		t.Fatalf("no descriptor %s", name)
	}
	if correlate == nil {
		for _, st := range e.s.DescriptorStatuses(name) {
			if st.State == scheduler.CONFIGURED {
				correlate = append(correlate, kv.Item[string, proto.Message, any]{Key: st.Key, Value: st.Value, Metadata: st.Metadata, Origin: kv.OriginNB})
			}
		}
	}
	got, err := d.Retrieve(context.Background(), correlate)
	if err != nil {
		t.Fatalf("%s Retrieve: %v", name, err)
	}
	return got
}

func keysOf(items []kv.Item[string, proto.Message, any]) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Key)
	}
	return out
}

// TestNetnsRetrieveMatchesIntended: after a configuration is applied,
// each descriptor's Retrieve reports every value, equal (by the
// descriptor's comparison) to the intended one, so that a resync over a
// correct namespace has nothing to do.
func TestNetnsRetrieveMatchesIntended(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	values := exampleConfig()
	e.set(values...)
	for _, v := range values {
		e.expect(scheduler.CONFIGURED, keyOf(v))
	}
	for _, name := range []string{linuxinterfaces.InterfaceModelName, linuxinterfaces.InterfaceIpAddressesModelName, linuxl3.RouteModelName, linuxl3.NeighbourModelName} {
		d, _ := e.s.Descriptor(name)
		intended := map[string]proto.Message{}
		for _, st := range e.s.DescriptorStatuses(name) {
			intended[st.Key] = st.Value
		}
		got := retrieve(t, e, name, nil)
		seen := map[string]bool{}
		for _, it := range got {
			seen[it.Key] = true
			want, ok := intended[it.Key]
			if !ok {
				t.Errorf("%s: Retrieve reported %s, which is not intended", name, it.Key)
				continue
			}
			if !d.Equivalent(it.Key, want, it.Value) {
				t.Errorf("%s: retrieved %v\n  differs from intended %v", it.Key, it.Value, want)
			}
			if m, ok := it.Metadata.(linux.InterfaceMeta); ok && name == linuxinterfaces.InterfaceModelName {
				if st := e.s.Status(it.Key); st.Metadata.(linux.InterfaceMeta) != m {
					t.Errorf("%s: retrieved metadata %+v, scheduler has %+v", it.Key, m, st.Metadata)
				}
			}
		}
		for k := range intended {
			if !seen[k] {
				t.Errorf("%s: Retrieve did not report %s", name, k)
			}
		}
	}
}

// exampleConfig is a configuration with one value of most kinds.
func exampleConfig() []proto.Message {
	a, b := vethPair("veth0", "veth1", "10.0.0.1/24", "2001:db8::1/64")
	b.Master = "br0"
	b.Mtu = 1400
	return []proto.Message{
		a, b,
		&ifc{Name: "br0", Type: linuxinterfaces.Interface_TYPE_BRIDGE, Enabled: true, IpAddresses: []string{"192.168.7.1/24"}, PhysAddress: "02:00:00:00:07:01"},
		&ifc{Name: "tap0", HostIfName: "tap-host", Type: linuxinterfaces.Interface_TYPE_TAP, Master: "br0"},
		&ifc{Name: "vx0", Type: linuxinterfaces.Interface_TYPE_VXLAN, Parent: "veth0", Enabled: true, Vxlan: &linuxinterfaces.Interface_Vxlan{Vni: 42, LocalIp: "10.0.0.1", RemoteIp: "10.0.0.2"}},
		&ifc{Name: "mv0", Type: linuxinterfaces.Interface_TYPE_MACVLAN, Parent: "veth0", Enabled: true},
		&linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: "10.20.0.0/16", GwAddr: "10.0.0.254"},
		&linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: "10.21.0.0/16"},
		&linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: "2001:db8:20::/48", GwAddr: "2001:db8::fe", Table: 100},
		&linuxl3.Route{OutgoingInterface: "br0", DstNetwork: "0.0.0.0/0", GwAddr: "192.168.7.254", Metric: 10},
		&linuxl3.Neighbour{Interface: "br0", IpAddress: "192.168.7.9", HwAddress: "02:00:00:00:07:09"},
		&linuxl3.Neighbour{Interface: "veth0", IpAddress: "2001:db8::9", HwAddress: "02:00:00:00:00:09"},
	}
}
