package vpp

import (
	"fmt"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
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
