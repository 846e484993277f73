package vpp

import (
	"context"
	"encoding/base64"
	"net/netip"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/wireguard"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// wgKeyLen is the length of a wireguard key (Curve25519).
const wgKeyLen = 32

// wgKey decodes a key of field, written in base64 as wg genkey writes it.
// Its error names the field and never the key.
func wgKey(field, text string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(text)
	if err != nil || len(b) != wgKeyLen {
		return nil, kv.Invalid(field, "not a wireguard key (the base64 of %d bytes)", wgKeyLen)
	}
	return b, nil
}

// wireguardTunnels holds what is particular to the interfaces of type
// WIREGUARD.
type wireguardTunnels struct{ p *Plugin }

// Validate checks the private key (a secret: the error does not show it).
func (wireguardTunnels) Validate(v *vppinterfaces.Interface) error {
	if v.GetType() != vppinterfaces.Interface_TYPE_WIREGUARD || v.GetWireguard().GetPrivateKey() == "" {
		return nil
	}
	_, err := wgKey("wireguard.private_key", v.GetWireguard().GetPrivateKey())
	return err
}

// Create creates the interface with its key, port and source address.
// vppctl wireguard create listen-port PORT private-key KEY src SRC
func (h wireguardTunnels) Create(ctx context.Context, v *vppinterfaces.Interface) (interface_types.InterfaceIndex, error) {
	w := v.GetWireguard()
	key, err := wgKey("wireguard.private_key", w.GetPrivateKey())
	if err != nil {
		return 0, kv.NonRetriable(err)
	}
	src, _ := netip.ParseAddr(w.GetSrcAddress()) // the generated Validate checked it
	r, err := wireguard.NewServiceClient(h.p.conn).WireguardInterfaceCreate(ctx, &wireguard.WireguardInterfaceCreate{
		Interface: wireguard.WireguardInterface{UserInstance: ^uint32(0), PrivateKey: key, Port: uint16(w.GetPort()), SrcIP: address(src)},
	})
	if err != nil {
		return 0, vppErr("wireguard_interface_create", err)
	}
	return r.SwIfIndex, nil
}

// Delete deletes the interface (and VPP its peers).
// vppctl wireguard delete wgN
func (h wireguardTunnels) Delete(ctx context.Context, idx interface_types.InterfaceIndex) error {
	_, err := wireguard.NewServiceClient(h.p.conn).WireguardInterfaceDelete(ctx, &wireguard.WireguardInterfaceDelete{SwIfIndex: idx})
	return vppErr("wireguard_interface_delete", err)
}

// Retrieve fills in the parameters of the wireguard interfaces found, the
// private key included (VPP shows it when asked).
func (h wireguardTunnels) Retrieve(ctx context.Context, found []vppinterfaces.InterfaceItem[InterfaceMeta]) error {
	byIndex := map[uint32]*vppinterfaces.Interface{}
	for _, it := range found {
		if it.Value.GetType() == vppinterfaces.Interface_TYPE_WIREGUARD {
			byIndex[it.Metadata.SwIfIndex] = it.Value
		}
	}
	if len(byIndex) == 0 {
		return nil
	}
	list, err := dump[*wireguard.WireguardInterfaceDetails]("wireguard_interface_dump")(wireguard.NewServiceClient(h.p.conn).WireguardInterfaceDump(ctx,
		&wireguard.WireguardInterfaceDump{ShowPrivateKey: true, SwIfIndex: ^interface_types.InterfaceIndex(0)}))
	if err != nil {
		return err
	}
	for _, d := range list {
		if v := byIndex[uint32(d.Interface.SwIfIndex)]; v != nil {
			v.Wireguard = &vppinterfaces.Interface_Wireguard{
				PrivateKey: base64.StdEncoding.EncodeToString(d.Interface.PrivateKey),
				Port:       uint32(d.Interface.Port),
				SrcAddress: addrOf(d.Interface.SrcIP).String(),
			}
		}
	}
	return nil
}
