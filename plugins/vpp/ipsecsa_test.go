package vpp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ipsec"
	"go.fd.io/govpp/binapi/ipsec_types"

	vppipsec "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipsec/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func testSA(index uint32, ckey byte) *vppipsec.SecurityAssociation {
	return &vppipsec.SecurityAssociation{Index: index, Spi: 1000 + index, CryptoAlg: vppipsec.SecurityAssociation_CRYPTO_ALG_AES_CBC_128,
		CryptoKey: strings.Repeat(hex.EncodeToString([]byte{ckey}), 16), IntegAlg: vppipsec.SecurityAssociation_INTEG_ALG_SHA1_96,
		IntegKey: strings.Repeat("ab", 20), UseAntiReplay: true}
}

// TestIPsecSA: an SA is added with its keys (the bytes its hex says),
// read back unchanged by a resync (keys included), re-created for any
// change (a new key is a change), removed by its index; a tunnel SA
// carries its ends and flags; one added by hand is obtained. What the
// schema, the handler or VPP refuses is refused, naming the field and
// never showing a key.
func TestIPsecSA(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.set(nil, testSA(1, 0x11))
	e.expect(scheduler.CONFIGURED, "vpp/ipsec/sa/1")
	var adds []*ipsec.IpsecSadEntryAddDelV3
	for _, m := range e.f.Requests() {
		if a, ok := m.(*ipsec.IpsecSadEntryAddDelV3); ok {
			adds = append(adds, a)
		}
	}
	if len(adds) != 1 || !adds[0].IsAdd {
		t.Fatalf("ipsec_sad_entry_add_del_v3: %+v", adds)
	}
	a := adds[0].Entry
	if a.SadID != 1 || a.Spi != 1001 || a.Protocol != ipsec_types.IPSEC_API_PROTO_ESP || a.CryptoAlgorithm != ipsec_types.IPSEC_API_CRYPTO_ALG_AES_CBC_128 ||
		a.CryptoKey.Length != 16 || !bytes.Equal(a.CryptoKey.Data[:16], bytes.Repeat([]byte{0x11}, 16)) ||
		a.IntegrityAlgorithm != ipsec_types.IPSEC_API_INTEG_ALG_SHA1_96 || a.IntegrityKey.Length != 20 ||
		a.Flags != ipsec_types.IPSEC_API_SAD_FLAG_USE_ANTI_REPLAY {
		t.Errorf("the SA sent: %+v", a)
	}
	e.resync()
	onlyReads(t, e.f, "a resync of an unchanged SA")
	e.expect(scheduler.CONFIGURED, "vpp/ipsec/sa/1")

	e.set(nil, testSA(1, 0x22))
	if got := e.f.RequestNames(); len(got) != 2 || got[0] != "ipsec_sad_entry_add_del_v3" || got[1] != "ipsec_sad_entry_add_del_v3" {
		t.Errorf("a new key sent %v, want the SA removed and added", got)
	}
	e.f.Do(func(f *fakeVPP) {
		if s := fakeExtOf[*fakeIPsec](f).sas[1]; s.CryptoKey.Data[0] != 0x22 {
			t.Errorf("VPP's SA has not the new key")
		}
	})

	tun := testSA(2, 0x33)
	tun.TunnelSrcAddress, tun.TunnelDstAddress, tun.UdpEncap, tun.Protocol = "2001:db8::1", "2001:db8::2", true, vppipsec.SecurityAssociation_PROTOCOL_ESP
	e.set(nil, tun)
	e.expect(scheduler.CONFIGURED, "vpp/ipsec/sa/2")
	e.f.Do(func(f *fakeVPP) {
		s := fakeExtOf[*fakeIPsec](f).sas[2]
		want := ipsec_types.IPSEC_API_SAD_FLAG_USE_ANTI_REPLAY | ipsec_types.IPSEC_API_SAD_FLAG_IS_TUNNEL | ipsec_types.IPSEC_API_SAD_FLAG_IS_TUNNEL_V6 | ipsec_types.IPSEC_API_SAD_FLAG_UDP_ENCAP
		if s.Flags != want || addrOf(s.Tunnel.Dst).String() != "2001:db8::2" {
			t.Errorf("the tunnel SA in VPP: flags %v, dst %v", s.Flags, addrOf(s.Tunnel.Dst))
		}
		// An SA added by hand.
		fakeExtOf[*fakeIPsec](f).sas[9] = ipsec_types.IpsecSadEntryV3{SadID: 9, Spi: 9, Protocol: ipsec_types.IPSEC_API_PROTO_AH}
	})
	e.f.RequestNames() // the tunnel SA's
	e.resync()
	onlyReads(t, e.f, "a resync with an SA made by hand")
	e.expect(scheduler.CONFIGURED, "vpp/ipsec/sa/1", "vpp/ipsec/sa/2")
	e.expect(scheduler.OBTAINED, "vpp/ipsec/sa/9")

	e.del("vpp/ipsec/sa/1", "vpp/ipsec/sa/2")
	e.f.Do(func(f *fakeVPP) {
		if n := len(fakeExtOf[*fakeIPsec](f).sas); n != 1 {
			t.Errorf("VPP has %d SAs, want the one made by hand", n)
		}
	})

	short := testSA(3, 0x44)
	short.CryptoKey = short.CryptoKey[:30]
	noInteg := testSA(4, 0x44)
	noInteg.IntegKey = ""
	half := testSA(5, 0x44)
	half.TunnelSrcAddress = "10.0.0.1"
	mixed := testSA(6, 0x44)
	mixed.TunnelSrcAddress, mixed.TunnelDstAddress = "10.0.0.1", "2001:db8::2"
	for _, tc := range []struct {
		v     *vppipsec.SecurityAssociation
		field string
	}{{short, "crypto_key"}, {noInteg, "integ_key"}, {half, "tunnel_dst_address"}, {mixed, "tunnel_dst_address"}, {&vppipsec.SecurityAssociation{Index: 7}, "spi"}} {
		e.set(nil, tc.v)
		st := e.s.Status(keyOf(tc.v))
		if st.State != scheduler.INVALID || !strings.Contains(errText(st.LastErr), tc.field) {
			t.Errorf("SA %d: %s %v, want INVALID naming %s", tc.v.GetIndex(), st.State, st.LastErr, tc.field)
		}
		for _, k := range []string{tc.v.GetCryptoKey(), tc.v.GetIntegKey()} {
			if k != "" && strings.Contains(errText(st.LastErr), k) {
				t.Errorf("SA %d: the error shows a key: %v", tc.v.GetIndex(), st.LastErr)
			}
		}
	}
	// VPP refuses an index taken and a key of another length.
	h := securityAssociations{e.p}
	if _, err := h.Create(e.ctx, vppipsec.SecurityAssociationKey{Index: 9}, testSA(9, 1)); !errors.Is(err, api.ENTRY_ALREADY_EXISTS) {
		t.Errorf("an index taken: %v", err)
	}
	if _, err := h.Create(e.ctx, vppipsec.SecurityAssociationKey{Index: 10}, short); !errors.Is(err, api.KEY_LENGTH) {
		t.Errorf("a short key: %v, want VPP's key length", err)
	}
}
