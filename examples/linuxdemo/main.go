// Command linuxdemo drives the scheduler and the Linux plugin end to end,
// against the real kernel, in a network namespace of its own.
//
// It creates a fresh network namespace, commits a route whose gateway is
// not reachable yet (it waits, PENDING), then a veth pair, a bridge with a
// veth end and a TAP device as members, and addresses; the route stays
// PENDING until the address that makes its gateway reachable arrives,
// and is created in that transaction. It prints the transaction log and
// the status of every value, and checks the kernel's state with netlink.
// Then it removes an address behind the agent's back, and a downstream
// resync finds it MISSING and restores it; a second resync has nothing to
// do. Last, an agent (runtime/agent) whose file holds the same values
// takes the namespace over: its startup resync makes no call. The
// namespace is removed on exit.
//
// It needs root (to create a network namespace). Run it with `make demo`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"google.golang.org/protobuf/proto"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func main() {
	if err := checkRoot(os.Geteuid()); err != nil {
		fmt.Fprintln(os.Stderr, "linuxdemo:", err)
		os.Exit(1)
	}
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "linuxdemo:", err)
		os.Exit(1)
	}
}

// checkRoot explains why the demo cannot run without root.
func checkRoot(euid int) error {
	if euid != 0 {
		return fmt.Errorf("it creates a network namespace and interfaces in it, which needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN); run it as root, e.g. `sudo make demo` (euid is %d)", euid)
	}
	return nil
}

// The configuration of the demo.
var (
	veth0 = &linuxinterfaces.Interface{Name: "veth0", Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: "veth1", Enabled: true}
	veth1 = &linuxinterfaces.Interface{Name: "veth1", Type: linuxinterfaces.Interface_TYPE_VETH, VethPeer: "veth0", Enabled: true, Master: "br0"}
	br0   = &linuxinterfaces.Interface{Name: "br0", Type: linuxinterfaces.Interface_TYPE_BRIDGE, Enabled: true, Mtu: 1400, IpAddresses: []string{"192.168.50.1/24"}}
	tap0  = &linuxinterfaces.Interface{Name: "tap0", Type: linuxinterfaces.Interface_TYPE_TAP, Enabled: true, Master: "br0", Mtu: 1400}
	route = &linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: "10.99.0.0/16", GwAddr: "10.10.0.254"}
	// veth0Addressed is veth0 with the address whose network holds the
	// route's gateway.
	veth0Addressed = func() *linuxinterfaces.Interface {
		v := proto.Clone(veth0).(*linuxinterfaces.Interface)
		v.IpAddresses = []string{"10.10.0.1/24"}
		return v
	}()
	routeKey = linuxl3.RouteKeyFor(route)
)

