// Command quickstart shows the scheduler at work on a simulated device.
//
// Three descriptors are written by hand against runtime/kv, the way
// generated code will write them: interface (each of its IP addresses
// derives an address value), address, and route (it needs its outgoing
// interface and an address whose network contains its gateway). The demo
// commits a route before its interface, previews a plan, reverts a failed
// transaction, waits for a retried one, and prints the status of every value.
//
// Run it with `make demo`. It exits non-zero when a value does not reach the
// state the demo expects, so it doubles as a smoke test of the scheduler.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// run plays the whole scenario, writing to w, and returns the first
// expectation that was not met.
func run(w io.Writer) error {
	w = &syncWriter{w: w}
	dev := newDevice(w)
	descs, err := descriptors(dev)
	if err != nil {
		return err
	}
	logger := slog.New(scheduler.NewLogHandler(w, slog.LevelInfo))
	s, err := scheduler.New(scheduler.WithLogger(logger))
	if err != nil {
		return err
	}
	if err := s.Register(descs...); err != nil {
		return err
	}
	d := &demo{ctx: context.Background(), w: w, s: s, dev: dev}
	steps := []struct {
		title string
		run   func() error
	}{
		{"1. A route committed before its interface waits as PENDING", d.routeFirst},
		{"2. The interface arrives: its address is derived and the route follows", d.interfaceArrives},
		{"3. Dry run: preview the plan of deleting the interface", d.previewDelete},
		{"4. A failing transaction with Revert leaves the device as it was", d.revertOnFailure},
		{"5. CommitAndWait: a busy device, a retry, and a wait until all settle", d.commitAndWait},
		{"6. Status of every value", d.statusTable},
	}
	for _, st := range steps {
		fmt.Fprintf(w, "\n=== %s ===\n", st.title)
		if err = st.run(); err != nil {
			err = fmt.Errorf("step %q: %w", st.title, err)
			break
		}
	}
	if cerr := s.Close(d.ctx); err == nil {
		err = cerr
	}
	if err == nil {
		fmt.Fprintln(w, "\nall expected states reached")
	}
	return err
}

// The values of the scenario.
var (
	eth0      = netip.MustParsePrefix("10.0.0.1/24")
	eth0Extra = netip.MustParsePrefix("10.0.1.1/24")
	eth1      = netip.MustParsePrefix("10.1.0.1/24")
	net20     = netip.MustParsePrefix("10.20.0.0/16")
	net30     = netip.MustParsePrefix("10.30.0.0/16")
)

type demo struct {
	ctx context.Context
	w   io.Writer
	s   *scheduler.Scheduler
	dev *device
}

func (d *demo) routeFirst() error {
	key, value := Route(net20, "eth0", "10.0.0.254")
	if _, err := d.s.Txn().Set(key, value).Commit(d.ctx); err != nil {
		return err
	}
	if err := d.expect(key, scheduler.PENDING); err != nil {
		return err
	}
	why, ok := d.s.WhyPending(key)
	if !ok {
		return fmt.Errorf("WhyPending(%s) explains nothing", key)
	}
	fmt.Fprintf(d.w, "WhyPending:\n%s", why)
	return nil
}

func (d *demo) interfaceArrives() error {
	res, err := d.s.Txn(scheduler.Description("add eth0")).Set(Interface("eth0", 1500, eth0)).Commit(d.ctx)
	if err != nil {
		return err
	}
	route := RouteKey(net20)
	if err := d.expect(InterfaceKey("eth0"), scheduler.CONFIGURED); err != nil {
		return err
	}
	if err := d.expect(AddressKey("eth0", eth0), scheduler.CONFIGURED); err != nil {
		return err
	}
	if err := d.expect(route, scheduler.CONFIGURED); err != nil {
		return err
	}
	i := slices.IndexFunc(res.Executed, func(o scheduler.Op) bool { return o.Key == route && o.Kind == scheduler.OpCreate })
	if i < 0 || res.Executed[i].Flags&scheduler.FlagWasPending == 0 {
		return fmt.Errorf("transaction #%d did not create the pending route %s", res.Seq, route)
	}
	fmt.Fprintf(d.w, "the route was created by transaction #%d, the one that added eth0\n", res.Seq)
	return nil
}

