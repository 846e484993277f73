package vpp

import (
	"context"
	"errors"
	"strings"

	"go.fd.io/govpp/binapi/af_packet"
	"go.fd.io/govpp/binapi/ethernet_types"
	vppif "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/memif"
	"go.fd.io/govpp/binapi/tapv2"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// interfaces is the handler of vpp.interfaces.v1.Interface.
type interfaces struct{ p *Plugin }

var (
	_ vppinterfaces.InterfaceUpdater[InterfaceMeta]   = (*interfaces)(nil)
	_ vppinterfaces.InterfaceRetriever[InterfaceMeta] = (*interfaces)(nil)
	_ vppinterfaces.InterfaceValidator                = (*interfaces)(nil)
)

// Validate checks that VPP can hold the label: it is the interface's tag.
func (h *interfaces) Validate(k vppinterfaces.InterfaceKey, v *vppinterfaces.Interface) error {
	return errors.Join(checkTag(k.Name), wireguardTunnels{}.Validate(v))
}

// Create creates the interface of its type, tags it with its label, and
// applies MAC, MTU, VRF and admin state.
func (h *interfaces) Create(ctx context.Context, k vppinterfaces.InterfaceKey, v *vppinterfaces.Interface) (InterfaceMeta, error) {
	var idx interface_types.InterfaceIndex
	mac, _ := ethernet_types.ParseMacAddress(v.GetPhysAddress())
	switch v.GetType() {
	case vppinterfaces.Interface_TYPE_MEMIF:
		role := memif.MEMIF_ROLE_API_SLAVE
		if v.GetMemif().GetMaster() {
			role = memif.MEMIF_ROLE_API_MASTER
		}
		// vppctl create interface memif id ID socket-id S (master|slave)
		r, err := memif.NewServiceClient(h.p.conn).MemifCreateV2(ctx, &memif.MemifCreateV2{
			Role: role, Mode: memif.MEMIF_MODE_API_ETHERNET, ID: v.GetMemif().GetId(), SocketID: v.GetMemif().GetSocketId(), HwAddr: mac,
		})
		if err != nil {
			return InterfaceMeta{}, vppErr("memif_create_v2", err)
		}
		idx = r.SwIfIndex
	case vppinterfaces.Interface_TYPE_TAP:
		// vppctl create tap host-if-name NAME
		r, err := tapv2.NewServiceClient(h.p.conn).TapCreateV3(ctx, &tapv2.TapCreateV3{
			ID: ^uint32(0), UseRandomMac: v.GetPhysAddress() == "", MacAddress: mac, NumRxQueues: 1, NumTxQueues: 1,
			TxRingSz: 256, RxRingSz: 256, HostIfNameSet: v.GetTap().GetHostIfName() != "", HostIfName: v.GetTap().GetHostIfName(),
		})
		if err != nil {
			return InterfaceMeta{}, vppErr("tap_create_v3", err)
		}
		idx = r.SwIfIndex
	case vppinterfaces.Interface_TYPE_SUB_INTERFACE:
		r, err := (subInterfaces{h.p}).Create(ctx, v)
		if err != nil {
			return InterfaceMeta{}, err
		}
		idx = r
	case vppinterfaces.Interface_TYPE_VXLAN_TUNNEL:
		r, err := (vxlanTunnels{h.p}).Create(ctx, v)
		if err != nil {
			return InterfaceMeta{}, err
		}
		idx = r
	case vppinterfaces.Interface_TYPE_GRE_TUNNEL:
		r, err := (greTunnels{h.p}).Create(ctx, v)
		if err != nil {
			return InterfaceMeta{}, err
		}
		idx = r
	case vppinterfaces.Interface_TYPE_IPIP_TUNNEL:
		r, err := (ipipTunnels{h.p}).Create(ctx, v)
		if err != nil {
			return InterfaceMeta{}, err
		}
		idx = r
	case vppinterfaces.Interface_TYPE_BOND:
		r, err := (bonds{h.p}).Create(ctx, v)
		if err != nil {
			return InterfaceMeta{}, err
		}
		idx = r
	case vppinterfaces.Interface_TYPE_VMXNET3:
		r, err := (vmxnet3s{h.p}).Create(ctx, v)
		if err != nil {
			return InterfaceMeta{}, err
		}
		idx = r
	case vppinterfaces.Interface_TYPE_RDMA:
		r, err := (rdmas{h.p}).Create(ctx, v)
		if err != nil {
			return InterfaceMeta{}, err
		}
		idx = r
	case vppinterfaces.Interface_TYPE_WIREGUARD:
		r, err := (wireguardTunnels{h.p}).Create(ctx, v)
		if err != nil {
			return InterfaceMeta{}, err
		}
		idx = r
	case vppinterfaces.Interface_TYPE_DPDK:
		r, err := (physical{h.p}).Create(k.Name)
		if err != nil {
			return InterfaceMeta{}, err
		}
		idx = r
	case vppinterfaces.Interface_TYPE_AF_PACKET:
		// vppctl create host-interface name HOST
		r, err := af_packet.NewServiceClient(h.p.conn).AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{
			Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: v.GetHostIfName(), HwAddr: mac,
			UseRandomHwAddr: v.GetPhysAddress() == "", NumRxQueues: 1, NumTxQueues: 1,
		})
		if err != nil {
			return InterfaceMeta{}, vppErr("af_packet_create_v3", err)
		}
		idx = r.SwIfIndex
	default: // a loopback
		// vppctl create loopback interface mac MAC
		r, err := vppif.NewServiceClient(h.p.conn).CreateLoopback(ctx, &vppif.CreateLoopback{MacAddress: mac})
		if err != nil {
			return InterfaceMeta{}, vppErr("create_loopback", err)
		}
		idx = r.SwIfIndex
	}
	m := InterfaceMeta{SwIfIndex: uint32(idx)}
	c := vppif.NewServiceClient(h.p.conn)
	if _, err := c.SwInterfaceTagAddDel(ctx, &vppif.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: idx, Tag: k.Name}); err != nil {
		// Untagged, it would not be found as ours: take it away again.
		_ = h.Delete(ctx, k, v, m)
		return m, vppErr("sw_interface_tag_add_del", err)
	}
	return m, h.apply(ctx, idx, nil, v)
}

