package vpp

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/api"
	vppif "go.fd.io/govpp/binapi/interface"
	"google.golang.org/protobuf/proto"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// tablesOf is the fake's IPv4 and IPv6 table of interface 1.
func tablesOf(f *fakeVPP) [2]uint32 {
	var out [2]uint32
	f.Do(func(f *fakeVPP) { out = [2]uint32{f.ifVrf[1], f.ifVrf6[1]} })
	return out
}

// TestPerFamilyVrf: ipv6_vrf puts IPv6 in a table of its own, waiting
// for it (PENDING); a resync finds both tables right with no calls; set
// to 0 it is the default table (not "unset"), and unset again IPv6
// follows vrf: each change moves only the family that changed, its
// addresses taken off and put back.
func TestPerFamilyVrf(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	six := uint32(4)
	l1 := &vppinterfaces.Interface{Name: "l1", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, Vrf: 3, Ipv6Vrf: &six,
		IpAddresses: []string{"10.0.0.1/24", "2001:db8::1/64"}}
	e.set(nil, &vppl3.VrfTable{Id: 3}, l1)
	e.expect(scheduler.PENDING, "vpp/interface/l1")
	e.set(nil, &vppl3.VrfTable{Id: 4})
	e.expect(scheduler.CONFIGURED, "vpp/interface/l1", "vpp/interface/l1/address/10.0.0.1/24", "vpp/interface/l1/address/2001:db8::1/64")
	if got := tablesOf(e.f); got != [2]uint32{3, 4} {
		t.Errorf("tables %v, want IPv4 3, IPv6 4", got)
	}
	e.f.Requests()
	e.resync()
	onlyReads(t, e.f, "a resync of an interface with a table per family")

	// 0: IPv6 in the default table, IPv4 untouched.
	zero := uint32(0)
	l1 = proto.Clone(l1).(*vppinterfaces.Interface)
	l1.Ipv6Vrf = &zero
	e.set(nil, l1)
	want := []api.Message{
		&vppif.SwInterfaceAddDelAddress{SwIfIndex: 1, Prefix: addrWithPrefix("2001:db8::1/64")},
		&vppif.SwInterfaceSetTable{SwIfIndex: 1, IsIPv6: true, VrfID: 0},
		&vppif.SwInterfaceAddDelAddress{SwIfIndex: 1, IsAdd: true, Prefix: addrWithPrefix("2001:db8::1/64")},
	}
	got := e.f.Requests()
	if len(got) > 0 && got[0].GetMessageName() == "ip_address_dump" {
		got = got[1:]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ipv6_vrf 0 (-want +got):\n%s", diff)
	}
	if got := tablesOf(e.f); got != [2]uint32{3, 0} {
		t.Errorf("tables %v, want IPv4 3, IPv6 0", got)
	}
	e.resync()
	onlyReads(t, e.f, "a resync of an interface with IPv6 in table 0")

	// Unset: IPv6 follows vrf again, into table 3 (0 and unset differ).
	l1 = proto.Clone(l1).(*vppinterfaces.Interface)
	l1.Ipv6Vrf = nil
	e.set(nil, l1)
	if got := tablesOf(e.f); got != [2]uint32{3, 3} {
		t.Errorf("tables %v, want both 3", got)
	}
	e.f.Requests()
	e.resync()
	onlyReads(t, e.f, "a resync of an interface with both families in vrf")
	e.expect(scheduler.CONFIGURED, "vpp/interface/l1")
}
