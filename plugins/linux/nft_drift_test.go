//go:build linux

package linux_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/vishvananda/netlink"
	"google.golang.org/protobuf/proto"

	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	linuxnftables "github.com/kvdescriptor/kvdescriptor/generated/linux/nftables/v1"
	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// nftDriftValues are a table of the agent's, a base chain in it and a
// rule in the chain.
func nftDriftValues() (*linuxnftables.Table, *linuxnftables.Chain, *linuxnftables.Rule) {
	table := &linuxnftables.Table{Name: "t31"}
	chain := &linuxnftables.Chain{Name: "in31", Table: "t31", Hook: linuxnftables.Chain_HOOK_INPUT}
	rule := &linuxnftables.Rule{Name: "ssh31", Chain: "in31", Order: 10, Protocol: linuxnftables.Rule_PROTOCOL_TCP,
		DestinationPort: 22, Verdict: linuxnftables.Rule_VERDICT_ACCEPT}
	return table, chain, rule
}

// setNft commits values of any of the plugin's models.
func (e *env) setNft(values ...proto.Message) *scheduler.Result {
	e.t.Helper()
	txn := e.s.Txn()
	for _, v := range values {
		txn.Set(nftKey(v), v)
	}
	return e.commit(txn)
}

// nft is another program's nftables connection to the test's namespace
// (what `ip netns exec NS nft ...` would do).
func (e *env) nft() *nftables.Conn {
	e.t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(int(e.ns)))
	if err != nil {
		e.t.Fatalf("nftables: %v", err)
	}
	return c
}

var (
	t31  = &nftables.Table{Name: "t31", Family: nftables.TableFamilyINet}
	in31 = &nftables.Chain{Name: "in31", Table: t31}
)

// nftPolicy is the policy of chain in31 ("" when there is no such chain).
func (e *env) nftPolicy() string {
	ch, err := e.nft().ListChain(t31, "in31")
	switch {
	case err != nil:
		return ""
	case ch.Policy == nil || *ch.Policy == nftables.ChainPolicyAccept:
		return "accept"
	default:
		return "drop"
	}
}

// nftRules are the comments of the rules of chain in31 (nil when there is
// no such chain), and their handles.
func (e *env) nftRules() ([]string, []uint64) {
	rules, err := e.nft().GetRules(t31, in31)
	if err != nil {
		return nil, nil
	}
	var comments []string
	var handles []uint64
	for _, r := range rules {
		comments = append(comments, strings.TrimSuffix(string(userdata.Get(r.UserData, userdata.TypeComment)), "\x00"))
		handles = append(handles, r.Handle)
	}
	return comments, handles
}

// nftWhole says whether table t31 holds chain in31 with the policy and
// our rule.
func (e *env) nftWhole(policy string) bool {
	comments, _ := e.nftRules()
	return e.nftPolicy() == policy && slices.Equal(comments, []string{"kvd:10:ssh31"})
}

// nftChainPolicy sets the policy of chain in31 behind the agent's back:
// nft add chain inet t31 in31 '{ type filter hook input priority 0; policy P; }'
func (e *env) nftChainPolicy(p nftables.ChainPolicy) {
	e.t.Helper()
	c := e.nft()
	prio := nftables.ChainPriority(0)
	c.AddChain(&nftables.Chain{Name: "in31", Table: t31, Hooknum: nftables.ChainHookInput, Priority: &prio,
		Type: nftables.ChainTypeFilter, Policy: &p})
	if err := c.Flush(); err != nil {
		e.t.Fatalf("changing the chain's policy: %v", err)
	}
}

// nftDeleteRule deletes our rule behind the agent's back:
// nft delete rule inet t31 in31 handle H
func (e *env) nftDeleteRule() {
	e.t.Helper()
	_, handles := e.nftRules()
	if len(handles) != 1 {
		e.t.Fatalf("chain in31 has %d rules, want 1", len(handles))
	}
	c := e.nft()
	if err := c.DelRule(&nftables.Rule{Table: t31, Chain: in31, Handle: handles[0]}); err != nil {
		e.t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		e.t.Fatalf("deleting the rule: %v", err)
	}
}

