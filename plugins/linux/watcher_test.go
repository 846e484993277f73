//go:build linux

package linux_test

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// watch runs the plugin's watcher, handing its changes to the scheduler,
// until the test ends.
func (e *env) watch() {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := e.p.Watch(ctx, func(ctx context.Context, changes []linux.Change) error {
			// Other programs' interfaces first, then the drift check
			// of the plugin's own values (a route of ours over an
			// interface that went waits for it, rather than fail).
			var ns []scheduler.Notification
			var recheck []string
			for _, c := range changes {
				if c.Key == "" {
					recheck = append(recheck, c.Recheck...)
					continue
				}
				ns = append(ns, scheduler.Notification{Key: c.Key, Value: c.Value, Metadata: c.Metadata})
			}
			defer func() { // handled, even when it failed
				e.handledMu.Lock()
				defer e.handledMu.Unlock()
				if e.handled == nil {
					e.handled = map[string]bool{}
				}
				for _, n := range ns {
					e.handled[n.Key] = true
				}
			}()
			if len(ns) > 0 {
				if _, err := e.s.Notify(ctx, ns...); err != nil {
					return err
				}
			}
			if len(recheck) > 0 {
				if _, err := e.s.CheckDrift(ctx, scheduler.DriftCheck{Descriptors: recheck}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			e.t.Errorf("Watch: %v", err)
		}
	}()
	e.t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// watchReady runs the watcher (env.watch) and waits for its first report
// (the namespace's lo, OBTAINED): its subscriptions are open then, so
// what the test does next is seen. (Watch runs in a goroutine: a change
// made right after watch returns may come before the kernel subscription,
// and go unseen; a rule deleted 20 ms after watch returned was missed in
// 9 runs out of 10 under -race.)
// waitHandled waits until a report of the watcher that named key was
// handled to its end: every report before it was too.
func (e *env) waitHandled(key string) {
	e.t.Helper()
	waitFor(e.t, "a report of "+key+" handled", func() bool {
		e.handledMu.Lock()
		defer e.handledMu.Unlock()
		return e.handled[key]
	})
}

func (e *env) watchReady() {
	e.t.Helper()
	e.watch()
	e.eventually(scheduler.OBTAINED, linuxinterfaces.InterfaceKey{Name: "lo"}.String())
}

// TestNetnsWatcherUnblocksPendingRoute: an interface created by another
// program becomes OBTAINED through the watcher, with its addresses, and a
// PENDING route over it is created; when it goes, the route waits again.
// The plugin's own interfaces are never reported as obtained.
func TestNetnsWatcherUnblocksPendingRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, linux.WithDebounce(20*time.Millisecond))
	e.watch()
	mine := &ifc{Name: "mine0", Type: linuxinterfaces.Interface_TYPE_BRIDGE, Enabled: true, IpAddresses: []string{"10.8.0.1/24"}}
	r := &linuxl3.Route{OutgoingInterface: "ext0", DstNetwork: "10.30.0.0/16", GwAddr: "10.9.0.254"}
	e.set(mine, r)
	e.expect(scheduler.PENDING, keyOf(r))
	e.eventually(scheduler.OBTAINED, linuxinterfaces.InterfaceKey{Name: "lo"}.String())

	// Another program: ip link add ext0 type bridge; ip addr add ...; ip link set ext0 up
	ext := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "ext0"}}
	if err := e.h.LinkAdd(ext); err != nil {
		t.Fatal(err)
	}
	if err := e.h.LinkSetUp(ext); err != nil {
		t.Fatal(err)
	}
	// First an address that does not make the gateway reachable.
	if err := e.h.AddrAdd(ext, &netlink.Addr{IPNet: mustCIDR("10.99.0.1/24")}); err != nil {
		t.Fatal(err)
	}
	extKey := linuxinterfaces.InterfaceKey{Name: "ext0"}.String()
	e.eventually(scheduler.OBTAINED, extKey)
	e.expect(scheduler.PENDING, keyOf(r))
	addr, _ := netlink.ParseAddr("10.9.0.1/24")
	if err := e.h.AddrAdd(ext, addr); err != nil {
		t.Fatal(err)
	}
	e.eventually(scheduler.CONFIGURED, keyOf(r))
	e.expect(scheduler.DISCOVERED, linuxinterfaces.InterfaceIpAddressesKey{Name: "ext0", IpAddresses: netip.MustParsePrefix("10.9.0.1/24")}.String())
	if got := ourRoutes(t, e.h, e.p.RouteProtocol()); len(got) != 1 || got[0] != "10.30.0.0/16 via 10.9.0.254 dev ext0 metric 0 table 254" {
		t.Errorf("routes %q", got)
	}
	// Our own interface was never obtained.
	if st := e.s.Status(keyOf(mine)); st.State != scheduler.CONFIGURED || st.Origin != kv.OriginNB {
		t.Errorf("%s: %s from %s", keyOf(mine), st.State, st.Origin)
	}

	// The other program removes its interface: the route waits again.
	if err := e.h.LinkDel(ext); err != nil {
		t.Fatal(err)
	}
	e.eventually(scheduler.NONEXISTENT, extKey)
	e.eventually(scheduler.PENDING, keyOf(r))
}

