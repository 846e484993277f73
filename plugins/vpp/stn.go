package vpp

import (
	"context"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/stn"

	vppstn "github.com/kvdescriptor/kvdescriptor/generated/vpp/stn/v1"
)

// stnRules is the handler of vpp.stn.v1.Rule. It has no Update: another
// interface re-creates the rule.
type stnRules struct{ p *Plugin }

var _ vppstn.RuleRetriever[struct{}] = (*stnRules)(nil)

// Create adds the rule.
// vppctl stn rule address ADDR interface NAME
func (h *stnRules) Create(ctx context.Context, k vppstn.RuleKey, v *vppstn.Rule) (struct{}, error) {
	idx, err := h.p.swIfIndex(v.GetInterface())
	if err != nil {
		return struct{}{}, err
	}
	return struct{}{}, h.addDel(ctx, k, idx, true)
}

// Delete removes the rule: VPP finds it by its address alone.
// vppctl stn rule address ADDR interface NAME del
func (h *stnRules) Delete(ctx context.Context, k vppstn.RuleKey, _ *vppstn.Rule, _ struct{}) error {
	return h.addDel(ctx, k, 0, false)
}

func (h *stnRules) addDel(ctx context.Context, k vppstn.RuleKey, idx uint32, add bool) error {
	_, err := stn.NewServiceClient(h.p.conn).StnAddDelRule(ctx, &stn.StnAddDelRule{IPAddress: address(k.IpAddress), SwIfIndex: interface_types.InterfaceIndex(idx), IsAdd: add})
	return vppErr("stn_add_del_rule", err)
}

// Retrieve dumps the rules whose interface it can name: correlated ones
// are ours, the others obtained.
func (h *stnRules) Retrieve(ctx context.Context, correlate []vppstn.RuleItem[struct{}]) ([]vppstn.RuleItem[struct{}], error) {
	list, err := dump[*stn.StnRulesDetails]("stn_rules_dump")(stn.NewServiceClient(h.p.conn).StnRulesDump(ctx, &stn.StnRulesDump{}))
	if err != nil {
		return nil, err
	}
	ours := map[vppstn.RuleKey]bool{}
	for _, it := range correlate {
		ours[it.Key] = true
	}
	names := h.p.interfaceNames()
	var out []vppstn.RuleItem[struct{}]
	for _, d := range list {
		k, name := vppstn.RuleKey{IpAddress: addrOf(d.IPAddress)}, names[uint32(d.SwIfIndex)]
		if name != "" {
			out = append(out, vppstn.RuleItem[struct{}]{Key: k, Value: &vppstn.Rule{IpAddress: k.IpAddress.String(), Interface: name}, Origin: origin(ours[k])})
		}
	}
	return out, nil
}
