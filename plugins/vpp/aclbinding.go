package vpp

import (
	"context"

	"google.golang.org/protobuf/types/known/wrapperspb"

	vppacl "github.com/kvdescriptor/kvdescriptor/generated/vpp/acl/v1"
)

// The bindings of ACLs to interfaces, values derived from the ACLs'
// ingress, egress and interfaces fields. None has an Update: a binding is
// there or not.

// ingressBindings is the handler of vpp.acl.v1.ACL.ingress: an IP ACL
// filtering what an interface receives.
type ingressBindings struct{ p *Plugin }

// egressBindings is the handler of vpp.acl.v1.ACL.egress: an IP ACL
// filtering what an interface sends.
type egressBindings struct{ p *Plugin }

var (
	_ vppacl.ACLIngressRetriever[struct{}]         = (*ingressBindings)(nil)
	_ vppacl.ACLEgressRetriever[struct{}]          = (*egressBindings)(nil)
	_ vppacl.MACIPACLInterfacesRetriever[struct{}] = (*macipBindings)(nil)
)

// Create appends the ACL to the interface's input ACLs.
func (h *ingressBindings) Create(ctx context.Context, k vppacl.ACLIngressKey, _ *wrapperspb.StringValue) (struct{}, error) {
	return struct{}{}, h.p.bindACL(ctx, k.Name, k.Ingress, true, true)
}

// Delete takes the ACL out of the interface's input ACLs.
func (h *ingressBindings) Delete(ctx context.Context, k vppacl.ACLIngressKey, _ *wrapperspb.StringValue, _ struct{}) error {
	return h.p.bindACL(ctx, k.Name, k.Ingress, true, false)
}

// Retrieve reports the correlated bindings that VPP has.
func (h *ingressBindings) Retrieve(ctx context.Context, correlate []vppacl.ACLIngressItem[struct{}]) ([]vppacl.ACLIngressItem[struct{}], error) {
	have, err := h.p.aclBindings(ctx)
	return retrieveBindings(h.p, have, correlate, func(k vppacl.ACLIngressKey) (string, string) { return k.Name, k.Ingress }, true, false), err
}

// Create appends the ACL to the interface's output ACLs.
func (h *egressBindings) Create(ctx context.Context, k vppacl.ACLEgressKey, _ *wrapperspb.StringValue) (struct{}, error) {
	return struct{}{}, h.p.bindACL(ctx, k.Name, k.Egress, false, true)
}

// Delete takes the ACL out of the interface's output ACLs.
func (h *egressBindings) Delete(ctx context.Context, k vppacl.ACLEgressKey, _ *wrapperspb.StringValue, _ struct{}) error {
	return h.p.bindACL(ctx, k.Name, k.Egress, false, false)
}

// Retrieve reports the correlated bindings that VPP has.
func (h *egressBindings) Retrieve(ctx context.Context, correlate []vppacl.ACLEgressItem[struct{}]) ([]vppacl.ACLEgressItem[struct{}], error) {
	have, err := h.p.aclBindings(ctx)
	return retrieveBindings(h.p, have, correlate, func(k vppacl.ACLEgressKey) (string, string) { return k.Name, k.Egress }, false, false), err
}

// macipBindings is the handler of vpp.acl.v1.MACIPACL.interfaces: a MAC-IP
// ACL checking what an interface receives.
type macipBindings struct{ p *Plugin }

// Create applies the MAC-IP ACL to the interface (replacing the one it
// had, as VPP does).
// vppctl set acl-plugin interface NAME input macip-acl INDEX
func (h *macipBindings) Create(ctx context.Context, k vppacl.MACIPACLInterfacesKey, _ *wrapperspb.StringValue) (struct{}, error) {
	return struct{}{}, h.p.bindMACIP(ctx, k.Name, k.Interfaces, true)
}

// Delete takes the MAC-IP ACL off the interface.
func (h *macipBindings) Delete(ctx context.Context, k vppacl.MACIPACLInterfacesKey, _ *wrapperspb.StringValue, _ struct{}) error {
	return h.p.bindMACIP(ctx, k.Name, k.Interfaces, false)
}

// Retrieve reports the correlated bindings that VPP has.
func (h *macipBindings) Retrieve(ctx context.Context, correlate []vppacl.MACIPACLInterfacesItem[struct{}]) ([]vppacl.MACIPACLInterfacesItem[struct{}], error) {
	have, err := h.p.macipBindings(ctx)
	return retrieveBindings(h.p, have, correlate, func(k vppacl.MACIPACLInterfacesKey) (string, string) { return k.Name, k.Interfaces }, true, true), err
}
