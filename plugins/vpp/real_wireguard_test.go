//go:build vpp

package vpp

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestRealVPPWireguard runs the round trip of a wireguard interface with
// a peer against a real VPP (its wireguard plugin loaded): created, found
// unchanged by a resync (the private key read back), a new key re-creates
// the interface and the peer with it, all deleted in order.
func TestRealVPPWireguard(t *testing.T) {
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
	iface, peer := wgIf("kvdtest-wg", testKey(1), 51820), wgPeer("kvdtest-wg", testKey(9), 51000)
	commit("after the commit", nil, iface, peer)
	commit("after a resync", []scheduler.TxnOption{scheduler.DownstreamResync()})
	commit("after a new key", nil, wgIf("kvdtest-wg", testKey(2), 51820))
	txn := s.Txn().Delete(keyOf(peer)).Delete(keyOf(iface))
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRealVPPIPsecSA runs the round trip of a transport and a tunnel SA
// against a real VPP: created, found unchanged by a resync (keys read
// back), deleted.
func TestRealVPPIPsecSA(t *testing.T) {
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
	tun := testSA(9602, 0x22)
	tun.TunnelSrcAddress, tun.TunnelDstAddress = "10.96.0.1", "10.96.0.2"
	values := []proto.Message{testSA(9601, 0x11), tun}
	for _, when := range []string{"after the commit", "after a resync"} {
		txn := s.Txn()
		if when == "after a resync" {
			txn = s.Txn(scheduler.DownstreamResync())
		} else {
			for _, v := range values {
				txn.Set(keyOf(v), v)
			}
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		for _, v := range values {
			if st := s.Status(keyOf(v)); st.State != scheduler.CONFIGURED {
				t.Errorf("%s: %s: %s (%v)", when, st.Key, st.State, st.LastErr)
			}
		}
	}
	txn := s.Txn()
	for _, v := range values {
		txn.Delete(keyOf(v))
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
