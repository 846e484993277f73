package vpp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"go.fd.io/govpp/binapi/abf"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/interface_types"

	vppabf "github.com/kvdescriptor/kvdescriptor/generated/vpp/abf/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// abfPolicies is the handler of vpp.abf.v1.ABF, an ACL-based forwarding
// policy. It has no Update: a change re-creates it.
type abfPolicies struct{ p *Plugin }

// abfAttachments is the handler of vpp.abf.v1.ABF.interfaces: a policy
// attached to an interface. It has no Update: a change re-attaches.
type abfAttachments struct{ p *Plugin }

var (
	_ vppabf.ABFRetriever[struct{}]           = (*abfPolicies)(nil)
	_ vppabf.ABFInterfacesRetriever[struct{}] = (*abfAttachments)(nil)
)

// Create adds the policy with its ACL and paths.
// vppctl abf policy add id ID acl INDEX via NEXT-HOP INTERFACE
func (h *abfPolicies) Create(ctx context.Context, k vppabf.ABFKey, v *vppabf.ABF) (struct{}, error) {
	return struct{}{}, h.set(ctx, k, v, true)
}

// Delete removes the policy: VPP removes the paths named, and the policy
// with its last one.
// vppctl abf policy del id ID acl INDEX via ...
func (h *abfPolicies) Delete(ctx context.Context, k vppabf.ABFKey, v *vppabf.ABF, _ struct{}) error {
	return h.set(ctx, k, v, false)
}

func (h *abfPolicies) set(ctx context.Context, k vppabf.ABFKey, v *vppabf.ABF, add bool) error {
	idx, err1 := h.p.aclFound.index(h.p.acl.Metadata(), "ACL", v.GetAcl())
	paths, err2 := h.p.abfPaths(v.GetPaths())
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	_, err := abf.NewServiceClient(h.p.conn).AbfPolicyAddDel(ctx, &abf.AbfPolicyAddDel{IsAdd: add,
		Policy: abf.AbfPolicy{PolicyID: k.Index, ACLIndex: idx, NPaths: uint8(len(paths)), Paths: paths}})
	return vppErr("abf_policy_add_del", err)
}

// Retrieve dumps the policies: correlated ones are ours (as they were
// asked for, when VPP has their paths), the others obtained.
func (h *abfPolicies) Retrieve(ctx context.Context, correlate []vppabf.ABFItem[struct{}]) ([]vppabf.ABFItem[struct{}], error) {
	list, err := dump[*abf.AbfPolicyDetails]("abf_policy_dump")(abf.NewServiceClient(h.p.conn).AbfPolicyDump(ctx, &abf.AbfPolicyDump{}))
	if err != nil {
		return nil, err
	}
	want := map[uint32]*vppabf.ABF{}
	for _, c := range correlate {
		want[c.Key.Index] = c.Value
	}
	acls, names := h.p.aclFound.labels(h.p.acl.Metadata()), h.p.interfaceNames()
	var out []vppabf.ABFItem[struct{}]
	for _, d := range list {
		got := &vppabf.ABF{Index: d.Policy.PolicyID, Acl: acls[d.Policy.ACLIndex]}
		for _, p := range d.Policy.Paths {
			path := &vppabf.ABF_Path{Interface: names[p.SwIfIndex], Weight: uint32(p.Weight), Preference: uint32(p.Preference)}
			nh := netip.AddrFrom4(p.Nh.Address.GetIP4())
			if p.Proto == fib_types.FIB_API_PATH_NH_PROTO_IP6 {
				nh = netip.AddrFrom16(p.Nh.Address.GetIP6())
			}
			if !nh.IsUnspecified() {
				path.NextHop = nh.String()
			}
			got.Paths = append(got.Paths, path)
		}
		w := want[d.Policy.PolicyID]
		if paths, err := h.p.abfPaths(w.GetPaths()); w != nil && err == nil && kvEqualSet(paths, d.Policy.Paths) && got.Acl == w.GetAcl() {
			got = w
		} else if w != nil {
			got.Interfaces = w.GetInterfaces()
		}
		out = append(out, vppabf.ABFItem[struct{}]{Key: vppabf.ABFKey{Index: d.Policy.PolicyID}, Value: got, Origin: origin(w != nil)})
	}
	return out, nil
}

