package vpp

import (
	"fmt"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/ipsec"
	"go.fd.io/govpp/binapi/ipsec_types"
	"go.fd.io/govpp/binapi/wireguard"
)

// fakeWireguard is the fake VPP's wireguard: interfaces with their keys,
// and peers. It checks requests as VPP's wireguard plugin does: a key is
// 32 bytes, a port is taken by one interface, a peer needs a wireguard
// interface and is there once per public key on it; deleting an
// interface removes its peers.
type fakeWireguard struct {
	ifs      map[uint32]wireguard.WireguardInterface // by sw_if_index
	peers    map[uint32]wireguard.WireguardPeer      // by peer index
	nextPeer uint32
}

func init() { registerFakeExt(func() fakeExt { return &fakeWireguard{} }) }

func (w *fakeWireguard) reset() {
	w.ifs, w.peers, w.nextPeer = map[uint32]wireguard.WireguardInterface{}, map[uint32]wireguard.WireguardPeer{}, 0
}

func (w *fakeWireguard) forget(i uint32) {
	delete(w.ifs, i)
	for pi, p := range w.peers {
		if uint32(p.SwIfIndex) == i {
			delete(w.peers, pi)
		}
	}
}

func (w *fakeWireguard) apply(f *fakeVPP, msg api.Message, retval *int32) ([]api.Message, bool) {
	switch m := msg.(type) {
	case *wireguard.WireguardInterfaceCreate:
		return w.create(f, m, retval), true
	case *wireguard.WireguardInterfaceDelete:
		if _, ok := w.ifs[uint32(m.SwIfIndex)]; !ok {
			*retval = int32(api.INVALID_SW_IF_INDEX)
			return nil, true
		}
		f.forget(uint32(m.SwIfIndex))
		return nil, true
	case *wireguard.WireguardInterfaceDump:
		var out []api.Message
		for _, i := range sortedKeys(w.ifs) {
			d := w.ifs[i]
			if m.SwIfIndex != ^interface_types.InterfaceIndex(0) && m.SwIfIndex != d.SwIfIndex {
				continue
			}
			if !m.ShowPrivateKey {
				d.PrivateKey = make([]byte, wgKeyLen)
			}
			out = append(out, &wireguard.WireguardInterfaceDetails{Interface: d})
		}
		return out, true
	case *wireguard.WireguardPeerAdd:
		return w.addPeer(m.Peer, retval), true
	case *wireguard.WireguardPeerRemove:
		if _, ok := w.peers[m.PeerIndex]; !ok {
			*retval = int32(api.NO_SUCH_ENTRY)
			return nil, true
		}
		delete(w.peers, m.PeerIndex)
		return nil, true
	case *wireguard.WireguardPeersDump:
		var out []api.Message
		for _, i := range sortedKeys(w.peers) {
			if m.PeerIndex == ^uint32(0) || m.PeerIndex == i {
				out = append(out, &wireguard.WireguardPeersDetails{Peer: w.peers[i]})
			}
		}
		return out, true
	}
	return nil, false
}

func (w *fakeWireguard) create(f *fakeVPP, m *wireguard.WireguardInterfaceCreate, retval *int32) []api.Message {
	in := m.Interface
	if len(in.PrivateKey) != wgKeyLen && !m.GenerateKey {
		*retval = int32(api.INVALID_VALUE)
		return nil
	}
	for _, x := range w.ifs {
		if x.Port == in.Port {
			*retval = int32(api.UDP_PORT_TAKEN)
			return nil
		}
	}
	inst := len(w.ifs)
	if in.UserInstance != ^uint32(0) {
		inst = int(in.UserInstance)
	}
	idx := f.newIf(fmt.Sprintf("wg%d", inst), "wireguard", [6]byte{})
	f.ifaces[uint32(idx)].L2Address = [6]byte{} // a tunnel: no MAC
	in.SwIfIndex = idx
	in.PublicKey = slices.Repeat([]byte{0x70}, wgKeyLen) // derived from the private key in VPP
	w.ifs[uint32(idx)] = in
	return []api.Message{&wireguard.WireguardInterfaceCreateReply{SwIfIndex: idx}}
}

func (w *fakeWireguard) addPeer(p wireguard.WireguardPeer, retval *int32) []api.Message {
	if _, ok := w.ifs[uint32(p.SwIfIndex)]; !ok {
		*retval = int32(api.INVALID_SW_IF_INDEX)
		return nil
	}
	if len(p.PublicKey) != wgKeyLen || int(p.NAllowedIps) != len(p.AllowedIps) {
		*retval = int32(api.INVALID_VALUE)
		return nil
	}
	for _, x := range w.peers {
		if x.SwIfIndex == p.SwIfIndex && slices.Equal(x.PublicKey, p.PublicKey) {
			*retval = int32(api.ENTRY_ALREADY_EXISTS)
			return nil
		}
	}
	p.PeerIndex = w.nextPeer
	w.nextPeer++
	w.peers[p.PeerIndex] = p
	return []api.Message{&wireguard.WireguardPeerAddReply{PeerIndex: p.PeerIndex}}
}

