// Command quickstart shows the scheduler at work on the generated Linux
// models, against a simulated device.
//
// The descriptors of linux.interfaces.v1.Interface (whose IP addresses each
// derive a value of their own) and linux.l3.v1.Route (which needs its
// outgoing interface and an address whose network contains its gateway) are
// generated from the annotated models in models/linux; handlers.go holds the
// only hand-written part, the Create/Update/Delete bodies, which drive
// device.go, a map-backed stand-in for the kernel that prints each call as an
// `ip` command. The demo commits a route before its interface, creates a veth
// pair as a unit, updates a bridge in place and re-creates it in another
// namespace, rejects an invalid value, previews a plan, reverts a failed
// transaction, waits for a retried one, and prints the status of every value;
// then it runs the same descriptors as an agent (runtime/agent) whose
// source is a configuration file.
//
// Run it with `go run ./examples/quickstart`. It exits non-zero when a
// value does not reach the state the demo expects, so it doubles as a
// smoke test of the scheduler and the generated code.
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

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
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
		{"2. A veth pair is created as a unit; its address is derived and the route follows", d.vethPair},
		{"3. A bridge: an MTU change is an update, a namespace change a re-create", d.bridge},
		{"4. An invalid value is rejected, naming its fields; the device sees nothing", d.invalid},
		{"5. Dry run: preview the plan of deleting veth1", d.previewDelete},
		{"6. A failing transaction with Revert leaves the device as it was", d.revertOnFailure},
		{"7. CommitAndWait: a busy device, a retry, and a wait until all settle", d.commitAndWait},
		{"8. Status of every value, and the device", d.statusTable},
		{"9. The same descriptors as an agent (runtime/agent): a file is its source", func() error { return asAgent(w) }},
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

// The values of the scenario. Each call returns a new value: committed
// values are never mutated.

func veth(name, peer string, addrs ...string) *linuxinterfaces.Interface {
	return &linuxinterfaces.Interface{
		Name: name, Type: linuxinterfaces.Interface_TYPE_VETH, Enabled: true,
		VethPeer: peer, IpAddresses: addrs,
	}
}

func bridge(mtu uint32, namespace string) *linuxinterfaces.Interface {
	return &linuxinterfaces.Interface{
		Name: "br0", Type: linuxinterfaces.Interface_TYPE_BRIDGE, Enabled: true,
		Mtu: mtu, Namespace: namespace, IpAddresses: []string{"192.168.1.1/24"},
	}
}

func tap() *linuxinterfaces.Interface {
	return &linuxinterfaces.Interface{
		Name: "tap0", Type: linuxinterfaces.Interface_TYPE_TAP, Enabled: true,
		IpAddresses: []string{"10.1.0.1/24"},
	}
}

func route(dev, dst, gw string) *linuxl3.Route {
	return &linuxl3.Route{OutgoingInterface: dev, DstNetwork: dst, GwAddr: gw}
}

// The keys of the scenario, built by the generated code.
var (
	veth1Key   = linuxinterfaces.InterfaceKey{Name: "veth1"}.String()
	veth2Key   = linuxinterfaces.InterfaceKey{Name: "veth2"}.String()
	veth1Addr  = linuxinterfaces.InterfaceIpAddressesKey{Name: "veth1", IpAddresses: netip.MustParsePrefix("10.0.0.1/24")}.String()
	route20Key = linuxl3.RouteKey{OutgoingInterface: "veth1", DstNetwork: netip.MustParsePrefix("10.20.0.0/16")}.String()
	br0Key     = linuxinterfaces.InterfaceKey{Name: "br0"}.String()
	br0Addr    = linuxinterfaces.InterfaceIpAddressesKey{Name: "br0", IpAddresses: netip.MustParsePrefix("192.168.1.1/24")}.String()
	tap0Key    = linuxinterfaces.InterfaceKey{Name: "tap0"}.String()
	tap0Addr   = linuxinterfaces.InterfaceIpAddressesKey{Name: "tap0", IpAddresses: netip.MustParsePrefix("10.1.0.1/24")}.String()
	route30Key = linuxl3.RouteKey{OutgoingInterface: "tap0", DstNetwork: netip.MustParsePrefix("10.30.0.0/16")}.String()
	tap9Key    = linuxinterfaces.InterfaceKey{Name: "tap9"}.String()
)

type demo struct {
	ctx context.Context
	w   io.Writer
	s   *scheduler.Scheduler
	dev *device
}