// lastSeq is the number of the scheduler's last transaction.
func (e *env) lastSeq() uint64 {
	h := e.s.History()
	if len(h) == 0 {
		return 0
	}
	return h[len(h)-1].Seq
}

// driftOps are the operations that drift checks executed after seq.
func (e *env) driftOps(seq uint64) []scheduler.Op {
	var ops []scheduler.Op
	for _, rec := range e.s.History() {
		if rec.Seq > seq && rec.Kind == scheduler.DriftCheckTxn {
			ops = append(ops, rec.Executed...)
		}
	}
	return ops
}

// waitRepaired waits until a drift check after seq found key drifted,
// with the flags, and repaired it by an operation of kind (the history
// records a transaction after its calls: the kernel may be repaired
// first). It fails the test if any resync ran after seq: the watcher
// alone must have found the drift.
func (e *env) waitRepaired(seq uint64, kind scheduler.OpKind, key string, flags scheduler.Flags) {
	e.t.Helper()
	waitFor(e.t, fmt.Sprintf("a drift check %s %s", kind, key), func() bool { return hasOp(e.driftOps(seq), kind, key, flags) })
	for _, rec := range e.s.History() {
		switch rec.Kind {
		case scheduler.FullResyncTxn, scheduler.UpstreamResyncTxn, scheduler.DownstreamResyncTxn:
			if rec.Seq > seq {
				e.t.Errorf("transaction #%d is a %s: the drift was found by a resync, not by the watcher", rec.Seq, rec.Kind)
			}
		}
	}
}

// hasOp says whether ops found key drifted, with the flags (DRIFTED, and
// MISSING for a value gone), and repaired it by an operation of kind.
func hasOp(ops []scheduler.Op, kind scheduler.OpKind, key string, flags scheduler.Flags) bool {
	flags |= scheduler.FlagDrifted
	return slices.ContainsFunc(ops, func(o scheduler.Op) bool { return o.Key == key && o.Flags&flags == flags }) &&
		slices.ContainsFunc(ops, func(o scheduler.Op) bool { return o.Key == key && o.Kind == kind })
}

// TestNetnsNftDriftTableDeleted: with the watcher, our nftables table
// deleted behind our back (nft delete table inet t31, its chain and rule
// with it) is noticed with no resync: a drift check finds the three
// MISSING and, by the default policy (repair), creates them again.
func TestNetnsNftDriftTableDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, linux.WithDebounce(20*time.Millisecond))
	e.watchReady()
	table, chain, rule := nftDriftValues()
	e.setNft(table, chain, rule)
	e.expect(scheduler.CONFIGURED, nftKey(table), nftKey(chain), nftKey(rule))
	if !e.nftWhole("accept") {
		t.Fatal("the table is not as intended after its create")
	}
	seq := e.lastSeq()

	// nft delete table inet t31
	c := e.nft()
	c.DelTable(t31)
	if err := c.Flush(); err != nil {
		t.Fatalf("deleting the table: %v", err)
	}
	waitFor(t, "table, chain and rule repaired", func() bool { return e.nftWhole("accept") })
	waitFor(t, "all CONFIGURED", func() bool {
		return e.s.Status(nftKey(table)).State == scheduler.CONFIGURED && e.s.Status(nftKey(chain)).State == scheduler.CONFIGURED &&
			e.s.Status(nftKey(rule)).State == scheduler.CONFIGURED
	})
	for _, k := range []string{nftKey(table), nftKey(chain), nftKey(rule)} {
		e.waitRepaired(seq, scheduler.OpCreate, k, scheduler.FlagMissing)
	}
}