// apply sets what differs between old (nil: a new interface) and v.
func (h *interfaces) apply(ctx context.Context, idx interface_types.InterfaceIndex, old, v *vppinterfaces.Interface) error {
	c := vppif.NewServiceClient(h.p.conn)
	if old != nil && v.GetPhysAddress() != "" && v.GetPhysAddress() != old.GetPhysAddress() {
		mac, _ := ethernet_types.ParseMacAddress(v.GetPhysAddress())
		if _, err := c.SwInterfaceSetMacAddress(ctx, &vppif.SwInterfaceSetMacAddress{SwIfIndex: idx, MacAddress: mac}); err != nil {
			return vppErr("sw_interface_set_mac_address", err)
		}
	}
	if old == nil || v.EffectiveMtu() != old.EffectiveMtu() {
		if _, err := c.HwInterfaceSetMtu(ctx, &vppif.HwInterfaceSetMtu{SwIfIndex: idx, Mtu: uint16(v.EffectiveMtu())}); err != nil {
			return vppErr("hw_interface_set_mtu", err)
		}
	}
	for _, v6 := range []bool{false, true} {
		if err := h.setTable(ctx, idx, v6, old, v); err != nil {
			return err
		}
	}
	if err := (rxModes{h.p}).Update(ctx, idx, old, v); err != nil {
		return err
	}
	if (old == nil && v.GetEnabled()) || (old != nil && v.GetEnabled() != old.GetEnabled()) {
		var flags interface_types.IfStatusFlags
		if v.GetEnabled() {
			flags = interface_types.IF_STATUS_API_FLAG_ADMIN_UP
		}
		if _, err := c.SwInterfaceSetFlags(ctx, &vppif.SwInterfaceSetFlags{SwIfIndex: idx, Flags: flags}); err != nil {
			return vppErr("sw_interface_set_flags", err)
		}
	}
	return nil
}

