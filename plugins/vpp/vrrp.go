package vpp

import (
	"context"
	"net/netip"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/vrrp"

	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
)

// vrrps is the handler of vpp.l3.v1.VRRPEntry. Update starts or stops
// the virtual router; the schema re-creates it for any other change.
type vrrps struct{ p *Plugin }

var (
	_ vppl3.VRRPEntryUpdater[struct{}]   = (*vrrps)(nil)
	_ vppl3.VRRPEntryRetriever[struct{}] = (*vrrps)(nil)
)

// Create adds the virtual router, and starts it if enabled.
// vppctl vrrp vr add NAME vr_id ID priority P interval I [preempt] [accept_mode] [unicast] ADDR...
func (h *vrrps) Create(ctx context.Context, k vppl3.VRRPEntryKey, v *vppl3.VRRPEntry) (struct{}, error) {
	if err := h.addDel(ctx, k, v, 1); err != nil || !v.GetEnabled() {
		return struct{}{}, err
	}
	return h.Update(ctx, k, nil, v, struct{}{})
}

// Update starts or stops the virtual router.
// vppctl vrrp proto start|stop NAME vr_id ID [ipv6]
func (h *vrrps) Update(ctx context.Context, k vppl3.VRRPEntryKey, _, v *vppl3.VRRPEntry, _ struct{}) (struct{}, error) {
	idx, err := h.p.swIfIndex(k.Interface)
	if err != nil {
		return struct{}{}, err
	}
	req := &vrrp.VrrpVrStartStop{SwIfIndex: interface_types.InterfaceIndex(idx), VrID: uint8(k.VrId)}
	if vrrpIPv6(v) {
		req.IsIPv6 = 1
	}
	if v.GetEnabled() {
		req.IsStart = 1
	}
	_, err = vrrp.NewServiceClient(h.p.conn).VrrpVrStartStop(ctx, req)
	return struct{}{}, vppErr("vrrp_vr_start_stop", err)
}

// Delete stops the virtual router if it runs, and removes it.
// vppctl vrrp vr del NAME vr_id ID [ipv6]
func (h *vrrps) Delete(ctx context.Context, k vppl3.VRRPEntryKey, v *vppl3.VRRPEntry, _ struct{}) error {
	if v.GetEnabled() {
		stopped := &vppl3.VRRPEntry{IpAddresses: v.GetIpAddresses()}
		if _, err := h.Update(ctx, k, v, stopped, struct{}{}); err != nil {
			return err
		}
	}
	return h.addDel(ctx, k, v, 0)
}

func (h *vrrps) addDel(ctx context.Context, k vppl3.VRRPEntryKey, v *vppl3.VRRPEntry, add uint8) error {
	idx, err := h.p.swIfIndex(k.Interface)
	if err != nil {
		return err
	}
	req := &vrrp.VrrpVrAddDel{IsAdd: add, SwIfIndex: interface_types.InterfaceIndex(idx), VrID: uint8(k.VrId), Priority: uint8(v.GetPriority()), Interval: uint16(v.GetInterval() / 10)}
	for flag, on := range map[vrrp.VrrpVrFlags]bool{vrrp.VRRP_API_VR_PREEMPT: v.GetPreempt(), vrrp.VRRP_API_VR_ACCEPT: v.GetAccept(), vrrp.VRRP_API_VR_UNICAST: v.GetUnicast(), vrrp.VRRP_API_VR_IPV6: vrrpIPv6(v)} {
		if on {
			req.Flags |= flag
		}
	}
	for _, s := range v.GetIpAddresses() {
		a, _ := netip.ParseAddr(s) // the generated Validate checked them
		req.Addrs = append(req.Addrs, address(a))
	}
	req.NAddrs = uint8(len(req.Addrs))
	_, err = vrrp.NewServiceClient(h.p.conn).VrrpVrAddDel(ctx, req)
	return vppErr("vrrp_vr_add_del", err)
}

// vrrpIPv6 says whether the virtual router is of IPv6: its first address
// says.
func vrrpIPv6(v *vppl3.VRRPEntry) bool {
	if ips := v.GetIpAddresses(); len(ips) > 0 {
		a, err := netip.ParseAddr(ips[0])
		return err == nil && a.Is6()
	}
	return false
}

// Retrieve dumps the virtual routers on interfaces it can name:
// correlated ones are ours, the others obtained. One that left the init
// state runs.
func (h *vrrps) Retrieve(ctx context.Context, correlate []vppl3.VRRPEntryItem[struct{}]) ([]vppl3.VRRPEntryItem[struct{}], error) {
	list, err := dump[*vrrp.VrrpVrDetails]("vrrp_vr_dump")(vrrp.NewServiceClient(h.p.conn).VrrpVrDump(ctx, &vrrp.VrrpVrDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}))
	if err != nil {
		return nil, err
	}
	ours := map[vppl3.VRRPEntryKey]bool{}
	for _, it := range correlate {
		ours[it.Key] = true
	}
	names := h.p.interfaceNames()
	var out []vppl3.VRRPEntryItem[struct{}]
	for _, d := range list {
		c := d.Config
		k := vppl3.VRRPEntryKey{Interface: names[uint32(c.SwIfIndex)], VrId: uint32(c.VrID)}
		if k.Interface == "" {
			continue
		}
		got := &vppl3.VRRPEntry{Interface: k.Interface, VrId: k.VrId, Priority: uint32(c.Priority), Interval: uint32(c.Interval) * 10,
			Preempt: c.Flags&vrrp.VRRP_API_VR_PREEMPT != 0, Accept: c.Flags&vrrp.VRRP_API_VR_ACCEPT != 0, Unicast: c.Flags&vrrp.VRRP_API_VR_UNICAST != 0,
			Enabled: d.Runtime.State != vrrp.VRRP_API_VR_STATE_INIT}
		for _, a := range d.Addrs {
			got.IpAddresses = append(got.IpAddresses, addrOf(a).String())
		}
		out = append(out, vppl3.VRRPEntryItem[struct{}]{Key: k, Value: got, Origin: origin(ours[k])})
	}
	return out, nil
}
