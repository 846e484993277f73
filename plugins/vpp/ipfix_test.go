package vpp

import (
	"errors"
	"net/netip"
	"testing"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ipfix_export"
	"google.golang.org/protobuf/proto"

	vppipfix "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipfix/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// putIPFIX commits the exporter and other values (keyed by l2l3Key).
func (e *env) putIPFIX(v *vppipfix.IPFIX, more ...proto.Message) {
	e.t.Helper()
	txn := e.s.Txn().Set(vppipfix.IPFIXKeyFor(v), v)
	for _, m := range more {
		txn.Set(l2l3Key(m), m)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		e.t.Logf("commit: %v", err)
	}
}

// TestIPFIX: the exporter waits for its VRF table, is set with VPP's
// defaults for zero fields and read back unchanged by a resync, changed
// in place, and stopped before its table goes; what the schema refuses
// never reaches VPP; one set by hand is obtained.
func TestIPFIX(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const key = "vpp/ipfix"
	v := &vppipfix.IPFIX{Collector: &vppipfix.IPFIX_Collector{Address: "10.0.0.9"}, SourceAddress: "10.0.0.1", VrfId: 3}
	e.putIPFIX(v)
	e.expect(scheduler.PENDING, key)
	e.putIPFIX(v, &vppl3.VrfTable{Id: 3})
	e.expect(scheduler.CONFIGURED, key)
	set := func(mtu uint32) *ipfix_export.SetIpfixExporter {
		return &ipfix_export.SetIpfixExporter{CollectorAddress: address(netip.MustParseAddr("10.0.0.9")), CollectorPort: 4739,
			SrcAddress: address(netip.MustParseAddr("10.0.0.1")), VrfID: 3, PathMtu: mtu, TemplateInterval: 20}
	}
	expectOnly(t, e.f, set(512))
	e.noWrites("the exporter in order")

	// Another path MTU: in place.
	v2 := proto.Clone(v).(*vppipfix.IPFIX)
	v2.PathMtu = 1400
	e.putIPFIX(v2)
	e.expect(scheduler.CONFIGURED, key)
	expectOnly(t, e.f, set(1400))
	if w := writes(e.f); len(w) != 0 {
		t.Errorf("an update sent more: %v", w)
	}

	for _, bad := range []*vppipfix.IPFIX{
		{SourceAddress: "10.0.0.1"},
		{Collector: &vppipfix.IPFIX_Collector{Address: "10.0.0.9", Port: 70000}, SourceAddress: "10.0.0.1"},
		{Collector: &vppipfix.IPFIX_Collector{Address: "10.0.0.9"}, SourceAddress: "nope"},
		{Collector: &vppipfix.IPFIX_Collector{Address: "10.0.0.9"}, SourceAddress: "10.0.0.1", PathMtu: 60},
	} {
		e.putIPFIX(bad)
		e.expect(scheduler.INVALID, key)
	}
	if w := writes(e.f); len(w) != 0 {
		t.Errorf("invalid exporters sent %v", w)
	}
	e.putIPFIX(v2)
	e.expect(scheduler.CONFIGURED, key)

	// What VPP refuses: a collector and a source of two families.
	h := &ipfixExporters{p: e.p}
	mixed := &vppipfix.IPFIX{Collector: &vppipfix.IPFIX_Collector{Address: "2001:db8::9"}, SourceAddress: "10.0.0.1"}
	if err := h.set(e.ctx, mixed); !errors.Is(err, api.INVALID_VALUE) {
		t.Errorf("two families: %v, want VPP's invalid value", err)
	}

	// The table goes: the exporter is stopped first, and waits.
	e.del("vpp/vrf-table/3")
	firstOf(t, e.f, "set_ipfix_exporter", "ip_table_add_del")
	e.expect(scheduler.PENDING, key)
	e.f.Do(func(f *fakeVPP) {
		if d := fakeExtOf[*fakeServices](f).ipfix; !addrOf(d.CollectorAddress).IsUnspecified() {
			t.Errorf("VPP still exports to %v", addrOf(d.CollectorAddress))
		}
	})
	e.del(key)
	if w := writes(e.f); len(w) != 0 {
		t.Errorf("deleting a pending exporter sent %v", w)
	}

	// One set by hand: obtained.
	e.f.Do(func(f *fakeVPP) {
		x := fakeExtOf[*fakeServices](f)
		x.ipfix.CollectorAddress, x.ipfix.SrcAddress = address(netip.MustParseAddr("10.9.9.9")), address(netip.MustParseAddr("10.9.9.1"))
	})
	e.resync()
	e.expect(scheduler.OBTAINED, key)
}
