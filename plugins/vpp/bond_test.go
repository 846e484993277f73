package vpp

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/binapi/bond"
	"google.golang.org/protobuf/proto"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// onlyReads checks that the requests since the last check only read
// VPP's state (a resync of values already right).
func onlyReads(t *testing.T, f *fakeVPP, what string) {
	t.Helper()
	for _, n := range f.RequestNames() {
		if slices.Contains(writes(f), n) {
			t.Errorf("%s sent %s", what, n)
		}
	}
}

func bondIf(name string, mode vppinterfaces.Interface_Bond_Mode, id uint32, members ...*vppinterfaces.Interface_BondMember) *vppinterfaces.Interface {
	return &vppinterfaces.Interface{Name: name, Type: vppinterfaces.Interface_TYPE_BOND, Enabled: true,
		Bond: &vppinterfaces.Interface_Bond{Mode: mode, Id: id}, BondMembers: members}
}

// bondState is the fake's bonds: by the bond's tag, its mode and members
// by tag ("+p" passive, "+l" long timeout).
func bondState(f *fakeVPP) map[string][]string {
	out := map[string][]string{}
	f.Do(func(f *fakeVPP) {
		x := fakeExtOf[*fakeIfattr](f)
		for i, b := range x.bonds {
			tag := f.ifaces[i].Tag
			out[tag] = []string{b.Mode.String(), b.Lb.String()}
			var ms []string
			for m, mb := range x.members {
				if mb.bond == i {
					s := f.ifaces[m].Tag
					if mb.passive {
						s += "+p"
					}
					if mb.longTimeout {
						s += "+l"
					}
					ms = append(ms, s)
				}
			}
			slices.Sort(ms)
			out[tag] = append(out[tag], ms...)
		}
	})
	return out
}

// TestBond: a bond is created without members, each member added as its
// own value once its interface exists (PENDING before), read back by a
// resync with no calls, a member's flags changed by detaching and adding
// it again, the bond re-created when its mode changes (members detached
// first, added again), a member detached before its interface goes, and
// everything removed with the bond.
func TestBond(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lacp := bondIf("b1", vppinterfaces.Interface_Bond_MODE_LACP, 1,
		&vppinterfaces.Interface_BondMember{Name: "m1", Passive: true}, &vppinterfaces.Interface_BondMember{Name: "m2"})
	lacp.Bond.LoadBalance = vppinterfaces.Interface_Bond_LOAD_BALANCE_L34
	e.set(nil, lacp, loop("m1"))
	e.expect(scheduler.CONFIGURED, "vpp/interface/b1", "vpp/interface/m1", "vpp/interface/b1/bond-member/m1")
	e.expect(scheduler.PENDING, "vpp/interface/b1/bond-member/m2")
	want := map[string][]string{"b1": {"BOND_API_MODE_LACP", "BOND_API_LB_ALGO_L34", "m1+p"}}
	if diff := cmp.Diff(want, bondState(e.f)); diff != "" {
		t.Errorf("bonds (-want +got):\n%s", diff)
	}
	var created *bond.BondCreate2
	for _, m := range e.f.Requests() {
		if c, ok := m.(*bond.BondCreate2); ok {
			created = c
		}
	}
	if created == nil || created.ID != 1 || created.Lb != bond.BOND_API_LB_ALGO_L34 || created.UseCustomMac {
		t.Errorf("bond_create2: %+v", created)
	}
	e.set(nil, loop("m2"))
	e.expect(scheduler.CONFIGURED, "vpp/interface/b1/bond-member/m2")
	want["b1"] = append(want["b1"], "m2")
	if diff := cmp.Diff(want, bondState(e.f)); diff != "" {
		t.Errorf("bonds (-want +got):\n%s", diff)
	}
	e.f.Requests()
	e.resync()
	onlyReads(t, e.f, "a resync of an unchanged bond")
	e.expect(scheduler.CONFIGURED, "vpp/interface/b1", "vpp/interface/b1/bond-member/m1", "vpp/interface/b1/bond-member/m2")

	// A member's flags: detached and added again; the bond untouched.
	lacp = proto.Clone(lacp).(*vppinterfaces.Interface) // the scheduler keeps the value set
	lacp.BondMembers[0].Passive, lacp.BondMembers[0].LongTimeout = false, true
	e.set(nil, lacp)
	if diff := cmp.Diff([]string{"bond_detach_member", "bond_add_member"}, e.f.RequestNames()); diff != "" {
		t.Errorf("changing a member's flags (-want +got):\n%s", diff)
	}
	want["b1"] = []string{"BOND_API_MODE_LACP", "BOND_API_LB_ALGO_L34", "m1+l", "m2"}
	if diff := cmp.Diff(want, bondState(e.f)); diff != "" {
		t.Errorf("bonds (-want +got):\n%s", diff)
	}

	// Another mode: the bond is re-created, its members detached first.
	rr := bondIf("b1", vppinterfaces.Interface_Bond_MODE_ROUND_ROBIN, 1, lacp.BondMembers...)
	e.set(nil, rr)
	e.expect(scheduler.CONFIGURED, "vpp/interface/b1", "vpp/interface/b1/bond-member/m1", "vpp/interface/b1/bond-member/m2")
	names := e.f.RequestNames()
	del := slices.Index(names, "bond_delete")
	if del < 0 || slices.Index(names[del:], "bond_detach_member") >= 0 || slices.Index(names[:del], "bond_detach_member") < 0 || !slices.Contains(names[del:], "bond_add_member") {
		t.Errorf("re-creating the bond sent %v, want members detached, bond_delete, bond_create2, members added", names)
	}
	want["b1"] = []string{"BOND_API_MODE_ROUND_ROBIN", "BOND_API_LB_ALGO_RR", "m1+l", "m2"}
	if diff := cmp.Diff(want, bondState(e.f)); diff != "" {
		t.Errorf("bonds (-want +got):\n%s", diff)
	}
	e.resync()
	onlyReads(t, e.f, "a resync of a round-robin bond (VPP reports its hash as RR; the value leaves it unset)")

	// m2 goes: it is detached first.
	e.del("vpp/interface/m2")
	if diff := cmp.Diff([]string{"bond_detach_member", "delete_loopback"}, e.f.RequestNames()); diff != "" {
		t.Errorf("deleting a member interface (-want +got):\n%s", diff)
	}
	e.expect(scheduler.PENDING, "vpp/interface/b1/bond-member/m2")

	// A member added by hand to a bond made by hand is obtained, and a
	// resync leaves it.
	e.f.Do(func(f *fakeVPP) {
		x := fakeExtOf[*fakeIfattr](f)
		b := f.newIf("BondEthernet9", "bond", [6]byte{})
		x.bonds[uint32(b)] = &bond.SwBondInterfaceDetails{SwIfIndex: b, ID: 9, Mode: bond.BOND_API_MODE_XOR, InterfaceName: "BondEthernet9"}
		m := f.newIf("loop99", "Loopback", [6]byte{})
		x.members[uint32(m)] = fakeMember{bond: uint32(b)}
	})
	e.resync()
	if st := e.s.Status("vpp/interface/BondEthernet9/bond-member/loop99"); st.State != scheduler.OBTAINED {
		t.Errorf("a member added by hand: %s (%v), want OBTAINED", st.State, st.LastErr)
	}
	onlyReads(t, e.f, "a resync with a bond made by hand")

	e.del("vpp/interface/b1")
	e.f.Do(func(f *fakeVPP) {
		x := fakeExtOf[*fakeIfattr](f)
		if len(x.bonds) != 1 || len(x.members) != 1 {
			t.Errorf("VPP has bonds %v and members %v, want only those made by hand", slices.Collect(maps.Keys(x.bonds)), x.members)
		}
	})
}