// setTable moves the interface to v's table of a family (IPv4: vrf;
// IPv6: ipv6_vrf, or vrf while it is unset) when it is not old's. VPP
// moves an interface to another table only without addresses of the
// family: they are taken off and put back.
func (h *interfaces) setTable(ctx context.Context, idx interface_types.InterfaceIndex, v6 bool, old, v *vppinterfaces.Interface) error {
	table := func(x *vppinterfaces.Interface) uint32 {
		if v6 {
			return x.EffectiveIpv6Vrf()
		}
		return x.GetVrf()
	}
	if table(v) == table(old) {
		return nil // old nil: a new interface, in table 0
	}
	c := vppif.NewServiceClient(h.p.conn)
	var addrs []ip_types.AddressWithPrefix
	if old != nil {
		list, err := dump[*ip.IPAddressDetails]("ip_address_dump")(ip.NewServiceClient(h.p.conn).IPAddressDump(ctx, &ip.IPAddressDump{SwIfIndex: idx, IsIPv6: v6}))
		if err != nil {
			return err
		}
		for _, d := range list {
			addrs = append(addrs, d.Prefix)
		}
	}
	for _, a := range addrs {
		if _, err := c.SwInterfaceAddDelAddress(ctx, &vppif.SwInterfaceAddDelAddress{SwIfIndex: idx, Prefix: a}); err != nil {
			return vppErr("sw_interface_add_del_address", err)
		}
	}
	if _, err := c.SwInterfaceSetTable(ctx, &vppif.SwInterfaceSetTable{SwIfIndex: idx, IsIPv6: v6, VrfID: table(v)}); err != nil {
		return vppErr("sw_interface_set_table", err)
	}
	for _, a := range addrs {
		if _, err := c.SwInterfaceAddDelAddress(ctx, &vppif.SwInterfaceAddDelAddress{SwIfIndex: idx, IsAdd: true, Prefix: a}); err != nil {
			return vppErr("sw_interface_add_del_address", err)
		}
	}
	return nil
}

// Update changes MAC, MTU, VRF and admin state in place.
func (h *interfaces) Update(ctx context.Context, _ vppinterfaces.InterfaceKey, old, v *vppinterfaces.Interface, m InterfaceMeta) (InterfaceMeta, error) {
	return m, h.apply(ctx, interface_types.InterfaceIndex(m.SwIfIndex), old, v)
}

