package vpp

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/acl_types"
	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/ip_types"
	"google.golang.org/protobuf/proto"

	vppacl "github.com/kvdescriptor/kvdescriptor/generated/vpp/acl/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// setACLs commits the values (ACLs and interfaces), keyed by their
// generated keys.
func (e *env) setACLs(values ...proto.Message) {
	e.t.Helper()
	txn := e.s.Txn()
	for _, v := range values {
		switch v := v.(type) {
		case *vppacl.ACL:
			txn.Set(vppacl.ACLKeyFor(v), v)
		case *vppacl.MACIPACL:
			txn.Set(vppacl.MACIPACLKeyFor(v), v)
		case *vppinterfaces.Interface:
			txn.Set(vppinterfaces.InterfaceKeyFor(v), v)
		}
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		e.t.Logf("commit: %v", err)
	}
}

// aclState returns the fake's IP ACLs by tag (with their rules), and the
// input and output ACL lists of the interfaces, by tag.
func (f *fakeVPP) aclState() (acls map[string][]acl_types.ACLRule, in, out map[string][]string) {
	acls, in, out = map[string][]acl_types.ACLRule{}, map[string][]string{}, map[string][]string{}
	f.Do(func(f *fakeVPP) {
		a := fakeExtOf[*fakeACL](f)
		for _, d := range a.acls {
			acls[d.Tag] = d.R
		}
		for lists, into := range map[*map[uint32][]uint32]map[string][]string{&a.in: in, &a.out: out} {
			for sw, l := range *lists {
				for _, i := range l {
					into[f.ifaces[sw].Tag] = append(into[f.ifaces[sw].Tag], a.acls[i].Tag)
				}
			}
		}
	})
	return acls, in, out
}

// requestsOf returns the recorded requests, keeping those named.
func requestsOf(f *fakeVPP, names ...string) []api.Message {
	var out []api.Message
	for _, m := range f.Requests() {
		if slices.Contains(names, m.GetMessageName()) {
			out = append(out, m)
		}
	}
	return out
}

var (
	any4Prefix = prefix(any4)
	webRule    = &vppacl.ACL_Rule{Action: vppacl.Action_ACTION_PERMIT, DstNetwork: "10.0.0.0/24", Protocol: 6, DstPortFirst: 80}
	denyRule   = &vppacl.ACL_Rule{SrcNetwork: "2001:db8::/32"}
)