// TestNetnsNftDriftChanged: a chain's policy changed and a rule deleted
// behind our back are noticed with no resync and repaired: the chain
// DRIFTED (updated back), the rule MISSING (created again).
func TestNetnsNftDriftChanged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, linux.WithDebounce(20*time.Millisecond))
	e.watchReady()
	table, chain, rule := nftDriftValues()
	e.setNft(table, chain, rule)
	e.expect(scheduler.CONFIGURED, nftKey(table), nftKey(chain), nftKey(rule))
	seq := e.lastSeq()

	e.nftChainPolicy(nftables.ChainPolicyDrop)
	waitFor(t, "chain policy repaired", func() bool { return e.nftPolicy() == "accept" })
	e.waitRepaired(seq, scheduler.OpUpdate, nftKey(chain), 0)

	seq = e.lastSeq()
	e.nftDeleteRule()
	waitFor(t, "rule repaired", func() bool { return e.nftWhole("accept") })
	e.waitRepaired(seq, scheduler.OpCreate, nftKey(rule), scheduler.FlagMissing)
	e.expect(scheduler.CONFIGURED, nftKey(table), nftKey(chain), nftKey(rule))
}

// TestNetnsNftDriftReported: with the report policy for the nftables
// values (by key prefix), a changed policy leaves the chain DRIFTED with
// the policy as what differs, a deleted rule is MISSING, and neither is
// put back.
func TestNetnsNftDriftReported(t *testing.T) {
	t.Parallel()
	report := scheduler.WithDriftPolicy(func(key, _ string) (kv.DriftPolicy, bool) {
		return kv.DriftReport, strings.HasPrefix(key, "linux/nftables/")
	})
	e := newEnvWith(t, []scheduler.Option{report}, linux.WithDebounce(20*time.Millisecond))
	e.watchReady()
	table, chain, rule := nftDriftValues()
	e.setNft(table, chain, rule)
	e.expect(scheduler.CONFIGURED, nftKey(table), nftKey(chain), nftKey(rule))

	e.nftChainPolicy(nftables.ChainPolicyDrop)
	waitFor(t, "chain DRIFTED", func() bool { return e.s.Status(nftKey(chain)).State == scheduler.DRIFTED })
	st := e.s.Status(nftKey(chain))
	if st.Drift == nil || st.Drift.Missing || len(st.Drift.Diff) != 1 || st.Drift.Diff[0].Path != "policy" {
		t.Errorf("drift: %+v", st.Drift)
	}
	if e.nftPolicy() != "drop" {
		t.Errorf("report changed the policy back: %s", e.nftPolicy())
	}

	e.nftDeleteRule()
	waitFor(t, "rule MISSING", func() bool { return e.s.Status(nftKey(rule)).State == scheduler.MISSING })
	if comments, _ := e.nftRules(); len(comments) != 0 {
		t.Errorf("report created the rule again: %q", comments)
	}
	if st := e.s.Status(nftKey(rule)); st.Drift == nil || !st.Drift.Missing {
		t.Errorf("rule's drift: %+v", st.Drift)
	}
}

// TestNetnsNftDriftAdopted: with the adopt policy, a chain's policy
// changed behind our back becomes the intended value, with no call back.
func TestNetnsNftDriftAdopted(t *testing.T) {
	t.Parallel()
	adopt := scheduler.WithDriftPolicy(func(string, string) (kv.DriftPolicy, bool) { return kv.DriftAdopt, true })
	e := newEnvWith(t, []scheduler.Option{adopt}, linux.WithDebounce(20*time.Millisecond))
	e.watchReady()
	table, chain, rule := nftDriftValues()
	e.setNft(table, chain, rule)
	e.expect(scheduler.CONFIGURED, nftKey(table), nftKey(chain), nftKey(rule))

	e.nftChainPolicy(nftables.ChainPolicyDrop)
	waitFor(t, "policy adopted", func() bool {
		v, _ := e.s.Status(nftKey(chain)).Value.(*linuxnftables.Chain)
		return v.GetPolicy() == linuxnftables.Chain_POLICY_DROP
	})
	if st := e.s.Status(nftKey(chain)); st.State != scheduler.CONFIGURED {
		t.Errorf("adopted: %v", st.State)
	}
	if e.nftPolicy() != "drop" {
		t.Errorf("the policy changed back: %s", e.nftPolicy())
	}
}