// Delete deletes the interface with the call of its type.
func (h *interfaces) Delete(ctx context.Context, _ vppinterfaces.InterfaceKey, v *vppinterfaces.Interface, m InterfaceMeta) error {
	idx := interface_types.InterfaceIndex(m.SwIfIndex)
	var err error
	switch v.GetType() {
	case vppinterfaces.Interface_TYPE_MEMIF:
		_, err = memif.NewServiceClient(h.p.conn).MemifDelete(ctx, &memif.MemifDelete{SwIfIndex: idx})
		return vppErr("memif_delete", err)
	case vppinterfaces.Interface_TYPE_TAP:
		_, err = tapv2.NewServiceClient(h.p.conn).TapDeleteV2(ctx, &tapv2.TapDeleteV2{SwIfIndex: idx})
		return vppErr("tap_delete_v2", err)
	case vppinterfaces.Interface_TYPE_SUB_INTERFACE:
		return (subInterfaces{h.p}).Delete(ctx, idx)
	case vppinterfaces.Interface_TYPE_VXLAN_TUNNEL:
		return (vxlanTunnels{h.p}).Delete(ctx, v)
	case vppinterfaces.Interface_TYPE_GRE_TUNNEL:
		return (greTunnels{h.p}).Delete(ctx, v)
	case vppinterfaces.Interface_TYPE_IPIP_TUNNEL:
		return (ipipTunnels{h.p}).Delete(ctx, idx)
	case vppinterfaces.Interface_TYPE_BOND:
		return (bonds{h.p}).Delete(ctx, idx)
	case vppinterfaces.Interface_TYPE_VMXNET3:
		return (vmxnet3s{h.p}).Delete(ctx, idx)
	case vppinterfaces.Interface_TYPE_RDMA:
		return (rdmas{h.p}).Delete(ctx, idx)
	case vppinterfaces.Interface_TYPE_WIREGUARD:
		return (wireguardTunnels{h.p}).Delete(ctx, idx)
	case vppinterfaces.Interface_TYPE_DPDK:
		return (physical{h.p}).Delete(ctx, idx, v)
	case vppinterfaces.Interface_TYPE_AF_PACKET:
		_, err = af_packet.NewServiceClient(h.p.conn).AfPacketDelete(ctx, &af_packet.AfPacketDelete{HostIfName: v.GetHostIfName()})
		return vppErr("af_packet_delete", err)
	}
	_, err = vppif.NewServiceClient(h.p.conn).DeleteLoopback(ctx, &vppif.DeleteLoopback{SwIfIndex: idx})
	return vppErr("delete_loopback", err)
}

// macOrNone is the MAC address, or "" for none (all zeros).
func macOrNone(m ethernet_types.MacAddress) string {
	if m == (ethernet_types.MacAddress{}) {
		return ""
	}
	return m.String()
}

// devTypes maps VPP's interface_dev_type to the model's type.
var devTypes = map[string]vppinterfaces.Interface_Type{
	"Loopback":  vppinterfaces.Interface_TYPE_LOOPBACK,
	"memif":     vppinterfaces.Interface_TYPE_MEMIF,
	"virtio":    vppinterfaces.Interface_TYPE_TAP,
	"af_packet": vppinterfaces.Interface_TYPE_AF_PACKET,
	"VXLAN":     vppinterfaces.Interface_TYPE_VXLAN_TUNNEL,
	"dpdk":      vppinterfaces.Interface_TYPE_DPDK,
	"GRE":       vppinterfaces.Interface_TYPE_GRE_TUNNEL,
	"IPIP":      vppinterfaces.Interface_TYPE_IPIP_TUNNEL,
	"bond":      vppinterfaces.Interface_TYPE_BOND,
	"vmxnet3":   vppinterfaces.Interface_TYPE_VMXNET3,
	"rdma":      vppinterfaces.Interface_TYPE_RDMA,
}

