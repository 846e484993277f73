//go:build vpp

package vpp

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	vppipsec "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipsec/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestRealVPPIPsec runs the round trip of the rest of IPsec against a
// real VPP: an SPD bound to a loopback with a bypass and a protecting
// policy, an IPIP tunnel protected by SAs; created, found unchanged by a
// resync, the protection's SAs changed in place, all deleted in order.
func TestRealVPPIPsec(t *testing.T) {
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
	commit := func(when string, opts []scheduler.TxnOption, values ...proto.Message) {
		t.Helper()
		txn := s.Txn(opts...)
		for _, v := range values {
			txn.Set(keyOf(v), v)
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		for _, st := range s.Statuses("vpp/") {
			if st.Intended && st.State != scheduler.CONFIGURED {
				t.Errorf("%s: %s: %s (%v)", when, st.Key, st.State, st.LastErr)
			}
		}
	}
	values := []proto.Message{loop("kvdtest-lo"), ipipIf("kvdtest-ipip", "10.97.0.1", "10.97.0.2"),
		testSA(9701, 0x11), testSA(9702, 0x22), testSA(9703, 0x33),
		spd(9701, "kvdtest-lo"), &vppipsec.SecurityPolicy{SpdIndex: 9701, Name: "bypass", Priority: -5},
		policy(9701, "protect", true, 9701), protection("kvdtest-ipip", 9701, 9702)}
	commit("after the commit", nil, values...)
	commit("after a resync", []scheduler.TxnOption{scheduler.DownstreamResync()})
	commit("after new inbound SAs", nil, protection("kvdtest-ipip", 9701, 9702, 9703))
	txn := s.Txn()
	for _, v := range values {
		txn.Delete(keyOf(v))
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
