package vpp

import (
	"bytes"
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/wireguard"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppwireguard "github.com/kvdescriptor/kvdescriptor/generated/vpp/wireguard/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// testKey is a wireguard key: 32 bytes of b, in base64.
func testKey(b byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, wgKeyLen))
}

func wgIf(name, key string, port uint32) *vppinterfaces.Interface {
	return &vppinterfaces.Interface{Name: name, Type: vppinterfaces.Interface_TYPE_WIREGUARD, Enabled: true,
		Wireguard: &vppinterfaces.Interface_Wireguard{PrivateKey: key, Port: port, SrcAddress: "10.9.0.1"}}
}

func wgPeer(iface, key string, port uint32) *vppwireguard.Peer {
	return &vppwireguard.Peer{Interface: iface, PublicKey: key, Endpoint: "192.0.2.7", Port: port, PersistentKeepalive: 25,
		AllowedIps: []string{"10.10.0.0/16", "10.20.0.0/24"}}
}

// TestWireguardInterface: a wireguard interface is created with its key,
// port and source, read back unchanged by a resync (the private key
// included), changed in place for its admin state and re-created for a
// new key (a changed secret is a change), deleted with its sw_if_index.
// What the schema, the handler or VPP refuses is refused, naming the
// field and never showing the key.
func TestWireguardInterface(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.set(nil, wgIf("wg1", testKey(1), 51820))
	e.expect(scheduler.CONFIGURED, "vpp/interface/wg1")
	var creates []*wireguard.WireguardInterfaceCreate
	for _, m := range e.f.Requests() {
		if c, ok := m.(*wireguard.WireguardInterfaceCreate); ok {
			creates = append(creates, c)
		}
	}
	if len(creates) != 1 || !bytes.Equal(creates[0].Interface.PrivateKey, bytes.Repeat([]byte{1}, wgKeyLen)) || creates[0].Interface.Port != 51820 ||
		addrOf(creates[0].Interface.SrcIP).String() != "10.9.0.1" || creates[0].Interface.UserInstance != ^uint32(0) || creates[0].GenerateKey {
		t.Errorf("wireguard_interface_create: %+v", creates)
	}
	e.resync()
	onlyReads(t, e.f, "a resync of an unchanged wireguard interface")
	e.expect(scheduler.CONFIGURED, "vpp/interface/wg1")

	down := wgIf("wg1", testKey(1), 51820)
	down.Enabled = false
	e.set(nil, down)
	if got := e.f.RequestNames(); len(got) != 1 || got[0] != "sw_interface_set_flags" {
		t.Errorf("an admin state change sent %v", got)
	}
	e.set(nil, wgIf("wg1", testKey(2), 51820))
	e.expect(scheduler.CONFIGURED, "vpp/interface/wg1")
	if got := e.f.RequestNames(); len(got) < 2 || got[0] != "wireguard_interface_delete" || got[1] != "wireguard_interface_create" {
		t.Errorf("a new private key sent %v, want wireguard_interface_delete then wireguard_interface_create", got)
	}
	e.f.Do(func(f *fakeVPP) {
		w := fakeExtOf[*fakeWireguard](f)
		if len(w.ifs) != 1 {
			t.Fatalf("VPP has %d wireguard interfaces, want 1", len(w.ifs))
		}
		for _, x := range w.ifs {
			if !bytes.Equal(x.PrivateKey, bytes.Repeat([]byte{2}, wgKeyLen)) {
				t.Errorf("VPP's private key is not the new one")
			}
		}
	})
	e.resync()
	onlyReads(t, e.f, "a resync of an unchanged wireguard interface")

	// VPP refuses a port taken by another.
	e.set(nil, wgIf("wg2", testKey(3), 51820))
	if st := e.s.Status("vpp/interface/wg2"); st.State != scheduler.FAILED || !strings.Contains(errText(st.LastErr), "wireguard_interface_create") {
		t.Errorf("a port taken: %s %v, want FAILED by wireguard_interface_create", st.State, st.LastErr)
	}
	e.del("vpp/interface/wg2")

	e.del("vpp/interface/wg1")
	e.f.Do(func(f *fakeVPP) {
		if w := fakeExtOf[*fakeWireguard](f); len(w.ifs) != 0 || len(f.ifaces) != 1 {
			t.Errorf("VPP has %d wireguard interfaces and %d interfaces, want none and local0", len(w.ifs), len(f.ifaces))
		}
	})

	short := base64.StdEncoding.EncodeToString([]byte("sixteen bytes!!!"))
	for _, tc := range []struct {
		v     *vppinterfaces.Interface
		field string
	}{
		{wgIf("badkey", short, 51821), "wireguard.private_key"},
		{wgIf("notb64", "not base64 at all", 51821), "wireguard.private_key"},
		{wgIf("nokey", "", 51821), "wireguard.private_key"},
		{wgIf("noport", testKey(4), 0), "wireguard.port"},
		{&vppinterfaces.Interface{Name: "nowg", Type: vppinterfaces.Interface_TYPE_WIREGUARD}, "wireguard"},
	} {
		e.set(nil, tc.v)
		st := e.s.Status(keyOf(tc.v))
		if st.State != scheduler.INVALID || !strings.Contains(errText(st.LastErr), tc.field) {
			t.Errorf("%s: %s %v, want INVALID naming %s", tc.v.GetName(), st.State, st.LastErr, tc.field)
		}
		if k := tc.v.GetWireguard().GetPrivateKey(); k != "" && strings.Contains(errText(st.LastErr), k) {
			t.Errorf("%s: the error shows the key: %v", tc.v.GetName(), st.LastErr)
		}
	}
	// The handler refuses what VPP would take for another key.
	if _, err := (wireguardTunnels{e.p}).Create(e.ctx, wgIf("x", short, 1)); err == nil || kv.IsRetriable(err) {
		t.Errorf("a short key: %v, want an error not retried", err)
	}
	if err := (wireguardTunnels{e.p}).Delete(e.ctx, 77); err == nil || !strings.Contains(err.Error(), "wireguard_interface_delete") {
		t.Errorf("deleting a missing interface: %v", err)
	}
}

