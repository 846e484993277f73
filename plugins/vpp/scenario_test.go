package vpp

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/interface_types"
	"google.golang.org/protobuf/proto"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppipsec "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipsec/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	vppwireguard "github.com/kvdescriptor/kvdescriptor/generated/vpp/wireguard/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func keyOf(v proto.Message) string {
	switch v := v.(type) {
	case *vppinterfaces.Interface:
		return vppinterfaces.InterfaceKeyFor(v)
	case *vppl2.BridgeDomain:
		return vppl2.BridgeDomainKeyFor(v)
	case *vppl2.FIBEntry:
		return vppl2.FIBEntryKeyFor(v)
	case *vppl3.VrfTable:
		return vppl3.VrfTableKeyFor(v)
	case *vppl3.Route:
		return vppl3.RouteKeyFor(v)
	case *vppl3.ARPEntry:
		return vppl3.ARPEntryKeyFor(v)
	case *vppwireguard.Peer:
		return vppwireguard.PeerKeyFor(v)
	case *vppipsec.SecurityAssociation:
		return vppipsec.SecurityAssociationKeyFor(v)
	case *vppipsec.SecurityPolicyDatabase:
		return vppipsec.SecurityPolicyDatabaseKeyFor(v)
	case *vppipsec.SecurityPolicy:
		return vppipsec.SecurityPolicyKeyFor(v)
	case *vppipsec.TunnelProtection:
		return vppipsec.TunnelProtectionKeyFor(v)
	}
	panic("no key")
}

// set commits the values, keyed by their generated keys.
func (e *env) set(opts []scheduler.TxnOption, values ...proto.Message) *scheduler.Result {
	e.t.Helper()
	txn := e.s.Txn(opts...)
	for _, v := range values {
		txn.Set(keyOf(v), v)
	}
	res, err := txn.Commit(e.ctx)
	if err != nil {
		e.t.Logf("commit: %v", err)
	}
	return res
}

func loop(name string) *vppinterfaces.Interface {
	return &vppinterfaces.Interface{Name: name, Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true}
}

// members returns the labels (tags) of the members of the bridge domain
// tagged name in the fake, sorted, with the BVI's marked "*".
func (f *fakeVPP) members(name string) []string {
	var out []string
	f.Do(func(f *fakeVPP) {
		for _, bd := range f.bds {
			if bd.BdTag != name {
				continue
			}
			for _, m := range bd.SwIfDetails {
				n := f.ifaces[uint32(m.SwIfIndex)].Tag
				if m.SwIfIndex == bd.BviSwIfIndex {
					n += "*"
				}
				out = append(out, n)
			}
		}
	})
	slices.Sort(out)
	return out
}

func TestScenarioBridgeDomainMemberArrivesLater(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bd := &vppl2.BridgeDomain{Name: "bd1", Flood: true, Learn: true, Interfaces: []*vppl2.BridgeDomain_Interface{{Name: "if1", Bvi: true}, {Name: "if2"}, {Name: "if3"}}}
	e.set(nil, loop("if1"), loop("if2"), bd)
	e.expect(scheduler.CONFIGURED, "vpp/interface/if1", "vpp/interface/if2", "vpp/bd/bd1", "vpp/bd/bd1/interface/if1", "vpp/bd/bd1/interface/if2")
	e.expect(scheduler.PENDING, "vpp/bd/bd1/interface/if3")
	if got, want := e.f.members("bd1"), []string{"if1*", "if2"}; !slices.Equal(got, want) {
		t.Errorf("members %v, want %v", got, want)
	}
	e.f.Requests()
	e.set(nil, loop("if3"))
	e.expect(scheduler.CONFIGURED, "vpp/interface/if3", "vpp/bd/bd1/interface/if3")
	if got, want := e.f.members("bd1"), []string{"if1*", "if2", "if3"}; !slices.Equal(got, want) {
		t.Errorf("members %v, want %v", got, want)
	}
	if got, want := e.f.RequestNames(), []string{"create_loopback", "sw_interface_tag_add_del", "hw_interface_set_mtu", "sw_interface_set_flags", "sw_interface_set_l2_bridge"}; !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	// Deleting the interface takes it out of the bridge domain first.
	txn := e.s.Txn()
	txn.Delete("vpp/interface/if3")
	if _, err := txn.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.expect(scheduler.PENDING, "vpp/bd/bd1/interface/if3")
	if got, want := e.f.RequestNames(), []string{"sw_interface_set_l2_bridge", "delete_loopback"}; !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

func TestScenarioRecreateOnTypeChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.set(nil, loop("if1"), &vppinterfaces.Interface{Name: "if1x", Type: vppinterfaces.Interface_TYPE_LOOPBACK, IpAddresses: []string{"10.0.0.1/24"}})
	e.f.Requests()
	e.set(nil, &vppinterfaces.Interface{Name: "if1x", Type: vppinterfaces.Interface_TYPE_MEMIF, IpAddresses: []string{"10.0.0.1/24"}})
	e.expect(scheduler.CONFIGURED, "vpp/interface/if1x", "vpp/interface/if1x/address/10.0.0.1/24")
	want := []string{
		"sw_interface_add_del_address", "delete_loopback", // the address goes first, with its interface
		"memif_create_v2", "sw_interface_tag_add_del", "hw_interface_set_mtu", "sw_interface_add_del_address",
	}
	if got := e.f.RequestNames(); !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	var dev string
	e.f.Do(func(f *fakeVPP) {
		i, _ := f.ifIndex("if1x")
		dev = f.ifaces[i].InterfaceDevType
	})
	if dev != "memif" {
		t.Errorf("if1x is a %q in VPP, want a memif", dev)
	}
}

func TestScenarioFailedCallRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.f.Fail("create_loopback", -1, -1) // VNET_API_ERROR_UNSPECIFIED twice
	res := e.set([]scheduler.TxnOption{scheduler.Retry(scheduler.RetryPolicy{Period: 10 * time.Millisecond, MaxAttempts: 5})}, loop("if1"))
	if res == nil {
		t.Fatal("no result")
	}
	st := e.s.Status("vpp/interface/if1")
	if st.State != scheduler.RETRYING && st.State != scheduler.CONFIGURED {
		t.Errorf("after the failed call: %s, want RETRYING", st.State)
	}
	if st.LastErr != nil && st.LastErr.Error() != "create_loopback: VPPApiError: Unspecified Error (-1)" {
		t.Errorf("error %q: want one naming create_loopback and -1", st.LastErr)
	}
	e.eventually(scheduler.CONFIGURED, "vpp/interface/if1")
	// Before each retry, the scheduler reads the interfaces back.
	want := []string{"create_loopback", "sw_interface_dump", "create_loopback", "sw_interface_dump", "create_loopback", "sw_interface_tag_add_del", "hw_interface_set_mtu", "sw_interface_set_flags"}
	if got := e.f.RequestNames(); !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v: two failed create_loopback, then a third that succeeds", got, want)
	}
}