// abfPaths converts a policy's paths to the binary API's, naming the field
// of each that cannot be.
func (p *Plugin) abfPaths(paths []*vppabf.ABF_Path) ([]fib_types.FibPath, error) {
	out := make([]fib_types.FibPath, len(paths))
	var errs []error
	for i, path := range paths {
		fp := fib_types.FibPath{SwIfIndex: ^uint32(0), Weight: uint8(max(path.GetWeight(), 1)), Preference: uint8(path.GetPreference())}
		if path.GetNextHop() != "" {
			nh, err := netip.ParseAddr(path.GetNextHop())
			if err != nil {
				errs = append(errs, kv.Invalid(fmt.Sprintf("paths[%d].next_hop", i), "%v", err))
			} else if nh.Is6() {
				fp.Proto = fib_types.FIB_API_PATH_NH_PROTO_IP6
				fp.Nh.Address.SetIP6(nh.As16())
			} else {
				fp.Nh.Address.SetIP4(nh.As4())
			}
		}
		if path.GetInterface() != "" {
			sw, err := p.swIfIndex(path.GetInterface())
			fp.SwIfIndex, errs = sw, append(errs, err)
		}
		out[i] = fp
	}
	return out, errors.Join(errs...)
}

// kvEqualSet reports whether a and b hold the same paths, in any order.
func kvEqualSet(a, b []fib_types.FibPath) bool {
	if len(a) != len(b) {
		return false
	}
	left := append([]fib_types.FibPath(nil), b...)
	for _, x := range a {
		at := -1
		for i, y := range left {
			if x == y {
				at = i
				break
			}
		}
		if at < 0 {
			return false
		}
		left = append(left[:at], left[at+1:]...)
	}
	return true
}

// Create attaches the policy to the interface.
// vppctl abf attach ip4|ip6 policy ID priority P INTERFACE
func (h *abfAttachments) Create(ctx context.Context, k vppabf.ABFInterfacesKey, v *vppabf.ABF_Interface) (struct{}, error) {
	return struct{}{}, h.set(ctx, k, v, true)
}

// Delete detaches it.
func (h *abfAttachments) Delete(ctx context.Context, k vppabf.ABFInterfacesKey, v *vppabf.ABF_Interface, _ struct{}) error {
	return h.set(ctx, k, v, false)
}

func (h *abfAttachments) set(ctx context.Context, k vppabf.ABFInterfacesKey, v *vppabf.ABF_Interface, add bool) error {
	sw, err := h.p.swIfIndex(k.InterfacesName)
	if err != nil {
		return err
	}
	_, err = abf.NewServiceClient(h.p.conn).AbfItfAttachAddDel(ctx, &abf.AbfItfAttachAddDel{IsAdd: add,
		Attach: abf.AbfItfAttach{PolicyID: k.Index, SwIfIndex: interface_types.InterfaceIndex(sw), Priority: v.GetPriority(), IsIPv6: v.GetIpv6()}})
	return vppErr("abf_itf_attach_add_del", err)
}

// Retrieve reports the correlated attachments that VPP has, as VPP has
// them.
func (h *abfAttachments) Retrieve(ctx context.Context, correlate []vppabf.ABFInterfacesItem[struct{}]) ([]vppabf.ABFInterfacesItem[struct{}], error) {
	if len(correlate) == 0 {
		return nil, nil
	}
	list, err := dump[*abf.AbfItfAttachDetails]("abf_itf_attach_dump")(abf.NewServiceClient(h.p.conn).AbfItfAttachDump(ctx, &abf.AbfItfAttachDump{}))
	if err != nil {
		return nil, err
	}
	names := h.p.interfaceNames()
	var out []vppabf.ABFInterfacesItem[struct{}]
	for _, c := range correlate {
		for _, d := range list {
			if a := d.Attach; a.PolicyID == c.Key.Index && names[uint32(a.SwIfIndex)] == c.Key.InterfacesName {
				got := &vppabf.ABF_Interface{Name: c.Key.InterfacesName, Priority: a.Priority, Ipv6: a.IsIPv6}
				out = append(out, vppabf.ABFInterfacesItem[struct{}]{Key: c.Key, Value: got, Origin: kv.OriginNB})
			}
		}
	}
	return out, nil
}

// labels returns the labels by index: from the metadata, else from the
// last Retrieve.
func (x *labelIndexes) labels(meta kv.MetadataMap[ACLMeta]) map[uint32]string {
	out := map[uint32]string{}
	x.mu.Lock()
	for l, i := range x.found {
		out[i] = l
	}
	x.mu.Unlock()
	for _, l := range meta.Labels() {
		if m, ok := meta.Get(l); ok {
			out[m.Index] = l
		}
	}
	return out
}
