package vpp

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestRealVPP runs the models' round trip against the VPP whose API
// socket KVD_VPP_SOCKET names: create, read back by a downstream resync
// (nothing to do), delete. Without it the test is skipped, saying so.
func TestRealVPP(t *testing.T) {
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
		&vppl3.VrfTable{Id: 42, Label: "kvdtest"},
		&vppinterfaces.Interface{Name: "kvdtest-lo1", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, Vrf: 42, IpAddresses: []string{"10.99.0.1/24"}},
		&vppinterfaces.Interface{Name: "kvdtest-lo2", Type: vppinterfaces.Interface_TYPE_LOOPBACK},
		&vppl2.BridgeDomain{Name: "kvdtest-bd", Learn: true, Interfaces: []*vppl2.BridgeDomain_Interface{{Name: "kvdtest-lo2"}}},
		&vppl3.Route{VrfId: 42, DstNetwork: "10.98.0.0/16", NextHopAddr: "10.99.0.2", OutgoingInterface: "kvdtest-lo1"},
		&vppl3.ARPEntry{Interface: "kvdtest-lo1", IpAddress: "10.99.0.2", PhysAddress: "02:00:00:00:99:02", Static: true},
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
