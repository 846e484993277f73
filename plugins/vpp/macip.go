package vpp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/acl_types"
	"go.fd.io/govpp/binapi/ethernet_types"

	vppacl "github.com/kvdescriptor/kvdescriptor/generated/vpp/acl/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// macipACLs is the handler of vpp.acl.v1.MACIPACL, a MAC-IP access list.
type macipACLs struct{ p *Plugin }

var (
	_ vppacl.MACIPACLUpdater[ACLMeta]   = (*macipACLs)(nil)
	_ vppacl.MACIPACLRetriever[ACLMeta] = (*macipACLs)(nil)
	_ vppacl.MACIPACLValidator          = (*macipACLs)(nil)
)

// Validate checks that VPP can hold the name (the tag) and the rules.
func (h *macipACLs) Validate(k vppacl.MACIPACLKey, v *vppacl.MACIPACL) error {
	_, err := macipRules(v.GetRules())
	return errors.Join(checkTag(k.Name), err)
}

// Create adds the MAC-IP ACL, tagged with its name.
// vppctl set acl-plugin macip acl permit|deny ip PFX mac MAC mask MASK tag NAME
func (h *macipACLs) Create(ctx context.Context, k vppacl.MACIPACLKey, v *vppacl.MACIPACL) (ACLMeta, error) {
	return h.put(ctx, k, v, ACLMeta{Index: ^uint32(0)})
}

// Update replaces the rules in place; VPP re-applies the ACL to the
// interfaces that have it.
func (h *macipACLs) Update(ctx context.Context, k vppacl.MACIPACLKey, _, v *vppacl.MACIPACL, m ACLMeta) (ACLMeta, error) {
	return h.put(ctx, k, v, m)
}

func (h *macipACLs) put(ctx context.Context, k vppacl.MACIPACLKey, v *vppacl.MACIPACL, m ACLMeta) (ACLMeta, error) {
	rules, err := macipRules(v.GetRules())
	if err != nil {
		return m, err
	}
	r, err := acl.NewServiceClient(h.p.conn).MacipACLAddReplace(ctx, &acl.MacipACLAddReplace{ACLIndex: m.Index, Tag: k.Name, Count: uint32(len(rules)), R: rules})
	if err != nil {
		return m, vppErr("macip_acl_add_replace", err)
	}
	return ACLMeta{Index: r.ACLIndex}, nil
}

// Delete removes the MAC-IP ACL (VPP would take it off its interfaces;
// the scheduler has done so first).
// vppctl delete acl-plugin macip acl index INDEX
func (h *macipACLs) Delete(ctx context.Context, _ vppacl.MACIPACLKey, _ *vppacl.MACIPACL, m ACLMeta) error {
	_, err := acl.NewServiceClient(h.p.conn).MacipACLDel(ctx, &acl.MacipACLDel{ACLIndex: m.Index})
	return vppErr("macip_acl_del", err)
}

// Retrieve dumps the MAC-IP ACLs, as the IP ACLs' Retrieve does.
func (h *macipACLs) Retrieve(ctx context.Context, correlate []vppacl.MACIPACLItem[ACLMeta]) ([]vppacl.MACIPACLItem[ACLMeta], error) {
	list, err := dump[*acl.MacipACLDetails]("macip_acl_dump")(acl.NewServiceClient(h.p.conn).MacipACLDump(ctx, &acl.MacipACLDump{ACLIndex: ^uint32(0)}))
	if err != nil {
		return nil, err
	}
	want := map[string]*vppacl.MACIPACL{}
	for _, c := range correlate {
		want[c.Key.Name] = c.Value
	}
	found := map[string]uint32{}
	var out []vppacl.MACIPACLItem[ACLMeta]
	for _, d := range list {
		name := d.Tag
		if name == "" {
			name = "macip-acl-" + strconv.FormatUint(uint64(d.ACLIndex), 10)
		}
		got := &vppacl.MACIPACL{Name: name, Rules: macipRulesOf(d.R)}
		if w := want[name]; w != nil {
			got.Interfaces = w.GetInterfaces()
			if r, err := macipRules(w.GetRules()); err == nil && slices.Equal(r, d.R) {
				got = w
			}
		}
		found[name] = d.ACLIndex
		out = append(out, vppacl.MACIPACLItem[ACLMeta]{Key: vppacl.MACIPACLKey{Name: name}, Value: got, Metadata: ACLMeta{Index: d.ACLIndex}, Origin: origin(d.Tag != "")})
	}
	h.p.macipFound.set(found)
	return out, nil
}

// macipRules converts the rules of a MAC-IP ACL to the binary API's.
func macipRules(rules []*vppacl.MACIPACL_Rule) ([]acl_types.MacipACLRule, error) {
	out := make([]acl_types.MacipACLRule, len(rules))
	var errs []error
	for i, r := range rules {
		at := fmt.Sprintf("rules[%d].", i)
		src, err1 := network(at+"src_network", r.GetSrcNetwork())
		if !src.IsValid() {
			src = any4
		}
		mac, err2 := macOf(at+"src_mac", r.GetSrcMac())
		mask, err3 := macOf(at+"src_mac_mask", r.GetSrcMacMask())
		errs = append(errs, err1, err2, err3, atMost(at+"action", uint32(r.GetAction()), uint32(vppacl.Action_ACTION_PERMIT)))
		out[i] = acl_types.MacipACLRule{IsPermit: acl_types.ACLAction(r.GetAction()), SrcMac: mac, SrcMacMask: mask, SrcPrefix: prefix(src)}
	}
	return out, errors.Join(errs...)
}

// macipRulesOf converts the rules of a MAC-IP ACL found in VPP.
func macipRulesOf(rules []acl_types.MacipACLRule) []*vppacl.MACIPACL_Rule {
	out := make([]*vppacl.MACIPACL_Rule, len(rules))
	for i, r := range rules {
		out[i] = &vppacl.MACIPACL_Rule{Action: vppacl.Action(r.IsPermit), SrcNetwork: prefixOf(r.SrcPrefix).String(), SrcMac: r.SrcMac.String(), SrcMacMask: r.SrcMacMask.String()}
	}
	return out
}

// macOf parses a MAC address; empty is all zeros.
func macOf(field, s string) (ethernet_types.MacAddress, error) {
	if s == "" {
		return ethernet_types.MacAddress{}, nil
	}
	m, err := ethernet_types.ParseMacAddress(s)
	if err != nil {
		return m, kv.Invalid(field, "%v", err)
	}
	return m, nil
}