// Retrieve dumps the interfaces. Tagged ones are ours (the tag is the
// label); the others, VPP's own or made by hand, are obtained, except
// hardware interfaces not adopted, which are only known by their name
// (a value of type DPDK adopts one: Create finds it so). Fields VPP
// does not report back (memif and tap parameters) and those the value
// leaves to VPP (an empty MAC) are taken from the value correlated.
func (h *interfaces) Retrieve(ctx context.Context, correlate []vppinterfaces.InterfaceItem[InterfaceMeta]) ([]vppinterfaces.InterfaceItem[InterfaceMeta], error) {
	c := vppif.NewServiceClient(h.p.conn)
	list, err := dump[*vppif.SwInterfaceDetails]("sw_interface_dump")(c.SwInterfaceDump(ctx, &vppif.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}))
	if err != nil {
		return nil, err
	}
	want := map[string]*vppinterfaces.Interface{}
	for _, it := range correlate {
		want[it.Key.Name] = it.Value
	}
	found := map[string]uint32{}
	var out []vppinterfaces.InterfaceItem[InterfaceMeta]
	for _, d := range list {
		name, origin := d.Tag, kv.OriginNB
		if name == "" {
			name, origin = d.InterfaceName, kv.OriginSB
		}
		got := &vppinterfaces.Interface{
			Name:        name,
			Type:        devTypes[d.InterfaceDevType],
			Enabled:     d.Flags&interface_types.IF_STATUS_API_FLAG_ADMIN_UP != 0,
			PhysAddress: macOrNone(d.L2Address),
			Mtu:         uint32(d.LinkMtu),
		}
		if got.Type == vppinterfaces.Interface_TYPE_UNSPECIFIED && strings.HasPrefix(d.InterfaceName, "wg") {
			got.Type = vppinterfaces.Interface_TYPE_WIREGUARD // VPP names them wgN
		}
		if got.Type == vppinterfaces.Interface_TYPE_AF_PACKET {
			got.HostIfName = strings.TrimPrefix(d.InterfaceName, "host-")
		}
		if d.Type == interface_types.IF_API_TYPE_SUB {
			got.Type = vppinterfaces.Interface_TYPE_SUB_INTERFACE
		}
		found[name] = uint32(d.SwIfIndex)
		if origin == kv.OriginSB && got.Type == vppinterfaces.Interface_TYPE_DPDK {
			continue // hardware not adopted: known by its name, not shown
		}
		if w := want[name]; w != nil {
			if w.GetPhysAddress() == "" {
				got.PhysAddress = ""
			}
			got.Memif, got.Tap, got.IpAddresses = w.GetMemif(), w.GetTap(), w.GetIpAddresses()
			got.BondMembers, got.DhcpClient, got.Ip6Nd, got.Ip6NdPrefixes = w.GetBondMembers(), w.GetDhcpClient(), w.GetIp6Nd(), w.GetIp6NdPrefixes()
			got.Rdma = w.GetRdma()
			if w.GetType() == vppinterfaces.Interface_TYPE_AF_PACKET {
				got.HostIfName = w.GetHostIfName()
			}
		}
		if origin == kv.OriginNB {
			t, err := c.SwInterfaceGetTable(ctx, &vppif.SwInterfaceGetTable{SwIfIndex: d.SwIfIndex})
			if err != nil {
				return nil, vppErr("sw_interface_get_table", err)
			}
			t6, err := c.SwInterfaceGetTable(ctx, &vppif.SwInterfaceGetTable{SwIfIndex: d.SwIfIndex, IsIPv6: true})
			if err != nil {
				return nil, vppErr("sw_interface_get_table", err)
			}
			got.Vrf = t.VrfID
			if t6.VrfID != t.VrfID {
				got.Ipv6Vrf = &t6.VrfID
			}
		}
		got.Parent, got.SubInterface = (subInterfaces{h.p}).Retrieve(d, list)
		out = append(out, vppinterfaces.InterfaceItem[InterfaceMeta]{
			Key: vppinterfaces.InterfaceKey{Name: name}, Value: got, Metadata: InterfaceMeta{SwIfIndex: uint32(d.SwIfIndex)}, Origin: origin,
		})
	}
	if err := (vxlanTunnels{h.p}).Retrieve(ctx, out); err != nil {
		return nil, err
	}
	if err := (greTunnels{h.p}).Retrieve(ctx, out); err != nil {
		return nil, err
	}
	if err := (ipipTunnels{h.p}).Retrieve(ctx, out); err != nil {
		return nil, err
	}
	if err := (bonds{h.p}).Retrieve(ctx, out); err != nil {
		return nil, err
	}
	if err := (vmxnet3s{h.p}).Retrieve(ctx, out, want); err != nil {
		return nil, err
	}
	if err := (wireguardTunnels{h.p}).Retrieve(ctx, out); err != nil {
		return nil, err
	}
	if err := (rxModes{h.p}).Retrieve(ctx, out, want); err != nil {
		return nil, err
	}
	h.p.setRetrieved(false, found)
	return out, nil
}
