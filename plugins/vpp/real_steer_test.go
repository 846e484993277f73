//go:build vpp

package vpp

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	vppdns "github.com/kvdescriptor/kvdescriptor/generated/vpp/dns/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppipfix "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipfix/v1"
	vpppunt "github.com/kvdescriptor/kvdescriptor/generated/vpp/punt/v1"
	vppstn "github.com/kvdescriptor/kvdescriptor/generated/vpp/stn/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestRealVPPSteer runs an STN rule and the two kinds of SPAN against a
// real VPP (see realVPP; VPP's stn plugin loaded, as it is by default).
func TestRealVPPSteer(t *testing.T) {
	lo := func(name, addr string) *vppinterfaces.Interface {
		return &vppinterfaces.Interface{Name: name, Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, IpAddresses: []string{addr}}
	}
	realRoundTrip(t, realVPP(t),
		lo("kvdtest-s1", "10.96.1.1/24"), lo("kvdtest-s2", "10.96.2.1/24"), lo("kvdtest-s3", "10.96.3.1/24"),
		&vppstn.Rule{IpAddress: "10.96.1.5", Interface: "kvdtest-s2"},
		&vppinterfaces.Span{InterfaceFrom: "kvdtest-s1", InterfaceTo: "kvdtest-s2", Direction: vppinterfaces.Span_BOTH},
		&vppinterfaces.Span{InterfaceFrom: "kvdtest-s3", InterfaceTo: "kvdtest-s2", Direction: vppinterfaces.Span_RX, IsL2: true},
	)
}

// TestRealVPPPunt registers punt sockets, a UDP port for both families
// and an exception, with a real VPP (see realVPP) started with punt
// sockets enabled (startup.conf: punt { socket /run/vpp/punt.sock }),
// under KVD_VPP_PUNT_DIR (default /run/vpp).
func TestRealVPPPunt(t *testing.T) {
	dir := os.Getenv("KVD_VPP_PUNT_DIR")
	if dir == "" {
		dir = "/run/vpp"
	}
	realRoundTrip(t, realVPP(t, WithPuntSocketDirs(dir)),
		&vpppunt.ToHost{Port: 6960, L3Protocol: vpppunt.L3Protocol_ALL, SocketPath: filepath.Join(dir, "kvdtest-udp.sock")},
		&vpppunt.Exception{Reason: "ipsec4-spi-0", SocketPath: filepath.Join(dir, "kvdtest-ipsec.sock")},
	)
}

// TestRealVPPDNS enables VPP's DNS resolver with two upstream servers
// (VPP's dns plugin loaded, as it is by default).
func TestRealVPPDNS(t *testing.T) {
	realRoundTrip(t, realVPP(t), &vppdns.DNSCache{UpstreamDnsServers: []string{"192.0.2.53", "2001:db8::53"}})
}

// TestRealVPPIPFIX sets VPP's IPFIX exporter, with VPP's defaults.
func TestRealVPPIPFIX(t *testing.T) {
	realRoundTrip(t, realVPP(t), &vppipfix.IPFIX{Collector: &vppipfix.IPFIX_Collector{Address: "192.0.2.9"}, SourceAddress: "192.0.2.1"})
}

// TestRealVPPFlowProbe sets flowprobe's settings and enables it on a
// loopback (VPP's flowprobe plugin loaded).
func TestRealVPPFlowProbe(t *testing.T) {
	realRoundTrip(t, realVPP(t),
		&vppinterfaces.Interface{Name: "kvdtest-f1", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true},
		&vppipfix.FlowProbeParams{RecordL3: true, RecordL4: true},
		&vppipfix.FlowProbeFeature{Interface: "kvdtest-f1", Which: vppipfix.FlowProbeFeature_IP4},
	)
}

// realRoundTrip commits the values to a real VPP, checks that a
// downstream resync finds them all configured and changes nothing, and
// deletes them.
func realRoundTrip(t *testing.T, p *Plugin, values ...proto.Message) {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), p: p}
	var err error
	if e.s, err = scheduler.New(scheduler.WithLogger(testLogger(t))); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.s.Close(e.ctx) }()
	if err := e.s.Register(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	e.putPunt(values...)
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
		txn.Delete(puntKey(v))
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
}
