//go:build vpp

package vpp

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	vppabf "github.com/kvdescriptor/kvdescriptor/generated/vpp/abf/v1"
	vppacl "github.com/kvdescriptor/kvdescriptor/generated/vpp/acl/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestRealVPPACL runs the round trip of the ACL models against a real VPP
// (see realVPP): an IP ACL bound to two loopbacks on input and output, a
// MAC-IP ACL bound to one, an ABF policy on the IP ACL attached to one; a resync finds them unchanged and changes
// nothing; new rules replace the old in place; all are deleted in the
// order of their dependencies (VPP refuses to delete an IP ACL in use).
func TestRealVPPACL(t *testing.T) {
	p := realVPP(t)
	ctx := context.Background()
	s, err := scheduler.New(scheduler.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close(ctx) }()
	if err := s.Register(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	a := &vppacl.ACL{Name: "kvdtest-acl", Rules: []*vppacl.ACL_Rule{
		{Action: vppacl.Action_ACTION_PERMIT, DstNetwork: "10.95.0.0/24", Protocol: 6, DstPortFirst: 80},
		{Action: vppacl.Action_ACTION_PERMIT_REFLECT, SrcNetwork: "2001:db8::/32", Protocol: 58},
		{}},
		Ingress: []string{"kvdtest-acl1", "kvdtest-acl2"}, Egress: []string{"kvdtest-acl1"}}
	m := &vppacl.MACIPACL{Name: "kvdtest-macip", Rules: []*vppacl.MACIPACL_Rule{
		{Action: vppacl.Action_ACTION_PERMIT, SrcNetwork: "10.95.0.0/24", SrcMac: "02:00:00:00:95:01", SrcMacMask: "ff:ff:ff:ff:ff:ff"}},
		Interfaces: []string{"kvdtest-acl2"}}
	pol := &vppabf.ABF{Index: 95, Acl: "kvdtest-acl", Paths: []*vppabf.ABF_Path{{NextHop: "10.95.1.2", Interface: "kvdtest-acl1"}},
		Interfaces: []*vppabf.ABF_Interface{{Name: "kvdtest-acl2", Priority: 5}}}
	values := map[string]proto.Message{
		"vpp/interface/kvdtest-acl1": loop("kvdtest-acl1"), "vpp/interface/kvdtest-acl2": loop("kvdtest-acl2"),
		vppacl.ACLKeyFor(a): a, vppacl.MACIPACLKeyFor(m): m, vppabf.ABFKeyFor(pol): pol,
	}
	commit := func(values map[string]proto.Message) *scheduler.Result {
		txn := s.Txn()
		for k, v := range values {
			txn.Set(k, v)
		}
		res, err := txn.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	check := func(when string) {
		for _, st := range s.Statuses("vpp/") {
			if st.Intended && st.State != scheduler.CONFIGURED {
				t.Errorf("%s: %s: %s (%v)", when, st.Key, st.State, st.LastErr)
			}
		}
	}
	commit(values)
	check("after the commit")
	res, err := s.Txn(scheduler.DownstreamResync()).Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range res.Executed {
		if op.Kind == scheduler.OpCreate || op.Kind == scheduler.OpUpdate || op.Kind == scheduler.OpDelete {
			t.Errorf("a resync of unchanged ACLs made %s %s", op.Kind, op.Key)
		}
	}
	check("after a resync")
	idx, _ := p.ACLs().Get("kvdtest-acl")
	a2 := proto.Clone(a).(*vppacl.ACL)
	a2.Rules = a2.Rules[:1]
	commit(map[string]proto.Message{vppacl.ACLKeyFor(a): a2})
	check("after new rules")
	if now, _ := p.ACLs().Get("kvdtest-acl"); now != idx {
		t.Errorf("new rules moved the ACL from %+v to %+v", idx, now)
	}
	txn := s.Txn()
	for k := range values {
		txn.Delete(k)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
