package vpp

import (
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/arp"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/l3xc"
	"go.fd.io/govpp/binapi/teib"
	"go.fd.io/govpp/binapi/vrrp"
)

// fakeL2L3 is the fake VPP's part of the L2 cross-connects, proxy ARP,
// L3 cross-connects, VRRP, TEIB and the neighbour tables' settings.
type fakeL2L3 struct {
	xc       map[uint32]uint32 // receive interface -> transmit interface
	proxyIf  map[uint32]bool
	ranges   []arp.ProxyArp
	l3xc     map[l3xcID]l3xc.L3xc
	vrs      []*vrrp.VrrpVrDetails
	teib     []teib.TeibEntry
	neighCfg map[ip_types.AddressFamily]ip_neighbor.IPNeighborConfigGetReply
}

type l3xcID struct {
	sw  interface_types.InterfaceIndex
	ip6 bool
}

func init() { registerFakeExt(func() fakeExt { return &fakeL2L3{} }) }

// neighDefault is VPP's setting of a neighbour table.
var neighDefault = ip_neighbor.IPNeighborConfigGetReply{MaxNumber: 50000}

func (x *fakeL2L3) reset() {
	x.xc, x.proxyIf, x.ranges, x.l3xc = map[uint32]uint32{}, map[uint32]bool{}, nil, map[l3xcID]l3xc.L3xc{}
	x.vrs, x.teib = nil, nil
	x.neighCfg = map[ip_types.AddressFamily]ip_neighbor.IPNeighborConfigGetReply{ip_types.ADDRESS_IP4: neighDefault, ip_types.ADDRESS_IP6: neighDefault}
}

// forget removes what VPP removes with interface i: its cross-connects
// (either way), proxy ARP, L3 cross-connects, virtual routers and TEIB
// entries.
func (x *fakeL2L3) forget(i uint32) {
	for rx, tx := range x.xc {
		if rx == i || tx == i {
			delete(x.xc, rx)
		}
	}
	delete(x.proxyIf, i)
	for id := range x.l3xc {
		if uint32(id.sw) == i {
			delete(x.l3xc, id)
		}
	}
	x.vrs = slices.DeleteFunc(x.vrs, func(d *vrrp.VrrpVrDetails) bool { return uint32(d.Config.SwIfIndex) == i })
	x.teib = slices.DeleteFunc(x.teib, func(e teib.TeibEntry) bool { return uint32(e.SwIfIndex) == i })
}