func (d *demo) routeFirst() error {
	r := route("veth1", "10.20.0.0/16", "10.0.0.254")
	if key := linuxl3.RouteKeyFor(r); key != route20Key {
		return fmt.Errorf("route key %q, want %q", key, route20Key)
	}
	if _, err := d.s.Txn().Set(route20Key, r).Commit(d.ctx); err != nil {
		return err
	}
	if err := d.expect(route20Key, scheduler.PENDING); err != nil {
		return err
	}
	why, ok := d.s.WhyPending(route20Key)
	if !ok {
		return fmt.Errorf("WhyPending(%s) explains nothing", route20Key)
	}
	fmt.Fprintf(d.w, "WhyPending:\n%s", why)
	var roots []string
	for _, u := range why.Roots() {
		roots = append(roots, u.String())
	}
	want := []string{
		"interface -> " + veth1Key,
		"gateway reachable -> any of " + veth1Key + "/address/ (network contains 10.0.0.254)",
	}
	if !slices.Equal(roots, want) {
		return fmt.Errorf("WhyPending roots %q, want %q", roots, want)
	}
	return nil
}

func (d *demo) vethPair() error {
	res, err := d.s.Txn(scheduler.Description("veth pair")).
		Set(veth1Key, veth("veth1", "veth2", "10.0.0.1/24")).
		Set(veth2Key, veth("veth2", "veth1")).
		Commit(d.ctx)
	if err != nil {
		return err
	}
	for _, key := range []string{veth1Key, veth2Key, veth1Addr, route20Key} {
		if err := d.expect(key, scheduler.CONFIGURED); err != nil {
			return err
		}
	}
	for _, want := range []struct {
		key   string
		kind  scheduler.OpKind
		flags scheduler.Flags
	}{
		{veth1Key, scheduler.OpCreate, scheduler.FlagCycle},
		{veth2Key, scheduler.OpCreate, scheduler.FlagCycle},
		{veth1Addr, scheduler.OpCreate, scheduler.FlagDerived},
		{route20Key, scheduler.OpCreate, scheduler.FlagWasPending},
	} {
		if !slices.ContainsFunc(res.Executed, func(o scheduler.Op) bool {
			return o.Key == want.key && o.Kind == want.kind && o.Flags&want.flags != 0 && o.Err == nil
		}) {
			return fmt.Errorf("transaction #%d did not %s %s [%s]:\n%s", res.Seq, want.kind, want.key, want.flags, scheduler.FormatOps(res.Executed))
		}
	}
	if err := pairFirst(res); err != nil {
		return err
	}
	fmt.Fprintf(d.w, "the pending route was created by transaction #%d, the one that added the pair\n", res.Seq)
	return d.checkIfindexes()
}

// pairFirst checks that both ends of the pair were created before what
// needs them.
func pairFirst(res *scheduler.Result) error {
	var keys []string
	for _, o := range res.Executed {
		if o.Kind == scheduler.OpCreate {
			keys = append(keys, o.Key)
		}
	}
	last := max(slices.Index(keys, veth1Key), slices.Index(keys, veth2Key))
	if i := slices.Index(keys, veth1Addr); i < last {
		return fmt.Errorf("transaction #%d created %s before both ends of the pair: %q", res.Seq, veth1Addr, keys)
	}
	return nil
}

func (d *demo) bridge() error {
	if _, err := d.s.Txn(scheduler.Description("br0")).Set(br0Key, bridge(0, "")).Commit(d.ctx); err != nil {
		return err
	}
	if err := d.expect(br0Addr, scheduler.CONFIGURED); err != nil {
		return err
	}
	first := ifindex(d.s.Status(br0Key))

	res, err := d.s.Txn(scheduler.Description("br0: MTU 9000")).Set(br0Key, bridge(9000, "")).Commit(d.ctx)
	if err != nil {
		return err
	}
	if err := wantOps(res, "UPDATE "+br0Key); err != nil {
		return err
	}
	if got := ifindex(d.s.Status(br0Key)); got != first {
		return fmt.Errorf("br0: ifindex %d after an update, want %d", got, first)
	}
	fmt.Fprintf(d.w, "updated in place: br0 keeps ifindex %d\n", first)

	res, err = d.s.Txn(scheduler.Description("br0: namespace blue")).Set(br0Key, bridge(9000, "blue")).Commit(d.ctx)
	if err != nil {
		return err
	}
	if err := wantOps(res, "DELETE "+br0Addr, "DELETE "+br0Key, "CREATE "+br0Key, "CREATE "+br0Addr); err != nil {
		return err
	}
	second := ifindex(d.s.Status(br0Key))
	if second == first {
		return fmt.Errorf("br0: ifindex %d unchanged by a re-create", first)
	}
	fmt.Fprintf(d.w, "re-created: br0 has ifindex %d (was %d)\n", second, first)
	if err := d.expect(br0Addr, scheduler.CONFIGURED); err != nil {
		return err
	}
	return d.checkIfindexes()
}

