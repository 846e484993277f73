package vpp

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/abf"
	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/fib_types"
	"google.golang.org/protobuf/proto"

	vppabf "github.com/kvdescriptor/kvdescriptor/generated/vpp/abf/v1"
	vppacl "github.com/kvdescriptor/kvdescriptor/generated/vpp/acl/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// setABF commits an ABF policy (and ACLs, interfaces) by generated keys.
func (e *env) setABF(p *vppabf.ABF, values ...proto.Message) {
	e.t.Helper()
	txn := e.s.Txn()
	txn.Set(vppabf.ABFKeyFor(p), p)
	if _, err := txn.Commit(e.ctx); err != nil {
		e.t.Logf("commit: %v", err)
	}
	e.setACLs(values...)
}

// TestABF: a policy waits for its ACL and its paths' interfaces, its
// attachment for its interface;
// it is created with its ACL's index and paths, attached, read back
// unchanged by a resync; a change of paths re-creates it (detached first);
// a path's interface that goes takes the policy first; an attached
// interface that goes is detached first; the ACL goes after the policy.
func TestABF(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pol := &vppabf.ABF{Index: 5, Acl: "a1", Paths: []*vppabf.ABF_Path{{NextHop: "10.0.0.2", Interface: "if2"}, {NextHop: "2001:db8::1", Preference: 1}},
		Interfaces: []*vppabf.ABF_Interface{{Name: "if1", Priority: 10}}}
	e.setABF(pol)
	e.expect(scheduler.PENDING, "vpp/abf/5")
	e.setACLs(loop("if1"), &vppacl.ACL{Name: "a1", Rules: []*vppacl.ACL_Rule{webRule}})
	e.expect(scheduler.PENDING, "vpp/abf/5") // its path's interface, if2, is not there
	e.setACLs(loop("if2"))
	e.expect(scheduler.CONFIGURED, "vpp/abf/5", "vpp/abf/5/interface/if1")
	path1 := fib_types.FibPath{SwIfIndex: 2, Weight: 1}
	path1.Nh.Address.SetIP4([4]byte{10, 0, 0, 2})
	path2 := fib_types.FibPath{SwIfIndex: ^uint32(0), Weight: 1, Preference: 1, Proto: fib_types.FIB_API_PATH_NH_PROTO_IP6}
	path2.Nh.Address.SetIP6([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1})
	add := &abf.AbfPolicyAddDel{IsAdd: true, Policy: abf.AbfPolicy{PolicyID: 5, ACLIndex: 0, NPaths: 2, Paths: []fib_types.FibPath{path1, path2}}}
	attach := &abf.AbfItfAttachAddDel{IsAdd: true, Attach: abf.AbfItfAttach{PolicyID: 5, SwIfIndex: 1, Priority: 10}}
	if diff := cmp.Diff([]api.Message{add, attach}, requestsOf(e.f, "abf_policy_add_del", "abf_itf_attach_add_del")); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	e.resync()
	onlyDumps(t, e.f, "a resync of an unchanged policy")
	e.expect(scheduler.CONFIGURED, "vpp/abf/5", "vpp/abf/5/interface/if1")

	// Paths in another order: the same policy. Another weight: re-created.
	pol2 := proto.Clone(pol).(*vppabf.ABF)
	slices.Reverse(pol2.Paths)
	e.setABF(pol2)
	onlyDumps(t, e.f, "the paths in another order")
	pol3 := proto.Clone(pol2).(*vppabf.ABF)
	pol3.Paths[0].Weight = 3
	e.setABF(pol3)
	want := []string{"abf_itf_attach_add_del", "abf_policy_add_del", "abf_policy_add_del", "abf_itf_attach_add_del"}
	if got := e.f.RequestNames(); !slices.Equal(got, want) {
		t.Errorf("a change of paths sent %v, want %v", got, want)
	}
	e.expect(scheduler.CONFIGURED, "vpp/abf/5", "vpp/abf/5/interface/if1")

	// if2, a path's interface, goes: the policy goes first (detached
	// first), and waits.
	e.del("vpp/interface/if2")
	want = []string{"abf_itf_attach_add_del", "abf_policy_add_del", "delete_loopback"}
	if got := slices.DeleteFunc(e.f.RequestNames(), func(n string) bool {
		return n != "abf_itf_attach_add_del" && n != "abf_policy_add_del" && n != "delete_loopback"
	}); !slices.Equal(got, want) {
		t.Errorf("deleting if2 sent %v, want %v", got, want)
	}
	e.expect(scheduler.PENDING, "vpp/abf/5")
	e.setACLs(loop("if2"))
	e.expect(scheduler.CONFIGURED, "vpp/abf/5", "vpp/abf/5/interface/if1")
	e.f.Requests()

	e.del("vpp/interface/if1")
	if got := requestsOf(e.f, "abf_itf_attach_add_del", "delete_loopback"); len(got) != 2 || got[1].GetMessageName() != "delete_loopback" || got[0].(*abf.AbfItfAttachAddDel).IsAdd {
		t.Errorf("deleting if1 sent %v, want the detachment first", got)
	}
	e.expect(scheduler.PENDING, "vpp/abf/5/interface/if1")
	e.del("vpp/acl/a1")
	if got, want := e.f.RequestNames(), []string{"abf_policy_add_del", "acl_del"}; !slices.Equal(got, want) {
		t.Errorf("deleting the ACL sent %v, want %v", got, want)
	}
	e.expect(scheduler.PENDING, "vpp/abf/5")
	e.f.Do(func(f *fakeVPP) {
		if n := len(fakeExtOf[*fakeABF](f).policies); n != 0 {
			t.Errorf("VPP has %d policies, want none", n)
		}
	})
}