// fakeIPsec is the fake VPP's SAD. It checks an SA as VPP does: an index
// is taken once, a key has its algorithm's length, a tunnel has both ends
// of the family its flags say, an SA that a policy or a tunnel protection
// uses is not deleted (fakeSPD).
type fakeIPsec struct {
	sas map[uint32]ipsec_types.IpsecSadEntryV3
}

func init() { registerFakeExt(func() fakeExt { return &fakeIPsec{} }) }

func (x *fakeIPsec) reset()        { x.sas = map[uint32]ipsec_types.IpsecSadEntryV3{} }
func (x *fakeIPsec) forget(uint32) {}

// fakeCryptoKeyLen is VPP's key length of each encryption algorithm.
var fakeCryptoKeyLen = map[ipsec_types.IpsecCryptoAlg]int{
	ipsec_types.IPSEC_API_CRYPTO_ALG_NONE: 0, ipsec_types.IPSEC_API_CRYPTO_ALG_AES_CBC_128: 16, ipsec_types.IPSEC_API_CRYPTO_ALG_AES_CBC_192: 24,
	ipsec_types.IPSEC_API_CRYPTO_ALG_AES_CBC_256: 32, ipsec_types.IPSEC_API_CRYPTO_ALG_AES_CTR_128: 16, ipsec_types.IPSEC_API_CRYPTO_ALG_AES_CTR_192: 24,
	ipsec_types.IPSEC_API_CRYPTO_ALG_AES_CTR_256: 32, ipsec_types.IPSEC_API_CRYPTO_ALG_AES_GCM_128: 16, ipsec_types.IPSEC_API_CRYPTO_ALG_AES_GCM_192: 24,
	ipsec_types.IPSEC_API_CRYPTO_ALG_AES_GCM_256: 32, ipsec_types.IPSEC_API_CRYPTO_ALG_DES_CBC: 8, ipsec_types.IPSEC_API_CRYPTO_ALG_3DES_CBC: 24,
	ipsec_types.IPSEC_API_CRYPTO_ALG_CHACHA20_POLY1305: 32,
}

func (x *fakeIPsec) apply(f *fakeVPP, msg api.Message, retval *int32) ([]api.Message, bool) {
	switch m := msg.(type) {
	case *ipsec.IpsecSadEntryAddDelV3:
		e := m.Entry
		_, exists := x.sas[e.SadID]
		switch {
		case !m.IsAdd && !exists:
			*retval = int32(api.NO_SUCH_ENTRY)
		case !m.IsAdd && fakeExtOf[*fakeSPD](f).uses(e.SadID): // a policy or a protection holds it
			*retval = int32(api.SYSCALL_ERROR_1)
		case !m.IsAdd:
			delete(x.sas, e.SadID)
		case exists:
			*retval = int32(api.ENTRY_ALREADY_EXISTS)
		case e.Protocol != ipsec_types.IPSEC_API_PROTO_ESP && e.Protocol != ipsec_types.IPSEC_API_PROTO_AH:
			*retval = int32(api.INVALID_VALUE)
		case int(e.CryptoKey.Length) != fakeCryptoKeyLen[e.CryptoAlgorithm]:
			*retval = int32(api.KEY_LENGTH)
		case e.Flags&ipsec_types.IPSEC_API_SAD_FLAG_IS_TUNNEL != 0 &&
			(e.Tunnel.Src.Af != e.Tunnel.Dst.Af || (e.Tunnel.Src.Af == ip_types.ADDRESS_IP6) != (e.Flags&ipsec_types.IPSEC_API_SAD_FLAG_IS_TUNNEL_V6 != 0)):
			*retval = int32(api.INVALID_VALUE)
		default:
			e.CryptoKey.Data = slices.Clone(e.CryptoKey.Data)
			e.IntegrityKey.Data = slices.Clone(e.IntegrityKey.Data)
			x.sas[e.SadID] = e
		}
		if *retval != 0 {
			return nil, true
		}
		return []api.Message{&ipsec.IpsecSadEntryAddDelV3Reply{}}, true
	case *ipsec.IpsecSaV3Dump:
		var out []api.Message
		for _, i := range sortedKeys(x.sas) {
			if m.SaID == ^uint32(0) || m.SaID == i {
				out = append(out, &ipsec.IpsecSaV3Details{Entry: x.sas[i]})
			}
		}
		return out, true
	}
	return nil, false
}
