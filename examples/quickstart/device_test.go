package main

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// TestDeviceRefusesWrongOrder: the simulated device refuses what the kernel
// would refuse, and (unlike the kernel) deleting what something still uses,
// so that a wrong order of operations is an error.
func TestDeviceRefusesWrongOrder(t *testing.T) {
	var out bytes.Buffer
	d := newDevice(&out)
	p := netip.MustParsePrefix
	gw := netip.MustParseAddr("10.0.0.254")

	mustFail := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: accepted", what)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// Before the link exists.
	mustFail("address on a missing link", d.AddrAdd(1, p("10.0.0.1/24")))
	mustFail("route on a missing link", d.RouteAdd(p("10.20.0.0/16"), gw, 1, 0))
	_, err := d.LinkAdd(Link{Name: "veth1", Type: "veth", MTU: 1500})
	mustFail("veth without a peer", err)
	if d.State() != "  (empty)\n" {
		t.Fatalf("refused calls changed the device:\n%s", d.State())
	}

	// A veth pair: one call makes both ends.
	veth1, err := d.LinkAdd(Link{Name: "veth1", Type: "veth", Peer: "veth2", MTU: 1500, Up: true})
	must(err)
	veth2, ok := d.LinkIndex("veth2")
	if !ok || veth2 == veth1 {
		t.Fatalf("peer veth2: index %d (present %t), veth1 has %d", veth2, ok, veth1)
	}
	_, err = d.LinkAdd(Link{Name: "veth2", Type: "veth", Peer: "veth1", MTU: 1500})
	mustFail("a link that exists", err)

	// The route needs an address that reaches its gateway.
	mustFail("unreachable gateway", d.RouteAdd(p("10.20.0.0/16"), gw, veth1, 0))
	must(d.AddrAdd(veth1, p("10.0.0.1/24")))
	mustFail("an address that exists", d.AddrAdd(veth2, p("10.0.0.1/24")))
	must(d.RouteAdd(p("10.20.0.0/16"), gw, veth1, 0))

	// Deleting in the wrong order.
	mustFail("link with an address and a route", d.LinkDel("veth1"))
	mustFail("peer of a link with an address", d.LinkDel("veth2"))
	mustFail("address that a route's gateway needs", d.AddrDel(veth1, p("10.0.0.1/24")))

	want := "  addr 10.0.0.1/24 dev veth1\n" +
		"  link veth1 ifindex 1 veth peer veth2 mtu 1500 UP\n" +
		"  link veth2 ifindex 2 veth peer veth1 mtu 1500 DOWN\n" +
		"  route 10.20.0.0/16 via 10.0.0.254 dev veth1\n"
	if got := d.State(); got != want {
		t.Fatalf("device state after refused calls:\n%s\nwant:\n%s", got, want)
	}

	// The right order; deleting one veth end deletes both, and the other
	// end is then not found (a success for the scheduler).
	must(d.RouteDel(p("10.20.0.0/16"), veth1))
	must(d.AddrDel(veth1, p("10.0.0.1/24")))
	must(d.LinkDel("veth2"))
	if err := d.LinkDel("veth1"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("deleting the other end: %v, want kv.ErrNotFound", err)
	}
	for what, err := range map[string]error{
		"route": d.RouteDel(p("10.20.0.0/16"), veth1),
		"addr":  d.AddrDel(veth1, p("10.0.0.1/24")),
		"link":  d.LinkSet(Link{Name: "veth1", MTU: 1500}),
	} {
		if !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("%s of a deleted link: %v, want kv.ErrNotFound", what, err)
		}
	}
	if d.State() != "  (empty)\n" {
		t.Errorf("device not empty:\n%s", d.State())
	}

	// Every call is printed, refused ones with their error.
	for _, line := range []string{
		"device: ip addr add 10.0.0.1/24 dev if1  => error: no link with ifindex 1\n",
		"device: ip link add veth1 up type veth peer name veth2\n",
		"device: ip link del veth1  => error: link veth1 still has address 10.0.0.1/24\n",
		"device: ip link del veth2  => error: link veth1 still has address 10.0.0.1/24\n",
		"device: ip addr del 10.0.0.1/24 dev veth1  => error: route 10.20.0.0/16 still uses gateway 10.0.0.254\n",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("output lacks %q:\n%s", line, out.String())
		}
	}
}

// TestDeviceFailOnce: an injected failure fails the command once, and
// changes nothing.
func TestDeviceFailOnce(t *testing.T) {
	var out bytes.Buffer
	d := newDevice(&out)
	d.FailOnce("ip link add tap0 type tap", errBusy)
	if _, err := d.LinkAdd(Link{Name: "tap0", Type: "tap", MTU: 1500}); !errors.Is(err, errBusy) || !kv.IsRetriable(err) {
		t.Fatalf("first add: %v, want the retriable %v", err, errBusy)
	}
	if _, ok := d.LinkIndex("tap0"); ok {
		t.Fatal("a failed add created the link")
	}
	if _, err := d.LinkAdd(Link{Name: "tap0", Type: "tap", MTU: 1500}); err != nil {
		t.Fatalf("second add: %v", err)
	}
	if d.Calls() != 2 {
		t.Errorf("Calls() = %d, want 2", d.Calls())
	}
}