// TestNetnsRuleDriftRepaired: a policy routing rule of ours deleted
// behind our back (ip rule del) is noticed by the watcher with no resync
// and added again.
func TestNetnsRuleDriftRepaired(t *testing.T) {
	t.Parallel()
	e := newEnv(t, linux.WithDebounce(20*time.Millisecond))
	e.watchReady()
	r := &linuxl3.Rule{Name: "marked31", Priority: 131, Table: 131, To: "10.131.0.0/16", Fwmark: 0x31}
	e.set(r)
	e.expect(scheduler.CONFIGURED, keyOf(r))
	has := func() bool {
		rules, err := e.h.RuleList(0)
		return err == nil && slices.ContainsFunc(rules, func(x netlink.Rule) bool { return x.Priority == 131 && x.Table == 131 })
	}
	if !has() {
		t.Fatal("no rule of priority 131 after its create")
	}
	seq := e.lastSeq()

	// ip rule del priority 131
	del := netlink.NewRule()
	del.Priority = 131
	if err := e.h.RuleDel(del); err != nil {
		t.Fatalf("ip rule del priority 131: %v", err)
	}
	waitFor(t, "rule repaired", has)
	e.waitRepaired(seq, scheduler.OpCreate, keyOf(r), scheduler.FlagMissing)
	e.expect(scheduler.CONFIGURED, keyOf(r))
}

// BenchmarkNftRecheck is what one burst of nftables events costs the
// watcher's agent: a drift check of the three nftables descriptors (the
// Recheck it reports) over a table with one chain of N rules of ours, all
// in place (the check finds nothing). Each op is one CheckDrift.
func BenchmarkNftRecheck(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			e := newEnvWith(b, []scheduler.Option{scheduler.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
			table, chain, _ := nftDriftValues()
			txn := e.s.Txn().Set(nftKey(table), table).Set(nftKey(chain), chain)
			for i := range n {
				r := &linuxnftables.Rule{Name: fmt.Sprintf("r%d", i), Chain: "in31", Order: uint32(i), Protocol: linuxnftables.Rule_PROTOCOL_TCP,
					DestinationPort: uint32(1000 + i), Verdict: linuxnftables.Rule_VERDICT_ACCEPT}
				txn.Set(nftKey(r), r)
			}
			e.commit(txn)
			check := scheduler.DriftCheck{Descriptors: []string{linuxnftables.TableModelName, linuxnftables.ChainModelName, linuxnftables.RuleModelName}}
			b.ResetTimer()
			for range b.N {
				res, err := e.s.CheckDrift(e.ctx, check)
				if err != nil || res.Seq != 0 {
					b.Fatalf("check: seq %d, %v", res.Seq, err)
				}
			}
		})
	}
}

// TestNetnsDriftBeforeWatch: what changed between the agent's last look
// (its startup resync) and the moment Watch's subscriptions open is
// checked when they do. Links, addresses, routes and neighbours are (the
// link subscription lists the existing links, which touches them all);
// rules and nftables, which no subscription lists, are checked at start
// too.
func TestNetnsDriftBeforeWatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, linux.WithDebounce(20*time.Millisecond))
	table, chain, rule := nftDriftValues()
	e.setNft(table, chain, rule)
	r := &linuxl3.Rule{Name: "marked32", Priority: 132, Table: 132, To: "10.132.0.0/16", Fwmark: 0x32}
	e.set(r)
	e.expect(scheduler.CONFIGURED, keyOf(r), nftKey(table), nftKey(chain), nftKey(rule))
	has := func() bool {
		rules, err := e.h.RuleList(0)
		return err == nil && slices.ContainsFunc(rules, func(x netlink.Rule) bool { return x.Priority == 132 && x.Table == 132 })
	}
	seq := e.lastSeq()

	// Before the watcher: ip rule del priority 132; nft delete table inet t31
	del := netlink.NewRule()
	del.Priority = 132
	if err := e.h.RuleDel(del); err != nil {
		t.Fatalf("ip rule del priority 132: %v", err)
	}
	c := e.nft()
	c.DelTable(t31)
	if err := c.Flush(); err != nil {
		t.Fatalf("deleting the table: %v", err)
	}

	e.watchReady()
	waitFor(t, "rule repaired", has)
	waitFor(t, "table, chain and rule repaired", func() bool { return e.nftWhole("accept") })
	e.waitRepaired(seq, scheduler.OpCreate, keyOf(r), scheduler.FlagMissing)
	e.waitRepaired(seq, scheduler.OpCreate, nftKey(table), scheduler.FlagMissing)
}