// TestABFVPPRefuses checks the fake's refusals: an ACL in use by a policy,
// a policy still attached, an attachment to no policy.
func TestABFVPPRefuses(t *testing.T) {
	t.Parallel()
	p, f := newPlugin(t)
	loopbacks(t, p, f, "if1")
	ctx := context.Background()
	m, err := (&ipACLs{p: p}).Create(ctx, vppacl.ACLKey{Name: "a1"}, &vppacl.ACL{Name: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	p.aclFound.set(map[string]uint32{"a1": m.Index})
	pol := &vppabf.ABF{Index: 1, Acl: "a1", Paths: []*vppabf.ABF_Path{{Interface: "if1"}}}
	h, a := &abfPolicies{p: p}, &abfAttachments{p: p}
	k, ik := vppabf.ABFKey{Index: 1}, vppabf.ABFInterfacesKey{Index: 1, InterfacesName: "if1"}
	retval := func(err error) (e api.VPPApiError) { errors.As(err, &e); return e }
	if _, err := a.Create(ctx, ik, &vppabf.ABF_Interface{Name: "if1"}); retval(err) != api.INVALID_VALUE {
		t.Errorf("attaching policy 1, not there: %v", err)
	}
	if _, err := h.Create(ctx, k, pol); err != nil {
		t.Fatal(err)
	}
	if _, err := acl.NewServiceClient(p.conn).ACLDel(ctx, &acl.ACLDel{ACLIndex: m.Index}); retval(err) != api.ACL_IN_USE_BY_LOOKUP_CONTEXT {
		t.Errorf("deleting the ACL of a policy: %v", err)
	}
	if _, err := a.Create(ctx, ik, &vppabf.ABF_Interface{Name: "if1"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Delete(ctx, k, pol, struct{}{}); err == nil {
		t.Error("deleting an attached policy: no error")
	}
	if err := a.Delete(ctx, ik, &vppabf.ABF_Interface{Name: "if1"}, struct{}{}); err != nil {
		t.Fatal(err)
	}
	if err := h.Delete(ctx, k, pol, struct{}{}); err != nil {
		t.Errorf("deleting the policy: %v", err)
	}
	if _, err := h.Create(ctx, k, &vppabf.ABF{Index: 1, Acl: "a1", Paths: []*vppabf.ABF_Path{{NextHop: "10.0.0.300"}}}); err == nil {
		t.Error("a bad next hop: no error")
	}
}
