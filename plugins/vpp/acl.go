package vpp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/acl_types"
	"go.fd.io/govpp/binapi/ip_types"

	vppacl "github.com/kvdescriptor/kvdescriptor/generated/vpp/acl/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// ACLMeta is the metadata of an IP or MAC-IP ACL.
type ACLMeta struct {
	// Index is VPP's acl_index of the ACL; IP and MAC-IP ACLs are numbered
	// apart.
	Index uint32
}

// ipACLs is the handler of vpp.acl.v1.ACL, an IP access list.
type ipACLs struct{ p *Plugin }

var (
	_ vppacl.ACLUpdater[ACLMeta]   = (*ipACLs)(nil)
	_ vppacl.ACLRetriever[ACLMeta] = (*ipACLs)(nil)
	_ vppacl.ACLValidator          = (*ipACLs)(nil)
)

// Validate checks that VPP can hold the name (the tag) and the rules: the
// schema has no options for the fields of a repeated message's elements.
func (h *ipACLs) Validate(k vppacl.ACLKey, v *vppacl.ACL) error {
	_, err := ipRules(v.GetRules())
	return errors.Join(checkTag(k.Name), err)
}

// Create adds the ACL, tagged with its name; VPP allocates its acl_index.
// vppctl set acl-plugin acl permit|deny src PFX dst PFX proto N sport A-B dport C-D tag NAME
func (h *ipACLs) Create(ctx context.Context, k vppacl.ACLKey, v *vppacl.ACL) (ACLMeta, error) {
	return h.put(ctx, k, v, ACLMeta{Index: ^uint32(0)})
}

// Update replaces the rules in place, under the same acl_index: the
// interfaces bound to the ACL keep it.
// vppctl set acl-plugin acl INDEX ...
func (h *ipACLs) Update(ctx context.Context, k vppacl.ACLKey, _, v *vppacl.ACL, m ACLMeta) (ACLMeta, error) {
	return h.put(ctx, k, v, m)
}

func (h *ipACLs) put(ctx context.Context, k vppacl.ACLKey, v *vppacl.ACL, m ACLMeta) (ACLMeta, error) {
	rules, err := ipRules(v.GetRules())
	if err != nil {
		return m, err
	}
	r, err := acl.NewServiceClient(h.p.conn).ACLAddReplace(ctx, &acl.ACLAddReplace{ACLIndex: m.Index, Tag: k.Name, Count: uint32(len(rules)), R: rules})
	if err != nil {
		return m, vppErr("acl_add_replace", err)
	}
	return ACLMeta{Index: r.ACLIndex}, nil
}

// Delete removes the ACL; VPP refuses while an interface uses it, and the
// scheduler has unbound them first.
// vppctl delete acl-plugin acl index INDEX
func (h *ipACLs) Delete(ctx context.Context, _ vppacl.ACLKey, _ *vppacl.ACL, m ACLMeta) error {
	_, err := acl.NewServiceClient(h.p.conn).ACLDel(ctx, &acl.ACLDel{ACLIndex: m.Index})
	return vppErr("acl_del", err)
}

// Retrieve dumps the ACLs: tagged ones are ours, by their tag; the others
// are obtained, named acl-INDEX. A correlated ACL whose rules are those
// VPP has comes back as it was asked for (an empty network, a port range
// left out), so that it compares equal.
func (h *ipACLs) Retrieve(ctx context.Context, correlate []vppacl.ACLItem[ACLMeta]) ([]vppacl.ACLItem[ACLMeta], error) {
	list, err := dump[*acl.ACLDetails]("acl_dump")(acl.NewServiceClient(h.p.conn).ACLDump(ctx, &acl.ACLDump{ACLIndex: ^uint32(0)}))
	if err != nil {
		return nil, err
	}
	want := map[string]*vppacl.ACL{}
	for _, c := range correlate {
		want[c.Key.Name] = c.Value
	}
	found := map[string]uint32{}
	var out []vppacl.ACLItem[ACLMeta]
	for _, d := range list {
		name := d.Tag
		if name == "" {
			name = "acl-" + strconv.FormatUint(uint64(d.ACLIndex), 10)
		}
		got := &vppacl.ACL{Name: name, Rules: ipRulesOf(d.R)}
		if w := want[name]; w != nil {
			got.Ingress, got.Egress = w.GetIngress(), w.GetEgress()
			if r, err := ipRules(w.GetRules()); err == nil && slices.Equal(r, d.R) {
				got = w
			}
		}
		found[name] = d.ACLIndex
		out = append(out, vppacl.ACLItem[ACLMeta]{Key: vppacl.ACLKey{Name: name}, Value: got, Metadata: ACLMeta{Index: d.ACLIndex}, Origin: origin(d.Tag != "")})
	}
	h.p.aclFound.set(found)
	return out, nil
}

