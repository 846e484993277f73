package vpp

import (
	"context"
	"errors"
	"fmt"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip6_nd"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// ip6nd is the handler of vpp.interfaces.v1.Interface.ip6_nd: the router
// advertisement settings of an interface, on which it holds IPv6 enabled.
type ip6nd struct{ p *Plugin }

var (
	_ vppinterfaces.InterfaceIp6NdUpdater[struct{}]   = (*ip6nd)(nil)
	_ vppinterfaces.InterfaceIp6NdRetriever[struct{}] = (*ip6nd)(nil)
)

// Create enables IPv6 on the interface (VPP keeps RA settings only on
// one; it says VALUE_EXIST when an address enabled it already, and holds
// it for this value all the same) and applies the settings.
// vppctl enable ip6 interface NAME; ip6 nd NAME [suppress] [managed-config-flag] ...
func (h *ip6nd) Create(ctx context.Context, k vppinterfaces.InterfaceIp6NdKey, v *vppinterfaces.Interface_Ip6Nd) (struct{}, error) {
	idx, err := h.p.swIfIndex(k.Name)
	if err != nil {
		return struct{}{}, err
	}
	_, err = ip.NewServiceClient(h.p.conn).SwInterfaceIP6EnableDisable(ctx, &ip.SwInterfaceIP6EnableDisable{SwIfIndex: interface_types.InterfaceIndex(idx), Enable: true})
	if err != nil && !errors.Is(err, api.VALUE_EXIST) {
		return struct{}{}, vppErr("sw_interface_ip6_enable_disable", err)
	}
	return struct{}{}, h.config(ctx, interface_types.InterfaceIndex(idx), &vppinterfaces.Interface_Ip6Nd{}, v)
}

// Update changes the settings in place.
func (h *ip6nd) Update(ctx context.Context, k vppinterfaces.InterfaceIp6NdKey, old, v *vppinterfaces.Interface_Ip6Nd, _ struct{}) (struct{}, error) {
	idx, err := h.p.swIfIndex(k.Name)
	if err != nil {
		return struct{}{}, err
	}
	return struct{}{}, h.config(ctx, interface_types.InterfaceIndex(idx), old, v)
}

// Delete puts VPP's defaults back and releases IPv6.
func (h *ip6nd) Delete(ctx context.Context, k vppinterfaces.InterfaceIp6NdKey, v *vppinterfaces.Interface_Ip6Nd, _ struct{}) error {
	idx, err := h.p.swIfIndex(k.Name)
	if err != nil {
		return err
	}
	if err := h.config(ctx, interface_types.InterfaceIndex(idx), v, &vppinterfaces.Interface_Ip6Nd{}); err != nil {
		return err
	}
	_, err = ip.NewServiceClient(h.p.conn).SwInterfaceIP6EnableDisable(ctx, &ip.SwInterfaceIP6EnableDisable{SwIfIndex: interface_types.InterfaceIndex(idx)})
	return vppErr("sw_interface_ip6_enable_disable", err)
}

// config goes from the settings old to v. VPP's call sets the flags it is
// given (or, with is_no, clears them) and leaves the others: one call
// clears what old had and v has not, one sets v's flags and interval.
func (h *ip6nd) config(ctx context.Context, idx interface_types.InterfaceIndex, old, v *vppinterfaces.Interface_Ip6Nd) error {
	c := ip6_nd.NewServiceClient(h.p.conn)
	b := func(x bool) uint8 {
		if x {
			return 1
		}
		return 0
	}
	off := &ip6_nd.SwInterfaceIP6ndRaConfig{SwIfIndex: idx, IsNo: true, Suppress: b(old.GetSuppress() && !v.GetSuppress()),
		Managed: b(old.GetManaged() && !v.GetManaged()), Other: b(old.GetOther() && !v.GetOther())}
	if off.Suppress+off.Managed+off.Other > 0 {
		if _, err := c.SwInterfaceIP6ndRaConfig(ctx, off); err != nil {
			return vppErr("sw_interface_ip6nd_ra_config", err)
		}
	}
	on := &ip6_nd.SwInterfaceIP6ndRaConfig{SwIfIndex: idx, Suppress: b(v.GetSuppress()), Managed: b(v.GetManaged()), Other: b(v.GetOther()),
		MaxInterval: v.EffectiveMaxInterval()}
	if on.Suppress+on.Managed+on.Other == 0 && v.EffectiveMaxInterval() == old.EffectiveMaxInterval() {
		return nil
	}
	_, err := c.SwInterfaceIP6ndRaConfig(ctx, on)
	return vppErr("sw_interface_ip6nd_ra_config", err)
}

// Retrieve reads the settings of the interfaces whose value has some:
// every interface with IPv6 has settings, so those of the others are not
// reported.
func (h *ip6nd) Retrieve(ctx context.Context, correlate []vppinterfaces.InterfaceIp6NdItem[struct{}]) ([]vppinterfaces.InterfaceIp6NdItem[struct{}], error) {
	var out []vppinterfaces.InterfaceIp6NdItem[struct{}]
	for _, c := range correlate {
		d, err := h.p.raDetails(ctx, c.Key.Name)
		if err != nil {
			return nil, err
		}
		if d != nil {
			v := &vppinterfaces.Interface_Ip6Nd{Suppress: !d.SendRadv, Managed: d.AdvManagedFlag, Other: d.AdvOtherFlag, MaxInterval: uint32(d.MaxRadvInterval)}
			out = append(out, vppinterfaces.InterfaceIp6NdItem[struct{}]{Key: c.Key, Value: v, Origin: kv.OriginNB})
		}
	}
	return out, nil
}

// raDetails returns the RA state of the interface of the label, or nil
// (for none, or no such interface).
func (p *Plugin) raDetails(ctx context.Context, name string) (*ip6_nd.SwInterfaceIP6ndRaDetails, error) {
	idx, err := p.swIfIndex(name)
	if err != nil {
		return nil, nil
	}
	list, err := dump[*ip6_nd.SwInterfaceIP6ndRaDetails]("sw_interface_ip6nd_ra_dump")(ip6_nd.NewServiceClient(p.conn).SwInterfaceIP6ndRaDump(ctx,
		&ip6_nd.SwInterfaceIP6ndRaDump{SwIfIndex: interface_types.InterfaceIndex(idx)}))
	if err != nil || len(list) == 0 {
		return nil, err
	}
	return list[0], nil
}

// ip6ndPrefixes is the handler of
// vpp.interfaces.v1.Interface.ip6_nd_prefixes: a prefix that an
// interface's router advertisements carry.
type ip6ndPrefixes struct{ p *Plugin }

var (
	_ vppinterfaces.InterfaceIp6NdPrefixesUpdater[struct{}]   = (*ip6ndPrefixes)(nil)
	_ vppinterfaces.InterfaceIp6NdPrefixesRetriever[struct{}] = (*ip6ndPrefixes)(nil)
)

// Create adds the prefix.
// vppctl ip6 nd NAME prefix P VALID PREFERRED [off-link] [no-autoconfig]
func (h *ip6ndPrefixes) Create(ctx context.Context, k vppinterfaces.InterfaceIp6NdPrefixesKey, v *vppinterfaces.Interface_Ip6NdPrefix) (struct{}, error) {
	return struct{}{}, h.set(ctx, k, v, false)
}

// Update changes its flags and lifetimes in place (VPP's call overwrites).
func (h *ip6ndPrefixes) Update(ctx context.Context, k vppinterfaces.InterfaceIp6NdPrefixesKey, _, v *vppinterfaces.Interface_Ip6NdPrefix, _ struct{}) (struct{}, error) {
	return struct{}{}, h.set(ctx, k, v, false)
}

// Delete removes the prefix.
func (h *ip6ndPrefixes) Delete(ctx context.Context, k vppinterfaces.InterfaceIp6NdPrefixesKey, v *vppinterfaces.Interface_Ip6NdPrefix, _ struct{}) error {
	return h.set(ctx, k, v, true)
}

func (h *ip6ndPrefixes) set(ctx context.Context, k vppinterfaces.InterfaceIp6NdPrefixesKey, v *vppinterfaces.Interface_Ip6NdPrefix, del bool) error {
	if !k.Ip6NdPrefixesPrefix.Addr().Is6() {
		return kv.NonRetriable(fmt.Errorf("ip6_nd_prefixes: %s is not an IPv6 prefix", k.Ip6NdPrefixesPrefix))
	}
	idx, err := h.p.swIfIndex(k.Name)
	if err != nil {
		return err
	}
	_, err = ip6_nd.NewServiceClient(h.p.conn).SwInterfaceIP6ndRaPrefix(ctx, &ip6_nd.SwInterfaceIP6ndRaPrefix{SwIfIndex: interface_types.InterfaceIndex(idx),
		Prefix: prefix(k.Ip6NdPrefixesPrefix), ValLifetime: v.EffectiveValidLifetime(), PrefLifetime: v.EffectivePreferredLifetime(),
		OffLink: v.GetOffLink(), NoAutoconfig: v.GetNoAutoconfig(), IsNo: del})
	return vppErr("sw_interface_ip6nd_ra_prefix", err)
}

// Retrieve reads the correlated prefixes from their interfaces' RA state.
func (h *ip6ndPrefixes) Retrieve(ctx context.Context, correlate []vppinterfaces.InterfaceIp6NdPrefixesItem[struct{}]) ([]vppinterfaces.InterfaceIp6NdPrefixesItem[struct{}], error) {
	details := map[string]*ip6_nd.SwInterfaceIP6ndRaDetails{}
	var out []vppinterfaces.InterfaceIp6NdPrefixesItem[struct{}]
	for _, c := range correlate {
		d, seen := details[c.Key.Name]
		if !seen {
			var err error
			if d, err = h.p.raDetails(ctx, c.Key.Name); err != nil {
				return nil, err
			}
			details[c.Key.Name] = d
		}
		if d == nil {
			continue
		}
		for _, x := range d.Prefixes {
			if prefixOf(x.Prefix) == c.Key.Ip6NdPrefixesPrefix {
				v := &vppinterfaces.Interface_Ip6NdPrefix{Prefix: c.Key.Ip6NdPrefixesPrefix.String(), ValidLifetime: x.ValLifetime, PreferredLifetime: x.PrefLifetime,
					OffLink: !x.OnlinkFlag, NoAutoconfig: !x.AutonomousFlag}
				out = append(out, vppinterfaces.InterfaceIp6NdPrefixesItem[struct{}]{Key: c.Key, Value: v, Origin: kv.OriginNB})
			}
		}
	}
	return out, nil
}