// run plays the demo, writing to w, in a fresh network namespace that it
// removes before returning.
func run(w io.Writer) (err error) {
	ns, err := newNamespace()
	if err != nil {
		return fmt.Errorf("creating a network namespace: %w", err)
	}
	defer ns.Close() // the last handle: the namespace goes with it
	fmt.Fprintf(w, "a fresh network namespace (%s); nothing outside it is touched\n", ns)

	p, err := linux.New(linux.WithNamespace(ns))
	if err != nil {
		return err
	}
	defer p.Close()
	logger := slog.New(scheduler.NewLogHandler(w, slog.LevelInfo))
	s, err := scheduler.New(scheduler.WithLogger(logger))
	if err != nil {
		return err
	}
	ctx := context.Background()
	defer func() {
		if cerr := s.Close(ctx); err == nil {
			err = cerr
		}
	}()
	if err := s.Register(p.Descriptors()...); err != nil {
		return err
	}

	step := func(title string) { fmt.Fprintf(w, "\n=== %s ===\n", title) }

	step("1. The route first: its interface does not exist yet")
	if _, err := s.Txn(scheduler.Description("route")).Set(routeKey, route).Commit(ctx); err != nil {
		return err
	}
	if err := expect(s, scheduler.PENDING, routeKey); err != nil {
		return err
	}
	printWhy(w, s)

	step("2. The interfaces: a veth pair, a bridge with two members; veth0 has no address yet")
	txn := s.Txn(scheduler.Description("interfaces"))
	for _, v := range []*linuxinterfaces.Interface{veth0, veth1, br0, tap0} {
		txn.Set(linuxinterfaces.InterfaceKeyFor(v), v)
	}
	if _, err := txn.Commit(ctx); err != nil {
		return err
	}
	if err := expect(s, scheduler.PENDING, routeKey); err != nil {
		return err
	}
	printWhy(w, s)

	step("3. veth0 gets 10.10.0.1/24: the gateway is reachable, the route is created in the same transaction")
	res, err := s.Txn(scheduler.Description("veth0 address")).Set(linuxinterfaces.InterfaceKeyFor(veth0Addressed), veth0Addressed).Commit(ctx)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(res.Executed, func(o scheduler.Op) bool {
		return o.Key == routeKey && o.Kind == scheduler.OpCreate && o.Flags&scheduler.FlagWasPending != 0 && o.Err == nil
	}) {
		return fmt.Errorf("transaction #%d did not create the pending route:\n%s", res.Seq, scheduler.FormatOps(res.Executed))
	}

	step("4. The status of every value")
	if err := printStatuses(w, s); err != nil {
		return err
	}

	step("5. The kernel's state, read with netlink")
	if err := checkKernel(w, ns, p.RouteProtocol()); err != nil {
		return err
	}

	step("6. Behind the agent's back: br0's address removed with netlink; a downstream resync restores it")
	if err := removeAddress(ns, "br0", brAddressCIDR); err != nil {
		return err
	}
	fmt.Fprintf(w, "ip addr del %s dev br0 (netlink, not through the agent)\n", brAddressCIDR)
	res, err = s.Txn(scheduler.DownstreamResync(), scheduler.Description("repair")).Commit(ctx)
	if err != nil {
		return err
	}
	missing := slices.ContainsFunc(res.Executed, func(o scheduler.Op) bool {
		return o.Key == brAddressKey && o.Flags&scheduler.FlagMissing != 0
	})
	recreated := slices.ContainsFunc(res.Executed, func(o scheduler.Op) bool {
		return o.Key == brAddressKey && o.Kind == scheduler.OpCreate && o.Err == nil
	})
	if !missing || !recreated {
		return fmt.Errorf("transaction #%d did not find %s MISSING and create it again:\n%s", res.Seq, brAddressKey, scheduler.FormatOps(res.Executed))
	}
	for _, e := range s.Timeline(brAddressKey) {
		fmt.Fprintf(w, "timeline of %s: #%d %s -> %s [%s]\n", brAddressKey, e.Seq, e.Op, e.State, e.Flags)
	}

	step("7. The kernel's state again")
	if err := checkKernel(w, ns, p.RouteProtocol()); err != nil {
		return err
	}

	step("8. A second downstream resync: nothing to do")
	res, err = s.Txn(scheduler.DownstreamResync(), scheduler.Description("check")).Commit(ctx)
	if err != nil {
		return err
	}
	if len(res.Executed) != 0 {
		return fmt.Errorf("a resync over a correct namespace executed:\n%s", scheduler.FormatOps(res.Executed))
	}
	fmt.Fprintf(w, "transaction #%d (downstream resync) executed no operation\n", res.Seq)

	step("9. An agent (runtime/agent) takes the namespace over, its file holding the same values")
	rec, err := asAgent(w, ns)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(rec.Executed, func(o scheduler.Op) bool { return o.Called }) {
		return fmt.Errorf("the agent's startup resync called the kernel:\n%s", scheduler.FormatOps(rec.Executed))
	}
	fmt.Fprintf(w, "the agent's startup resync (#%d, %s) found every value in the kernel and made no call\n", rec.Seq, rec.Kind)
	return nil
}

