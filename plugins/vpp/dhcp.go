package vpp

import (
	"context"

	"go.fd.io/govpp/binapi/dhcp"
	"go.fd.io/govpp/binapi/interface_types"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
)

// dhcpClients is the handler of vpp.interfaces.v1.Interface.dhcp_client:
// VPP's DHCP client on an interface. It has no Update: VPP changes a
// client by removing it and adding it again.
type dhcpClients struct{ p *Plugin }

var _ vppinterfaces.InterfaceDhcpClientRetriever[struct{}] = (*dhcpClients)(nil)

// Create starts the client.
// vppctl set dhcp client intfc NAME [hostname H]
func (h *dhcpClients) Create(ctx context.Context, k vppinterfaces.InterfaceDhcpClientKey, v *vppinterfaces.Interface_DhcpClient) (struct{}, error) {
	return struct{}{}, h.config(ctx, k, v, true)
}

// Delete stops it; VPP takes the leased address away.
// vppctl set dhcp client del intfc NAME
func (h *dhcpClients) Delete(ctx context.Context, k vppinterfaces.InterfaceDhcpClientKey, v *vppinterfaces.Interface_DhcpClient, _ struct{}) error {
	return h.config(ctx, k, v, false)
}

func (h *dhcpClients) config(ctx context.Context, k vppinterfaces.InterfaceDhcpClientKey, v *vppinterfaces.Interface_DhcpClient, add bool) error {
	idx, err := h.p.swIfIndex(k.Name)
	if err != nil {
		return err
	}
	_, err = dhcp.NewServiceClient(h.p.conn).DHCPClientConfig(ctx, &dhcp.DHCPClientConfig{IsAdd: add, Client: dhcp.DHCPClient{
		SwIfIndex: interface_types.InterfaceIndex(idx), Hostname: v.GetHostname(), SetBroadcastFlag: v.GetBroadcast()}})
	return vppErr("dhcp_client_config", err)
}

// Retrieve reports the clients VPP runs, by the label of their interface:
// the correlated ones as ours, the others (started by hand) obtained.
func (h *dhcpClients) Retrieve(ctx context.Context, correlate []vppinterfaces.InterfaceDhcpClientItem[struct{}]) ([]vppinterfaces.InterfaceDhcpClientItem[struct{}], error) {
	ours := map[vppinterfaces.InterfaceDhcpClientKey]bool{}
	for _, c := range correlate {
		ours[c.Key] = true
	}
	list, err := dump[*dhcp.DHCPClientDetails]("dhcp_client_dump")(dhcp.NewServiceClient(h.p.conn).DHCPClientDump(ctx, &dhcp.DHCPClientDump{}))
	if err != nil {
		return nil, err
	}
	names := h.p.interfaceNames()
	var out []vppinterfaces.InterfaceDhcpClientItem[struct{}]
	for _, d := range list {
		if name, ok := names[uint32(d.Client.SwIfIndex)]; ok {
			k := vppinterfaces.InterfaceDhcpClientKey{Name: name}
			v := &vppinterfaces.Interface_DhcpClient{Hostname: d.Client.Hostname, Broadcast: d.Client.SetBroadcastFlag}
			out = append(out, vppinterfaces.InterfaceDhcpClientItem[struct{}]{Key: k, Value: v, Origin: origin(ours[k])})
		}
	}
	return out, nil
}
