//go:build linux

package linux

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// rules is the handler of linux.l3.v1.Rule: policy routing rules. Every
// change is a delete and an add (no Update): the kernel changes no rule.
type rules struct{ p *Plugin }

var (
	_ linuxl3.RuleHandler[struct{}]   = (*rules)(nil)
	_ linuxl3.RuleRetriever[struct{}] = (*rules)(nil)
	_ linuxl3.RuleValidator           = (*rules)(nil)
)

// Validate checks what the schema cannot: that the namespace is one the
// plugin may configure.
func (h *rules) Validate(_ linuxl3.RuleKey, v *linuxl3.Rule) error {
	return h.p.ns.validateName(v.GetNamespace(), nil).OrNil()
}

// rule is the kernel's rule of v, in its namespace, and the rule as `ip
// rule` writes it (for errors); it identifies the rule for a delete too.
func (h *rules) rule(v *linuxl3.Rule) (*namespace, *netlink.Rule, string, error) {
	n, err := h.p.ns.get(v.GetNamespace())
	if err != nil {
		return nil, nil, "", err
	}
	r := netlink.NewRule()
	r.Family, r.Priority, r.Table, r.Protocol = unix.AF_INET, int(v.GetPriority()), int(v.GetTable()), uint8(h.p.opts.routeProtocol)
	cmd := fmt.Sprintf("priority %d", v.GetPriority())
	for _, sel := range []struct {
		name, prefix string
		to           **net.IPNet
	}{{"from", v.GetFrom(), &r.Src}, {"to", v.GetTo(), &r.Dst}} {
		if p, err := netip.ParsePrefix(sel.prefix); err == nil {
			p = p.Masked()
			*sel.to = &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
			if p.Addr().Is6() {
				r.Family = unix.AF_INET6
			}
			cmd += fmt.Sprintf(" %s %s", sel.name, p)
		}
	}
	for _, sel := range []struct {
		name, label string
		to          *string
	}{{"iif", v.GetIif(), &r.IifName}, {"oif", v.GetOif(), &r.OifName}} {
		if sel.label == "" {
			continue
		}
		_, m, err := h.p.link(sel.label)
		if err != nil {
			return nil, nil, "", err
		}
		if m.Namespace != v.GetNamespace() {
			return nil, nil, "", kv.NonRetriable(fmt.Errorf("%s %s is in network namespace %q, the rule in %q", sel.name, sel.label, m.Namespace, v.GetNamespace()))
		}
		*sel.to = m.HostName
		cmd += fmt.Sprintf(" %s %s", sel.name, m.HostName)
	}
	if v.GetFwmark() != 0 || v.GetFwmask() != 0 {
		mask := v.GetFwmask()
		if mask == 0 {
			mask = 0xffffffff
		}
		r.Mark, r.Mask = v.GetFwmark(), &mask
		cmd += fmt.Sprintf(" fwmark %#x/%#x", v.GetFwmark(), mask)
	}
	return n, r, cmd + fmt.Sprintf(" lookup %d proto %d", v.GetTable(), r.Protocol), nil
}

// Create adds the rule.
func (h *rules) Create(_ context.Context, _ linuxl3.RuleKey, v *linuxl3.Rule) (struct{}, error) {
	n, r, cmd, err := h.rule(v)
	if err != nil {
		return struct{}{}, err
	}
	// ip rule add priority P [from F] [to T] [iif I] [oif O] [fwmark M/K] lookup T proto N
	return struct{}{}, kernelErr(n.h.RuleAdd(r), "ip rule add %s", cmd)
}

// Delete removes the rule; one already gone counts as removed.
func (h *rules) Delete(_ context.Context, _ linuxl3.RuleKey, v *linuxl3.Rule, _ struct{}) error {
	n, r, cmd, err := h.rule(v)
	if err != nil {
		return notFound(err)
	}
	// ip rule del priority P ... lookup T proto N
	return notFound(kernelErr(n.h.RuleDel(r), "ip rule del %s", cmd))
}

// Retrieve reports the correlated rules that the kernel has with the
// plugin's protocol number and every selector as intended (the kernel
// keeps no name: a rule is found by what it is). Rules nothing asks about
// are not reported, so never deleted. It reads each namespace's rules once.
func (h *rules) Retrieve(_ context.Context, correlate []linuxl3.RuleItem[struct{}]) ([]linuxl3.RuleItem[struct{}], error) {
	byNs := map[*namespace]map[string]bool{}
	var out []linuxl3.RuleItem[struct{}]
	for _, c := range correlate {
		n, want, _, err := h.rule(c.Value)
		if err != nil {
			continue // no namespace, no interface: no rule
		}
		have, read := byNs[n]
		if !read {
			// ip rule list
			list, err := retryDump(func() ([]netlink.Rule, error) { return n.h.RuleList(netlink.FAMILY_ALL) })
			if err != nil {
				return nil, kernelErr(err, "ip rule list (namespace %s)", nsName(n))
			}
			have = map[string]bool{}
			for _, r := range list {
				if int(r.Protocol) == h.p.opts.routeProtocol {
					have[ruleID(&r)] = true
				}
			}
			byNs[n] = have
		}
		if have[ruleID(want)] {
			out = append(out, linuxl3.RuleItem[struct{}]{Key: c.Key, Value: c.Value, Origin: kv.OriginNB})
		}
	}
	return out, nil
}

// ruleID is what identifies a rule of the plugin's.
func ruleID(r *netlink.Rule) string {
	var mask uint32
	if r.Mask != nil {
		mask = *r.Mask
	}
	return fmt.Sprintf("%d %d %d %v %v %q %q %#x/%#x", r.Family, r.Priority, r.Table, r.Src, r.Dst, r.IifName, r.OifName, r.Mark, mask)
}
