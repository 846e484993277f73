package vpp

import (
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ipsec"
	"go.fd.io/govpp/binapi/ipsec_types"
)

// fakeSPD is the fake VPP's SPDs, their interfaces and policies, and its
// tunnel protections. It checks requests as VPP's ipsec does
// (ipsec_spd.c, ipsec_spd_policy.c, ipsec_tun.c): an SPD id is taken
// once; an interface is bound to one SPD, which must exist; deleting an
// SPD unbinds its interfaces and drops its policies; a policy needs its
// SPD and, to protect, its SA; RESOLVE is not implemented; deleting a
// policy that is not there is no error; a protection needs a tunnel
// interface (IPIP, GRE) and existing SAs, at most four inbound, and
// updates in place. The SAD (fakeIPsec) refuses to delete an SA in use.
type fakeSPD struct {
	spds     map[uint32]bool
	bound    map[uint32]uint32 // sw_if_index -> spd_id
	policies []ipsec_types.IpsecSpdEntry
	protect  map[uint32]ipsec.IpsecTunnelProtect // by sw_if_index
}

func init() { registerFakeExt(func() fakeExt { return &fakeSPD{} }) }

func (x *fakeSPD) reset() {
	x.spds, x.bound, x.policies, x.protect = map[uint32]bool{}, map[uint32]uint32{}, nil, map[uint32]ipsec.IpsecTunnelProtect{}
}

func (x *fakeSPD) forget(i uint32) {
	delete(x.bound, i)
	delete(x.protect, i)
}

// uses reports whether a policy or a protection uses SA id.
func (x *fakeSPD) uses(id uint32) bool {
	for _, p := range x.policies {
		if p.Policy == ipsec_types.IPSEC_API_SPD_ACTION_PROTECT && p.SaID == id {
			return true
		}
	}
	for _, t := range x.protect {
		if t.SaOut == id || slices.Contains(t.SaIn, id) {
			return true
		}
	}
	return false
}

func (x *fakeSPD) apply(f *fakeVPP, msg api.Message, retval *int32) ([]api.Message, bool) {
	fail := func(e api.VPPApiError) { *retval = int32(e) }
	switch m := msg.(type) {
	case *ipsec.IpsecSpdAddDel:
		switch {
		case m.IsAdd && x.spds[m.SpdID]:
			fail(api.ENTRY_ALREADY_EXISTS)
		case !m.IsAdd && !x.spds[m.SpdID]:
			fail(api.NO_SUCH_ENTRY)
		case m.IsAdd:
			x.spds[m.SpdID] = true
		default:
			delete(x.spds, m.SpdID)
			for i, s := range x.bound {
				if s == m.SpdID {
					delete(x.bound, i)
				}
			}
			x.policies = slices.DeleteFunc(x.policies, func(p ipsec_types.IpsecSpdEntry) bool { return p.SpdID == m.SpdID })
		}
		return []api.Message{&ipsec.IpsecSpdAddDelReply{}}, true
	case *ipsec.IpsecInterfaceAddDelSpd:
		_, isIf := f.ifaces[uint32(m.SwIfIndex)]
		_, isBound := x.bound[uint32(m.SwIfIndex)]
		switch {
		case !isIf:
			fail(api.INVALID_SW_IF_INDEX)
		case !x.spds[m.SpdID]: // no such spd-id
			fail(api.SYSCALL_ERROR_1)
		case m.IsAdd && isBound: // spd already assigned
			fail(api.SYSCALL_ERROR_2)
		case m.IsAdd:
			x.bound[uint32(m.SwIfIndex)] = m.SpdID
		default:
			delete(x.bound, uint32(m.SwIfIndex))
		}
		return []api.Message{&ipsec.IpsecInterfaceAddDelSpdReply{}}, true
	case *ipsec.IpsecSpdEntryAddDelV2:
		return x.policy(f, m, fail), true
	case *ipsec.IpsecSpdsDump:
		var out []api.Message
		for _, id := range sortedKeys(x.spds) {
			n := 0
			for _, p := range x.policies {
				n += boolInt(p.SpdID == id)
			}
			out = append(out, &ipsec.IpsecSpdsDetails{SpdID: id, Npolicies: uint32(n)})
		}
		return out, true
	case *ipsec.IpsecSpdDump:
		var out []api.Message
		for _, p := range x.policies {
			if p.SpdID == m.SpdID && (m.SaID == ^uint32(0) || m.SaID == p.SaID) {
				out = append(out, &ipsec.IpsecSpdDetails{Entry: p})
			}
		}
		return out, true
	case *ipsec.IpsecSpdInterfaceDump:
		var out []api.Message
		for _, i := range sortedKeys(x.bound) {
			if m.SpdIndexValid == 0 || m.SpdIndex == x.bound[i] {
				out = append(out, &ipsec.IpsecSpdInterfaceDetails{SpdIndex: x.bound[i], SwIfIndex: interface_types.InterfaceIndex(i)})
			}
		}
		return out, true
	case *ipsec.IpsecTunnelProtectUpdate:
		t := m.Tunnel
		_, ipip := f.ipips[uint32(t.SwIfIndex)]
		_, gre := f.gres[uint32(t.SwIfIndex)]
		sas := fakeExtOf[*fakeIPsec](f).sas
		_, out := sas[t.SaOut]
		switch {
		case int(t.NSaIn) != len(t.SaIn) || len(t.SaIn) > 4:
			fail(api.LIMIT_EXCEEDED)
		case !out || slices.ContainsFunc(t.SaIn, func(id uint32) bool { _, ok := sas[id]; return !ok }):
			fail(api.INVALID_VALUE)
		case !ipip && !gre: // the device class has no ip_tun_desc
			fail(api.INVALID_SW_IF_INDEX)
		default:
			t.SaIn = slices.Clone(t.SaIn)
			x.protect[uint32(t.SwIfIndex)] = t
		}
		return []api.Message{&ipsec.IpsecTunnelProtectUpdateReply{}}, true
	case *ipsec.IpsecTunnelProtectDel:
		if _, ok := x.protect[uint32(m.SwIfIndex)]; !ok {
			fail(api.NO_SUCH_ENTRY)
		}
		delete(x.protect, uint32(m.SwIfIndex))
		return []api.Message{&ipsec.IpsecTunnelProtectDelReply{}}, true
	case *ipsec.IpsecTunnelProtectDump:
		var out []api.Message
		for _, i := range sortedKeys(x.protect) {
			if m.SwIfIndex == ^interface_types.InterfaceIndex(0) || uint32(m.SwIfIndex) == i {
				out = append(out, &ipsec.IpsecTunnelProtectDetails{Tun: x.protect[i]})
			}
		}
		return out, true
	}
	return nil, false
}

