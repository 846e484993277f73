//go:build linux

package linux_test

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestNetnsDownstreamResyncRestores: an address removed behind the
// agent's back (with netlink directly) is MISSING after a downstream
// resync refreshed the southbound, and created again by it.
func TestNetnsDownstreamResyncRestores(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	values := exampleConfig()
	e.set(values...)
	addrKey := linuxinterfaces.InterfaceIpAddressesKey{Name: "veth0", IpAddresses: netip.MustParsePrefix("10.0.0.1/24")}.String()
	e.expect(scheduler.CONFIGURED, addrKey)

	// ip addr del 10.0.0.1/24 dev veth0, behind the agent's back; the
	// route through 10.0.0.254 goes with it.
	addr, _ := netlink.ParseAddr("10.0.0.1/24")
	if err := e.h.AddrDel(e.link("veth0"), addr); err != nil {
		t.Fatal(err)
	}
	res := e.commit(e.s.Txn(scheduler.DownstreamResync()))
	if !slices.ContainsFunc(res.Executed, func(o scheduler.Op) bool { return o.Key == addrKey && o.Kind == scheduler.OpCreate && o.Err == nil }) {
		t.Errorf("the downstream resync did not re-create %s:\n%s", addrKey, scheduler.FormatOps(res.Executed))
	}
	for _, v := range values {
		e.expect(scheduler.CONFIGURED, keyOf(v))
	}
	if got := addrsOf(t, e.h, "veth0"); !slices.Contains(got, "10.0.0.1/24") {
		t.Errorf("veth0 addresses after the resync: %q", got)
	}
	if got := ourRoutes(t, e.h, e.p.RouteProtocol()); !slices.Contains(got, "10.20.0.0/16 via 10.0.0.254 dev veth0 metric 0 table 254") {
		t.Errorf("routes after the resync: %q", got)
	}
}

// TestNetnsStartupResyncOverCorrectNamespace: an agent that starts over a
// namespace already configured as intended (by an earlier run) executes
// zero operations in its startup (full) resync; a stale route of ours (in
// the agent's record: Remembered) is deleted; a route with the agent's
// protocol number that the record does not hold (another agent's, or
// `ip route add ... proto 212`) is OBTAINED and left, as are the host's
// own routes and interfaces.
func TestNetnsStartupResyncOverCorrectNamespace(t *testing.T) {
	t.Parallel()
	startupOverConfigured(t, false)
}

// TestNetnsStartupResyncClaimedRouteProtocol: with
// WithClaimedRouteProtocol every route with the protocol number is the
// plugin's: the one the record does not hold is deleted too.
func TestNetnsStartupResyncClaimedRouteProtocol(t *testing.T) {
	t.Parallel()
	startupOverConfigured(t, true)
}

func startupOverConfigured(t *testing.T, claim bool) {
	e := newEnv(t)
	values := exampleConfig()
	e.set(values...)
	stale := &linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: "10.77.0.0/16"}
	e.set(stale)
	// The host's own interface and route.
	hostLink := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "host0"}}
	if err := e.h.LinkAdd(hostLink); err != nil {
		t.Fatal(err)
	}
	hostRoute := &netlink.Route{LinkIndex: e.link("veth0").Attrs().Index, Dst: mustCIDR("10.88.0.0/16"), Gw: net.ParseIP("10.0.0.8"), Protocol: unix.RTPROT_BOOT}
	if err := e.h.RouteAdd(hostRoute); err != nil {
		t.Fatal(err)
	}
	// ip route add 10.66.0.0/16 dev veth0 proto 212: not in the record.
	foreign := &netlink.Route{LinkIndex: e.link("veth0").Attrs().Index, Dst: mustCIDR("10.66.0.0/16"), Protocol: netlink.RouteProtocol(e.p.RouteProtocol())}
	if err := e.h.RouteAdd(foreign); err != nil {
		t.Fatal(err)
	}
	foreignKey := keyOf(&linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: "10.66.0.0/16"})

	// A second agent on the same namespace: what the first left is there,
	// and the first's record.
	p, err := linux.New(linux.WithNamespace(e.ns), linux.WithClaimedRouteProtocol(claim))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, err := scheduler.New(scheduler.WithLogger(slog.New(scheduler.NewLogHandler(testWriter{t}, slog.LevelInfo))))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if err := s.Register(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	var record []scheduler.KeyValue
	for _, v := range append(slices.Clone(values), stale) {
		record = append(record, scheduler.KeyValue{Key: keyOf(v), Value: proto.Clone(v)})
	}
	txn := s.Txn(scheduler.FullResync(), scheduler.Remembered(record...))
	for _, v := range values {
		txn.Set(keyOf(v), proto.Clone(v))
	}
	res, err := txn.Commit(context.Background())
	if err != nil {
		t.Fatalf("startup resync: %v", err)
	}
	var ops []string
	for _, o := range res.Executed {
		if o.Kind != scheduler.OpNone {
			ops = append(ops, o.Kind.String()+" "+o.Key)
		}
	}
	want := []string{"DELETE " + keyOf(stale)}
	if claim {
		want = []string{"DELETE " + foreignKey, "DELETE " + keyOf(stale)}
	}
	slices.Sort(ops)
	if !slices.Equal(ops, want) {
		t.Errorf("startup resync executed %q, want only %q:\n%s", ops, want, scheduler.FormatOps(res.Executed))
	}
	for _, v := range values {
		if st := s.Status(keyOf(v)); st.State != scheduler.CONFIGURED {
			t.Errorf("%s: %s after the startup resync (%v)", keyOf(v), st.State, st.LastErr)
		}
	}
	e.link("host0")
	if err := e.h.RouteDel(hostRoute); err != nil {
		t.Errorf("the host's route did not survive the resync: %v", err)
	}
	got := ourRoutes(t, e.h, p.RouteProtocol())
	if slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "10.77.") }) {
		t.Errorf("the stale route survived: %q", got)
	}
	kept := slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "10.66.") })
	switch st := s.Status(foreignKey); {
	case claim && kept:
		t.Errorf("the unrecorded route with our protocol survived a claiming resync: %q", got)
	case !claim && !kept:
		t.Errorf("the unrecorded route with our protocol was deleted: %q", got)
	case !claim && (st.State != scheduler.OBTAINED || st.Origin != kv.OriginSB):
		t.Errorf("%s: %s from %s, want OBTAINED from the southbound", foreignKey, st.State, st.Origin)
	}
	// And a second resync over the same state does nothing at all.
	res, err = txn.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range res.Executed {
		if o.Kind != scheduler.OpNone {
			t.Errorf("a second resync executed %s %s", o.Kind, o.Key)
		}
	}
}
