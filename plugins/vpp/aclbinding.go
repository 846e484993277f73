package vpp

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/interface_types"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	vppacl "github.com/kvdescriptor/kvdescriptor/generated/vpp/acl/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
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
	return retrieveBindings(ctx, h.p, correlate, func(k vppacl.ACLIngressKey) (string, string) { return k.Name, k.Ingress }, true, false)
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
	return retrieveBindings(ctx, h.p, correlate, func(k vppacl.ACLEgressKey) (string, string) { return k.Name, k.Egress }, false, false)
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
	return retrieveBindings(ctx, h.p, correlate, func(k vppacl.MACIPACLInterfacesKey) (string, string) { return k.Name, k.Interfaces }, true, true)
}

// aclBinding is one ACL bound to one interface in one direction: an entry
// of the interface's input or output list.
type aclBinding struct {
	acl, swIfIndex uint32
	input          bool
}

// bindACL binds (add) or unbinds the ACL named acl to the interface named
// iface, on input or output. VPP appends the ACL to the interface's list
// of that direction: one binding value is one acl_interface_add_del, with
// no read and rewrite of the whole list (acl_interface_set_acl_list).
// vppctl set acl-plugin interface NAME input|output acl INDEX [del]
func (p *Plugin) bindACL(ctx context.Context, name, iface string, input, add bool) error {
	idx, err1 := p.aclFound.index(p.acl.Metadata(), "ACL", name)
	sw, err2 := p.swIfIndex(iface)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	_, err := acl.NewServiceClient(p.conn).ACLInterfaceAddDel(ctx, &acl.ACLInterfaceAddDel{IsAdd: add, IsInput: input, SwIfIndex: interface_types.InterfaceIndex(sw), ACLIndex: idx})
	return vppErr("acl_interface_add_del", err)
}

// aclBindings dumps the ACL lists of every interface: input ACLs first,
// then output ones.
func (p *Plugin) aclBindings(ctx context.Context) (map[aclBinding]bool, error) {
	list, err := dump[*acl.ACLInterfaceListDetails]("acl_interface_list_dump")(acl.NewServiceClient(p.conn).ACLInterfaceListDump(ctx, &acl.ACLInterfaceListDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}))
	out := map[aclBinding]bool{}
	for _, d := range list {
		for i, a := range d.Acls {
			out[aclBinding{a, uint32(d.SwIfIndex), i < int(d.NInput)}] = true
		}
	}
	return out, err
}

// retrieveBindings reports the correlated bindings (of an IP ACL when
// macip is false, of a MAC-IP ACL otherwise) that VPP has; parts gives a
// key's ACL and interface labels. With none correlated, it asks nothing.
func retrieveBindings[K comparable, V proto.Message](ctx context.Context, p *Plugin, correlate []kv.Item[K, V, struct{}], parts func(K) (string, string), input, macip bool) ([]kv.Item[K, V, struct{}], error) {
	if len(correlate) == 0 {
		return nil, nil
	}
	found, meta, list := &p.aclFound, p.acl.Metadata(), p.aclBindings
	if macip {
		found, meta, list = &p.macipFound, p.macip.Metadata(), p.macipBindings
	}
	have, err := list(ctx)
	if err != nil {
		return nil, err
	}
	var out []kv.Item[K, V, struct{}]
	for _, c := range correlate {
		name, iface := parts(c.Key)
		idx, err1 := found.index(meta, "ACL", name)
		sw, err2 := p.swIfIndex(iface)
		if err1 == nil && err2 == nil && have[aclBinding{idx, sw, input}] {
			out = append(out, kv.Item[K, V, struct{}]{Key: c.Key, Value: c.Value, Origin: kv.OriginNB})
		}
	}
	return out, nil
}

// labelIndexes holds the indexes that a model's last Retrieve found, by
// label: the Retrieve of its bindings runs before the scheduler adopts
// them as metadata.
type labelIndexes struct {
	mu    sync.Mutex
	found map[string]uint32
}

func (x *labelIndexes) set(found map[string]uint32) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.found = found
}

// index returns the index of the value labelled label: from its metadata,
// else from the last Retrieve.
func (x *labelIndexes) index(meta kv.MetadataMap[ACLMeta], what, label string) (uint32, error) {
	if m, ok := meta.Get(label); ok {
		return m.Index, nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if i, ok := x.found[label]; ok {
		return i, nil
	}
	return 0, fmt.Errorf("%s %s: no acl_index known: %w", what, label, kv.ErrNotFound)
}

// bindMACIP applies (add) the MAC-IP ACL named name to the interface named
// iface, or takes it off.
func (p *Plugin) bindMACIP(ctx context.Context, name, iface string, add bool) error {
	idx, err1 := p.macipFound.index(p.macip.Metadata(), "MAC-IP ACL", name)
	sw, err2 := p.swIfIndex(iface)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if !add { // VPP takes off whichever the interface has: only ours
		have, err := p.macipBindings(ctx)
		if err != nil || !have[aclBinding{idx, sw, true}] {
			return err
		}
	}
	_, err := acl.NewServiceClient(p.conn).MacipACLInterfaceAddDel(ctx, &acl.MacipACLInterfaceAddDel{IsAdd: add, SwIfIndex: interface_types.InterfaceIndex(sw), ACLIndex: idx})
	return vppErr("macip_acl_interface_add_del", err)
}

// macipBindings dumps the MAC-IP ACL of every interface that has one.
func (p *Plugin) macipBindings(ctx context.Context) (map[aclBinding]bool, error) {
	list, err := dump[*acl.MacipACLInterfaceListDetails]("macip_acl_interface_list_dump")(acl.NewServiceClient(p.conn).MacipACLInterfaceListDump(ctx, &acl.MacipACLInterfaceListDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}))
	out := map[aclBinding]bool{}
	for _, d := range list {
		for _, a := range d.Acls {
			out[aclBinding{a, uint32(d.SwIfIndex), true}] = true
		}
	}
	return out, err
}