// TestWireguardPeer: a peer waits for its wireguard interface (PENDING),
// is added once it exists, read back by a resync, re-created for any
// change (VPP cannot change a peer), removed before its interface when
// that goes or is re-created, and added back after; a peer made by hand
// is obtained. The public key is checked.
func TestWireguardPeer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	peer := wgPeer("wg1", testKey(9), 51000)
	peerKey := keyOf(peer)
	e.set(nil, peer)
	e.expect(scheduler.PENDING, peerKey)
	e.set(nil, wgIf("wg1", testKey(1), 51820))
	e.expect(scheduler.CONFIGURED, "vpp/interface/wg1", peerKey)
	var adds []*wireguard.WireguardPeerAdd
	for _, m := range e.f.Requests() {
		if a, ok := m.(*wireguard.WireguardPeerAdd); ok {
			adds = append(adds, a)
		}
	}
	if len(adds) != 1 {
		t.Fatalf("%d wireguard_peer_add, want 1", len(adds))
	}
	p := adds[0].Peer
	idx, _ := e.p.swIfIndex("wg1")
	if uint32(p.SwIfIndex) != idx || !bytes.Equal(p.PublicKey, bytes.Repeat([]byte{9}, wgKeyLen)) || p.Port != 51000 || p.PersistentKeepalive != 25 ||
		addrOf(p.Endpoint).String() != "192.0.2.7" || p.NAllowedIps != 2 || prefixOf(p.AllowedIps[1]).String() != "10.20.0.0/24" {
		t.Errorf("wireguard_peer_add: %+v", p)
	}
	e.resync()
	onlyReads(t, e.f, "a resync of an unchanged peer")
	e.expect(scheduler.CONFIGURED, peerKey)

	// Any change re-creates; allowed IPs compare as a set.
	same := wgPeer("wg1", testKey(9), 51000)
	slices.Reverse(same.AllowedIps)
	e.set(nil, same)
	if got := e.f.RequestNames(); len(got) != 0 {
		t.Errorf("the same allowed IPs in another order sent %v", got)
	}
	e.set(nil, wgPeer("wg1", testKey(9), 51001))
	if got := e.f.RequestNames(); len(got) != 2 || got[0] != "wireguard_peer_remove" || got[1] != "wireguard_peer_add" {
		t.Errorf("a new port sent %v, want wireguard_peer_remove then wireguard_peer_add", got)
	}

	// A new private key re-creates the interface: the peer goes first
	// and comes back after.
	e.set(nil, wgIf("wg1", testKey(2), 51820))
	want := []string{"wireguard_peer_remove", "wireguard_interface_delete", "wireguard_interface_create"}
	if got := e.f.RequestNames(); len(got) < 4 || !slices.Equal(got[:3], want) || got[len(got)-1] != "wireguard_peer_add" {
		t.Errorf("re-creating the interface sent %v, want %v ... wireguard_peer_add", got, want)
	}
	e.expect(scheduler.CONFIGURED, "vpp/interface/wg1", peerKey)

	// A peer made by hand is obtained; ours stays ours.
	idx, _ = e.p.swIfIndex("wg1")
	e.f.Do(func(f *fakeVPP) {
		var rv int32
		fakeExtOf[*fakeWireguard](f).addPeer(wireguard.WireguardPeer{PublicKey: bytes.Repeat([]byte{5}, wgKeyLen), SwIfIndex: interface_types.InterfaceIndex(idx), Port: 1}, &rv)
		if rv != 0 {
			t.Fatalf("adding a peer by hand: %d", rv)
		}
	})
	e.resync()
	onlyReads(t, e.f, "a resync with a peer made by hand")
	e.expect(scheduler.CONFIGURED, peerKey)
	e.expect(scheduler.OBTAINED, vppwireguard.PeerKey{Interface: "wg1", PublicKey: testKey(5)}.String())

	// The interface goes: the peer first, then PENDING.
	e.del("vpp/interface/wg1")
	if got := e.f.RequestNames(); len(got) < 2 || got[0] != "wireguard_peer_remove" || got[1] != "wireguard_interface_delete" {
		t.Errorf("deleting the interface sent %v, want the peer removed first", got)
	}
	e.expect(scheduler.PENDING, peerKey)
	e.del(peerKey)
	e.f.Do(func(f *fakeVPP) {
		if w := fakeExtOf[*fakeWireguard](f); len(w.peers) != 0 {
			t.Errorf("VPP has %d peers left", len(w.peers))
		}
	})

	for _, v := range []*vppwireguard.Peer{wgPeer("wg1", "short", 1), {Interface: "wg1", PublicKey: testKey(3), Port: 1}, wgPeer("wg1", testKey(4), 0)} {
		e.set(nil, v)
		e.expect(scheduler.INVALID, keyOf(v))
	}
	// VPP refuses a peer on an interface that is not a wireguard one.
	e.set(nil, loop("lo1"), wgPeer("lo1", testKey(6), 1))
	if st := e.s.Status(keyOf(wgPeer("lo1", testKey(6), 1))); st.State != scheduler.FAILED || !strings.Contains(errText(st.LastErr), api.INVALID_SW_IF_INDEX.Error()) {
		t.Errorf("a peer on a loopback: %s %v, want FAILED by VPP", st.State, st.LastErr)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
