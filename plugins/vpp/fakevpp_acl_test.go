package vpp

import (
	"net/netip"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/acl_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
)

func init() { registerFakeExt(func() fakeExt { return &fakeACL{} }) }

// fakeACL is the ACL plugin of the fake VPP, as VPP 25.10's acl.c keeps
// it: IP ACLs and MAC-IP ACLs in pools of their own (a freed index is
// used again), each interface with a list of input and a list of output
// IP ACLs, and at most one MAC-IP ACL.
type fakeACL struct {
	acls    map[uint32]*acl.ACLDetails
	macips  map[uint32]*acl.MacipACLDetails
	in, out map[uint32][]uint32 // IP ACLs by sw_if_index, in order
	macipOn map[uint32]uint32   // MAC-IP ACL by sw_if_index
}

func (a *fakeACL) reset() {
	a.acls, a.macips = map[uint32]*acl.ACLDetails{}, map[uint32]*acl.MacipACLDetails{}
	a.in, a.out, a.macipOn = map[uint32][]uint32{}, map[uint32][]uint32{}, map[uint32]uint32{}
}

// forget drops the ACLs of a deleted interface, as the ACL plugin's
// interface deletion callback does.
func (a *fakeACL) forget(i uint32) {
	delete(a.in, i)
	delete(a.out, i)
	delete(a.macipOn, i)
}

// lists is the list of interface i in the direction asked for.
func (a *fakeACL) lists(input bool) map[uint32][]uint32 {
	if input {
		return a.in
	}
	return a.out
}

// usedBy reports whether an interface's list holds IP ACL index.
func usedBy(lists map[uint32][]uint32, index uint32) bool {
	for _, l := range lists {
		if slices.Contains(l, index) {
			return true
		}
	}
	return false
}

// freeIndex is the lowest index a pool of m has free.
func freeIndex[V any](m map[uint32]V) uint32 {
	i := uint32(0)
	for {
		if _, ok := m[i]; !ok {
			return i
		}
		i++
	}
}

// badPrefix reports whether VPP's ip_prefix_decode2 refuses p: a length
// beyond the family's, or host bits set.
func badPrefix(p ip_types.Prefix) bool {
	bits := 32
	if p.Address.Af == ip_types.ADDRESS_IP6 {
		bits = 128
	}
	if int(p.Len) > bits {
		return true
	}
	q := prefixOf(p)
	return q != q.Masked()
}

