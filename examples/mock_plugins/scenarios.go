package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	mockv1 "github.com/kvdescriptor/kvdescriptor/generated/examples/mock/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// scenario is one hands-on scenario: steps, each a transaction or two
// followed by the status of every value.
type scenario struct {
	name, title string
	about       []string
	steps       []step
}

type step struct {
	title string
	notes []string
	run   func(*env) error
}

// The values of the scenarios. Each call returns a new value: committed
// values are never mutated.

func tap(name, mac string) *mockv1.Interface {
	return &mockv1.Interface{Name: name, Type: mockv1.Interface_TYPE_TAP, Enabled: true, PhysAddress: mac}
}

func loopback(name string, enabled bool) *mockv1.Interface {
	return &mockv1.Interface{Name: name, Type: mockv1.Interface_TYPE_LOOPBACK, Enabled: enabled}
}

// bd builds a bridge domain of members; a member named "+name" is its BVI.
func bd(name string, members ...string) *mockv1.BridgeDomain {
	v := &mockv1.BridgeDomain{Name: name}
	for _, m := range members {
		bvi := m[0] == '+'
		if bvi {
			m = m[1:]
		}
		v.Interfaces = append(v.Interfaces, &mockv1.BridgeDomain_Interface{Name: m, Bvi: bvi})
	}
	return v
}

func fib(bdName, mac, out string) *mockv1.FIBEntry {
	return &mockv1.FIBEntry{BridgeDomain: bdName, PhysAddress: mac, OutgoingInterface: out}
}

// The values most scenarios start from.
var (
	tap1 = func() *mockv1.Interface { return tap("tap1", "") }
	tap2 = func() *mockv1.Interface { return tap("tap2", "02:00:00:00:00:02") }
	// tap2Bad has a MAC address that is no MAC address: it is INVALID.
	tap2Bad = func() *mockv1.Interface { return tap("tap2", "invalid-hw-address") }
	// tap2Multicast has a MAC address that the southbound refuses.
	tap2Multicast = func() *mockv1.Interface { return tap("tap2", "01:23:45:67:89:ab") }
	loopback1     = func() *mockv1.Interface { return loopback("loopback1", true) }
	// bd1 holds tap1, tap2 and loopback1 as its BVI.
	bd1 = func() *mockv1.BridgeDomain { return bd("bd1", "tap1", "tap2", "+loopback1") }
	// bd2 holds tap1.
	bd2  = func() *mockv1.BridgeDomain { return bd("bd2", "tap1") }
	fib1 = func() *mockv1.FIBEntry { return fib("bd1", "cc:cc:cc:dd:dd:dd", "tap1") }
	fib2 = func() *mockv1.FIBEntry { return fib("bd1", "aa:aa:aa:bb:bb:bb", "tap2") }
	fib3 = func() *mockv1.FIBEntry { return fib("bd2", "ee:ee:ee:ff:ff:ff", "tap1") }
)

// The keys the scenarios check, built by the generated code.
var (
	tap1Key      = mockv1.InterfaceKey{Name: "tap1"}.String()
	tap2Key      = mockv1.InterfaceKey{Name: "tap2"}.String()
	loopback1Key = mockv1.InterfaceKey{Name: "loopback1"}.String()
	bd1Key       = mockv1.BridgeDomainKey{Name: "bd1"}.String()
	bd2Key       = mockv1.BridgeDomainKey{Name: "bd2"}.String()
	bd1Tap1      = mockv1.BridgeDomainInterfacesKey{Name: "bd1", InterfacesName: "tap1"}.String()
	bd1Tap2      = mockv1.BridgeDomainInterfacesKey{Name: "bd1", InterfacesName: "tap2"}.String()
	bd1Loopback1 = mockv1.BridgeDomainInterfacesKey{Name: "bd1", InterfacesName: "loopback1"}.String()
	bd2Tap1      = mockv1.BridgeDomainInterfacesKey{Name: "bd2", InterfacesName: "tap1"}.String()
	bd2Tap2      = mockv1.BridgeDomainInterfacesKey{Name: "bd2", InterfacesName: "tap2"}.String()
	fib1Key      = keyOf(fib1())
	fib2Key      = keyOf(fib2())
	fib3Key      = keyOf(fib3())
)

func values(vs ...proto.Message) []proto.Message { return vs }

var scenarios = []scenario{
	{
		name:  "pending-after-resync",
		title: "values left PENDING by a resync are created by a later change",
		about: []string{
			"A resync sets values whose dependencies are not all there; they wait as",
			"PENDING, and the change that brings what they need creates them.",
		},
		steps: []step{{
			title: "resync: tap1, loopback1, bd1 without tap1, fib1 and fib2",
			notes: []string{
				"bd1 holds tap2 and loopback1; tap2 is not configured: its binding is PENDING",
				"fib1 forwards to tap1, which is not in bd1: PENDING",
				"fib2 forwards to tap2, which does not exist: PENDING",
			},
			run: func(e *env) error {
				if _, err := e.resync(nil, tap1(), loopback1(), bd("bd1", "tap2", "+loopback1"), fib1(), fib2()); err != nil {
					return err
				}
				if err := e.expect(scheduler.CONFIGURED, tap1Key, loopback1Key, bd1Key, bd1Loopback1); err != nil {
					return err
				}
				return e.expect(scheduler.PENDING, bd1Tap2, fib1Key, fib2Key)
			},
		}, {
			title: "change: bd1 with tap1 too, and tap2",
			notes: []string{
				"tap1 goes into bd1, so fib1 is created",
				"tap2 is created, goes into bd1, and fib2 is created: one transaction",
			},
			run: func(e *env) error {
				if _, err := e.change(nil, values(bd1(), tap2())); err != nil {
					return err
				}
				return e.expect(scheduler.CONFIGURED, tap1Key, tap2Key, loopback1Key, bd1Key, bd1Tap1, bd1Tap2, bd1Loopback1, fib1Key, fib2Key)
			},
		}},
	},
	{
		name:  "pending-after-change",
		title: "removing what others need removes them first, and they wait as PENDING",
		about: []string{
			"A change removes an interface that a binding and a FIB entry need: they are",
			"deleted before it, in dependency order, and wait as PENDING for it to return.",
		},
		steps: []step{{
			title: "resync: tap1, tap2 and loopback1 in bd1, fib2 via tap2",
			run: func(e *env) error {
				if _, err := e.resync(nil, tap1(), tap2(), loopback1(), bd1(), fib2()); err != nil {
					return err
				}
				return e.expect(scheduler.CONFIGURED, tap1Key, tap2Key, loopback1Key, bd1Key, bd1Tap1, bd1Tap2, bd1Loopback1, fib2Key)
			},
		}, {
			title: "change: loopback1 down, a new MAC for tap1, tap2 deleted",
			notes: []string{
				"loopback1 and tap1 are updated in place (no re-create), and stay in bd1",
				"fib2 is deleted first and waits as PENDING; then tap2 leaves bd1, whose",
				"binding waits as PENDING; then tap2 is deleted",
			},
			run: func(e *env) error {
				res, err := e.change(nil, values(loopback("loopback1", false), tap("tap1", "02:00:00:00:00:01")), tap2Key)
				if err != nil {
					return err
				}
				if err := wantOrder(res, "UPDATE "+loopback1Key, "UPDATE "+tap1Key); err != nil {
					return err
				}
				if err := wantOrder(res, "DELETE "+fib2Key, "DELETE "+bd1Tap2, "DELETE "+tap2Key); err != nil {
					return err
				}
				if err := e.expect(scheduler.PENDING, fib2Key, bd1Tap2); err != nil {
					return err
				}
				return e.expect(scheduler.CONFIGURED, tap1Key, loopback1Key, bd1Tap1, bd1Loopback1)
			},
		}},
	},
	{
		name:  "reverted-change",
		title: "a transaction with Revert that fails undoes itself",
		about: []string{
			"With Revert, a transaction applies all of its changes or none: its first",
			"failure undoes what it applied. Without it, transactions are best-effort.",
		},
		steps: []step{{
			title: "resync: tap1 in bd2",
			run: func(e *env) error {
				if _, err := e.resync(nil, tap1(), bd2()); err != nil {
					return err
				}
				return e.expect(scheduler.CONFIGURED, tap1Key, bd2Key, bd2Tap1)
			},
		}, {
			title: "change with Revert: fib3 via tap1, bd2 with tap2 too, tap2 with a multicast MAC",
			notes: []string{
				"fib3 is created; tap2's binding waits for tap2",
				"tap2's MAC address is well-formed, but the southbound refuses a multicast",
				"address for an interface: tap2's creation fails",
				"  -> the transaction is reverted: fib3 is deleted, bd2 holds tap1 alone",
			},
			run: func(e *env) error {
				res, err := e.change([]scheduler.TxnOption{scheduler.Revert()}, values(fib3(), bd("bd2", "tap1", "tap2"), tap2Multicast()))
				if err != nil {
					return err
				}
				if !res.Reverted {
					return fmt.Errorf("transaction #%d was not reverted", res.Seq)
				}
				if err := wantOrder(res, "CREATE "+fib3Key, "DELETE "+fib3Key); err != nil {
					return err
				}
				if err := e.expect(scheduler.NONEXISTENT, fib3Key, bd2Tap2); err != nil {
					return err
				}
				if err := e.expect(scheduler.CONFIGURED, tap1Key, bd2Key, bd2Tap1); err != nil {
					return err
				}
				st := e.s.Status(bd2Key)
				if v, _ := st.Value.(*mockv1.BridgeDomain); len(v.GetInterfaces()) != 1 {
					return fmt.Errorf("%s intends %v after the revert, want tap1 alone", bd2Key, v)
				}
				return nil
			},
		}},
	},
	{
		name:  "fixed-invalid-config",
		title: "an invalid value, and what waits for it, applied once an update fixes it",
		about: []string{
			"An invalid value is INVALID with its field named and never reaches the",
			"southbound; what needs it waits as PENDING until an update fixes it.",
		},
		steps: []step{{
			title: "resync: tap1, tap2 with an invalid MAC and loopback1 in bd1, fib2 via tap2",
			notes: []string{
				"tap2 is INVALID: its binding to bd1 and fib2 wait as PENDING",
			},
			run: func(e *env) error {
				if _, err := e.resync(nil, tap1(), tap2Bad(), loopback1(), bd1(), fib2()); err != nil {
					return err
				}
				if err := e.expect(scheduler.INVALID, tap2Key); err != nil {
					return err
				}
				if err := e.expect(scheduler.PENDING, bd1Tap2, fib2Key); err != nil {
					return err
				}
				return e.expect(scheduler.CONFIGURED, tap1Key, loopback1Key, bd1Key, bd1Tap1, bd1Loopback1)
			},
		}, {
			title: "change: tap2 with a valid MAC",
			notes: []string{
				"tap2 is created, goes into bd1, and fib2 follows, in one transaction",
			},
			run: func(e *env) error {
				res, err := e.change(nil, values(tap2()))
				if err != nil {
					return err
				}
				if err := wantOrder(res, "CREATE "+tap2Key, "CREATE "+bd1Tap2, "CREATE "+fib2Key); err != nil {
					return err
				}
				return e.expect(scheduler.CONFIGURED, tap2Key, bd1Tap2, fib2Key)
			},
		}},
	},
	{
		name:  "recreate",
		title: "a type change re-creates the interface, and what depends on it",
		about: []string{
			"The model marks an interface's type as needing a re-create: the change",
			"deletes what depends on the interface, deletes it, creates it again with",
			"its new type, and then what depends on it.",
		},
		steps: []step{{
			title: "resync: tap1 in bd2, fib3 via tap1",
			run: func(e *env) error {
				if _, err := e.resync(nil, tap1(), bd2(), fib3()); err != nil {
					return err
				}
				return e.expect(scheduler.CONFIGURED, tap1Key, bd2Key, bd2Tap1, fib3Key)
			},
		}, {
			title: "change: tap1 becomes a loopback",
			run: func(e *env) error {
				res, err := e.change(nil, values(loopback("tap1", true)))
				if err != nil {
					return err
				}
				if err := wantOrder(res, "DELETE "+fib3Key, "DELETE "+bd2Tap1, "DELETE "+tap1Key,
					"CREATE "+tap1Key, "CREATE "+bd2Tap1, "CREATE "+fib3Key); err != nil {
					return err
				}
				return e.expect(scheduler.CONFIGURED, tap1Key, bd2Key, bd2Tap1, fib3Key)
			},
		}},
	},
	{
		name:  "retry",
		title: "a failure fixed by an automatic retry",
		about: []string{
			"The southbound fails tap1's creation once with a retriable error. The",
			"transaction asked for retries: tap1 is RETRYING, its binding and fib3 wait",
			"as PENDING, and the retry creates all three in one transaction.",
		},
		steps: []step{{
			title: "resync with retries: tap1 in bd2, fib3 via tap1; the southbound is busy once",
			run: func(e *env) error {
				e.sb.FailOnce("create tap interface tap1", errBusy)
				ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
				defer cancel()
				policy := scheduler.RetryPolicy{Period: 10 * time.Millisecond, MaxAttempts: 3}
				txn := e.s.Txn(scheduler.FullResync(), scheduler.Description("resync"), scheduler.Retry(policy))
				for _, v := range values(tap1(), bd2(), fib3()) {
					txn.Set(keyOf(v), v)
				}
				res, err := txn.CommitAndWait(ctx)
				if err != nil {
					return fmt.Errorf("CommitAndWait: %w", err)
				}
				fmt.Fprintf(e.w, "after the wait, the history of tap1 (transaction #%d and its retry):\n", res.Seq)
				for _, t := range e.s.Timeline(tap1Key) {
					line := fmt.Sprintf("  #%d %s -> %s", t.Seq, t.Op, t.State)
					if t.Err != nil {
						line += ": " + t.Err.Error()
					}
					fmt.Fprintln(e.w, line)
				}
				return e.expect(scheduler.CONFIGURED, tap1Key, bd2Key, bd2Tap1, fib3Key)
			},
		}},
	},
	{
		name:  "why-pending",
		title: "the chain that explains why a value is PENDING",
		about: []string{
			"WhyPending follows a PENDING value's unmet dependencies down to the keys",
			"that are missing: here a FIB entry waits for a binding, which waits for",
			"an interface that nobody has asked for.",
		},
		steps: []step{{
			title: "resync: tap1 and loopback1 in bd1 (which names tap2 too), fib2 via tap2",
			run: func(e *env) error {
				if _, err := e.resync(nil, tap1(), loopback1(), bd1(), fib2()); err != nil {
					return err
				}
				why, ok := e.s.WhyPending(fib2Key)
				if !ok {
					return fmt.Errorf("%s is not PENDING", fib2Key)
				}
				fmt.Fprintf(e.w, "why is %s PENDING?\n%s", fib2Key, indent(why.String(), "  "))
				var roots []string
				for _, r := range why.Roots() {
					roots = append(roots, r.String())
				}
				fmt.Fprintf(e.w, "root: %v\n", roots)
				if want := []string{"interface -> " + tap2Key}; !slices.Equal(roots, want) {
					return fmt.Errorf("roots %q, want %q", roots, want)
				}
				return e.expect(scheduler.PENDING, fib2Key, bd1Tap2)
			},
		}, {
			title: "change: tap2",
			notes: []string{"the root is there: the whole chain is created, in order"},
			run: func(e *env) error {
				res, err := e.change(nil, values(tap2()))
				if err != nil {
					return err
				}
				if err := wantOrder(res, "CREATE "+tap2Key, "CREATE "+bd1Tap2, "CREATE "+fib2Key); err != nil {
					return err
				}
				if _, ok := e.s.WhyPending(fib2Key); ok {
					return fmt.Errorf("%s is still PENDING", fib2Key)
				}
				return e.expect(scheduler.CONFIGURED, fib2Key, bd1Tap2, tap2Key)
			},
		}},
	},
}

// wantOrder checks that a transaction executed the operations want (kind
// and key), in this order, among others.
func wantOrder(res *scheduler.Result, want ...string) error {
	var got []string
	for _, o := range res.Executed {
		if o.Err == nil {
			got = append(got, o.Kind.String()+" "+o.Key)
		}
	}
	last := -1
	for _, w := range want {
		i := slices.Index(got, w)
		if i < 0 || i < last {
			return fmt.Errorf("transaction #%d executed %q, want %q in this order", res.Seq, got, want)
		}
		last = i
	}
	return nil
}