// TestBondRefused: what the schema says is refused before VPP is asked;
// what VPP refuses (a member that is not Ethernet, a bond id in use)
// fails, and is not retried.
func TestBondRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	noMode := bondIf("nomode", 0, 1)
	rrHash := bondIf("rrhash", vppinterfaces.Interface_Bond_MODE_ROUND_ROBIN, 2)
	rrHash.Bond.LoadBalance = vppinterfaces.Interface_Bond_LOAD_BALANCE_L23
	dup := bondIf("dup", vppinterfaces.Interface_Bond_MODE_XOR, 3, &vppinterfaces.Interface_BondMember{Name: "x"}, &vppinterfaces.Interface_BondMember{Name: "x"})
	notBond := loop("notbond")
	notBond.BondMembers = []*vppinterfaces.Interface_BondMember{{Name: "x"}}
	for _, v := range []*vppinterfaces.Interface{noMode, rrHash, dup, notBond, {Name: "nobond", Type: vppinterfaces.Interface_TYPE_BOND}} {
		e.set(nil, v)
		e.expect(scheduler.INVALID, keyOf(v))
	}
	if got := e.f.RequestNames(); len(got) != 0 {
		t.Errorf("invalid bonds sent %v", got)
	}

	e.set(nil, bondIf("b1", vppinterfaces.Interface_Bond_MODE_XOR, 1, &vppinterfaces.Interface_BondMember{Name: "gre1"}),
		greIf("gre1", vppinterfaces.Interface_Gre_KIND_L3, "10.0.0.1", "10.0.0.2", 0),
		bondIf("b2", vppinterfaces.Interface_Bond_MODE_XOR, 1))
	e.expect(scheduler.FAILED, "vpp/interface/b1/bond-member/gre1")
	if st := e.s.Status("vpp/interface/b1/bond-member/gre1"); st.LastErr == nil || !strings.Contains(st.LastErr.Error(), "bond_add_member") {
		t.Errorf("an L3 tunnel as a member: %v, want VPP's refusal", st.LastErr)
	}
	// One of b1 and b2 has id 1; VPP refuses it to the other.
	s1, s2 := e.s.Status("vpp/interface/b1").State, e.s.Status("vpp/interface/b2").State
	if (s1 == scheduler.CONFIGURED) == (s2 == scheduler.CONFIGURED) {
		t.Errorf("two bonds with id 1: %s and %s, want one configured", s1, s2)
	}
}