// TestNetnsWatcherInterfaceBecomesOurs: the agent's start, step by step.
// An interface of ours left by a previous run is reported by the watcher
// before the startup resync (nothing is the plugin's yet), so it becomes
// OBTAINED; the resync then takes it over and the plugin's Retrieve makes
// it the plugin's. The watcher's next read must forget it without a word:
// reporting it gone made the scheduler believe the interface (and its
// address) lost, and delete and create again everything over it.
func TestNetnsWatcherInterfaceBecomesOurs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, linux.WithDebounce(20*time.Millisecond))
	// Left by the previous run: ip link add d0 type bridge; ip addr add ...; ip link set d0 up
	d0 := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "d0"}}
	if err := e.h.LinkAdd(d0); err != nil {
		t.Fatal(err)
	}
	a, _ := netlink.ParseAddr("10.0.0.1/16")
	if err := e.h.AddrAdd(d0, a); err != nil {
		t.Fatal(err)
	}
	if err := e.h.LinkSetUp(d0); err != nil {
		t.Fatal(err)
	}
	index := e.link("d0").Attrs().Index
	e.watch()
	mine := &ifc{Name: "d0", Type: linuxinterfaces.Interface_TYPE_BRIDGE, Enabled: true, IpAddresses: []string{"10.0.0.1/16"}}
	e.eventually(scheduler.OBTAINED, keyOf(mine))

	// The startup resync: d0 and a route over it intended, d0 remembered.
	r := &linuxl3.Route{OutgoingInterface: "d0", DstNetwork: "10.106.222.0/24"}
	txn := e.s.Txn(scheduler.FullResync(), scheduler.Remembered(scheduler.KeyValue{Key: keyOf(mine), Value: mine}))
	txn.Set(keyOf(mine), mine)
	txn.Set(keyOf(r), r)
	resync := e.commit(txn)
	e.expect(scheduler.CONFIGURED, keyOf(mine), keyOf(r))

	// Any event makes the watcher read again: another program's link.
	other := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "ev0"}}
	if err := e.h.LinkAdd(other); err != nil {
		t.Fatal(err)
	}
	e.eventually(scheduler.OBTAINED, linuxinterfaces.InterfaceKey{Name: "ev0"}.String())
	// The watcher's report of ev0 came after its first read since the
	// resync (d0 its own by then), and was handled to its end, drift
	// check and all.
	e.waitHandled(linuxinterfaces.InterfaceKey{Name: "ev0"}.String())

	// Nothing of d0 was touched after the resync.
	for _, rec := range e.s.History() {
		if rec.Seq <= resync.Seq {
			continue
		}
		for _, op := range rec.Executed {
			if op.Key == keyOf(r) || strings.HasPrefix(op.Key, keyOf(mine)) {
				t.Errorf("transaction #%d (%s): %s %s %s after the resync", rec.Seq, rec.Kind, op.Kind, op.Key, op.Flags)
			}
		}
	}
	e.expect(scheduler.CONFIGURED, keyOf(mine), keyOf(r))
	if got := e.link("d0").Attrs().Index; got != index {
		t.Errorf("d0 was created again: index %d, was %d", got, index)
	}
	if got := ourRoutes(t, e.h, e.p.RouteProtocol()); len(got) != 1 {
		t.Errorf("routes %q", got)
	}
}
