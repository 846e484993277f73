package vpp

import (
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/abf"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/interface_types"
)

type fibPath = fib_types.FibPath

func interfaceIndex(i uint32) interface_types.InterfaceIndex {
	return interface_types.InterfaceIndex(i)
}

func init() { registerFakeExt(func() fakeExt { return &fakeABF{} }) }

// fakeABF is the ABF plugin of the fake VPP: policies by policy_id, each
// with an ACL and paths, and their attachments to interfaces.
type fakeABF struct {
	policies map[uint32]*abf.AbfPolicy
	attached []abf.AbfItfAttach
}

func (a *fakeABF) reset() { a.policies, a.attached = map[uint32]*abf.AbfPolicy{}, nil }

// forget drops the attachments of a deleted interface.
func (a *fakeABF) forget(i uint32) {
	a.attached = slices.DeleteFunc(a.attached, func(x abf.AbfItfAttach) bool { return uint32(x.SwIfIndex) == i })
}

// usesACL reports whether a policy uses IP ACL index: the ACL plugin then
// refuses to delete it (its lookup context is in use).
func (a *fakeABF) usesACL(index uint32) bool {
	for _, p := range a.policies {
		if p.ACLIndex == index {
			return true
		}
	}
	return false
}

func (a *fakeABF) apply(f *fakeVPP, msg api.Message, retval *int32) ([]api.Message, bool) {
	switch m := msg.(type) {
	case *abf.AbfPolicyAddDel:
		p, old := m.Policy, a.policies[m.Policy.PolicyID]
		p.Paths = slices.Clone(p.Paths) // the request is recorded as sent
		for i := range p.Paths {        // fib_api_path_decode: a weight of 0 is 1
			p.Paths[i].Weight = max(p.Paths[i].Weight, 1)
			if sw := p.Paths[i].SwIfIndex; sw != ^uint32(0) && f.iface(interfaceIndex(sw), retval) == nil {
				return nil, true
			}
		}
		switch {
		case m.IsAdd && fakeExtOf[*fakeACL](f).acls[p.ACLIndex] == nil:
			*retval = retvalNoSuchEntry // the ACL plugin refuses a lookup context of an unknown ACL
		case m.IsAdd && old != nil: // abf_policy_update adds the paths
			old.Paths = append(old.Paths, p.Paths...)
			old.NPaths = uint8(len(old.Paths))
		case m.IsAdd:
			a.policies[p.PolicyID] = &p
		case old == nil:
			*retval = int32(api.INVALID_VALUE)
		case slices.ContainsFunc(a.attached, func(x abf.AbfItfAttach) bool { return x.PolicyID == p.PolicyID }):
			// VPP does not check this (its debug build asserts): the fake
			// refuses, so that tests see the order of deletion.
			*retval = int32(api.INVALID_VALUE_2)
		default: // abf_policy_delete removes the paths, and the policy with its last
			old.Paths = slices.DeleteFunc(old.Paths, func(x fibPath) bool { return slices.Contains(p.Paths, x) })
			old.NPaths = uint8(len(old.Paths))
			if len(old.Paths) == 0 {
				delete(a.policies, p.PolicyID)
			}
		}
	case *abf.AbfPolicyDump:
		var out []api.Message
		for _, i := range sortedKeys(a.policies) {
			out = append(out, &abf.AbfPolicyDetails{Policy: *a.policies[i]})
		}
		return out, true
	case *abf.AbfItfAttachAddDel:
		at := slices.IndexFunc(a.attached, func(x abf.AbfItfAttach) bool {
			return x.PolicyID == m.Attach.PolicyID && x.SwIfIndex == m.Attach.SwIfIndex && x.IsIPv6 == m.Attach.IsIPv6
		})
		switch {
		case f.iface(m.Attach.SwIfIndex, retval) == nil:
		case m.IsAdd && a.policies[m.Attach.PolicyID] == nil:
			*retval = int32(api.INVALID_VALUE)
		case m.IsAdd && at >= 0:
			*retval = int32(api.ENTRY_ALREADY_EXISTS)
		case m.IsAdd:
			a.attached = append(a.attached, m.Attach)
		case at < 0:
			*retval = retvalNoSuchEntry
		default:
			a.attached = slices.Delete(a.attached, at, at+1)
		}
	case *abf.AbfItfAttachDump:
		var out []api.Message
		for _, x := range a.attached {
			out = append(out, &abf.AbfItfAttachDetails{Attach: x})
		}
		return out, true
	default:
		return nil, false
	}
	return nil, true
}