// The address of br0, removed behind the agent's back in step 6.
const brAddressCIDR = "192.168.50.1/24"

var brAddressKey = "linux/interface/br0/address/" + brAddressCIDR

// removeAddress deletes an address with netlink directly, as another
// program would.
func removeAddress(ns netns.NsHandle, link, cidr string) error {
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	l, err := h.LinkByName(link)
	if err != nil {
		return err
	}
	addr, err := netlink.ParseAddr(cidr)
	if err != nil {
		return err
	}
	return h.AddrDel(l, addr)
}

// newNamespace creates an unnamed network namespace on a locked thread,
// switching the thread back before unlocking it.
func newNamespace() (netns.NsHandle, error) { return linux.NewNamespace() }

func expect(s *scheduler.Scheduler, state scheduler.State, key string) error {
	if st := s.Status(key); st.State != state {
		return fmt.Errorf("%s is %s (last error: %v), want %s", key, st.State, st.LastErr, state)
	}
	return nil
}

func printWhy(w io.Writer, s *scheduler.Scheduler) {
	if why, ok := s.WhyPending(routeKey); ok {
		fmt.Fprintf(w, "WhyPending:\n%s", why)
	}
}

func printStatuses(w io.Writer, s *scheduler.Scheduler) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tSTATE\tORIGIN\tLAST OP\tMETADATA")
	var bad []string
	for _, st := range s.Statuses("") {
		meta := ""
		if st.Metadata != nil {
			if m, ok := st.Metadata.(linux.InterfaceMeta); ok {
				meta = fmt.Sprintf("ifindex %d", m.Index)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", st.Key, st.State, st.Origin, st.LastOp, meta)
		if st.State != scheduler.CONFIGURED {
			bad = append(bad, st.Key+" "+st.State.String())
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("values not CONFIGURED: %s", strings.Join(bad, ", "))
	}
	return nil
}

// checkKernel reads the namespace with netlink and checks it against the
// configuration.
func checkKernel(w io.Writer, ns netns.NsHandle, proto int) error {
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	var errs []error
	check := func(ok bool, format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		if ok {
			fmt.Fprintln(w, "ok  ", line)
		} else {
			fmt.Fprintln(w, "FAIL", line)
			errs = append(errs, errors.New(line))
		}
	}
	links := map[string]netlink.Link{}
	for _, name := range []string{"veth0", "veth1", "br0", "tap0"} {
		l, err := h.LinkByName(name)
		if err != nil {
			check(false, "ip link show %s: %v", name, err)
			continue
		}
		links[name] = l
		check(l.Attrs().Flags&net.FlagUp != 0, "%s is a %s link, up", name, l.Type())
	}
	if len(links) < 4 {
		return errors.Join(errs...)
	}
	br := links["br0"].Attrs().Index
	check(links["veth1"].Attrs().MasterIndex == br, "veth1 is a member of br0")
	check(links["tap0"].Attrs().MasterIndex == br, "tap0 is a member of br0")
	check(links["br0"].Attrs().MTU == 1400, "br0 has MTU %d", links["br0"].Attrs().MTU)
	for name, want := range map[string]string{"veth0": "10.10.0.1/24", "br0": "192.168.50.1/24"} {
		addrs, err := h.AddrList(links[name], netlink.FAMILY_V4)
		check(err == nil && slices.ContainsFunc(addrs, func(a netlink.Addr) bool { return a.IPNet.String() == want }), "%s has address %s", name, want)
	}
	routes, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: netlink.RouteProtocol(proto)}, netlink.RT_FILTER_PROTOCOL)
	check(err == nil && len(routes) == 1 && routes[0].Dst.String() == "10.99.0.0/16" && routes[0].Gw.String() == "10.10.0.254" && routes[0].LinkIndex == links["veth0"].Attrs().Index,
		"route 10.99.0.0/16 via 10.10.0.254 dev veth0 proto %d (the plugin's routes: %d)", proto, len(routes))
	return errors.Join(errs...)
}
