//go:build linux

package linux_test

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestNetnsResyncOfDefaultsAndSpellings: values that write defaults both
// ways (table 0 and 254, mtu 0 and 1500, vxlan dst_port 0 and 4789) and
// addresses out of canonical form (upper-case IPv6 and MAC) are what the
// kernel has once applied, although Retrieve reports them as the kernel
// does: a downstream resync finds nothing to do. The generated comparison
// does the normalising, not the plugin.
func TestNetnsResyncOfDefaultsAndSpellings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := vethPair("veth0", "veth1", "10.0.0.1/24", "2001:DB8::1/64")
	a.Mtu = linuxinterfaces.InterfaceMtuDefault
	values := []proto.Message{
		a, b,
		&ifc{Name: "vx0", Type: linuxinterfaces.Interface_TYPE_VXLAN, Parent: "veth0", Enabled: true,
			Vxlan: &linuxinterfaces.Interface_Vxlan{Vni: 42, LocalIp: "10.0.0.1", DstPort: linuxinterfaces.Interface_VxlanDstPortDefault}},
		&ifc{Name: "vx1", Type: linuxinterfaces.Interface_TYPE_VXLAN, Parent: "veth0", Enabled: true,
			Vxlan: &linuxinterfaces.Interface_Vxlan{Vni: 43, LocalIp: "2001:DB8::1"}},
		&linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: "10.22.0.0/16", GwAddr: "10.0.0.254"},
		&linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: "10.23.0.0/16", Table: linuxl3.RouteTableDefault},
		&linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: "2001:DB8:21::/48", GwAddr: "2001:DB8::FE", Table: 254},
		&linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: "2001:db8:22::/48", GwAddr: "2001:db8:0:0::fd", Table: 100},
		&linuxl3.Neighbour{Interface: "veth0", IpAddress: "2001:DB8::9", HwAddress: "02:00:00:00:07:0A"},
		&linuxl3.Neighbour{Interface: "veth0", IpAddress: "10.0.0.9", HwAddress: "02:00:00:00:07:0b"},
	}
	e.set(values...)
	for _, v := range values {
		e.expect(scheduler.CONFIGURED, keyOf(v))
	}
	if got := ourRoutes(t, e.h, e.p.RouteProtocol()); !slices.Contains(got, "10.23.0.0/16 dev veth0 metric 0 table 254") {
		t.Errorf("routes: %q", got)
	}
	if vx := e.link("vx1"); vx.Type() != "vxlan" {
		t.Errorf("vx1 is a %s", vx.Type())
	}
	for range 2 {
		res := e.commit(e.s.Txn(scheduler.DownstreamResync()))
		for _, o := range res.Executed {
			if o.Kind != scheduler.OpNone {
				t.Errorf("the resync of an unchanged kernel executed %s %s:\n%s", o.Kind, o.Key, scheduler.FormatOps(res.Executed))
			}
		}
	}
	for _, v := range values {
		e.expect(scheduler.CONFIGURED, keyOf(v))
	}
}
