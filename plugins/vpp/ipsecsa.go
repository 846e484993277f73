package vpp

import (
	"context"
	"encoding/hex"
	"errors"
	"net/netip"

	"go.fd.io/govpp/binapi/ipsec"
	"go.fd.io/govpp/binapi/ipsec_types"
	"go.fd.io/govpp/binapi/tunnel_types"

	vppipsec "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipsec/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

type sa = vppipsec.SecurityAssociation

// cryptoKeyLen is the key length of each encryption algorithm, in bytes.
var cryptoKeyLen = map[vppipsec.SecurityAssociation_CryptoAlg]int{
	vppipsec.SecurityAssociation_CRYPTO_ALG_AES_CBC_128: 16, vppipsec.SecurityAssociation_CRYPTO_ALG_AES_CBC_192: 24, vppipsec.SecurityAssociation_CRYPTO_ALG_AES_CBC_256: 32,
	vppipsec.SecurityAssociation_CRYPTO_ALG_AES_CTR_128: 16, vppipsec.SecurityAssociation_CRYPTO_ALG_AES_CTR_192: 24, vppipsec.SecurityAssociation_CRYPTO_ALG_AES_CTR_256: 32,
	vppipsec.SecurityAssociation_CRYPTO_ALG_AES_GCM_128: 16, vppipsec.SecurityAssociation_CRYPTO_ALG_AES_GCM_192: 24, vppipsec.SecurityAssociation_CRYPTO_ALG_AES_GCM_256: 32,
	vppipsec.SecurityAssociation_CRYPTO_ALG_DES_CBC: 8, vppipsec.SecurityAssociation_CRYPTO_ALG_3DES_CBC: 24, vppipsec.SecurityAssociation_CRYPTO_ALG_CHACHA20_POLY1305: 32,
}

// maxIntegKey is the longest key VPP's binary API carries.
const maxIntegKey = 128

// securityAssociations is the handler of vpp.ipsec.v1.SecurityAssociation.
// It has no Update: VPP cannot change an SA, a change re-creates it.
type securityAssociations struct{ p *Plugin }

var (
	_ vppipsec.SecurityAssociationRetriever[struct{}] = (*securityAssociations)(nil)
	_ vppipsec.SecurityAssociationValidator           = (*securityAssociations)(nil)
)

// Validate checks the keys' lengths (its errors never show a key) and
// that a tunnel has both ends (the generated Validate, that they are of
// one family).
func (h *securityAssociations) Validate(_ vppipsec.SecurityAssociationKey, v *sa) error {
	var errs []error
	if b, err := hex.DecodeString(v.GetCryptoKey()); v.GetCryptoKey() != "" && (err != nil || len(b) != cryptoKeyLen[v.GetCryptoAlg()]) {
		errs = append(errs, kv.Invalid("crypto_key", "%s takes a key of %d bytes, in hex", v.GetCryptoAlg(), cryptoKeyLen[v.GetCryptoAlg()]))
	}
	if b, err := hex.DecodeString(v.GetIntegKey()); err != nil || len(b) > maxIntegKey {
		errs = append(errs, kv.Invalid("integ_key", "not a key of at most %d bytes, in hex", maxIntegKey))
	}
	if (v.GetTunnelSrcAddress() == "") != (v.GetTunnelDstAddress() == "") {
		errs = append(errs, kv.Invalid("tunnel_dst_address", "a tunnel has both ends"))
	}
	return errors.Join(errs...)
}

// Create adds the SA.
// vppctl ipsec sa add ID spi SPI esp crypto-alg ALG crypto-key KEY integ-alg ALG integ-key KEY [tunnel src SRC dst DST]
func (h *securityAssociations) Create(ctx context.Context, _ vppipsec.SecurityAssociationKey, v *sa) (struct{}, error) {
	_, err := ipsec.NewServiceClient(h.p.conn).IpsecSadEntryAddDelV3(ctx, &ipsec.IpsecSadEntryAddDelV3{IsAdd: true, Entry: saEntry(v)})
	return struct{}{}, vppErr("ipsec_sad_entry_add_del_v3", err)
}

// Delete removes the SA.
// vppctl ipsec sa del ID
func (h *securityAssociations) Delete(ctx context.Context, k vppipsec.SecurityAssociationKey, _ *sa, _ struct{}) error {
	_, err := ipsec.NewServiceClient(h.p.conn).IpsecSadEntryAddDelV3(ctx, &ipsec.IpsecSadEntryAddDelV3{Entry: ipsec_types.IpsecSadEntryV3{SadID: k.Index}})
	return vppErr("ipsec_sad_entry_add_del_v3", err)
}

// saEntry is the SAD entry of v (Validate checked its keys and ends).
func saEntry(v *sa) ipsec_types.IpsecSadEntryV3 {
	ck, _ := hex.DecodeString(v.GetCryptoKey())
	ik, _ := hex.DecodeString(v.GetIntegKey())
	e := ipsec_types.IpsecSadEntryV3{
		SadID: v.GetIndex(), Spi: v.GetSpi(), Protocol: ipsec_types.IPSEC_API_PROTO_ESP,
		CryptoAlgorithm: ipsec_types.IpsecCryptoAlg(v.GetCryptoAlg()), CryptoKey: ipsec_types.Key{Length: uint8(len(ck)), Data: ck},
		IntegrityAlgorithm: ipsec_types.IpsecIntegAlg(v.GetIntegAlg()), IntegrityKey: ipsec_types.Key{Length: uint8(len(ik)), Data: ik},
		Salt: v.GetCryptoSalt(), UDPSrcPort: 4500, UDPDstPort: 4500,
	}
	if v.GetProtocol() == vppipsec.SecurityAssociation_PROTOCOL_AH {
		e.Protocol = ipsec_types.IPSEC_API_PROTO_AH
	}
	for _, f := range []struct {
		on   bool
		flag ipsec_types.IpsecSadFlags
	}{{v.GetUseEsn(), ipsec_types.IPSEC_API_SAD_FLAG_USE_ESN}, {v.GetUseAntiReplay(), ipsec_types.IPSEC_API_SAD_FLAG_USE_ANTI_REPLAY}, {v.GetUdpEncap(), ipsec_types.IPSEC_API_SAD_FLAG_UDP_ENCAP}} {
		if f.on {
			e.Flags |= f.flag
		}
	}
	if src, err := netip.ParseAddr(v.GetTunnelSrcAddress()); err == nil {
		dst, _ := netip.ParseAddr(v.GetTunnelDstAddress())
		e.Flags |= ipsec_types.IPSEC_API_SAD_FLAG_IS_TUNNEL
		if src.Is6() {
			e.Flags |= ipsec_types.IPSEC_API_SAD_FLAG_IS_TUNNEL_V6
		}
		e.Tunnel = tunnel_types.Tunnel{Instance: ^uint32(0), Src: address(src), Dst: address(dst)}
	}
	return e
}

// Retrieve dumps the SAs, keys included: the correlated ones are ours,
// the others obtained.
func (h *securityAssociations) Retrieve(ctx context.Context, correlate []vppipsec.SecurityAssociationItem[struct{}]) (out []vppipsec.SecurityAssociationItem[struct{}], _ error) {
	ours := map[uint32]bool{}
	for _, it := range correlate {
		ours[it.Key.Index] = true
	}
	list, err := dump[*ipsec.IpsecSaV3Details]("ipsec_sa_v3_dump")(ipsec.NewServiceClient(h.p.conn).IpsecSaV3Dump(ctx, &ipsec.IpsecSaV3Dump{SaID: ^uint32(0)}))
	if err != nil {
		return nil, err
	}
	for _, d := range list {
		e := d.Entry
		got := &sa{Index: e.SadID, Spi: e.Spi, CryptoAlg: vppipsec.SecurityAssociation_CryptoAlg(e.CryptoAlgorithm), CryptoSalt: e.Salt,
			IntegAlg: vppipsec.SecurityAssociation_IntegAlg(e.IntegrityAlgorithm),
			UseEsn:   e.Flags&ipsec_types.IPSEC_API_SAD_FLAG_USE_ESN != 0, UseAntiReplay: e.Flags&ipsec_types.IPSEC_API_SAD_FLAG_USE_ANTI_REPLAY != 0,
			UdpEncap: e.Flags&ipsec_types.IPSEC_API_SAD_FLAG_UDP_ENCAP != 0}
		if e.Protocol == ipsec_types.IPSEC_API_PROTO_AH {
			got.Protocol = vppipsec.SecurityAssociation_PROTOCOL_AH
		}
		if e.CryptoKey.Length > 0 {
			got.CryptoKey = hex.EncodeToString(e.CryptoKey.Data[:e.CryptoKey.Length])
		}
		if e.IntegrityKey.Length > 0 {
			got.IntegKey = hex.EncodeToString(e.IntegrityKey.Data[:e.IntegrityKey.Length])
		}
		if e.Flags&ipsec_types.IPSEC_API_SAD_FLAG_IS_TUNNEL != 0 {
			got.TunnelSrcAddress, got.TunnelDstAddress = addrOf(e.Tunnel.Src).String(), addrOf(e.Tunnel.Dst).String()
		}
		k := vppipsec.SecurityAssociationKey{Index: e.SadID}
		out = append(out, vppipsec.SecurityAssociationItem[struct{}]{Key: k, Value: got, Origin: origin(ours[e.SadID])})
	}
	return out, nil
}
