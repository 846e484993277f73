package vpp

import (
	"context"

	"go.fd.io/govpp/binapi/nat44_ed"

	vppnat "github.com/kvdescriptor/kvdescriptor/generated/vpp/nat/v1"
)

// nat44Global is the handler of vpp.nat.v1.Nat44Global: VPP's NAT44
// plugin (endpoint-dependent) enabled with its settings.
type nat44Global struct{ p *Plugin }

var (
	_ vppnat.Nat44GlobalUpdater[struct{}]   = (*nat44Global)(nil)
	_ vppnat.Nat44GlobalRetriever[struct{}] = (*nat44Global)(nil)
)

// Create enables the plugin, then forwarding if asked.
// vppctl nat44 plugin enable sessions N inside-vrf I outside-vrf O; nat44 forwarding enable
func (h *nat44Global) Create(ctx context.Context, _ vppnat.Nat44GlobalKey, v *vppnat.Nat44Global) (struct{}, error) {
	_, err := h.p.natVPP().Nat44EdPluginEnableDisable(ctx, &nat44_ed.Nat44EdPluginEnableDisable{
		Enable: true, InsideVrf: v.GetInsideVrf(), OutsideVrf: v.GetOutsideVrf(), Sessions: v.EffectiveSessions()})
	if err != nil || !v.GetForwarding() {
		return struct{}{}, vppErr("nat44_ed_plugin_enable_disable", err)
	}
	return struct{}{}, h.forwarding(ctx, true)
}

// Update turns forwarding on or off; a change of the others re-creates.
// vppctl nat44 forwarding enable|disable
func (h *nat44Global) Update(ctx context.Context, _ vppnat.Nat44GlobalKey, _, v *vppnat.Nat44Global, m struct{}) (struct{}, error) {
	return m, h.forwarding(ctx, v.GetForwarding())
}

func (h *nat44Global) forwarding(ctx context.Context, on bool) error {
	_, err := h.p.natVPP().Nat44ForwardingEnableDisable(ctx, &nat44_ed.Nat44ForwardingEnableDisable{Enable: on})
	return vppErr("nat44_forwarding_enable_disable", err)
}

// Delete disables the plugin; VPP drops every NAT44 setting with it.
// vppctl nat44 plugin disable
func (h *nat44Global) Delete(ctx context.Context, _ vppnat.Nat44GlobalKey, _ *vppnat.Nat44Global, _ struct{}) error {
	_, err := h.p.natVPP().Nat44EdPluginEnableDisable(ctx, &nat44_ed.Nat44EdPluginEnableDisable{})
	return vppErr("nat44_ed_plugin_enable_disable", err)
}

// Retrieve reads the running configuration. VPP reports 0 sessions while
// the plugin is disabled (it clears the configuration then): nothing is
// found. Enabled by another, it is obtained.
func (h *nat44Global) Retrieve(ctx context.Context, correlate []vppnat.Nat44GlobalItem[struct{}]) ([]vppnat.Nat44GlobalItem[struct{}], error) {
	r, err := h.p.natVPP().Nat44ShowRunningConfig(ctx, &nat44_ed.Nat44ShowRunningConfig{})
	if err != nil || r.Sessions == 0 {
		return nil, vppErr("nat44_show_running_config", err)
	}
	got := &vppnat.Nat44Global{InsideVrf: r.InsideVrf, OutsideVrf: r.OutsideVrf, Sessions: r.Sessions, Forwarding: r.ForwardingEnabled}
	return []vppnat.Nat44GlobalItem[struct{}]{{Value: got, Origin: origin(len(correlate) > 0)}}, nil
}

// natVPP is the NAT44 client of the plugin's connection.
func (p *Plugin) natVPP() nat44_ed.RPCService { return nat44_ed.NewServiceClient(p.conn) }
