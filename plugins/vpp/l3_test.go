package vpp

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/fib"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"

	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

func TestVrfTable(t *testing.T) {
	t.Parallel()
	p, f := newPlugin(t)
	h := &vrfTables{p: p}
	v := &vppl3.VrfTable{Id: 3, Label: "blue"}
	if _, err := h.Create(context.Background(), vppl3.VrfTableKey{Id: 3}, v); err != nil {
		t.Fatal(err)
	}
	expectRequests(t, f,
		&ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: 3, Name: "blue"}},
		&ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: 3, IsIP6: true, Name: "blue"}},
	)
	f.Do(func(f *fakeVPP) { f.tables[ip.IPTable{TableID: 7}] = true }) // vppctl ip table add 7
	got, err := h.Retrieve(context.Background(), []vppl3.VrfTableItem[struct{}]{{Key: vppl3.VrfTableKey{Id: 3}, Value: v}})
	if err != nil {
		t.Fatal(err)
	}
	want := []vppl3.VrfTableItem[struct{}]{
		{Key: vppl3.VrfTableKey{Id: 3}, Value: v, Origin: kv.OriginNB},
		{Key: vppl3.VrfTableKey{Id: 7}, Value: &vppl3.VrfTable{Id: 7}, Origin: kv.OriginSB},
	}
	if diff := cmp.Diff(want, got, protoCmp); diff != "" {
		t.Errorf("Retrieve (-want +got):\n%s", diff)
	}
	expectRequests(t, f, &ip.IPTableDump{})
	if err := h.Delete(context.Background(), vppl3.VrfTableKey{Id: 3}, v, struct{}{}); err != nil {
		t.Fatal(err)
	}
	expectRequests(t, f,
		&ip.IPTableAddDel{Table: ip.IPTable{TableID: 3, Name: "blue"}},
		&ip.IPTableAddDel{Table: ip.IPTable{TableID: 3, IsIP6: true, Name: "blue"}},
	)
}