func (d *demo) previewDelete() error {
	before := d.dev.State()
	res, err := d.s.Txn(scheduler.DryRun()).Delete(InterfaceKey("eth0")).Commit(d.ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.w, "plan preview (nothing executed):\n%s\n", scheduler.FormatOps(res.Planned))
	var got []string
	for _, o := range res.Planned {
		if o.Kind != scheduler.OpNone {
			got = append(got, o.Kind.String()+" "+o.Key)
		}
	}
	want := []string{
		"DELETE " + RouteKey(net20),
		"DELETE " + AddressKey("eth0", eth0),
		"DELETE " + InterfaceKey("eth0"),
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("plan %q, want %q", got, want)
	}
	if !res.DryRun || len(res.Executed) != 0 || d.dev.State() != before {
		return errors.New("the dry run executed something")
	}
	return d.expect(InterfaceKey("eth0"), scheduler.CONFIGURED)
}

func (d *demo) revertOnFailure() error {
	before := d.dev.State()
	failing := "ip addr add " + eth0Extra.String() + " dev eth0"
	d.dev.FailOnce(failing, errors.New("injected failure"))
	fmt.Fprintf(d.w, "the device will fail %q\n", failing)
	res, err := d.s.Txn(scheduler.Revert(), scheduler.Description("eth0: MTU 9000, second address")).
		Set(Interface("eth0", 9000, eth0, eth0Extra)).
		Commit(d.ctx)
	var txnErr *scheduler.TxnError
	if !errors.As(err, &txnErr) || !res.Reverted {
		return fmt.Errorf("want a reverted transaction, got error %v", err)
	}
	fmt.Fprintf(d.w, "Commit: %v\n", err)
	if after := d.dev.State(); after != before {
		return fmt.Errorf("device changed by a reverted transaction:\nbefore:\n%safter:\n%s", before, after)
	}
	fmt.Fprintln(d.w, "device unchanged by the reverted transaction")
	if mtu := mtuOf(d.s.Status(InterfaceKey("eth0")).Value); mtu != 1500 {
		return fmt.Errorf("eth0 intends MTU %d after the revert, want 1500", mtu)
	}
	if err := d.expect(AddressKey("eth0", eth0Extra), scheduler.NONEXISTENT); err != nil {
		return err
	}
	return d.expect(InterfaceKey("eth0"), scheduler.CONFIGURED)
}

func (d *demo) commitAndWait() error {
	d.dev.FailOnce("ip link add eth1 mtu 1500", errors.New("device busy"))
	fmt.Fprintln(d.w, `the device will fail "ip link add eth1 mtu 1500" once, with a retriable error`)
	ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
	defer cancel()
	res, err := d.s.Txn(scheduler.Retry(scheduler.RetryPolicy{Period: 20 * time.Millisecond, MaxAttempts: 3})).
		Set(Interface("eth1", 1500, eth1)).
		Set(Route(net30, "eth1", "10.1.0.254")).
		CommitAndWait(ctx)
	if err != nil {
		// The error is about the outcomes: a failure that the retry
		// repaired is not one.
		return fmt.Errorf("CommitAndWait: %w", err)
	}
	fmt.Fprintf(d.w, "the first attempt failed, the retry succeeded; outcomes after the wait:\n")
	for _, o := range res.Outcomes {
		fmt.Fprintf(d.w, "  %-28s %s\n", o.Key, o.State)
		if o.State != scheduler.CONFIGURED {
			return fmt.Errorf("%s ended %s (%v), want CONFIGURED", o.Key, o.State, o.Err)
		}
	}
	return d.expect(AddressKey("eth1", eth1), scheduler.CONFIGURED)
}