// any4 is every IPv4 address.
var any4 = netip.PrefixFrom(netip.IPv4Unspecified(), 0)

// ipRules converts the rules of an IP ACL to the binary API's, naming the
// field of each that cannot be.
func ipRules(rules []*vppacl.ACL_Rule) ([]acl_types.ACLRule, error) {
	out := make([]acl_types.ACLRule, len(rules))
	var errs []error
	for i, r := range rules {
		at := fmt.Sprintf("rules[%d].", i)
		src, err1 := network(at+"src_network", r.GetSrcNetwork())
		dst, err2 := network(at+"dst_network", r.GetDstNetwork())
		switch {
		case !src.IsValid() && !dst.IsValid():
			src, dst = any4, any4
		case !src.IsValid():
			src = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
			if dst.Addr().Is4() {
				src = any4
			}
		case !dst.IsValid():
			dst = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
			if src.Addr().Is4() {
				dst = any4
			}
		case src.Addr().Is4() != dst.Addr().Is4():
			errs = append(errs, kv.Invalid(at+"dst_network", "%s is not of the family of src_network %s", dst, src))
		}
		icmp := r.GetProtocol() == 1 || r.GetProtocol() == 58
		sLo, sHi, err3 := portRange(at, "src_port", r.GetSrcPortFirst(), r.GetSrcPortLast(), icmp)
		dLo, dHi, err4 := portRange(at, "dst_port", r.GetDstPortFirst(), r.GetDstPortLast(), icmp)
		errs = append(errs, err1, err2, err3, err4, atMost(at+"action", uint32(r.GetAction()), uint32(vppacl.Action_ACTION_PERMIT_REFLECT)),
			atMost(at+"protocol", r.GetProtocol(), 255), atMost(at+"tcp_flags_mask", r.GetTcpFlagsMask(), 255), atMost(at+"tcp_flags_value", r.GetTcpFlagsValue(), 255))
		out[i] = acl_types.ACLRule{IsPermit: acl_types.ACLAction(r.GetAction()), SrcPrefix: prefix(src), DstPrefix: prefix(dst), Proto: ip_types.IPProto(r.GetProtocol()),
			SrcportOrIcmptypeFirst: sLo, SrcportOrIcmptypeLast: sHi, DstportOrIcmpcodeFirst: dLo, DstportOrIcmpcodeLast: dHi,
			TCPFlagsMask: uint8(r.GetTcpFlagsMask()), TCPFlagsValue: uint8(r.GetTcpFlagsValue())}
	}
	return out, errors.Join(errs...)
}

// ipRulesOf converts the rules of an IP ACL found in VPP to the model's.
func ipRulesOf(rules []acl_types.ACLRule) []*vppacl.ACL_Rule {
	out := make([]*vppacl.ACL_Rule, len(rules))
	for i, r := range rules {
		out[i] = &vppacl.ACL_Rule{Action: vppacl.Action(r.IsPermit), SrcNetwork: prefixOf(r.SrcPrefix).String(), DstNetwork: prefixOf(r.DstPrefix).String(), Protocol: uint32(r.Proto),
			SrcPortFirst: uint32(r.SrcportOrIcmptypeFirst), SrcPortLast: uint32(r.SrcportOrIcmptypeLast), DstPortFirst: uint32(r.DstportOrIcmpcodeFirst), DstPortLast: uint32(r.DstportOrIcmpcodeLast),
			TcpFlagsMask: uint32(r.TCPFlagsMask), TcpFlagsValue: uint32(r.TCPFlagsValue)}
	}
	return out
}

// network parses a rule's network; empty is the zero prefix.
func network(field, s string) (netip.Prefix, error) {
	if s == "" {
		return netip.Prefix{}, nil
	}
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil:
		return p, kv.Invalid(field, "%v", err)
	case p != p.Masked():
		return p, kv.Invalid(field, "%s has host bits set: the network is %s", s, p.Masked())
	}
	return p, nil
}

// portRange is the range of ports (of ICMP types or codes, up to 255)
// first-last of the fields at+name_first and _last: last 0 is first; both
// 0, the whole range.
func portRange(at, name string, first, last uint32, icmp bool) (uint16, uint16, error) {
	top := uint32(65535)
	if icmp {
		top = 255
	}
	switch {
	case first == 0 && last == 0:
		last = top
	case last == 0:
		last = first
	}
	if first > last {
		return 0, 0, kv.Invalid(at+name+"_last", "%d is below %s_first %d", last, name, first)
	}
	return uint16(first), uint16(last), errors.Join(atMost(at+name+"_first", first, top), atMost(at+name+"_last", last, top))
}

// atMost checks that a field's value is at most max.
func atMost(field string, v, max uint32) error {
	if v > max {
		return kv.Invalid(field, "%d is more than %d", v, max)
	}
	return nil
}