// TestNetnsNftPartialListing: a listing of our chain that fails, or that
// misses our rule (a dump cut short by a change elsewhere: the kernel
// flags it, the nftables library does not say), makes a drift check find
// the rule MISSING and create it again; the create must see the rule is
// there and leave it once in the chain, never twice.
func TestNetnsNftPartialListing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		spoilt int32 // how many listings, from the drift check's on
		list   func([]*nftables.Rule, error) ([]*nftables.Rule, error)
	}{
		{"error", 1, func([]*nftables.Rule, error) ([]*nftables.Rule, error) {
			return nil, errors.New("receiveAckAware: interrupted system call")
		}},
		{"partial", 1, func(rules []*nftables.Rule, err error) ([]*nftables.Rule, error) { return rules[:0], err }},
		// Create's own listing misses it too: the copy it adds is kept,
		// the older one deleted.
		{"partial twice", 2, func(rules []*nftables.Rule, err error) ([]*nftables.Rule, error) { return rules[:0], err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var spoil atomic.Int32 // listings still to spoil
			hook := linux.WithNftListing(func(rules []*nftables.Rule, err error) ([]*nftables.Rule, error) {
				if spoil.Add(-1) >= 0 {
					return tc.list(rules, err)
				}
				return rules, err
			})
			e := newEnv(t, hook)
			table, chain, rule := nftDriftValues()
			e.setNft(table, chain, rule)
			e.expect(scheduler.CONFIGURED, nftKey(table), nftKey(chain), nftKey(rule))

			spoil.Store(tc.spoilt)
			check := scheduler.DriftCheck{Descriptors: []string{linuxnftables.TableModelName, linuxnftables.ChainModelName, linuxnftables.RuleModelName}}
			if _, err := e.s.CheckDrift(e.ctx, check); err != nil {
				t.Fatalf("drift check: %v", err)
			}
			if n := spoil.Load(); n > 0 {
				t.Fatalf("%d spoilt listings left unused", n)
			}
			if comments, _ := e.nftRules(); !slices.Equal(comments, []string{"kvd:10:ssh31"}) {
				t.Errorf("chain in31 after the repair: %q, want our rule once", comments)
			}
			e.expect(scheduler.CONFIGURED, nftKey(rule))
		})
	}
}

// TestNetnsNftForeignTableIgnored: the watcher ignores nftables events of
// tables that are not the plugin's (another program's, as firewalld's
// inet firewalld): they trigger no recheck of the nftables descriptors,
// while an event of our table t31 does.
func TestNetnsNftForeignTableIgnored(t *testing.T) {
	t.Parallel()
	type event struct {
		table   string
		touched bool
	}
	var mu sync.Mutex
	var events []event
	hook := linux.WithNftEvents(func(_ nftables.TableFamily, table string, touched bool) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, event{table, touched})
	})
	e := newEnv(t, linux.WithDebounce(20*time.Millisecond), hook)
	table, chain, rule := nftDriftValues()
	e.setNft(table, chain, rule)
	e.expect(scheduler.CONFIGURED, nftKey(table), nftKey(chain), nftKey(rule))

	ctx, cancel := context.WithCancel(e.ctx)
	var rechecks atomic.Int32 // reports that had the rules rechecked
	ended := make(chan error, 1)
	go func() {
		ended <- e.p.Watch(ctx, func(_ context.Context, cs []linux.Change) error {
			for _, c := range cs {
				if slices.Contains(c.Recheck, linuxnftables.RuleModelName) {
					rechecks.Add(1)
				}
			}
			return nil
		})
	}()
	defer func() {
		cancel()
		if err := <-ended; err != nil {
			t.Errorf("Watch: %v", err)
		}
	}()
	waitFor(t, "the first report (every descriptor rechecked)", func() bool { return rechecks.Load() >= 1 })
	before := rechecks.Load()

	// Another program: nft add table inet fw31; nft add chain inet fw31 in
	// '{ type filter hook input priority 0; }'; nft add rule inet fw31 in accept
	fw := &nftables.Table{Name: "fw31", Family: nftables.TableFamilyINet}
	c := e.nft()
	c.AddTable(fw)
	prio := nftables.ChainPriority(0)
	in := c.AddChain(&nftables.Chain{Name: "in", Table: fw, Hooknum: nftables.ChainHookInput, Priority: &prio, Type: nftables.ChainTypeFilter})
	c.AddRule(&nftables.Rule{Table: fw, Chain: in, Exprs: []expr.Any{&expr.Verdict{Kind: expr.VerdictAccept}}})
	if err := c.Flush(); err != nil {
		t.Fatalf("another program's table: %v", err)
	}
	// Then ours, by hand: its events come after the other's on the socket.
	e.nftChainPolicy(nftables.ChainPolicyDrop)
	seen := func(table string) []event {
		mu.Lock()
		defer mu.Unlock()
		return slices.DeleteFunc(slices.Clone(events), func(ev event) bool { return ev.table != table })
	}
	waitFor(t, "an event of table t31", func() bool { return len(seen("t31")) > 0 })
	waitFor(t, "a recheck after the change of t31", func() bool { return rechecks.Load() > before })
	if fws := seen("fw31"); len(fws) == 0 || slices.ContainsFunc(fws, func(ev event) bool { return ev.touched }) {
		t.Errorf("events of table fw31: %+v, want some, none touching", fws)
	}
	if slices.ContainsFunc(seen("t31"), func(ev event) bool { return !ev.touched }) {
		t.Errorf("events of table t31: %+v, want all touching", seen("t31"))
	}
}

// TestNetnsNftDeleteCopies: a rule of ours found twice in its chain (left
// by an agent before TestNetnsNftPartialListing's fix, or copied by hand)
// is deleted whole: no copy of it stays behind.
func TestNetnsNftDeleteCopies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	table, chain, rule := nftDriftValues()
	e.setNft(table, chain, rule)
	e.expect(scheduler.CONFIGURED, nftKey(table), nftKey(chain), nftKey(rule))
	rules, err := e.nft().GetRules(t31, in31)
	if err != nil || len(rules) != 1 {
		t.Fatalf("chain in31: %d rules, %v; want 1", len(rules), err)
	}
	// nft add rule inet t31 in31 ... comment "kvd:10:ssh31" (a second copy)
	c := e.nft()
	c.AddRule(&nftables.Rule{Table: t31, Chain: in31, Exprs: rules[0].Exprs, UserData: rules[0].UserData})
	if err := c.Flush(); err != nil {
		t.Fatalf("copying the rule: %v", err)
	}
	if comments, _ := e.nftRules(); len(comments) != 2 {
		t.Fatalf("chain in31 after the copy: %q", comments)
	}
	e.commit(e.s.Txn().Delete(nftKey(rule)))
	if comments, _ := e.nftRules(); len(comments) != 0 {
		t.Errorf("chain in31 after the rule's delete: %q, want empty", comments)
	}
}