func TestScenarioVPPRestartResync(t *testing.T) {
	t.Parallel()
	reconnected := make(chan struct{}, 1)
	e := newEnv(t, WithReconnect(func() { reconnected <- struct{}{} }))
	values := []proto.Message{
		&vppl3.VrfTable{Id: 3},
		&vppinterfaces.Interface{Name: "if1", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, Vrf: 3, IpAddresses: []string{"10.0.0.1/24", "2001:db8::1/64"}},
		&vppinterfaces.Interface{Name: "m1", Type: vppinterfaces.Interface_TYPE_MEMIF, Memif: &vppinterfaces.Interface_Memif{Id: 1}},
		&vppl2.BridgeDomain{Name: "bd1", Learn: true, ArpTermination: true, Interfaces: []*vppl2.BridgeDomain_Interface{{Name: "m1"}}},
		&vppl2.FIBEntry{BridgeDomain: "bd1", PhysAddress: "02:00:00:00:00:01", OutgoingInterface: "m1", StaticConfig: true},
		&vppl3.Route{VrfId: 3, DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.2", OutgoingInterface: "if1"},
		&vppl3.ARPEntry{Interface: "if1", IpAddress: "10.0.0.2", PhysAddress: "02:00:00:00:00:02", Static: true},
	}
	e.set(nil, values...)
	all := e.s.Statuses("vpp/")
	for _, st := range all {
		if st.State != scheduler.CONFIGURED && st.State != scheduler.OBTAINED {
			t.Errorf("%s: %s (%v)", st.Key, st.State, st.LastErr)
		}
	}
	before := e.f.state()

	e.f.Restart()
	select {
	case <-reconnected:
	case <-time.After(30 * time.Second):
		t.Fatal("no reconnect callback 30s after VPP restarted")
	}
	if got := e.f.state(); got == before {
		t.Fatal("the restarted VPP kept its state")
	}
	e.f.Requests()
	if _, err := e.s.Txn(scheduler.DownstreamResync()).Commit(e.ctx); err != nil {
		t.Fatalf("downstream resync: %v", err)
	}
	for _, st := range e.s.Statuses("vpp/") {
		if st.State != scheduler.CONFIGURED && st.State != scheduler.OBTAINED {
			t.Errorf("after the resync: %s: %s (%v)", st.Key, st.State, st.LastErr)
		}
	}
	if got := e.f.state(); got != before {
		t.Errorf("VPP's state after the resync:\n%s\nwant, as before the restart:\n%s", got, before)
	}
	// A second resync finds everything in place: dumps only.
	e.f.Requests()
	if _, err := e.s.Txn(scheduler.DownstreamResync()).Commit(e.ctx); err != nil {
		t.Fatalf("downstream resync: %v", err)
	}
	onlyDumps(t, e.f, "a resync of an unchanged VPP")
}

// state describes the fake's configuration by labels, not indexes.
func (f *fakeVPP) state() string {
	var s string
	f.Do(func(f *fakeVPP) {
		name := func(i interface_types.InterfaceIndex) string {
			if d := f.ifaces[uint32(i)]; d != nil {
				return d.Tag
			}
			return "?"
		}
		var ifs []string // in the order of their labels, not of their indexes
		for i, d := range f.ifaces {
			l := "if " + d.Tag + " " + d.InterfaceDevType + " vrf " + itoa(f.ifVrf[i]) + " flags " + itoa(uint32(d.Flags))
			for _, a := range f.addrs[i] {
				l += " " + a.String()
			}
			ifs = append(ifs, l+"\n")
		}
		slices.Sort(ifs)
		s += strings.Join(ifs, "")
		for _, id := range sortedKeys(f.bds) {
			bd := f.bds[id]
			s += "bd " + bd.BdTag
			for _, m := range bd.SwIfDetails {
				s += " " + name(m.SwIfIndex)
			}
			for _, e := range f.fib[id] {
				s += " fib " + e.Mac.String() + " " + name(e.SwIfIndex)
			}
			s += "\n"
		}
		tables := map[uint32]bool{}
		for id := range f.routes {
			tables[id.table] = true
		}
		for _, id := range sortedKeys(tables) {
			for _, r := range f.tableRoutes(id) {
				if r.Src != srcAPI { // VPP's own
					continue
				}
				for _, p := range r.Paths {
					s += "route " + itoa(id) + " " + prefixOf(r.Prefix).String() + " dev " + name(interface_types.InterfaceIndex(p.SwIfIndex)) + "\n"
				}
			}
		}
		for _, n := range f.neigh {
			s += "neighbour " + name(n.SwIfIndex) + " " + n.IPAddress.String() + " " + n.MacAddress.String() + "\n"
		}
		s += "tables " + itoa(uint32(len(f.tables))) + "\n"
	})
	return s
}

func itoa(i uint32) string { return strconv.FormatUint(uint64(i), 10) }

func TestScenarioVrfChangeKeepsAddresses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if1 := &vppinterfaces.Interface{Name: "if1", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Vrf: 3, IpAddresses: []string{"10.0.0.1/24"}}
	e.set(nil, &vppl3.VrfTable{Id: 3}, &vppl3.VrfTable{Id: 4}, if1)
	if2 := proto.Clone(if1).(*vppinterfaces.Interface)
	if2.Vrf = 4
	e.set(nil, if2)
	e.expect(scheduler.CONFIGURED, "vpp/interface/if1", "vpp/interface/if1/address/10.0.0.1/24")
	if got, want := e.f.state(), "if  local vrf 0 flags 0\nif if1 Loopback vrf 4 flags 0 10.0.0.1/24\ntables 6\n"; got != want {
		t.Errorf("VPP's state:\n%s\nwant:\n%s", got, want)
	}
}