// apply simulates the requests, refusing what VPP refuses: an unknown
// sw_if_index, a table that does not exist, adding what exists, deleting
// what does not (where VPP refuses it: disabling proxy ARP or an
// cross-connect that is not there is not an error in VPP either).
func (x *fakeL2L3) apply(f *fakeVPP, msg api.Message, retval *int32) ([]api.Message, bool) {
	iface := func(i interface_types.InterfaceIndex) bool { return f.iface(i, retval) != nil }
	fail := func(e api.VPPApiError) ([]api.Message, bool) {
		*retval = int32(e)
		return nil, true
	}
	switch m := msg.(type) {
	case *l2.SwInterfaceSetL2Xconnect:
		switch {
		case !iface(m.RxSwIfIndex) || (m.Enable && !iface(m.TxSwIfIndex)):
		case m.Enable:
			x.xc[uint32(m.RxSwIfIndex)] = uint32(m.TxSwIfIndex)
		default: // the receive interface back to L3, whatever it was
			delete(x.xc, uint32(m.RxSwIfIndex))
		}
	case *l2.L2XconnectDump:
		var out []api.Message
		for _, rx := range sortedKeys(x.xc) {
			out = append(out, &l2.L2XconnectDetails{RxSwIfIndex: interface_types.InterfaceIndex(rx), TxSwIfIndex: interface_types.InterfaceIndex(x.xc[rx])})
		}
		return out, true
	case *arp.ProxyArpIntfcEnableDisable:
		switch {
		case !iface(m.SwIfIndex):
		case m.Enable:
			x.proxyIf[uint32(m.SwIfIndex)] = true
		default:
			delete(x.proxyIf, uint32(m.SwIfIndex))
		}
	case *arp.ProxyArpIntfcDump:
		var out []api.Message
		for _, i := range sortedKeys(x.proxyIf) {
			out = append(out, &arp.ProxyArpIntfcDetails{SwIfIndex: i})
		}
		return out, true
	case *arp.ProxyArpAddDel:
		p := m.Proxy
		at := slices.Index(x.ranges, p)
		switch {
		case !f.tables[ip.IPTable{TableID: p.TableID}]:
			return fail(api.NO_SUCH_FIB)
		case slices.Compare(p.Low[:], p.Hi[:]) > 0:
			return fail(api.INVALID_VALUE)
		case m.IsAdd && at >= 0:
			return fail(api.VALUE_EXIST)
		case !m.IsAdd && at < 0:
			return fail(api.NO_SUCH_ENTRY)
		case m.IsAdd:
			x.ranges = append(x.ranges, p)
		default:
			x.ranges = slices.Delete(x.ranges, at, at+1)
		}
	case *arp.ProxyArpDump:
		var out []api.Message
		for _, p := range x.ranges {
			out = append(out, &arp.ProxyArpDetails{Proxy: p})
		}
		return out, true
	case *l3xc.L3xcUpdate:
		c := m.L3xc
		if !iface(c.SwIfIndex) {
			return nil, true
		}
		for i, p := range c.Paths {
			if !iface(interface_types.InterfaceIndex(p.SwIfIndex)) {
				return nil, true
			}
			c.Paths[i].Weight = max(p.Weight, 1) // VPP takes 0 as 1
		}
		x.l3xc[l3xcID{c.SwIfIndex, c.IsIP6}] = c
	case *l3xc.L3xcDel:
		id := l3xcID{m.SwIfIndex, m.IsIP6}
		if _, ok := x.l3xc[id]; !ok {
			return fail(api.NO_SUCH_ENTRY)
		}
		delete(x.l3xc, id)
	case *l3xc.L3xcDump:
		var out []api.Message
		for _, id := range sortedIDs(x.l3xc) {
			if m.SwIfIndex == ^interface_types.InterfaceIndex(0) || m.SwIfIndex == id.sw {
				c := x.l3xc[id]
				c.Paths = slices.Clone(c.Paths)
				out = append(out, &l3xc.L3xcDetails{L3xc: c})
			}
		}
		return out, true
	case *vrrp.VrrpVrAddDel:
		return x.vrrpAddDel(m, iface, retval), true
	case *vrrp.VrrpVrStartStop:
		d := x.vr(m.SwIfIndex, m.VrID, m.IsIPv6 != 0)
		if d == nil {
			return fail(api.NO_SUCH_ENTRY)
		}
		d.Runtime.State = vrrp.VRRP_API_VR_STATE_INIT
		if m.IsStart != 0 {
			d.Runtime.State = vrrp.VRRP_API_VR_STATE_BACKUP
		}
	case *vrrp.VrrpVrDump:
		var out []api.Message
		for _, d := range x.vrs {
			if m.SwIfIndex == ^interface_types.InterfaceIndex(0) || m.SwIfIndex == d.Config.SwIfIndex {
				c := *d
				c.Addrs = slices.Clone(d.Addrs)
				out = append(out, &c)
			}
		}
		return out, true
	case *teib.TeibEntryAddDel:
		e := m.Entry
		at := slices.IndexFunc(x.teib, func(t teib.TeibEntry) bool { return t.SwIfIndex == e.SwIfIndex && t.Peer == e.Peer })
		switch {
		case !iface(e.SwIfIndex):
		case m.IsAdd != 0 && !f.tables[ip.IPTable{TableID: e.NhTableID, IsIP6: e.Nh.Af == ip_types.ADDRESS_IP6}]:
			return fail(api.NO_SUCH_FIB)
		case m.IsAdd != 0 && at >= 0:
			return fail(api.ENTRY_ALREADY_EXISTS)
		case m.IsAdd == 0 && at < 0:
			return fail(api.NO_SUCH_ENTRY)
		case m.IsAdd != 0:
			x.teib = append(x.teib, e)
		default:
			x.teib = slices.Delete(x.teib, at, at+1)
		}
	case *teib.TeibDump:
		var out []api.Message
		for _, e := range x.teib {
			out = append(out, &teib.TeibDetails{Entry: e})
		}
		return out, true
	case *ip_neighbor.IPNeighborConfig:
		if _, ok := x.neighCfg[m.Af]; !ok {
			return fail(api.INVALID_VALUE)
		}
		x.neighCfg[m.Af] = ip_neighbor.IPNeighborConfigGetReply{Af: m.Af, MaxNumber: m.MaxNumber, MaxAge: m.MaxAge, Recycle: m.Recycle}
	case *ip_neighbor.IPNeighborConfigGet:
		c, ok := x.neighCfg[m.Af]
		if !ok {
			return fail(api.INVALID_VALUE)
		}
		c.Af = m.Af
		return []api.Message{&c}, true
	default:
		return nil, false
	}
	return nil, true
}