func (d *demo) invalid() error {
	calls := d.dev.Calls()
	v := &linuxinterfaces.Interface{
		Name: "tap9", Type: linuxinterfaces.Interface_TYPE_TAP,
		PhysAddress: "02:00:00:zz:00:09", IpAddresses: []string{"10.9.0.1/24", "10.0.0.300/24"},
	}
	// The commit's error names the value and its invalid fields.
	res, err := d.s.Txn().Set(tap9Key, v).Commit(d.ctx)
	var txnErr *scheduler.TxnError
	if !errors.As(err, &txnErr) {
		return fmt.Errorf("an invalid value's Commit: error %v, want a *scheduler.TxnError", err)
	}
	fmt.Fprintf(d.w, "Commit: %v\n", err)
	if err := d.expect(tap9Key, scheduler.INVALID); err != nil {
		return err
	}
	var invalid *kv.InvalidValueError
	if !errors.As(d.s.Status(tap9Key).LastErr, &invalid) {
		return fmt.Errorf("%s: last error %v, want a *kv.InvalidValueError", tap9Key, d.s.Status(tap9Key).LastErr)
	}
	if got, want := invalid.FieldNames(), []string{"phys_address", "ip_addresses[1]"}; !slices.Equal(got, want) {
		return fmt.Errorf("%s: invalid fields %q, want %q", tap9Key, got, want)
	}
	fmt.Fprintf(d.w, "invalid fields: %s\n", strings.Join(invalid.FieldNames(), ", "))
	if got := d.s.Statuses(tap9Key + "/"); len(got) != 0 {
		return fmt.Errorf("an invalid value derived %d values", len(got))
	}
	if d.dev.Calls() != calls || len(res.Executed) != 1 || res.Executed[0].Kind != scheduler.OpNone {
		return fmt.Errorf("an invalid value reached the device: %s", scheduler.FormatOps(res.Executed))
	}
	fmt.Fprintln(d.w, "no device call was made")
	return nil
}

func (d *demo) previewDelete() error {
	before, calls := d.dev.State(), d.dev.Calls()
	res, err := d.s.Txn(scheduler.DryRun()).Delete(veth1Key).Commit(d.ctx)
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
	// The dependents go first: the route, which needs veth1 and its
	// address; the address, derived from veth1; veth2, whose peer it is.
	pos := func(op string) int { return slices.Index(got, op) }
	del1 := pos("DELETE " + veth1Key)
	for _, dep := range []string{route20Key, veth1Addr, veth2Key} {
		if i := pos("DELETE " + dep); i < 0 || del1 < 0 || i > del1 {
			return fmt.Errorf("plan %q does not delete %s before %s", got, dep, veth1Key)
		}
	}
	if pos("DELETE "+route20Key) > pos("DELETE "+veth1Addr) {
		return fmt.Errorf("plan %q deletes the address before the route that needs it", got)
	}
	if !res.DryRun || len(res.Executed) != 0 || d.dev.State() != before || d.dev.Calls() != calls {
		return errors.New("the dry run executed something")
	}
	return d.expect(veth1Key, scheduler.CONFIGURED)
}

func (d *demo) revertOnFailure() error {
	before := d.dev.State()
	failing := "ip route add 10.30.0.0/16 via 10.1.0.254 dev tap0"
	d.dev.FailOnce(failing, errors.New("injected failure"))
	fmt.Fprintf(d.w, "the device will fail %q\n", failing)
	mtu := veth("veth1", "veth2", "10.0.0.1/24")
	mtu.Mtu = 9000
	res, err := d.s.Txn(scheduler.Revert(), scheduler.Description("veth1 MTU 9000, tap0 with a route")).
		Set(veth1Key, mtu).
		Set(tap0Key, tap()).
		Set(route30Key, route("tap0", "10.30.0.0/16", "10.1.0.254")).
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
	if v, _ := d.s.Status(veth1Key).Value.(*linuxinterfaces.Interface); v.GetMtu() != 0 {
		return fmt.Errorf("veth1 intends MTU %d after the revert, want 0 (1500)", v.GetMtu())
	}
	for _, key := range []string{tap0Key, tap0Addr, route30Key} {
		if err := d.expect(key, scheduler.NONEXISTENT); err != nil {
			return err
		}
	}
	return d.expect(veth1Key, scheduler.CONFIGURED)
}

