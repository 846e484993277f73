//go:build vpp

package vpp

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"go.fd.io/govpp/binapi/vlib"
	"google.golang.org/protobuf/proto"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// The tests of this file need a real VPP: they are built with the tag vpp
// alone (go test -tags vpp ./plugins/vpp), so that the suite run without
// it has nothing to skip.

// SocketEnv names the environment variable that points the tests at a
// real VPP's API socket (default DefaultSocket).
const SocketEnv = "KVD_VPP_SOCKET"

// realVPP returns a plugin connected to the VPP whose API socket
// KVD_VPP_SOCKET names (DefaultSocket when unset); a VPP that does not
// answer fails the test.
func realVPP(t testing.TB, opts ...Option) *Plugin {
	t.Helper()
	sock := os.Getenv(SocketEnv)
	if sock == "" {
		sock = DefaultSocket
	}
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("built with -tags vpp, these tests need a real VPP: its API socket %s: %v (set %s to its path)", sock, err, SocketEnv)
	}
	p, err := New(append([]Option{WithSocket(sock), WithLogger(testLogger(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestRealVPP runs the models' round trip against a real VPP (see
// realVPP): create, read back by a downstream resync (nothing to do), a
// route added by hand (obtained), delete.
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

	// A route added by hand is obtained; VPP's own routes (each table's
	// default and special ones, the address's connected and local ones)
	// are not reported at all. It goes in the default table, which stays:
	// the scheduler forgets an obtained value only when notified.
	hand := "vpp/route/vrf/0/dst/10.97.0.0/16/gw/192.0.2.1"
	cli := func(cmd string) {
		r, err := vlib.NewServiceClient(p.conn).CliInband(ctx, &vlib.CliInband{Cmd: cmd})
		if err != nil {
			t.Fatalf("vppctl %s: %v", cmd, err)
		}
		if strings.TrimSpace(r.Reply) != "" {
			t.Logf("vppctl %s: %s", cmd, r.Reply)
		}
	}
	cli("ip route add 10.97.0.0/16 via 192.0.2.1")
	defer cli("ip route del 10.97.0.0/16 via 192.0.2.1")
	if _, err := s.Txn(scheduler.DownstreamResync()).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if st := s.Status(hand); st.State != scheduler.OBTAINED {
		t.Errorf("%s: %s, want OBTAINED", hand, st.State)
	}
	var routes []string
	for _, st := range s.Statuses("vpp/route/vrf/42/") {
		routes = append(routes, st.Key)
	}
	if want := []string{keyOf(values[4])}; !slices.Equal(routes, want) {
		t.Errorf("routes of table 42: %q, want only ours %q", routes, want)
	}
	for _, st := range s.Statuses("vpp/route/vrf/0/dst/0.0.0.0/0/") {
		t.Errorf("VPP's default route reported: %s %s", st.Key, st.State)
	}
	txn = s.Txn()
	for _, v := range values {
		txn.Delete(keyOf(v))
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRealVPPInterfaceTypes runs the round trip of the interface types
// and attributes of issue 30 against a real VPP: a dot1q and a QinQ
// sub-interface on a loopback, a VXLAN, a GRE and an IPIP tunnel, an unnumbered loopback
// and a TAP with a receive mode; a resync finds them unchanged; all are
// deleted in the order of their dependencies.
func TestRealVPPInterfaceTypes(t *testing.T) {
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
		&vppinterfaces.Interface{Name: "kvdtest-p", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, IpAddresses: []string{"10.96.0.1/24"}},
		&vppinterfaces.Interface{Name: "kvdtest-p.10", Type: vppinterfaces.Interface_TYPE_SUB_INTERFACE, Enabled: true, Parent: "kvdtest-p",
			SubInterface: &vppinterfaces.Interface_SubInterface{SubId: 10, OuterVlanId: 10, ExactMatch: true}},
		&vppinterfaces.Interface{Name: "kvdtest-p.20", Type: vppinterfaces.Interface_TYPE_SUB_INTERFACE, Parent: "kvdtest-p",
			SubInterface: &vppinterfaces.Interface_SubInterface{SubId: 20, OuterVlanId: 20, InnerVlanId: 30, Dot1Ad: true}},
		&vppinterfaces.Interface{Name: "kvdtest-vx", Type: vppinterfaces.Interface_TYPE_VXLAN_TUNNEL, Enabled: true,
			Vxlan: &vppinterfaces.Interface_Vxlan{SrcAddress: "10.96.0.1", DstAddress: "10.96.0.2", Vni: 96}},
		&vppinterfaces.Interface{Name: "kvdtest-gre", Type: vppinterfaces.Interface_TYPE_GRE_TUNNEL, Enabled: true,
			Gre: &vppinterfaces.Interface_Gre{Kind: vppinterfaces.Interface_Gre_KIND_TEB, SrcAddress: "10.96.0.1", DstAddress: "10.96.0.3"}},
		&vppinterfaces.Interface{Name: "kvdtest-ipip", Type: vppinterfaces.Interface_TYPE_IPIP_TUNNEL, Enabled: true,
			Ipip: &vppinterfaces.Interface_Ipip{SrcAddress: "10.96.0.1", DstAddress: "10.96.0.4"}},
		&vppinterfaces.Interface{Name: "kvdtest-un", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, Unnumbered: "kvdtest-p"},
		&vppinterfaces.Interface{Name: "kvdtest-tap", Type: vppinterfaces.Interface_TYPE_TAP, RxMode: vppinterfaces.Interface_RX_MODE_INTERRUPT,
			Tap: &vppinterfaces.Interface_Tap{HostIfName: "kvdtest-tap"}},
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