// vr returns the virtual router of an interface, id and family, or nil.
func (x *fakeL2L3) vr(sw interface_types.InterfaceIndex, id uint8, ip6 bool) *vrrp.VrrpVrDetails {
	for _, d := range x.vrs {
		if d.Config.SwIfIndex == sw && d.Config.VrID == id && (d.Config.Flags&vrrp.VRRP_API_VR_IPV6 != 0) == ip6 {
			return d
		}
	}
	return nil
}

// vrrpAddDel adds or deletes a virtual router, refusing an id, priority
// or interval of 0, no address or one not of the router's family, one
// that exists (add) or does not (delete).
func (x *fakeL2L3) vrrpAddDel(m *vrrp.VrrpVrAddDel, iface func(interface_types.InterfaceIndex) bool, retval *int32) []api.Message {
	ip6 := m.Flags&vrrp.VRRP_API_VR_IPV6 != 0
	d := x.vr(m.SwIfIndex, m.VrID, ip6)
	switch {
	case !iface(m.SwIfIndex):
		return nil
	case m.IsAdd == 0 && d == nil:
		*retval = int32(api.NO_SUCH_ENTRY)
		return nil
	case m.IsAdd == 0:
		x.vrs = slices.DeleteFunc(x.vrs, func(v *vrrp.VrrpVrDetails) bool { return v == d })
		return nil
	case d != nil:
		*retval = int32(api.ENTRY_ALREADY_EXISTS)
		return nil
	case m.VrID == 0 || m.Priority == 0 || m.Interval == 0 || len(m.Addrs) == 0 || slices.ContainsFunc(m.Addrs, func(a ip_types.Address) bool { return (a.Af == ip_types.ADDRESS_IP6) != ip6 }):
		*retval = int32(api.INVALID_ARGUMENT)
		return nil
	}
	x.vrs = append(x.vrs, &vrrp.VrrpVrDetails{Config: vrrp.VrrpVrConf{SwIfIndex: m.SwIfIndex, VrID: m.VrID, Priority: m.Priority, Interval: m.Interval, Flags: m.Flags},
		NAddrs: m.NAddrs, Addrs: slices.Clone(m.Addrs)})
	return nil
}

func sortedIDs(m map[l3xcID]l3xc.L3xc) []l3xcID {
	var out []l3xcID
	for id := range m {
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b l3xcID) int { return int(a.sw)*2 + boolInt(a.ip6) - int(b.sw)*2 - boolInt(b.ip6) })
	return out
}