func (d *demo) commitAndWait() error {
	failing := "ip link add tap0 up type tap"
	d.dev.FailOnce(failing, errBusy)
	fmt.Fprintf(d.w, "the device will fail %q once, with a retriable error\n", failing)
	ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
	defer cancel()
	res, err := d.s.Txn(scheduler.Retry(scheduler.RetryPolicy{Period: 20 * time.Millisecond, MaxAttempts: 3})).
		Set(tap0Key, tap()).
		Set(route30Key, route("tap0", "10.30.0.0/16", "10.1.0.254")).
		CommitAndWait(ctx)
	if err != nil {
		// The error is about the outcomes: a failure that the retry
		// repaired is not one.
		return fmt.Errorf("CommitAndWait: %w", err)
	}
	if !slices.ContainsFunc(res.Executed, func(o scheduler.Op) bool { return o.Key == tap0Key && errors.Is(o.Err, errBusy) }) {
		return fmt.Errorf("the first attempt did not fail:\n%s", scheduler.FormatOps(res.Executed))
	}
	fmt.Fprintf(d.w, "the first attempt failed, the retry succeeded; outcomes after the wait:\n")
	for _, o := range res.Outcomes {
		fmt.Fprintf(d.w, "  %-30s %s\n", o.Key, o.State)
		if o.State != scheduler.CONFIGURED {
			return fmt.Errorf("%s ended %s (%v), want CONFIGURED", o.Key, o.State, o.Err)
		}
	}
	if err := d.expect(tap0Addr, scheduler.CONFIGURED); err != nil {
		return err
	}
	return d.checkIfindexes()
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
	want := map[string]scheduler.State{
		br0Key: scheduler.CONFIGURED, br0Addr: scheduler.CONFIGURED,
		tap0Key: scheduler.CONFIGURED, tap0Addr: scheduler.CONFIGURED,
		tap9Key:  scheduler.INVALID,
		veth1Key: scheduler.CONFIGURED, veth1Addr: scheduler.CONFIGURED, veth2Key: scheduler.CONFIGURED,
		route30Key: scheduler.CONFIGURED, route20Key: scheduler.CONFIGURED,
	}
	for _, st := range all {
		if w, ok := want[st.Key]; !ok || st.State != w {
			return fmt.Errorf("%s is %s, want %s", st.Key, st.State, w)
		}
		delete(want, st.Key)
	}
	for key, w := range want {
		return fmt.Errorf("%s has no status, want %s", key, w)
	}
	return d.checkIfindexes()
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

// checkIfindexes checks that the metadata of every configured interface is
// the ifindex of its link on the device, and prints the metadata map.
func (d *demo) checkIfindexes() error {
	desc, _ := d.s.Descriptor(linuxinterfaces.InterfaceModelName)
	links, ok := desc.(*kv.TypedDescriptor[linuxinterfaces.InterfaceKey, *linuxinterfaces.Interface, int])
	if !ok {
		return fmt.Errorf("the interface descriptor is %T", desc)
	}
	meta := links.Metadata()
	var parts []string
	for _, label := range meta.Labels() {
		index, _ := meta.Get(label)
		parts = append(parts, fmt.Sprintf("%s=%d", label, index))
	}
	fmt.Fprintf(d.w, "interface metadata (ifindex): %s\n", strings.Join(parts, " "))
	for _, st := range d.s.DescriptorStatuses(linuxinterfaces.InterfaceModelName) {
		if st.State != scheduler.CONFIGURED {
			continue
		}
		k, _ := linuxinterfaces.ParseInterfaceKey(st.Key)
		index, onDevice := d.dev.LinkIndex(k.Name)
		inMap, _ := meta.Get(k.Name)
		if !onDevice || ifindex(st) != index || inMap != index {
			return fmt.Errorf("%s: status metadata %v, metadata map %d, device ifindex %d (present: %t)", st.Key, st.Metadata, inMap, index, onDevice)
		}
	}
	return nil
}

func ifindex(st scheduler.Status) int {
	index, _ := st.Metadata.(int)
	return index
}

// wantOps checks the executed operations of a transaction, in order.
func wantOps(res *scheduler.Result, want ...string) error {
	var got []string
	for _, o := range res.Executed {
		if o.Kind != scheduler.OpNone {
			got = append(got, o.Kind.String()+" "+o.Key)
		}
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("transaction #%d executed %q, want %q", res.Seq, got, want)
	}
	return nil
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
