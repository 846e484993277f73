//go:build vpp

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

// TestRealVPPL2L3 runs the cross-connects, proxy ARP, L3 cross-connect,
// VRRP, TEIB and neighbour-table settings against a real VPP (see
// realVPP; VPP's l3xc and vrrp plugins loaded, as they are by default):
// create, a downstream resync that finds them all configured, delete.
func TestRealVPPL2L3(t *testing.T) {
	p := realVPP(t)
	e := &env{t: t, ctx: context.Background(), p: p}
	var err error
	if e.s, err = scheduler.New(scheduler.WithLogger(testLogger(t))); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.s.Close(e.ctx) }()
	if err := e.s.Register(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	lo := func(name, addr string) *vppinterfaces.Interface {
		return &vppinterfaces.Interface{Name: name, Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, IpAddresses: []string{addr}}
	}
	values := []proto.Message{
		lo("kvdtest-x1", "10.95.1.1/24"), lo("kvdtest-x2", "10.95.2.1/24"), lo("kvdtest-x3", "10.95.3.1/24"), lo("kvdtest-x4", "2001:db8:95::1/64"),
		&vppl3.VrfTable{Id: 95},
		&vppl2.XConnectPair{ReceiveInterface: "kvdtest-x1", TransmitInterface: "kvdtest-x2"},
		&vppl3.ProxyARP{Interfaces: []*vppl3.ProxyARP_Interface{{Name: "kvdtest-x3"}}, Ranges: []*vppl3.ProxyARP_Range{{FirstIpAddr: "10.95.3.10", LastIpAddr: "10.95.3.20", VrfId: 95}}},
		&vppl3.L3XConnect{Interface: "kvdtest-x3", Paths: []*vppl3.L3XConnect_Path{{OutgoingInterface: "kvdtest-x2", NextHopAddr: "10.95.2.2", Weight: 1}}},
		&vppl3.VRRPEntry{Interface: "kvdtest-x4", VrId: 95, Priority: 100, Interval: 1000, IpAddresses: []string{"2001:db8:95::10"}, Enabled: true},
		&vppl3.TeibEntry{Interface: "kvdtest-x3", PeerAddr: "10.95.9.1", NextHopAddr: "10.95.3.2"},
		&vppl3.IPScanNeighbor{Ip4: &vppl3.IPScanNeighbor_Limits{MaxNumber: 40000, MaxAge: 600}},
	}
	e.put(nil, values...)
	check := func(when string) {
		for _, st := range e.s.Statuses("vpp/") {
			if st.Intended && st.State != scheduler.CONFIGURED {
				t.Errorf("%s: %s: %s (%v)", when, st.Key, st.State, st.LastErr)
			}
		}
	}
	check("after the commit")
	res, err := e.s.Txn(scheduler.DownstreamResync()).Commit(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("after a resync")
	for _, op := range res.Executed {
		if op.Kind == scheduler.OpCreate || op.Kind == scheduler.OpUpdate || op.Kind == scheduler.OpDelete {
			t.Errorf("the resync made %s %s", op.Kind, op.Key)
		}
	}
	txn := e.s.Txn()
	for _, v := range values {
		txn.Delete(l2l3Key(v))
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
}