func TestRoute(t *testing.T) {
	t.Parallel()
	p, f := newPlugin(t)
	loopbacks(t, p, f, "if1")
	f.Do(func(f *fakeVPP) { f.addTable(ip.IPTable{TableID: 3}) }) // vppctl ip table add 3
	h := &routes{p: p}
	r4 := &vppl3.Route{VrfId: 3, DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.1", OutgoingInterface: "if1", Preference: 2}
	k4 := vppl3.RouteKey{VrfId: 3, DstNetwork: netip.MustParsePrefix("10.1.0.0/16"), NextHopAddr: netip.MustParseAddr("10.0.0.1")}
	r6 := &vppl3.Route{DstNetwork: "2001:db8:1::/48", NextHopAddr: "2001:db8::1", Weight: 5}
	k6 := vppl3.RouteKey{DstNetwork: netip.MustParsePrefix("2001:db8:1::/48"), NextHopAddr: netip.MustParseAddr("2001:db8::1")}
	for _, c := range []struct {
		k vppl3.RouteKey
		v *vppl3.Route
	}{{k4, r4}, {k6, r6}} {
		if _, err := h.Create(context.Background(), c.k, c.v); err != nil {
			t.Fatal(err)
		}
	}
	path4 := fib_types.FibPath{SwIfIndex: 1, TableID: 3, Weight: 1, Preference: 2, Nh: fib_types.FibPathNh{Address: ip_types.AddressUnionIP4(ip_types.IP4Address{10, 0, 0, 1})}}
	nh6, _ := ip_types.ParseIP6Address("2001:db8::1")
	path6 := fib_types.FibPath{SwIfIndex: ^uint32(0), Weight: 5, Proto: fib_types.FIB_API_PATH_NH_PROTO_IP6, Nh: fib_types.FibPathNh{Address: ip_types.AddressUnionIP6(nh6)}}
	route := func(table uint32, dst string, path fib_types.FibPath) ip.IPRoute {
		return ip.IPRoute{TableID: table, Prefix: prefix(netip.MustParsePrefix(dst)), NPaths: 1, Paths: []fib_types.FibPath{path}}
	}
	expectRequests(t, f,
		&ip.IPRouteAddDel{IsAdd: true, IsMultipath: true, Route: route(3, "10.1.0.0/16", path4)},
		&ip.IPRouteAddDel{IsAdd: true, IsMultipath: true, Route: route(0, "2001:db8:1::/48", path6)},
	)
	via := func(nh string, idx uint32) fib_types.FibPath {
		p := fib_types.FibPath{SwIfIndex: idx, Weight: 1}
		p.Nh.Address.SetIP4(netip.MustParseAddr(nh).As4())
		return p
	}
	// What VPP adds on its own (besides each table's default and special
	// routes) and what someone adds by hand.
	f.Do(func(f *fakeVPP) {
		f.addRoute(3, "10.0.0.0/24", srcInterface, fib_types.FibPath{SwIfIndex: 1, Weight: 1})                                    // connected
		f.addRoute(3, "10.0.0.5/32", srcInterface, fib_types.FibPath{SwIfIndex: 1, Type: fib_types.FIB_API_PATH_TYPE_LOCAL})      // local
		f.addRoute(3, "10.0.0.1/32", srcAdjacency, via("10.0.0.1", 1))                                                            // a resolved neighbour
		f.addRoute(3, "10.0.0.9/32", srcCLI, via("10.0.0.9", 1))                                                                  // by hand, but the
		f.addRoute(3, "10.0.0.9/32", srcInterface, fib_types.FibPath{SwIfIndex: 1, Type: fib_types.FIB_API_PATH_TYPE_LOCAL})      // interface source wins
		f.addTable(ip.IPTable{TableID: 7})                                                                                        // vppctl ip table add 7
		f.addRoute(7, "192.168.5.0/24", srcCLI, via("10.0.0.7", 1))                                                               // vppctl ip route add 192.168.5.0/24 table 7 via 10.0.0.7 loop1
		f.addRoute(7, "192.168.6.0/24", srcCLI, fib_types.FibPath{SwIfIndex: ^uint32(0), Type: fib_types.FIB_API_PATH_TYPE_DROP}) // ... via drop: not a route of the model
	})
	got, err := h.Retrieve(context.Background(), []vppl3.RouteItem[struct{}]{{Key: k4, Value: r4}, {Key: k6, Value: r6}})
	if err != nil {
		t.Fatal(err)
	}
	want := []vppl3.RouteItem[struct{}]{
		{Key: k6, Value: &vppl3.Route{DstNetwork: "2001:db8:1::/48", NextHopAddr: "2001:db8::1", Weight: 5}, Origin: kv.OriginNB},
		{Key: k4, Value: &vppl3.Route{VrfId: 3, DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.1", OutgoingInterface: "if1", Weight: 1, Preference: 2}, Origin: kv.OriginNB},
		{
			Key:    vppl3.RouteKey{VrfId: 7, DstNetwork: netip.MustParsePrefix("192.168.5.0/24"), NextHopAddr: netip.MustParseAddr("10.0.0.7")},
			Value:  &vppl3.Route{VrfId: 7, DstNetwork: "192.168.5.0/24", NextHopAddr: "10.0.0.7", OutgoingInterface: "if1", Weight: 1},
			Origin: kv.OriginSB,
		},
	}
	if diff := cmp.Diff(want, got, protoCmp); diff != "" {
		t.Errorf("Retrieve (-want +got):\n%s", diff)
	}
	expectRequests(t, f, &fib.FibSourceDump{}, &ip.IPTableDump{},
		&ip.IPRouteV2Dump{Table: ip.IPTable{TableID: 0}}, &ip.IPRouteV2Dump{Table: ip.IPTable{TableID: 0, IsIP6: true}},
		&ip.IPRouteV2Dump{Table: ip.IPTable{TableID: 3}}, &ip.IPRouteV2Dump{Table: ip.IPTable{TableID: 7}},
	)
	if err := h.Delete(context.Background(), k6, r6, struct{}{}); err != nil {
		t.Fatal(err)
	}
	expectRequests(t, f, &ip.IPRouteAddDel{IsMultipath: true, Route: route(0, "2001:db8:1::/48", path6)})
}

func TestARPEntry(t *testing.T) {
	t.Parallel()
	p, f := newPlugin(t)
	loopbacks(t, p, f, "if1")
	h := &arpEntries{p: p}
	a := &vppl3.ARPEntry{Interface: "if1", IpAddress: "10.0.0.2", PhysAddress: "02:00:00:00:00:01", Static: true}
	k := vppl3.ARPEntryKey{Interface: "if1", IpAddress: netip.MustParseAddr("10.0.0.2")}
	if _, err := h.Create(context.Background(), k, a); err != nil {
		t.Fatal(err)
	}
	n := ip_neighbor.IPNeighbor{SwIfIndex: 1, Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: mac1, IPAddress: address(netip.MustParseAddr("10.0.0.2"))}
	expectRequests(t, f, &ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: n})
	// One added by hand (static), one learnt (not configuration).
	f.Do(func(f *fakeVPP) {
		f.neigh = append(f.neigh,
			ip_neighbor.IPNeighbor{SwIfIndex: 1, Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: ethernet_types.MacAddress{2, 0, 0, 0, 0, 9}, IPAddress: address(netip.MustParseAddr("2001:db8::9"))},
			ip_neighbor.IPNeighbor{SwIfIndex: 1, MacAddress: ethernet_types.MacAddress{2, 0, 0, 0, 0, 8}, IPAddress: address(netip.MustParseAddr("10.0.0.8"))},
		)
	})
	got, err := h.Retrieve(context.Background(), []vppl3.ARPEntryItem[struct{}]{{Key: k, Value: a}})
	if err != nil {
		t.Fatal(err)
	}
	want := []vppl3.ARPEntryItem[struct{}]{
		{Key: k, Value: a, Origin: kv.OriginNB},
		{Key: vppl3.ARPEntryKey{Interface: "if1", IpAddress: netip.MustParseAddr("2001:db8::9")}, Value: &vppl3.ARPEntry{Interface: "if1", IpAddress: "2001:db8::9", PhysAddress: "02:00:00:00:00:09", Static: true}, Origin: kv.OriginSB},
	}
	if diff := cmp.Diff(want, got, protoCmp); diff != "" {
		t.Errorf("Retrieve (-want +got):\n%s", diff)
	}
	expectRequests(t, f,
		&ip_neighbor.IPNeighborDump{SwIfIndex: ^interface_types.InterfaceIndex(0), Af: ip_types.ADDRESS_IP4},
		&ip_neighbor.IPNeighborDump{SwIfIndex: ^interface_types.InterfaceIndex(0), Af: ip_types.ADDRESS_IP6},
	)
	if err := h.Delete(context.Background(), k, a, struct{}{}); err != nil {
		t.Fatal(err)
	}
	expectRequests(t, f, &ip_neighbor.IPNeighborAddDel{Neighbor: n})
	// VPP's answer that it has no such neighbour: the call named, and a
	// delete of what is not there succeeds in the scheduler.
	f.Fail("ip_neighbor_add_del", retvalNoSuchEntry)
	err = h.Delete(context.Background(), k, a, struct{}{})
	if !errors.Is(err, kv.ErrNotFound) || !strings.HasPrefix(err.Error(), "ip_neighbor_add_del: ") {
		t.Errorf("Delete of a missing neighbour: %v, want ip_neighbor_add_del: ... kv.ErrNotFound", err)
	}
	// An interface with no sw_if_index known: no call.
	if _, err := h.Create(context.Background(), vppl3.ARPEntryKey{Interface: "nope", IpAddress: k.IpAddress}, a); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("Create on an unknown interface: %v, want kv.ErrNotFound", err)
	}
	expectRequests(t, f, &ip_neighbor.IPNeighborAddDel{Neighbor: n})
}
