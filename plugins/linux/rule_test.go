//go:build linux

package linux_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// newNamedEnv is newEnv over a named namespace (kvd-l30-...), so that
// the test can read it with `ip -n NAME`.
func newNamedEnv(t *testing.T, opts ...linux.Option) (*env, string) {
	t.Helper()
	name, ns := newL30Netns(t)
	p, err := linux.New(append([]linux.Option{linux.WithNamespace(ns)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	s, err := scheduler.New(scheduler.WithLogger(slog.New(scheduler.NewLogHandler(testWriter{t}, slog.LevelInfo))))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() { _ = s.Close(ctx) })
	if err := s.Register(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, ns: ns, p: p, s: s}, name
}

// ipRules lists the rules of the namespace as `ip rule list` prints them,
// but the kernel's own three (priorities 0, 32766, 32767).
func ipRules(t *testing.T, ns string) []string {
	t.Helper()
	var out []string
	for _, args := range [][]string{{"-4"}, {"-6"}} {
		for _, l := range strings.Split(strings.TrimSpace(run(t, "ip", append(args, "-n", ns, "rule", "list")...)), "\n") {
			if l == "" || strings.HasPrefix(l, "0:") || strings.HasPrefix(l, "32766:") || strings.HasPrefix(l, "32767:") {
				continue
			}
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	slices.Sort(out)
	return out
}

// TestNetnsRules: policy routing rules, checked with `ip rule list`: a
// rule naming an interface waits for it (PENDING), a change re-creates
// (the kernel changes no rule in place), Retrieve finds them by what they
// are, and a rule goes before its interface.
func TestNetnsRules(t *testing.T) {
	t.Parallel()
	e, ns := newNamedEnv(t)
	br := &linuxinterfaces.Interface{Name: "br30", Type: linuxinterfaces.Interface_TYPE_BRIDGE, Enabled: true}
	byIif := &linuxl3.Rule{Name: "from-br", Priority: 100, Table: 100, From: "10.30.0.0/16", Iif: "br30"}
	byMark := &linuxl3.Rule{Name: "marked", Priority: 110, Table: 110, To: "10.40.0.0/16", Fwmark: 0x10, Fwmask: 0xff}
	v6 := &linuxl3.Rule{Name: "v6", Priority: 120, Table: 120, From: "2001:db8::/32", Fwmark: 7}
	e.set(byIif, byMark, v6)
	e.expect(scheduler.PENDING, keyOf(byIif))
	e.expect(scheduler.CONFIGURED, keyOf(byMark), keyOf(v6))
	want := []string{
		"110: from all to 10.40.0.0/16 fwmark 0x10/0xff lookup 110 proto 212",
		"120: from 2001:db8::/32 fwmark 0x7 lookup 120 proto 212",
	}
	if got := ipRules(t, ns); !slices.Equal(got, want) {
		t.Errorf("ip rule list:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	e.set(br)
	e.expect(scheduler.CONFIGURED, keyOf(br), keyOf(byIif))
	want = append([]string{"100: from 10.30.0.0/16 iif br30 lookup 100 proto 212"}, want...)
	if got := ipRules(t, ns); !slices.Equal(got, want) {
		t.Errorf("ip rule list:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A change: the rule is deleted and added anew.
	byIif = proto.Clone(byIif).(*linuxl3.Rule)
	byIif.Table = 200
	res := e.set(byIif)
	if !slices.ContainsFunc(res.Executed, func(o scheduler.Op) bool { return o.Key == keyOf(byIif) && o.Kind == scheduler.OpDelete }) ||
		!slices.ContainsFunc(res.Executed, func(o scheduler.Op) bool { return o.Key == keyOf(byIif) && o.Kind == scheduler.OpCreate }) {
		t.Errorf("the table change did not re-create the rule:\n%s", scheduler.FormatOps(res.Executed))
	}
	want[0] = "100: from 10.30.0.0/16 iif br30 lookup 200 proto 212"
	if got := ipRules(t, ns); !slices.Equal(got, want) {
		t.Errorf("ip rule list after the change:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Retrieve: a restarted agent finds them all; one removed behind its
	// back (ip rule del) is added again.
	if ops := resyncOps(t, e.ns, nil, br, byIif, byMark, v6); len(ops) != 0 {
		t.Errorf("resync over configured rules executed %q", ops)
	}
	run(t, "ip", "-n", ns, "rule", "del", "priority", "110")
	if ops := resyncOps(t, e.ns, nil, br, byIif, byMark, v6); !slices.Equal(ops, []string{"CREATE " + keyOf(byMark)}) {
		t.Errorf("resync with a rule missing executed %q, want its create", ops)
	}

	// The interface goes: its rule first, then waits.
	res = e.commit(e.s.Txn().Delete(keyOf(br)))
	i := slices.IndexFunc(res.Executed, func(o scheduler.Op) bool { return o.Key == keyOf(byIif) && o.Kind == scheduler.OpDelete })
	j := slices.IndexFunc(res.Executed, func(o scheduler.Op) bool { return o.Key == keyOf(br) && o.Kind == scheduler.OpDelete })
	if i < 0 || j < 0 || i > j {
		t.Errorf("want the rule deleted before its interface:\n%s", scheduler.FormatOps(res.Executed))
	}
	e.expect(scheduler.PENDING, keyOf(byIif))
	if got := ipRules(t, ns); !slices.Equal(got, want[1:]) {
		t.Errorf("ip rule list without the interface:\n%s", strings.Join(got, "\n"))
	}
	e.commit(e.s.Txn().Delete(keyOf(byIif)).Delete(keyOf(byMark)).Delete(keyOf(v6)))
	if got := ipRules(t, ns); len(got) != 0 {
		t.Errorf("rules left after their delete:\n%s", strings.Join(got, "\n"))
	}

	// The schema: a priority of the kernel's own rules, no table.
	for _, bad := range []*linuxl3.Rule{{Name: "bad1", Priority: 32766, Table: 1}, {Name: "bad2", Priority: 5}} {
		if _, err := e.s.Txn().Set(keyOf(bad), bad).Commit(e.ctx); err == nil {
			t.Errorf("%v: accepted", bad)
		}
		e.expect(scheduler.INVALID, keyOf(bad))
	}
}
