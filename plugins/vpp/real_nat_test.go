//go:build vpp

package vpp

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	vppnat "github.com/kvdescriptor/kvdescriptor/generated/vpp/nat/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestRealVPPNAT44 runs the NAT44 models' round trip against a real VPP
// (see realVPP; VPP's nat plugin loaded, NAT44 disabled at the start):
// NAT44 enabled, an inside and an outside loopback, a pool in a VRF, a
// DNAT with a port mapping, an address mapping and an identity mapping;
// a resync finds them unchanged and changes nothing; forwarding is turned
// on in place; all are deleted, NAT44 last.
func TestRealVPPNAT44(t *testing.T) {
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
	values := []proto.Message{
		&vppl3.VrfTable{Id: 43, Label: "kvdtest-nat"},
		&vppinterfaces.Interface{Name: "kvdtest-in", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, IpAddresses: []string{"10.95.0.1/24"}},
		&vppinterfaces.Interface{Name: "kvdtest-out", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, IpAddresses: []string{"192.0.2.1/24"}},
		&vppnat.Nat44Global{},
		&vppnat.Nat44Interface{Name: "kvdtest-in", Side: vppnat.Nat44Interface_INSIDE},
		&vppnat.Nat44Interface{Name: "kvdtest-out", Side: vppnat.Nat44Interface_OUTSIDE},
		&vppnat.Nat44AddressPool{Name: "kvdtest-pool", FirstIp: "192.0.2.10", LastIp: "192.0.2.12", VrfId: 43},
		&vppnat.DNat44{Label: "kvdtest-dnat",
			StaticMappings: []*vppnat.DNat44_StaticMapping{
				{ExternalIp: "192.0.2.20", ExternalPort: 80, Protocol: 6, LocalIp: "10.95.0.2", LocalPort: 8080},
				{ExternalIp: "192.0.2.21", LocalIp: "10.95.0.3"},
			},
			IdentityMappings: []*vppnat.DNat44_IdentityMapping{{IpAddress: "192.0.2.1", Protocol: 6, Port: 22}},
		},
	}
	commit := func(what string, vs ...proto.Message) {
		txn := s.Txn()
		for _, v := range vs {
			txn.Set(natKeyOf(v), v)
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	check := func(when string) {
		for _, st := range s.Statuses("vpp/") {
			if st.Intended && st.State != scheduler.CONFIGURED {
				t.Errorf("%s: %s: %s (%v)", when, st.Key, st.State, st.LastErr)
			}
		}
	}
	commit("create", values...)
	check("after the commit")
	res, err := s.Txn(scheduler.DownstreamResync()).Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("after a resync")
	t.Logf("resync: %+v", res)
	commit("forwarding", &vppnat.Nat44Global{Forwarding: true})
	check("after forwarding on")
	txn := s.Txn()
	for _, v := range values {
		txn.Delete(natKeyOf(v))
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