func (a *fakeACL) apply(f *fakeVPP, msg api.Message, retval *int32) ([]api.Message, bool) {
	switch m := msg.(type) {
	case *acl.ACLAddReplace:
		for _, r := range m.R { // acl_add_list's checks, in its order
			switch {
			case badPrefix(r.SrcPrefix):
				*retval = int32(api.INVALID_SRC_ADDRESS)
			case badPrefix(r.DstPrefix):
				*retval = int32(api.INVALID_DST_ADDRESS)
			case r.SrcportOrIcmptypeFirst > r.SrcportOrIcmptypeLast || r.DstportOrIcmpcodeFirst > r.DstportOrIcmpcodeLast:
				*retval = int32(api.INVALID_VALUE_2)
			default:
				continue
			}
			return nil, true
		}
		i := m.ACLIndex
		if i == ^uint32(0) {
			i = freeIndex(a.acls)
		} else if a.acls[i] == nil {
			*retval = retvalNoSuchEntry
			return nil, true
		}
		a.acls[i] = &acl.ACLDetails{ACLIndex: i, Tag: m.Tag, Count: m.Count, R: slices.Clone(m.R)}
		return []api.Message{&acl.ACLAddReplaceReply{ACLIndex: i}}, true
	case *acl.ACLDel:
		switch {
		case a.acls[m.ACLIndex] == nil:
			*retval = retvalNoSuchEntry
		case usedBy(a.in, m.ACLIndex):
			*retval = int32(api.ACL_IN_USE_INBOUND)
		case usedBy(a.out, m.ACLIndex):
			*retval = int32(api.ACL_IN_USE_OUTBOUND)
		case fakeExtOf[*fakeABF](f).usesACL(m.ACLIndex):
			*retval = int32(api.ACL_IN_USE_BY_LOOKUP_CONTEXT)
		default:
			delete(a.acls, m.ACLIndex)
		}
	case *acl.ACLDump:
		var out []api.Message
		for _, i := range sortedKeys(a.acls) {
			if m.ACLIndex == ^uint32(0) || m.ACLIndex == i {
				d := *a.acls[i]
				out = append(out, &d)
			}
		}
		return out, true
	case *acl.ACLInterfaceAddDel:
		sw, lists := uint32(m.SwIfIndex), a.lists(m.IsInput)
		l := lists[sw]
		at := slices.Index(l, m.ACLIndex)
		switch {
		case f.iface(m.SwIfIndex, retval) == nil:
		case m.IsAdd && at >= 0 && m.IsInput:
			*retval = int32(api.ACL_IN_USE_INBOUND)
		case m.IsAdd && at >= 0:
			*retval = int32(api.ACL_IN_USE_OUTBOUND)
		case m.IsAdd && a.acls[m.ACLIndex] == nil:
			*retval = retvalNoSuchEntry
		case m.IsAdd:
			lists[sw] = append(slices.Clone(l), m.ACLIndex)
		case at < 0:
			*retval = retvalNoSuchEntry
		default: // vec_del1: the last takes the place of the one removed
			l = slices.Clone(l)
			l[at] = l[len(l)-1]
			lists[sw] = l[:len(l)-1]
		}
	case *acl.ACLInterfaceListDump:
		var out []api.Message
		for _, i := range sortedKeys(f.ifaces) {
			if m.SwIfIndex == ^interface_types.InterfaceIndex(0) || uint32(m.SwIfIndex) == i {
				l := append(slices.Clone(a.in[i]), a.out[i]...)
				out = append(out, &acl.ACLInterfaceListDetails{SwIfIndex: interface_types.InterfaceIndex(i), Count: uint8(len(l)), NInput: uint8(len(a.in[i])), Acls: l})
			}
		}
		return out, true
	case *acl.MacipACLAddReplace:
		i := m.ACLIndex
		if i == ^uint32(0) {
			i = freeIndex(a.macips)
		} else if a.macips[i] == nil {
			*retval = retvalNoSuchEntry
			return nil, true
		}
		a.macips[i] = &acl.MacipACLDetails{ACLIndex: i, Tag: m.Tag, Count: m.Count, R: slices.Clone(m.R)}
		return []api.Message{&acl.MacipACLAddReplaceReply{ACLIndex: i}}, true
	case *acl.MacipACLDel:
		if a.macips[m.ACLIndex] == nil {
			*retval = retvalNoSuchEntry
			return nil, true
		}
		delete(a.macips, m.ACLIndex)
		for sw, i := range a.macipOn { // VPP takes it off its interfaces
			if i == m.ACLIndex {
				delete(a.macipOn, sw)
			}
		}
	case *acl.MacipACLDump:
		var out []api.Message
		for _, i := range sortedKeys(a.macips) {
			if m.ACLIndex == ^uint32(0) || m.ACLIndex == i {
				d := *a.macips[i]
				out = append(out, &d)
			}
		}
		return out, true
	case *acl.MacipACLInterfaceAddDel:
		_, on := a.macipOn[uint32(m.SwIfIndex)]
		switch {
		case f.iface(m.SwIfIndex, retval) == nil:
		case m.IsAdd && a.macips[m.ACLIndex] == nil:
			*retval = retvalNoSuchEntry
		case m.IsAdd: // replaces the one the interface had
			a.macipOn[uint32(m.SwIfIndex)] = m.ACLIndex
		case !on:
			*retval = retvalNoSuchEntry
		default: // VPP takes off whichever the interface has
			delete(a.macipOn, uint32(m.SwIfIndex))
		}
	case *acl.MacipACLInterfaceListDump:
		var out []api.Message
		for _, i := range sortedKeys(a.macipOn) {
			if m.SwIfIndex == ^interface_types.InterfaceIndex(0) || uint32(m.SwIfIndex) == i {
				out = append(out, &acl.MacipACLInterfaceListDetails{SwIfIndex: interface_types.InterfaceIndex(i), Count: 1, Acls: []uint32{a.macipOn[i]}})
			}
		}
		return out, true
	default:
		return nil, false
	}
	return nil, true
}

// aclRule is a rule of the binary API, for tests.
func aclRule(action acl_types.ACLAction, src, dst string, proto ip_types.IPProto, sport, dport [2]uint16) acl_types.ACLRule {
	return acl_types.ACLRule{IsPermit: action, SrcPrefix: prefix(netip.MustParsePrefix(src)), DstPrefix: prefix(netip.MustParsePrefix(dst)), Proto: proto,
		SrcportOrIcmptypeFirst: sport[0], SrcportOrIcmptypeLast: sport[1], DstportOrIcmpcodeFirst: dport[0], DstportOrIcmpcodeLast: dport[1]}
}

func netipPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }
