//go:build linux

package linux_test

import (
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	linuxnftables "github.com/kvdescriptor/kvdescriptor/generated/linux/nftables/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// nftRuleset is `nft list ruleset` in the namespace, with its lines
// trimmed; handles shows the rules' handles (nft -a).
func nftRuleset(t *testing.T, ns string, handles bool) string {
	t.Helper()
	args := []string{"netns", "exec", ns, "nft"}
	if handles {
		args = append(args, "-a")
	}
	out := run(t, "ip", append(args, "list", "ruleset")...)
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// nftKey is the key of an nftables value.
func nftKey(v proto.Message) string {
	switch v := v.(type) {
	case *linuxnftables.Table:
		return linuxnftables.TableKeyFor(v)
	case *linuxnftables.Chain:
		return linuxnftables.ChainKeyFor(v)
	case *linuxnftables.Rule:
		return linuxnftables.RuleKeyFor(v)
	}
	return keyOf(v)
}

// TestNetnsNftables: a table, a base chain and a regular one, and rules of
// the typed subset, checked with `nft list ruleset` in a real namespace:
// rules wait for their chains (and jump targets), run in their order,
// change in place (handle kept), are found again by Retrieve, and go
// before their chain and table.
func TestNetnsNftables(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("nft"); err != nil {
		t.Fatalf("this test needs nft (make tools installs Debian's nftables): %v", err)
	}
	e, ns := newNamedEnv(t)
	set := func(vs ...proto.Message) *scheduler.Result {
		t.Helper()
		txn := e.s.Txn()
		for _, v := range vs {
			txn.Set(nftKey(v), v)
		}
		return e.commit(txn)
	}
	table := &linuxnftables.Table{Name: "t30"}
	input := &linuxnftables.Chain{Name: "in30", Table: "t30", Hook: linuxnftables.Chain_HOOK_INPUT}
	sub := &linuxnftables.Chain{Name: "sub30", ChainName: "sub", Table: "t30"}
	ssh := &linuxnftables.Rule{Name: "ssh", Chain: "in30", Order: 10, Protocol: linuxnftables.Rule_PROTOCOL_TCP, DestinationPort: 22, Source: "10.30.0.0/16", Iif: "eth0", Verdict: linuxnftables.Rule_VERDICT_ACCEPT}
	v6 := &linuxnftables.Rule{Name: "v6", Chain: "in30", Order: 20, Source: "2001:db8::/32", Verdict: linuxnftables.Rule_VERDICT_DROP}
	jump := &linuxnftables.Rule{Name: "dns", Chain: "in30", Order: 5, Protocol: linuxnftables.Rule_PROTOCOL_UDP, SourcePort: 53, Verdict: linuxnftables.Rule_VERDICT_JUMP, JumpChain: "sub30"}
	icmp := &linuxnftables.Rule{Name: "icmp", Chain: "sub30", Protocol: linuxnftables.Rule_PROTOCOL_ICMP, Destination: "10.31.0.1/32", Verdict: linuxnftables.Rule_VERDICT_DROP}

	// Rules before their chains, in an order that is not theirs.
	set(v6, ssh)
	e.expect(scheduler.PENDING, nftKey(v6), nftKey(ssh))
	set(table, input)
	e.expect(scheduler.CONFIGURED, nftKey(table), nftKey(input), nftKey(v6), nftKey(ssh))
	set(jump, icmp)
	e.expect(scheduler.PENDING, nftKey(jump), nftKey(icmp))
	set(sub)
	e.expect(scheduler.CONFIGURED, nftKey(sub), nftKey(jump), nftKey(icmp))

	got := nftRuleset(t, ns, false)
	t.Logf("nft list ruleset:\n%s", got)
	want := []string{
		"table inet t30 {",
		"chain in30 {",
		"type filter hook input priority filter; policy accept;",
		`udp sport 53 jump sub comment "kvd:5:dns"`,
		`iifname "eth0" ip saddr 10.30.0.0/16 tcp dport 22 accept comment "kvd:10:ssh"`,
		`ip6 saddr 2001:db8::/32 drop comment "kvd:20:v6"`,
		"}",
		"chain sub {",
		`ip daddr 10.31.0.1 meta l4proto icmp drop comment "kvd:0:icmp"`,
	}
	if !strings.Contains(got, strings.Join(want, "\n")) {
		t.Errorf("nft list ruleset:\n%s\nwant it to hold:\n%s", got, strings.Join(want, "\n"))
	}

	// In place: the policy of a chain, the port of a rule (its handle
	// kept).
	handle := regexp.MustCompile(`kvd:10:ssh" # handle (\d+)`)
	before := handle.FindStringSubmatch(nftRuleset(t, ns, true))
	input = proto.Clone(input).(*linuxnftables.Chain)
	input.Policy = linuxnftables.Chain_POLICY_DROP
	ssh = proto.Clone(ssh).(*linuxnftables.Rule)
	ssh.DestinationPort = 2222
	res := set(input, ssh)
	for _, k := range []string{nftKey(input), nftKey(ssh)} {
		if !slices.ContainsFunc(res.Executed, func(o scheduler.Op) bool { return o.Key == k && o.Kind == scheduler.OpUpdate }) {
			t.Errorf("%s was not updated in place:\n%s", k, scheduler.FormatOps(res.Executed))
		}
	}
	got = nftRuleset(t, ns, true)
	after := handle.FindStringSubmatch(got)
	if before == nil || after == nil || before[1] != after[1] {
		t.Errorf("the rule's handle %v, then %v: want it kept", before, after)
	}
	if !strings.Contains(got, "policy drop;") || !strings.Contains(got, "tcp dport 2222 accept") {
		t.Errorf("nft list ruleset after the update:\n%s", got)
	}

	// Retrieve: a restarted agent finds everything; a rule deleted behind
	// its back (nft delete rule) is added again, in its place.
	all := []proto.Message{table, input, sub, ssh, v6, jump, icmp}
	if ops := resyncOps(t, e.ns, nil, all...); len(ops) != 0 {
		t.Errorf("resync over the configured ruleset executed %q", ops)
	}
	h := regexp.MustCompile(`kvd:20:v6" # handle (\d+)`).FindStringSubmatch(nftRuleset(t, ns, true))
	if h == nil {
		t.Fatal("no handle of rule v6")
	}
	run(t, "ip", "netns", "exec", ns, "nft", "delete", "rule", "inet", "t30", "in30", "handle", h[1])
	if ops := resyncOps(t, e.ns, nil, all...); !slices.Equal(ops, []string{"CREATE " + nftKey(v6)}) {
		t.Errorf("resync with a rule missing executed %q, want its create", ops)
	}
	if got := nftRuleset(t, ns, false); !strings.Contains(got, "tcp dport 2222 accept comment \"kvd:10:ssh\"\nip6 saddr 2001:db8::/32 drop comment \"kvd:20:v6\"") {
		t.Errorf("the rule added again is not in its place:\n%s", got)
	}

	// The table goes: its rules, then its chains, then it.
	res = e.commit(e.s.Txn().Delete(nftKey(table)))
	pos := func(k string) int {
		return slices.IndexFunc(res.Executed, func(o scheduler.Op) bool { return o.Key == k && o.Kind == scheduler.OpDelete })
	}
	if !(pos(nftKey(jump)) < pos(nftKey(sub)) && pos(nftKey(icmp)) < pos(nftKey(sub)) && pos(nftKey(ssh)) < pos(nftKey(input)) &&
		pos(nftKey(input)) < pos(nftKey(table)) && pos(nftKey(sub)) < pos(nftKey(table)) && pos(nftKey(jump)) >= 0) {
		t.Errorf("want rules deleted before their chains, chains before the table:\n%s", scheduler.FormatOps(res.Executed))
	}
	for _, v := range all[1:] {
		e.expect(scheduler.PENDING, nftKey(v))
	}
	if got := nftRuleset(t, ns, false); strings.Contains(got, "t30") {
		t.Errorf("the table survived its delete:\n%s", got)
	}
	txn := e.s.Txn()
	for _, v := range all[1:] {
		txn.Delete(nftKey(v))
	}
	e.commit(txn)

	// The schema: a port without TCP or UDP, a jump without a target.
	for _, bad := range []*linuxnftables.Rule{
		{Name: "bad1", Chain: "in30", DestinationPort: 80, Verdict: linuxnftables.Rule_VERDICT_ACCEPT},
		{Name: "bad2", Chain: "in30", Verdict: linuxnftables.Rule_VERDICT_JUMP},
		{Name: "bad3", Chain: "in30"},
	} {
		if _, err := e.s.Txn().Set(nftKey(bad), bad).Commit(e.ctx); err == nil {
			t.Errorf("%v: accepted", bad)
		}
		e.expect(scheduler.INVALID, nftKey(bad))
	}
}

// TestNftablesStaysOutOfTheCore: the nftables library is the Linux
// plugin's: the scheduler and runtime/kv (what generated code imports)
// compile none of it.
func TestNftablesStaysOutOfTheCore(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"../../runtime/scheduler", "../../runtime/kv"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/google/nftables") || strings.HasPrefix(dep, "github.com/mdlayher/") {
				t.Errorf("%s compiles %s", pkg, dep)
			}
		}
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "github.com/google/nftables\n") {
		t.Errorf("go list -deps of plugins/linux shows no nftables (the check would see nothing): %v", err)
	}
}