// TestScenarioAgentRestart restarts the agent, not VPP: a new plugin and
// scheduler, knowing no index, resync against a VPP that holds everything
// already. Retrieve finds it all (in the order the models declare), and
// the resync makes no call but the dumps.
func TestScenarioAgentRestart(t *testing.T) {
	t.Parallel()
	values := []proto.Message{
		&vppl3.VrfTable{Id: 3},
		&vppinterfaces.Interface{Name: "if1", Type: vppinterfaces.Interface_TYPE_LOOPBACK, Enabled: true, Vrf: 3, IpAddresses: []string{"10.0.0.1/24"}},
		&vppinterfaces.Interface{Name: "m1", Type: vppinterfaces.Interface_TYPE_MEMIF, Mtu: 1500},
		&vppl2.BridgeDomain{Name: "bd1", Learn: true, Interfaces: []*vppl2.BridgeDomain_Interface{{Name: "m1"}, {Name: "if1", Bvi: true}}},
		&vppl2.FIBEntry{BridgeDomain: "bd1", PhysAddress: "02:00:00:00:00:01", OutgoingInterface: "m1", StaticConfig: true},
		&vppl3.Route{VrfId: 3, DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.2", OutgoingInterface: "if1"},
		&vppl3.ARPEntry{Interface: "if1", IpAddress: "10.0.0.2", PhysAddress: "02:00:00:00:00:02", Static: true},
	}
	f := newFakeVPP(t)
	first := func() {
		s, err := scheduler.New(scheduler.WithLogger(testLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(WithAdapter(f), WithLogger(testLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		defer s.Close(context.Background())
		if err := s.Register(p.Descriptors()...); err != nil {
			t.Fatal(err)
		}
		e := &env{t: t, ctx: context.Background(), p: p, f: f, s: s}
		e.set(nil, values...)
	}
	first()
	before := f.state()
	f.Requests()

	e := &env{t: t, ctx: context.Background(), f: f}
	var err error
	if e.s, err = scheduler.New(scheduler.WithLogger(testLogger(t))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.s.Close(context.Background()) })
	if e.p, err = New(WithAdapter(f), WithLogger(testLogger(t))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.p.Close() })
	if err := e.s.Register(e.p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	res := e.set([]scheduler.TxnOption{scheduler.FullResync()}, values...)
	for _, op := range res.Executed {
		if op.Kind == scheduler.OpCreate || op.Kind == scheduler.OpUpdate || op.Kind == scheduler.OpDelete {
			t.Errorf("the resync of a VPP in order made %s %s", op.Kind, op.Key)
		}
	}
	for _, st := range e.s.Statuses("vpp/") {
		if st.State != scheduler.CONFIGURED && st.State != scheduler.OBTAINED {
			t.Errorf("%s: %s (%v)", st.Key, st.State, st.LastErr)
		}
	}
	onlyDumps(t, f, "the resync")
	if got := f.state(); got != before {
		t.Errorf("VPP's state changed:\n%s\nwas:\n%s", got, before)
	}
	if m, ok := e.p.Interfaces().Get("m1"); !ok || m.SwIfIndex != 2 {
		t.Errorf("m1's metadata: %+v, %v; want sw_if_index 2", m, ok)
	}
	if m, ok := e.p.BridgeDomains().Get("bd1"); !ok || m.ID != 1 {
		t.Errorf("bd1's metadata: %+v, %v; want bd_id 1", m, ok)
	}
}

// TestScenarioHandMadeRouteObtained checks that a route added by hand in
// VPP shows up as OBTAINED, stays through a full resync (never deleted),
// and that VPP's own routes (defaults, specials, connected) show up not at
// all.
func TestScenarioHandMadeRouteObtained(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ours := &vppl3.Route{VrfId: 3, DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.2", OutgoingInterface: "if1"}
	if1 := loop("if1")
	if1.Vrf, if1.IpAddresses = 3, []string{"10.0.0.1/24"}
	values := []proto.Message{&vppl3.VrfTable{Id: 3}, if1, ours}
	e.set(nil, values...)
	e.f.Requests()
	e.f.Do(func(f *fakeVPP) {
		i, _ := f.ifIndex("if1")
		f.addRoute(3, "10.0.0.0/24", srcInterface, fib_types.FibPath{SwIfIndex: i, Weight: 1})
		f.addRoute(3, "10.0.0.1/32", srcInterface, fib_types.FibPath{SwIfIndex: i, Type: fib_types.FIB_API_PATH_TYPE_LOCAL})
		// vppctl ip route add 172.16.0.0/12 table 3 via 10.0.0.9 loop1
		p := fib_types.FibPath{SwIfIndex: i, Weight: 1}
		p.Nh.Address.SetIP4([4]byte{10, 0, 0, 9})
		f.addRoute(3, "172.16.0.0/12", srcCLI, p)
	})
	hand := "vpp/route/vrf/3/dst/172.16.0.0/12/gw/10.0.0.9"
	for range 2 {
		e.set([]scheduler.TxnOption{scheduler.FullResync()}, values...)
		e.expect(scheduler.CONFIGURED, keyOf(ours))
		e.expect(scheduler.OBTAINED, hand)
		var keys []string
		for _, st := range e.s.Statuses("vpp/route/") {
			keys = append(keys, st.Key)
		}
		if want := []string{keyOf(ours), hand}; !slices.Equal(keys, want) {
			t.Errorf("routes known %v, want %v", keys, want)
		}
	}
	for _, n := range e.f.RequestNames() {
		if n == "ip_route_add_del" {
			t.Errorf("a resync of a VPP in order sent %s", n)
		}
	}
}
