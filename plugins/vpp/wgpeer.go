package vpp

import (
	"context"
	"encoding/base64"
	"net/netip"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/wireguard"

	vppwireguard "github.com/kvdescriptor/kvdescriptor/generated/vpp/wireguard/v1"
)

// WireguardPeerMeta is the metadata of a wireguard peer: VPP's index of it.
type WireguardPeerMeta struct{ PeerIndex uint32 }

// wireguardPeers is the handler of vpp.wireguard.v1.Peer. It has no
// Update: VPP cannot change a peer, a change re-creates it.
type wireguardPeers struct{ p *Plugin }

var (
	_ vppwireguard.PeerRetriever[WireguardPeerMeta] = (*wireguardPeers)(nil)
	_ vppwireguard.PeerValidator                    = (*wireguardPeers)(nil)
)

// Validate checks the public key.
func (h *wireguardPeers) Validate(_ vppwireguard.PeerKey, v *vppwireguard.Peer) error {
	_, err := wgKey("public_key", v.GetPublicKey())
	return err
}

// Create adds the peer to its interface.
// vppctl wireguard peer add wgN public-key KEY endpoint IP port PORT allowed-ip NET...
func (h *wireguardPeers) Create(ctx context.Context, k vppwireguard.PeerKey, v *vppwireguard.Peer) (WireguardPeerMeta, error) {
	idx, err := h.p.swIfIndex(k.Interface)
	if err != nil {
		return WireguardPeerMeta{}, err
	}
	key, err := wgKey("public_key", v.GetPublicKey())
	if err != nil {
		return WireguardPeerMeta{}, err
	}
	ep, _ := netip.ParseAddr(v.GetEndpoint()) // the generated Validate checked it
	var allowed []ip_types.Prefix
	for _, a := range v.GetAllowedIps() {
		p, _ := netip.ParsePrefix(a)
		allowed = append(allowed, prefix(p.Masked()))
	}
	r, err := wireguard.NewServiceClient(h.p.conn).WireguardPeerAdd(ctx, &wireguard.WireguardPeerAdd{Peer: wireguard.WireguardPeer{
		PublicKey: key, Port: uint16(v.GetPort()), PersistentKeepalive: uint16(v.GetPersistentKeepalive()),
		Endpoint: address(ep), SwIfIndex: interface_types.InterfaceIndex(idx),
		NAllowedIps: uint8(len(allowed)), AllowedIps: allowed,
	}})
	if err != nil {
		return WireguardPeerMeta{}, vppErr("wireguard_peer_add", err)
	}
	return WireguardPeerMeta{PeerIndex: r.PeerIndex}, nil
}

// Delete removes the peer.
// vppctl wireguard peer remove INDEX
func (h *wireguardPeers) Delete(ctx context.Context, _ vppwireguard.PeerKey, _ *vppwireguard.Peer, m WireguardPeerMeta) error {
	_, err := wireguard.NewServiceClient(h.p.conn).WireguardPeerRemove(ctx, &wireguard.WireguardPeerRemove{PeerIndex: m.PeerIndex})
	return vppErr("wireguard_peer_remove", err)
}

// Retrieve dumps the peers of every interface; the correlated ones are
// ours, the others obtained.
func (h *wireguardPeers) Retrieve(ctx context.Context, correlate []vppwireguard.PeerItem[WireguardPeerMeta]) (out []vppwireguard.PeerItem[WireguardPeerMeta], _ error) {
	ours := map[vppwireguard.PeerKey]bool{}
	for _, it := range correlate {
		ours[it.Key] = true
	}
	list, err := dump[*wireguard.WireguardPeersDetails]("wireguard_peers_dump")(wireguard.NewServiceClient(h.p.conn).WireguardPeersDump(ctx, &wireguard.WireguardPeersDump{PeerIndex: ^uint32(0)}))
	if err != nil {
		return nil, err
	}
	names := h.p.interfaceNames()
	for _, d := range list {
		p := d.Peer
		k := vppwireguard.PeerKey{Interface: names[uint32(p.SwIfIndex)], PublicKey: base64.StdEncoding.EncodeToString(p.PublicKey)}
		if k.Interface == "" {
			continue
		}
		got := &vppwireguard.Peer{Interface: k.Interface, PublicKey: k.PublicKey, Endpoint: addrOf(p.Endpoint).String(),
			Port: uint32(p.Port), PersistentKeepalive: uint32(p.PersistentKeepalive)}
		for _, a := range p.AllowedIps {
			got.AllowedIps = append(got.AllowedIps, prefixOf(a).String())
		}
		out = append(out, vppwireguard.PeerItem[WireguardPeerMeta]{Key: k, Value: got, Metadata: WireguardPeerMeta{PeerIndex: p.PeerIndex}, Origin: origin(ours[k])})
	}
	return out, nil
}