func (d *demo) statusTable() error {
	tw := tabwriter.NewWriter(d.w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tSTATE\tDESCRIPTOR\tLAST ERROR")
	all := d.s.Statuses("")
	for _, st := range all {
		lastErr := "-"
		if st.LastErr != nil {
			lastErr = st.LastErr.Error()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", st.Key, st.State, st.Descriptor, lastErr)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(d.w, "\ndevice:\n%s", d.dev.State())
	want := []string{
		AddressKey("eth0", eth0), AddressKey("eth1", eth1),
		InterfaceKey("eth0"), InterfaceKey("eth1"),
		RouteKey(net20), RouteKey(net30),
	}
	var got []string
	for _, st := range all {
		got = append(got, st.Key)
		if st.State != scheduler.CONFIGURED {
			return fmt.Errorf("%s is %s, want CONFIGURED", st.Key, st.State)
		}
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("values %q, want %q", got, want)
	}
	return nil
}

// expect checks the state of key.
func (d *demo) expect(key string, want scheduler.State) error {
	st := d.s.Status(key)
	if st.State != want {
		return fmt.Errorf("%s is %s (last error: %v), want %s", key, st.State, st.LastErr, want)
	}
	fmt.Fprintf(d.w, "ok: %s is %s\n", key, want)
	return nil
}

// The key templates. Interface names are escaped in keys (kv.EscapeSegment);
// addresses keep their host bits, the prefix length says the network.
var (
	interfaceKeys = kv.MustParseKeyTemplate("demo/interface/{name}")
	addressKeys   = kv.MustParseKeyTemplate("demo/address/{iface}/{ip:ipprefix}")
	routeKeys     = kv.MustParseKeyTemplate("demo/route/{dst:ipprefix}")
)

// InterfaceKey returns the key of interface name.
func InterfaceKey(name string) string { return interfaceKeys.Build(kv.EscapeSegment(name)) }

// AddressKey returns the key of an address of interface iface.
func AddressKey(iface string, ip netip.Prefix) string {
	return addressKeys.Build(kv.EscapeSegment(iface), ip.String())
}

// addressPrefix is the prefix of the address keys of interface iface.
func addressPrefix(iface string) string { return addressKeys.Prefix() + kv.EscapeSegment(iface) + "/" }

// RouteKey returns the key of the route to dst (canonical: host bits cleared).
func RouteKey(dst netip.Prefix) string { return routeKeys.Build(dst.Masked().String()) }

// Interface returns the key and value of an interface. Until generated model
// code exists, values are structpb.Struct: {"mtu": 1500, "ip_addresses": [...]}.
func Interface(name string, mtu int, addrs ...netip.Prefix) (string, *structpb.Struct) {
	list := &structpb.ListValue{}
	for _, a := range addrs {
		list.Values = append(list.Values, structpb.NewStringValue(a.String()))
	}
	return InterfaceKey(name), &structpb.Struct{Fields: map[string]*structpb.Value{
		"mtu":          structpb.NewNumberValue(float64(mtu)),
		"ip_addresses": structpb.NewListValue(list),
	}}
}

// Route returns the key and value of a route to dst via gateway gw on dev.
func Route(dst netip.Prefix, dev, gw string) (string, *structpb.Struct) {
	return RouteKey(dst), &structpb.Struct{Fields: map[string]*structpb.Value{
		"outgoing_interface": structpb.NewStringValue(dev),
		"gateway":            structpb.NewStringValue(gw),
	}}
}

func mtuOf(v any) int {
	s, _ := v.(*structpb.Struct)
	return int(s.GetFields()["mtu"].GetNumberValue())
}

func addressesOf(v *structpb.Struct) []string {
	var out []string
	for _, a := range v.GetFields()["ip_addresses"].GetListValue().GetValues() {
		out = append(out, a.GetStringValue())
	}
	return out
}

func text(v *structpb.Struct, field string) string { return v.GetFields()[field].GetStringValue() }

// interfaceName returns the (unescaped) interface name in an interface or
// address key.
func interfaceName(key string) string {
	t := interfaceKeys
	if strings.HasPrefix(key, addressKeys.Prefix()) {
		t = addressKeys
	}
	parts, ok := t.Split(key)
	if !ok {
		return ""
	}
	name, err := kv.UnescapeSegment(parts[0])
	if err != nil {
		return ""
	}
	return name
}

// descriptors builds the three descriptors: the Spec is what the generator
// will emit from annotations, the handler is what a plugin author writes.
func descriptors(dev *device) ([]kv.Descriptor, error) {
	iface, err := kv.NewDescriptor(kv.Spec[*structpb.Struct, struct{}]{
		Name:        "interface",
		KeyTemplate: interfaceKeys.String(),
		Derived: func(key string, v *structpb.Struct) []kv.Derived {
			var out []kv.Derived
			for _, a := range addressesOf(v) {
				if p, err := netip.ParsePrefix(a); err == nil {
					out = append(out, kv.Derived{Key: AddressKey(interfaceName(key), p), Value: wrapperspb.String(p.String())})
				}
			}
			return out
		},
		Validate: func(key string, v *structpb.Struct) error {
			var errs *kv.InvalidValueError
			if mtu := mtuOf(v); mtu < 68 || mtu > 65535 {
				errs = errs.Add("mtu", "must be between 68 and 65535, got %d", mtu)
			}
			for i, a := range addressesOf(v) {
				if _, err := netip.ParsePrefix(a); err != nil {
					errs = errs.Add(fmt.Sprintf("ip_addresses[%d]", i), "%v", err)
				}
			}
			return errs.OrNil()
		},
	}, interfaceHandler{dev})
	if err != nil {
		return nil, err
	}
	addr, err := kv.NewDescriptor(kv.Spec[*wrapperspb.StringValue, struct{}]{
		Name:        "address",
		KeyTemplate: addressKeys.String(),
		Dependencies: func(key string, _ *wrapperspb.StringValue) []kv.Dependency {
			return []kv.Dependency{{Label: "interface", Key: InterfaceKey(interfaceName(key))}}
		},
	}, addressHandler{dev})
	if err != nil {
		return nil, err
	}
	route, err := kv.NewDescriptor(kv.Spec[*structpb.Struct, struct{}]{
		Name:        "route",
		KeyTemplate: routeKeys.String(),
		Dependencies: func(_ string, v *structpb.Struct) []kv.Dependency {
			dev := text(v, "outgoing_interface")
			deps := []kv.Dependency{{Label: "interface", Key: InterfaceKey(dev)}}
			if gw, err := netip.ParseAddr(text(v, "gateway")); err == nil {
				deps = append(deps, kv.Dependency{Label: "gateway", AnyOf: kv.AnyOf{
					Prefixes: []string{addressPrefix(dev)},
					Match:    kv.NetworkContains(gw),
					Describe: "network contains " + gw.String(),
				}})
			}
			return deps
		},
		Validate: func(_ string, v *structpb.Struct) error {
			var errs *kv.InvalidValueError
			if text(v, "outgoing_interface") == "" {
				errs = errs.Add("outgoing_interface", "must be set")
			}
			if _, err := netip.ParseAddr(text(v, "gateway")); err != nil {
				errs = errs.Add("gateway", "%v", err)
			}
			return errs.OrNil()
		},
	}, routeHandler{dev})
	if err != nil {
		return nil, err
	}
	return []kv.Descriptor{iface, addr, route}, nil
}

// interfaceHandler holds the CRUD bodies of interfaces.
type interfaceHandler struct{ dev *device }

var _ kv.Updater[*structpb.Struct, struct{}] = interfaceHandler{}

// Create runs `ip link add <name> mtu <mtu>`.
func (h interfaceHandler) Create(_ context.Context, key string, v *structpb.Struct) (struct{}, error) {
	return struct{}{}, h.dev.LinkAdd(interfaceName(key), mtuOf(v))
}

// Update runs `ip link set <name> mtu <mtu>`; addresses are values of their own.
func (h interfaceHandler) Update(_ context.Context, key string, old, v *structpb.Struct, _ struct{}) (struct{}, error) {
	if mtuOf(old) == mtuOf(v) {
		return struct{}{}, nil
	}
	return struct{}{}, h.dev.LinkSetMTU(interfaceName(key), mtuOf(v))
}

// Delete runs `ip link del <name>`.
func (h interfaceHandler) Delete(_ context.Context, key string, _ *structpb.Struct, _ struct{}) error {
	return h.dev.LinkDel(interfaceName(key))
}

// addressHandler holds the CRUD bodies of addresses.
type addressHandler struct{ dev *device }

// Create runs `ip addr add <ip> dev <name>`.
func (h addressHandler) Create(_ context.Context, key string, v *wrapperspb.StringValue) (struct{}, error) {
	p, err := netip.ParsePrefix(v.GetValue())
	if err != nil {
		return struct{}{}, kv.NonRetriable(err)
	}
	return struct{}{}, h.dev.AddrAdd(interfaceName(key), p)
}

// Delete runs `ip addr del <ip> dev <name>`.
func (h addressHandler) Delete(_ context.Context, key string, v *wrapperspb.StringValue, _ struct{}) error {
	p, err := netip.ParsePrefix(v.GetValue())
	if err != nil {
		return kv.NonRetriable(err)
	}
	return h.dev.AddrDel(interfaceName(key), p)
}

// routeHandler holds the CRUD bodies of routes.
type routeHandler struct{ dev *device }

// Create runs `ip route add <dst> via <gw> dev <name>`.
func (h routeHandler) Create(_ context.Context, key string, v *structpb.Struct) (struct{}, error) {
	dst, gw, err := routeOf(key, v)
	if err != nil {
		return struct{}{}, kv.NonRetriable(err)
	}
	return struct{}{}, h.dev.RouteAdd(dst, gw, text(v, "outgoing_interface"))
}

// Delete runs `ip route del <dst>`.
func (h routeHandler) Delete(_ context.Context, key string, v *structpb.Struct, _ struct{}) error {
	dst, _, err := routeOf(key, v)
	if err != nil {
		return kv.NonRetriable(err)
	}
	return h.dev.RouteDel(dst)
}

func routeOf(key string, v *structpb.Struct) (netip.Prefix, netip.Addr, error) {
	parts, ok := routeKeys.Split(key)
	if !ok {
		return netip.Prefix{}, netip.Addr{}, fmt.Errorf("%s is not a route key", key)
	}
	dst, err := netip.ParsePrefix(parts[0])
	if err != nil {
		return netip.Prefix{}, netip.Addr{}, err
	}
	gw, err := netip.ParseAddr(text(v, "gateway"))
	return dst, gw, err
}

// device is the simulated southbound: a few maps standing in for a network
// stack, printing each call the way it would be typed with `ip`. Unlike
// Linux, it refuses to delete a link or an address that something still
// uses, so that a wrong order of operations shows up as an error.
type device struct {
	mu     sync.Mutex
	out    io.Writer
	links  map[string]int          // name -> MTU
	addrs  map[netip.Prefix]string // address -> link
	routes map[netip.Prefix]deviceRoute
	fail   map[string]error // command -> error to fail it with, once
}

type deviceRoute struct {
	gw  netip.Addr
	dev string
}

func newDevice(out io.Writer) *device {
	return &device{
		out:    out,
		links:  map[string]int{},
		addrs:  map[netip.Prefix]string{},
		routes: map[netip.Prefix]deviceRoute{},
		fail:   map[string]error{},
	}
}

// FailOnce makes the next run of command fail with err.
func (d *device) FailOnce(command string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fail[command] = err
}

// do prints command and runs it, unless it was told to fail.
func (d *device) do(command string, f func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	err, injected := d.fail[command]
	if injected {
		delete(d.fail, command)
	} else {
		err = f()
	}
	if err != nil {
		fmt.Fprintf(d.out, "device: %s  => error: %v\n", command, err)
		return err
	}
	fmt.Fprintf(d.out, "device: %s\n", command)
	return nil
}

func (d *device) LinkAdd(name string, mtu int) error {
	return d.do(fmt.Sprintf("ip link add %s mtu %d", name, mtu), func() error {
		if _, ok := d.links[name]; ok {
			return fmt.Errorf("link %s exists", name)
		}
		d.links[name] = mtu
		return nil
	})
}

func (d *device) LinkSetMTU(name string, mtu int) error {
	return d.do(fmt.Sprintf("ip link set %s mtu %d", name, mtu), func() error {
		if _, ok := d.links[name]; !ok {
			return fmt.Errorf("link %s: %w", name, kv.ErrNotFound)
		}
		d.links[name] = mtu
		return nil
	})
}

func (d *device) LinkDel(name string) error {
	return d.do("ip link del "+name, func() error {
		if _, ok := d.links[name]; !ok {
			return fmt.Errorf("link %s: %w", name, kv.ErrNotFound)
		}
		for a, l := range d.addrs {
			if l == name {
				return fmt.Errorf("link %s still has address %s", name, a)
			}
		}
		delete(d.links, name)
		return nil
	})
}

func (d *device) AddrAdd(link string, p netip.Prefix) error {
	return d.do(fmt.Sprintf("ip addr add %s dev %s", p, link), func() error {
		if _, ok := d.links[link]; !ok {
			return fmt.Errorf("link %s: %w", link, kv.ErrNotFound)
		}
		if _, ok := d.addrs[p]; ok {
			return fmt.Errorf("address %s exists", p)
		}
		d.addrs[p] = link
		return nil
	})
}

func (d *device) AddrDel(link string, p netip.Prefix) error {
	return d.do(fmt.Sprintf("ip addr del %s dev %s", p, link), func() error {
		if d.addrs[p] != link {
			return fmt.Errorf("address %s on %s: %w", p, link, kv.ErrNotFound)
		}
		for dst, r := range d.routes {
			if r.dev == link && p.Contains(r.gw) {
				return fmt.Errorf("route %s still uses gateway %s", dst, r.gw)
			}
		}
		delete(d.addrs, p)
		return nil
	})
}

func (d *device) RouteAdd(dst netip.Prefix, gw netip.Addr, link string) error {
	return d.do(fmt.Sprintf("ip route add %s via %s dev %s", dst, gw, link), func() error {
		if _, ok := d.links[link]; !ok {
			return fmt.Errorf("link %s: %w", link, kv.ErrNotFound)
		}
		if _, ok := d.routes[dst]; ok {
			return fmt.Errorf("route %s exists", dst)
		}
		for a, l := range d.addrs {
			if l == link && a.Contains(gw) {
				d.routes[dst] = deviceRoute{gw: gw, dev: link}
				return nil
			}
		}
		return fmt.Errorf("gateway %s is not reachable on %s", gw, link)
	})
}

func (d *device) RouteDel(dst netip.Prefix) error {
	return d.do("ip route del "+dst.String(), func() error {
		if _, ok := d.routes[dst]; !ok {
			return fmt.Errorf("route %s: %w", dst, kv.ErrNotFound)
		}
		delete(d.routes, dst)
		return nil
	})
}

// State lists what the device holds, one sorted line per object.
func (d *device) State() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var lines []string
	for name, mtu := range d.links {
		lines = append(lines, fmt.Sprintf("  link %s mtu %d", name, mtu))
	}
	for a, l := range d.addrs {
		lines = append(lines, fmt.Sprintf("  addr %s dev %s", a, l))
	}
	for dst, r := range d.routes {
		lines = append(lines, fmt.Sprintf("  route %s via %s dev %s", dst, r.gw, r.dev))
	}
	slices.Sort(lines)
	if len(lines) == 0 {
		return "  (empty)\n"
	}
	return strings.Join(lines, "\n") + "\n"
}

// syncWriter serialises the writes of the demo, the device and the log.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
