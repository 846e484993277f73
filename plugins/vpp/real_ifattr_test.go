//go:build vpp

package vpp

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestRealVPPInterfaceAttrs runs the round trip of the interface
// attributes of issue 30 against a real VPP, on loopbacks: an XOR bond
// with two members, a DHCP client, IPv6 router advertisements with a
// prefix, IPv4 in VRF 96 and IPv6 in the default table; a resync finds
// them unchanged; all are deleted in the order of their dependencies.
func TestRealVPPInterfaceAttrs(t *testing.T) {
	p := realVPP(t)
	ctx := context.Background()
	s, err := scheduler.New(scheduler.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close(ctx) }()
	if err := s.Register(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	zero := uint32(0)
	values := []proto.Message{
		&vppl3.VrfTable{Id: 96},
		&vppinterfaces.Interface{Name: "kvdtest-m1", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true},
		&vppinterfaces.Interface{Name: "kvdtest-m2", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true},
		&vppinterfaces.Interface{Name: "kvdtest-bond", Type: vppinterfaces.Interface_TYPE_BOND, Enabled: true,
			Bond:        &vppinterfaces.Interface_Bond{Mode: vppinterfaces.Interface_Bond_MODE_XOR, LoadBalance: vppinterfaces.Interface_Bond_LOAD_BALANCE_L34, Id: 96},
			BondMembers: []*vppinterfaces.Interface_BondMember{{Name: "kvdtest-m1"}, {Name: "kvdtest-m2"}}},
		&vppinterfaces.Interface{Name: "kvdtest-dhcp", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true,
			DhcpClient: &vppinterfaces.Interface_DhcpClient{Hostname: "kvdtest"}},
		&vppinterfaces.Interface{Name: "kvdtest-ra", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, Vrf: 96, Ipv6Vrf: &zero,
			IpAddresses:   []string{"10.97.0.1/24", "2001:db8:97::1/64"},
			Ip6Nd:         &vppinterfaces.Interface_Ip6Nd{Managed: true, MaxInterval: 60},
			Ip6NdPrefixes: []*vppinterfaces.Interface_Ip6NdPrefix{{Prefix: "2001:db8:97::/64", ValidLifetime: 3600, PreferredLifetime: 1800}}},
	}
	txn := s.Txn()
	for _, v := range values {
		txn.Set(keyOf(v), v)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		for _, st := range s.Statuses("vpp/") {
			if st.Intended && st.State != scheduler.CONFIGURED {
				t.Errorf("%s: %s: %s (%v)", when, st.Key, st.State, st.LastErr)
			}
		}
	}
	check("after the commit")
	res, err := s.Txn(scheduler.DownstreamResync()).Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("after a resync")
	t.Logf("resync: %+v", res)
	txn = s.Txn()
	for _, v := range values {
		txn.Delete(keyOf(v))
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