// TestACL: an IP ACL is created with its rules; its bindings wait for
// their interfaces, are made one acl_interface_add_del each, and read back
// unchanged by a resync (with a second ACL on the same interface, input
// and output lists apart); the rules change in place under the same
// acl_index; an interface that goes is unbound first; the ACL is unbound
// before it is deleted; bad rules are INVALID before any call.
func TestACL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a1 := &vppacl.ACL{Name: "a1", Rules: []*vppacl.ACL_Rule{webRule, denyRule}, Ingress: []string{"if1"}, Egress: []string{"if2"}}
	e.setACLs(loop("if1"), a1)
	e.expect(scheduler.CONFIGURED, "vpp/acl/a1", "vpp/acl/a1/ingress/if1")
	e.expect(scheduler.PENDING, "vpp/acl/a1/egress/if2")
	want1 := []acl_types.ACLRule{
		aclRule(acl_types.ACL_ACTION_API_PERMIT, "0.0.0.0/0", "10.0.0.0/24", ip_types.IP_API_PROTO_TCP, [2]uint16{0, 65535}, [2]uint16{80, 80}),
		aclRule(acl_types.ACL_ACTION_API_DENY, "2001:db8::/32", "::/0", 0, [2]uint16{0, 65535}, [2]uint16{0, 65535}),
	}
	wantReq := []api.Message{
		&acl.ACLAddReplace{ACLIndex: ^uint32(0), Tag: "a1", Count: 2, R: want1},
		&acl.ACLInterfaceAddDel{IsAdd: true, IsInput: true, SwIfIndex: 1, ACLIndex: 0},
	}
	if diff := cmp.Diff(wantReq, requestsOf(e.f, "acl_add_replace", "acl_interface_add_del", "acl_del")); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}

	// if2 arrives: its binding follows; a2 joins if1's input list.
	a2 := &vppacl.ACL{Name: "a2", Ingress: []string{"if1"}}
	e.setACLs(loop("if2"), a2)
	e.expect(scheduler.CONFIGURED, "vpp/acl/a1/egress/if2", "vpp/acl/a2/ingress/if1")
	acls, in, out := e.f.aclState()
	if diff := cmp.Diff(map[string][]acl_types.ACLRule{"a1": want1, "a2": nil}, acls, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("VPP's ACLs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{"if1": {"a1", "a2"}}, in); diff != "" {
		t.Errorf("VPP's input ACLs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{"if2": {"a1"}}, out); diff != "" {
		t.Errorf("VPP's output ACLs (-want +got):\n%s", diff)
	}
	e.f.Requests()
	e.resync()
	onlyDumps(t, e.f, "a resync of unchanged ACLs")
	e.expect(scheduler.CONFIGURED, "vpp/acl/a1", "vpp/acl/a2", "vpp/acl/a1/ingress/if1", "vpp/acl/a1/egress/if2", "vpp/acl/a2/ingress/if1")

	// New rules: replaced in place, the bindings untouched.
	a1b := &vppacl.ACL{Name: "a1", Rules: []*vppacl.ACL_Rule{{Action: vppacl.Action_ACTION_PERMIT_REFLECT, Protocol: 1, SrcPortFirst: 8}}, Ingress: a1.Ingress, Egress: a1.Egress}
	e.setACLs(a1b)
	want1b := []acl_types.ACLRule{aclRule(acl_types.ACL_ACTION_API_PERMIT_REFLECT, "0.0.0.0/0", "0.0.0.0/0", ip_types.IP_API_PROTO_ICMP, [2]uint16{8, 8}, [2]uint16{0, 255})}
	if diff := cmp.Diff([]api.Message{&acl.ACLAddReplace{ACLIndex: 0, Tag: "a1", Count: 1, R: want1b}}, e.f.Requests()); diff != "" {
		t.Errorf("requests of a change of rules (-want +got):\n%s", diff)
	}
	if acls, in, _ := e.f.aclState(); !cmp.Equal(acls["a1"], want1b) || len(in["if1"]) != 2 {
		t.Errorf("after the change of rules: ACLs %v, input lists %v", acls, in)
	}

	// A rule changed by hand is put back by a resync, in place.
	e.f.Do(func(f *fakeVPP) { fakeExtOf[*fakeACL](f).acls[0].R[0].DstportOrIcmpcodeLast = 3 })
	e.resync()
	if diff := cmp.Diff([]api.Message{&acl.ACLAddReplace{ACLIndex: 0, Tag: "a1", Count: 1, R: want1b}}, requestsOf(e.f, "acl_add_replace", "acl_interface_add_del", "acl_del")); diff != "" {
		t.Errorf("requests of a resync after a change by hand (-want +got):\n%s", diff)
	}

	// if1 goes: both of its bindings are taken off first, and wait.
	e.del("vpp/interface/if1")
	got := requestsOf(e.f, "acl_interface_add_del", "delete_loopback")
	if len(got) != 3 || got[2].GetMessageName() != "delete_loopback" {
		t.Errorf("deleting if1 sent %v, want two unbindings then delete_loopback", got)
	}
	e.expect(scheduler.PENDING, "vpp/acl/a1/ingress/if1", "vpp/acl/a2/ingress/if1")

	// a1 goes: unbound from if2 first (VPP refuses to delete an ACL in use).
	e.del("vpp/acl/a1")
	wantDel := []api.Message{&acl.ACLInterfaceAddDel{IsInput: false, SwIfIndex: 2, ACLIndex: 0}, &acl.ACLDel{ACLIndex: 0}}
	if diff := cmp.Diff(wantDel, requestsOf(e.f, "acl_interface_add_del", "acl_del")); diff != "" {
		t.Errorf("requests of deleting a1 (-want +got):\n%s", diff)
	}
	if acls, in, out := e.f.aclState(); len(acls) != 1 || len(in)+len(out) != 0 {
		t.Errorf("after deleting a1: ACLs %v, lists %v %v", acls, in, out)
	}
	e.expect(scheduler.NONEXISTENT, "vpp/acl/a1", "vpp/acl/a1/egress/if2")

	// Bad rules: INVALID, naming the field, and nothing sent.
	for _, r := range []*vppacl.ACL_Rule{
		{SrcNetwork: "10.0.0.1/8"},
		{SrcNetwork: "10.0.0.0/8", DstNetwork: "::/0"},
		{Protocol: 6, SrcPortFirst: 90, SrcPortLast: 80},
		{Protocol: 1, DstPortFirst: 300},
		{Action: 7},
	} {
		e.setACLs(&vppacl.ACL{Name: "bad", Rules: []*vppacl.ACL_Rule{r}})
		e.expect(scheduler.INVALID, "vpp/acl/bad")
		if st := e.s.Status("vpp/acl/bad"); st.LastErr == nil || !strings.Contains(st.LastErr.Error(), "rules[0].") {
			t.Errorf("rule %v: error %v, want one naming rules[0]'s field", r, st.LastErr)
		}
	}
	onlyDumps(t, e.f, "bad rules")
}

// TestACLVPPRefuses checks that the fake refuses what VPP's ACL plugin
// refuses, and that the handlers' errors say so.
func TestACLVPPRefuses(t *testing.T) {
	t.Parallel()
	p, f := newPlugin(t)
	loopbacks(t, p, f, "if1")
	ctx := context.Background()
	c := acl.NewServiceClient(p.conn)
	retval := func(err error) api.VPPApiError {
		var e api.VPPApiError
		errors.As(err, &e)
		return e
	}
	h := &ipACLs{p: p}
	m, err := h.Create(ctx, vppacl.ACLKey{Name: "a1"}, &vppacl.ACL{Name: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	p.aclFound.set(map[string]uint32{"a1": m.Index})
	// Replacing an ACL that is not there.
	if _, err := h.Update(ctx, vppacl.ACLKey{Name: "a1"}, nil, &vppacl.ACL{Name: "a1"}, ACLMeta{Index: 7}); retval(err) != api.NO_SUCH_ENTRY || !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("replacing ACL 7: %v, want NO_SUCH_ENTRY", err)
	}
	// Malformed rules, sent past the handler's checks.
	for _, tc := range []struct {
		name string
		rule acl_types.ACLRule
		want api.VPPApiError
	}{
		{"host bits", aclRule(0, "0.0.0.0/0", "0.0.0.0/0", 0, [2]uint16{0, 1}, [2]uint16{0, 1}), 0},
		{"src host bits", acl_types.ACLRule{SrcPrefix: ip_types.Prefix{Address: address(any4.Addr().Next()), Len: 8}, DstPrefix: any4Prefix}, api.INVALID_SRC_ADDRESS},
		{"dst length", acl_types.ACLRule{SrcPrefix: any4Prefix, DstPrefix: ip_types.Prefix{Address: address(any4.Addr()), Len: 33}}, api.INVALID_DST_ADDRESS},
		{"ports", acl_types.ACLRule{SrcPrefix: any4Prefix, DstPrefix: any4Prefix, SrcportOrIcmptypeFirst: 2, SrcportOrIcmptypeLast: 1}, api.INVALID_VALUE_2},
	} {
		_, err := c.ACLAddReplace(ctx, &acl.ACLAddReplace{ACLIndex: ^uint32(0), R: []acl_types.ACLRule{tc.rule}})
		if retval(err) != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// Binding to an interface that is not there, twice, and unbinding
	// what is not bound.
	if err := p.bindACL(ctx, "a1", "if9", true, true); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("binding to an unknown interface: %v", err)
	}
	if _, err := c.ACLInterfaceAddDel(ctx, &acl.ACLInterfaceAddDel{IsAdd: true, SwIfIndex: 9, ACLIndex: m.Index}); retval(err) != api.INVALID_SW_IF_INDEX {
		t.Errorf("binding to sw_if_index 9: %v", err)
	}
	if _, err := c.ACLInterfaceAddDel(ctx, &acl.ACLInterfaceAddDel{IsAdd: true, SwIfIndex: 1, ACLIndex: 5}); retval(err) != api.NO_SUCH_ENTRY {
		t.Errorf("binding ACL 5, which is not there: %v", err)
	}
	if err := p.bindACL(ctx, "a1", "if1", false, true); err != nil {
		t.Fatal(err)
	}
	if err := p.bindACL(ctx, "a1", "if1", false, true); retval(err) != api.ACL_IN_USE_OUTBOUND {
		t.Errorf("binding twice: %v, want ACL_IN_USE_OUTBOUND", err)
	}
	if err := p.bindACL(ctx, "a1", "if1", true, false); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("unbinding what is not bound: %v, want NO_SUCH_ENTRY (not found)", err)
	}
	// Deleting an ACL in use.
	if err := h.Delete(ctx, vppacl.ACLKey{Name: "a1"}, nil, m); retval(err) != api.ACL_IN_USE_OUTBOUND {
		t.Errorf("deleting an ACL in use: %v, want ACL_IN_USE_OUTBOUND", err)
	}
	if err := p.bindACL(ctx, "a1", "if1", true, true); err != nil {
		t.Fatal(err)
	}
	if err := h.Delete(ctx, vppacl.ACLKey{Name: "a1"}, nil, m); retval(err) != api.ACL_IN_USE_INBOUND {
		t.Errorf("deleting an ACL in use: %v, want ACL_IN_USE_INBOUND", err)
	}
	// The interface goes: VPP forgets its ACLs, and the ACL can go.
	if err := (&interfaces{p: p}).Delete(ctx, vppinterfaces.InterfaceKey{Name: "if1"}, loop("if1"), InterfaceMeta{SwIfIndex: 1}); err != nil {
		t.Fatal(err)
	}
	if err := h.Delete(ctx, vppacl.ACLKey{Name: "a1"}, nil, m); err != nil {
		t.Errorf("deleting the ACL after its interface: %v", err)
	}
	// MAC-IP: replacing one that is not there, binding one that is not
	// there, unbinding from an interface that has none.
	if _, err := (&macipACLs{p: p}).Update(ctx, vppacl.MACIPACLKey{Name: "m"}, nil, &vppacl.MACIPACL{Name: "m"}, ACLMeta{Index: 3}); retval(err) != api.NO_SUCH_ENTRY {
		t.Errorf("replacing MAC-IP ACL 3: %v", err)
	}
	loopbacks(t, p, f, "if2")
	if _, err := c.MacipACLInterfaceAddDel(ctx, &acl.MacipACLInterfaceAddDel{IsAdd: true, SwIfIndex: 2, ACLIndex: 3}); retval(err) != api.NO_SUCH_ENTRY {
		t.Errorf("binding MAC-IP ACL 3, which is not there: %v", err)
	}
	if _, err := c.MacipACLInterfaceAddDel(ctx, &acl.MacipACLInterfaceAddDel{SwIfIndex: 2}); retval(err) != api.NO_SUCH_ENTRY {
		t.Errorf("unbinding a MAC-IP ACL from an interface with none: %v", err)
	}
}

// TestACLRetrieve: a correlated ACL whose rules VPP has comes back as it
// was asked for; one with other rules comes back with VPP's; an untagged
// one made by hand is obtained, named by its index.
func TestACLRetrieve(t *testing.T) {
	t.Parallel()
	p, f := newPlugin(t)
	ctx := context.Background()
	h := &ipACLs{p: p}
	a1 := &vppacl.ACL{Name: "a1", Rules: []*vppacl.ACL_Rule{webRule}, Ingress: []string{"if1"}}
	if _, err := h.Create(ctx, vppacl.ACLKey{Name: "a1"}, a1); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Create(ctx, vppacl.ACLKey{Name: "a2"}, &vppacl.ACL{Name: "a2", Rules: []*vppacl.ACL_Rule{denyRule}}); err != nil {
		t.Fatal(err)
	}
	if _, err := acl.NewServiceClient(p.conn).ACLAddReplace(ctx, &acl.ACLAddReplace{ACLIndex: ^uint32(0),
		R: []acl_types.ACLRule{aclRule(acl_types.ACL_ACTION_API_PERMIT, "10.1.0.0/16", "0.0.0.0/0", ip_types.IP_API_PROTO_UDP, [2]uint16{53, 53}, [2]uint16{0, 65535})}}); err != nil {
		t.Fatal(err)
	}
	a2 := &vppacl.ACL{Name: "a2", Egress: []string{"if2"}} // no rules: VPP has one
	got, err := h.Retrieve(ctx, []vppacl.ACLItem[ACLMeta]{{Key: vppacl.ACLKey{Name: "a1"}, Value: a1}, {Key: vppacl.ACLKey{Name: "a2"}, Value: a2}})
	if err != nil {
		t.Fatal(err)
	}
	want := []vppacl.ACLItem[ACLMeta]{
		{Key: vppacl.ACLKey{Name: "a1"}, Value: a1, Metadata: ACLMeta{0}, Origin: kv.OriginNB},
		{Key: vppacl.ACLKey{Name: "a2"}, Value: &vppacl.ACL{Name: "a2", Egress: []string{"if2"}, Rules: []*vppacl.ACL_Rule{
			{SrcNetwork: "2001:db8::/32", DstNetwork: "::/0", SrcPortLast: 65535, DstPortLast: 65535}}}, Metadata: ACLMeta{1}, Origin: kv.OriginNB},
		{Key: vppacl.ACLKey{Name: "acl-2"}, Value: &vppacl.ACL{Name: "acl-2", Rules: []*vppacl.ACL_Rule{
			{Action: vppacl.Action_ACTION_PERMIT, SrcNetwork: "10.1.0.0/16", DstNetwork: "0.0.0.0/0", Protocol: 17, SrcPortFirst: 53, SrcPortLast: 53, DstPortLast: 65535}}}, Metadata: ACLMeta{2}, Origin: kv.OriginSB},
	}
	if diff := cmp.Diff(want, got, protoCmp); diff != "" {
		t.Errorf("Retrieve (-want +got):\n%s", diff)
	}
	// The rules read back convert to what VPP has.
	for _, it := range got {
		r, err := ipRules(it.Value.GetRules())
		var d []acl_types.ACLRule
		f.Do(func(f *fakeVPP) { d = fakeExtOf[*fakeACL](f).acls[it.Metadata.Index].R })
		if err != nil || !slices.Equal(r, d) {
			t.Errorf("%s: rules read back convert to %v (%v), VPP has %v", it.Key, r, err, d)
		}
	}
}

// TestMACIPACL: a MAC-IP ACL waits for nothing, its bindings for their
// interfaces; its rules change in place; a resync changes nothing; an
// interface that goes is unbound first, and the ACL is unbound before it
// goes.
func TestMACIPACL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m1 := &vppacl.MACIPACL{Name: "m1", Rules: []*vppacl.MACIPACL_Rule{
		{Action: vppacl.Action_ACTION_PERMIT, SrcNetwork: "10.0.0.0/24", SrcMac: "02:00:00:00:00:01", SrcMacMask: "ff:ff:ff:ff:ff:ff"}, {}},
		Interfaces: []string{"if1", "if2"}}
	e.setACLs(loop("if1"), m1)
	e.expect(scheduler.CONFIGURED, "vpp/macip-acl/m1", "vpp/macip-acl/m1/interface/if1")
	e.expect(scheduler.PENDING, "vpp/macip-acl/m1/interface/if2")
	mac := ethernet_types.MacAddress{2, 0, 0, 0, 0, 1}
	mask := ethernet_types.MacAddress{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	wantRules := []acl_types.MacipACLRule{
		{IsPermit: acl_types.ACL_ACTION_API_PERMIT, SrcMac: mac, SrcMacMask: mask, SrcPrefix: prefix(netipPrefix("10.0.0.0/24"))},
		{SrcPrefix: any4Prefix},
	}
	want := []api.Message{
		&acl.MacipACLAddReplace{ACLIndex: ^uint32(0), Tag: "m1", Count: 2, R: wantRules},
		&acl.MacipACLInterfaceAddDel{IsAdd: true, SwIfIndex: 1, ACLIndex: 0},
	}
	if diff := cmp.Diff(want, requestsOf(e.f, "macip_acl_add_replace", "macip_acl_interface_add_del", "macip_acl_del")); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	e.setACLs(loop("if2"))
	e.expect(scheduler.CONFIGURED, "vpp/macip-acl/m1/interface/if2")
	e.f.Requests()
	e.resync()
	onlyDumps(t, e.f, "a resync of an unchanged MAC-IP ACL")

	m1b := &vppacl.MACIPACL{Name: "m1", Rules: []*vppacl.MACIPACL_Rule{{SrcNetwork: "2001:db8::/64"}}, Interfaces: m1.Interfaces}
	e.setACLs(m1b)
	want = []api.Message{&acl.MacipACLAddReplace{ACLIndex: 0, Tag: "m1", Count: 1, R: []acl_types.MacipACLRule{{SrcPrefix: prefix(netipPrefix("2001:db8::/64"))}}}}
	if diff := cmp.Diff(want, e.f.Requests()); diff != "" {
		t.Errorf("requests of a change of rules (-want +got):\n%s", diff)
	}

	e.del("vpp/interface/if1")
	got := requestsOf(e.f, "macip_acl_interface_add_del", "delete_loopback")
	want = []api.Message{&acl.MacipACLInterfaceAddDel{SwIfIndex: 1, ACLIndex: 0}, got[len(got)-1]}
	if diff := cmp.Diff(want, got); diff != "" || got[1].GetMessageName() != "delete_loopback" {
		t.Errorf("requests of deleting if1 (-want +got):\n%s", diff)
	}
	e.expect(scheduler.PENDING, "vpp/macip-acl/m1/interface/if1")
	e.del("vpp/macip-acl/m1")
	want = []api.Message{&acl.MacipACLInterfaceAddDel{SwIfIndex: 2, ACLIndex: 0}, &acl.MacipACLDel{ACLIndex: 0}}
	if diff := cmp.Diff(want, requestsOf(e.f, "macip_acl_interface_add_del", "macip_acl_del")); diff != "" {
		t.Errorf("requests of deleting m1 (-want +got):\n%s", diff)
	}

	// Two MAC-IP ACLs on one interface: the second replaces the first,
	// and unbinding the first leaves the second (VPP would take off
	// whichever the interface has).
	e.setACLs(&vppacl.MACIPACL{Name: "m2", Interfaces: []string{"if2"}})
	e.setACLs(&vppacl.MACIPACL{Name: "m3", Interfaces: []string{"if2"}})
	e.del("vpp/macip-acl/m2")
	var on map[uint32]uint32
	e.f.Do(func(f *fakeVPP) { on = maps.Clone(fakeExtOf[*fakeACL](f).macipOn) })
	if m3, _ := e.p.MACIPACLs().Get("m3"); len(on) != 1 || on[2] != m3.Index {
		t.Errorf("after deleting m2, the interfaces' MAC-IP ACLs are %v, want if2's m3 (%d)", on, m3.Index)
	}
	e.del("vpp/macip-acl/m3")
	e.f.Requests()

	// A bad MAC or a reflect action: INVALID.
	for _, r := range []*vppacl.MACIPACL_Rule{{SrcMac: "02:00"}, {Action: vppacl.Action_ACTION_PERMIT_REFLECT}, {SrcNetwork: "10.0.0.1/8"}} {
		e.setACLs(&vppacl.MACIPACL{Name: "bad", Rules: []*vppacl.MACIPACL_Rule{r}})
		e.expect(scheduler.INVALID, "vpp/macip-acl/bad")
	}
	onlyDumps(t, e.f, "bad MAC-IP rules")
}

// TestACLAgentRestart: a new agent over a VPP that has its ACLs and
// bindings finds them all (the bindings' acl_index from the ACLs'
// Retrieve, before the scheduler adopts it), and sends nothing but dumps.
func TestACLAgentRestart(t *testing.T) {
	t.Parallel()
	values := []proto.Message{loop("if1"), loop("if2"),
		&vppacl.ACL{Name: "a1", Rules: []*vppacl.ACL_Rule{webRule}, Ingress: []string{"if1", "if2"}, Egress: []string{"if1"}},
		&vppacl.ACL{Name: "a2", Rules: []*vppacl.ACL_Rule{denyRule}, Ingress: []string{"if1"}},
		&vppacl.MACIPACL{Name: "m1", Rules: []*vppacl.MACIPACL_Rule{{}}, Interfaces: []string{"if2"}},
	}
	f := newFakeVPP(t)
	// agent starts an agent over f; stop stops it.
	agent := func() (e *env, stop func()) {
		e = &env{t: t, ctx: context.Background(), f: f}
		var err error
		if e.s, err = scheduler.New(scheduler.WithLogger(testLogger(t))); err != nil {
			t.Fatal(err)
		}
		if e.p, err = New(WithAdapter(f), WithLogger(testLogger(t))); err != nil {
			t.Fatal(err)
		}
		if err := e.s.Register(e.p.Descriptors()...); err != nil {
			t.Fatal(err)
		}
		return e, func() { _ = e.s.Close(context.Background()); _ = e.p.Close() }
	}
	first, stop := agent()
	first.setACLs(values...)
	stop()
	acls, in, out := f.aclState()
	f.Requests()

	e, stop := agent()
	defer stop()
	txn := e.s.Txn(scheduler.FullResync())
	for _, v := range values {
		switch v := v.(type) {
		case *vppacl.ACL:
			txn.Set(vppacl.ACLKeyFor(v), v)
		case *vppacl.MACIPACL:
			txn.Set(vppacl.MACIPACLKeyFor(v), v)
		case *vppinterfaces.Interface:
			txn.Set(vppinterfaces.InterfaceKeyFor(v), v)
		}
	}
	res, err := txn.Commit(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range res.Executed {
		if op.Kind == scheduler.OpCreate || op.Kind == scheduler.OpUpdate || op.Kind == scheduler.OpDelete {
			t.Errorf("the resync of a VPP in order made %s %s", op.Kind, op.Key)
		}
	}
	onlyDumps(t, f, "the resync of a VPP in order")
	for _, st := range e.s.Statuses("vpp/") {
		if st.State != scheduler.CONFIGURED && st.State != scheduler.OBTAINED {
			t.Errorf("%s: %s (%v)", st.Key, st.State, st.LastErr)
		}
	}
	acls2, in2, out2 := f.aclState()
	if !cmp.Equal(acls, acls2) || !cmp.Equal(in, in2) || !cmp.Equal(out, out2) {
		t.Errorf("VPP's ACLs changed: %v %v %v, were %v %v %v", acls2, in2, out2, acls, in, out)
	}
	if m, ok := e.p.ACLs().Get("a2"); !ok || m.Index != 1 {
		t.Errorf("a2's metadata: %+v, %v; want acl_index 1", m, ok)
	}
	if m, ok := e.p.MACIPACLs().Get("m1"); !ok || m.Index != 0 {
		t.Errorf("m1's metadata: %+v, %v; want acl_index 0", m, ok)
	}
}