// policy adds or deletes an SPD entry. VPP keeps protocol 0 (any) as 255,
// inserts a policy before those of a lower priority, and deletes the
// first policy equal in all fields (none: no error).
func (x *fakeSPD) policy(f *fakeVPP, m *ipsec.IpsecSpdEntryAddDelV2, fail func(api.VPPApiError)) []api.Message {
	e := ipsec_types.IpsecSpdEntry(m.Entry)
	if e.Protocol == 0 {
		e.Protocol = 255
	}
	_, sa := fakeExtOf[*fakeIPsec](f).sas[e.SaID]
	switch {
	case !x.spds[e.SpdID], m.IsAdd && e.Policy == ipsec_types.IPSEC_API_SPD_ACTION_PROTECT && !sa:
		fail(api.SYSCALL_ERROR_1)
	case e.Policy == ipsec_types.IPSEC_API_SPD_ACTION_RESOLVE || e.Policy > ipsec_types.IPSEC_API_SPD_ACTION_PROTECT:
		fail(api.UNIMPLEMENTED)
	case e.RemoteAddressStart.Af != e.RemoteAddressStop.Af || e.RemoteAddressStart.Af != e.LocalAddressStart.Af || e.RemoteAddressStart.Af != e.LocalAddressStop.Af:
		// VPP reads all four as of the first one's family: a request
		// with mixed families is one the plugin must never send.
		fail(api.INVALID_VALUE)
	case m.IsAdd:
		at := slices.IndexFunc(x.policies, func(p ipsec_types.IpsecSpdEntry) bool { return p.Priority <= e.Priority })
		if at < 0 {
			at = len(x.policies)
		}
		x.policies = slices.Insert(x.policies, at, e)
	default:
		if at := slices.Index(x.policies, e); at >= 0 {
			x.policies = slices.Delete(x.policies, at, at+1)
		}
	}
	return []api.Message{&ipsec.IpsecSpdEntryAddDelV2Reply{}}
}
