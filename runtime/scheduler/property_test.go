package scheduler_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// The property tests run random transactions over a random dependency
// schema of harness values (kvtest tokens: plain and AnyOf dependencies,
// derived values with their own dependencies, recreate: attributes,
// invalid: tokens, keys without a descriptor, dependency cycles) with
// planned southbound failures, best-effort or reverting, and check after
// each transaction:
//
//  1. the scheduler's view (Status.Applied) is the southbound;
//  2. a reverted transaction leaves the southbound as it was before it;
//  3. a value of ours that exists has all its dependencies;
//  4. a derived value exists only while its base exists and derives it;
//  5. a PENDING value lists in Status.Unmet exactly its unmet dependencies,
//     at least one, and is not part of a group of values that could be
//     created now (a cycle whose outside dependencies are all met);
//  6. states agree with what is applied and with the errors;
//  7. without failures, the plan is what was executed;
//  8. without failures, each key of the transaction reaches its target;
//  9. each southbound call, when it is made, honours the dependencies;
// 10. without failures, no value is refused (ErrStillNeeded, a derived key
//     taken for another value's).
//
// A failure names the seed and the transaction; run with -property.seed=N
// -property.shrink to minimise a failing seed into a short script (in the
// language of testdata/*.txtar, which propParseTrace reads back).

var (
	propertyShrink = flag.Bool("property.shrink", false, "minimise a failing property-test case and print it as a script")
	propertySeed   = flag.Int64("property.seed", -1, "run only this seed of the property tests")
	propertyAll    = flag.Int("property.seeds", 0, "run seeds 1..N of TestProperty (and N seeds of TestPropertyRetry) instead of the default 200 (and 40)")
)

// propertyTxns is the number of transactions of each seed of TestProperty.
const propertyTxns = 60

// The schema: the descriptors the harness registers. Keys under x/ have no
// descriptor (UNIMPLEMENTED); d/ and p/ are the key spaces of derived values
// (p/ keys end with an IP network, for AnyOf predicates).
var propDescriptors = []kvtest.Config{
	{Name: "a", KeyTemplate: "a/{n}"},
	{Name: "b", KeyTemplate: "b/{n}", NoUpdate: true},
	{Name: "c", KeyTemplate: "c/{n}"},
	{Name: "d", KeyTemplate: "d/{n}"},
	{Name: "p", KeyTemplate: "p/{i}/{ip:ipiface}", NoUpdate: true},
}

var (
	// propNBKeys are the keys transactions usually set and delete.
	propNBKeys = []string{"a/0", "a/1", "a/2", "a/3", "b/0", "b/1", "b/2", "b/3", "c/0", "c/1", "c/2", "c/3"}
	// propRareNBKeys are set and deleted now and then: keys without a
	// descriptor, and keys that are usually derived.
	// (They are never derived: one key derived by two bases, or set by
	// the NB and derived, is a configuration error the scheduler reports,
	// and the states that follow are not comparable.)
	propRareNBKeys = []string{"x/0", "x/1", "d/z0", "d/z1"}
	// propOwnedDerived are the keys each base may derive: its own, so that
	// no two bases derive the same key.
	propOwnedDerived = func() map[string][]string {
		m := map[string][]string{}
		for _, k := range propNBKeys {
			b := strings.ReplaceAll(k, "/", "")
			m[k] = []string{"d/" + b, "d/" + b + ".1", "p/" + b + "/10.0.0.1/24", "p/" + b + "/10.0.1.1/24"}
		}
		return m
	}()
	// propDerivedKeys are the keys of derived values.
	propDerivedKeys = func() []string {
		var all []string
		for _, k := range propNBKeys {
			all = append(all, propOwnedDerived[k]...)
		}
		return all
	}()
	// propAnyOf are the arguments of AnyOf tokens.
	propAnyOf = []string{"d/", "c/", "b/", "x/", "p/a0/@10.0.0.5", "p/b1/@10.0.0.5", "p/a0/@10.0.1.9", "p/c2/@10.0.1.9"}
	// propDepKeys are the targets of plain dependencies.
	propDepKeys = slices.Concat(propNBKeys, propDerivedKeys, []string{"x/0", "x/1"})
)

// propOp is one change of a transaction.
type propOp struct {
	key, value string
	del        bool
}

// propFail is one planned southbound failure.
type propFail struct {
	key, op string
	partial bool
	times   int // 0: once
}

// propTxn is one random transaction.
type propTxn struct {
	ops    []propOp
	revert bool
	fails  []propFail
}

func propPick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

// propGenValue returns a random harness value for key.
func propGenValue(r *rand.Rand, key string) string {
	toks := []string{fmt.Sprintf("v=%d", r.IntN(3))}
	for range r.IntN(3) {
		if dep := propPick(r, propDepKeys); dep != key {
			toks = append(toks, "dep:"+dep)
		}
	}
	if a := propPick(r, propAnyOf); r.IntN(8) == 0 && !propSelfAnyOf(a, key) {
		toks = append(toks, "any:"+a)
	}
	if r.IntN(4) == 0 {
		used := map[string]bool{key: true}
		for range 1 + r.IntN(2) {
			if d := propGenDerived(r, key, used, 0); d != "" {
				toks = append(toks, "derive:"+d)
			}
		}
	}
	if r.IntN(5) == 0 {
		toks = append(toks, "recreate:"+propPick(r, []string{"p", "q"}))
	}
	if r.IntN(10) == 0 {
		toks = append(toks, fmt.Sprintf("note:%d", r.IntN(3)))
	}
	if r.IntN(14) == 0 {
		toks = append(toks, "invalid:f")
	}
	return strings.Join(toks, " ")
}

// propSelfAnyOf reports whether the AnyOf argument a could be satisfied by key
// itself. Like a dependency of a value on itself, that is left out: such a
// value could never be created from nothing.
func propSelfAnyOf(a, key string) bool {
	prefix, _, _ := strings.Cut(a, "@")
	return strings.HasPrefix(key, prefix)
}

// propGenDerived returns a derive: argument KEY[T,T,..] with a key of base
// not in used.
func propGenDerived(r *rand.Rand, base string, used map[string]bool, depth int) string {
	owned := propOwnedDerived[base]
	if len(owned) == 0 {
		return ""
	}
	key := propPick(r, owned)
	if used[key] {
		return ""
	}
	used[key] = true
	toks := []string{fmt.Sprintf("w=%d", r.IntN(3))}
	if r.IntN(2) == 0 {
		if dep := propPick(r, propDepKeys); dep != key {
			toks = append(toks, "dep:"+dep)
		}
	}
	if a := propPick(r, propAnyOf); r.IntN(10) == 0 && !propSelfAnyOf(a, key) {
		toks = append(toks, "any:"+a)
	}
	if depth == 0 && r.IntN(6) == 0 {
		if d := propGenDerived(r, base, used, 1); d != "" {
			toks = append(toks, "derive:"+d)
		}
	}
	if r.IntN(8) == 0 {
		toks = append(toks, "recreate:"+propPick(r, []string{"p", "q"}))
	}
	if r.IntN(15) == 0 {
		toks = append(toks, "invalid:g")
	}
	return key + "[" + strings.Join(toks, ",") + "]"
}

var propOpNames = []string{"create", "update", "delete"}

// propGenTxn returns a random transaction. A reverting transaction plans at most
// one failure, so that its revert never meets another planned failure; only
// it may fail in part (best-effort transactions keep what a partial failure
// applied without knowing it, by design).
func propGenTxn(r *rand.Rand, retries bool) propTxn {
	var t propTxn
	t.revert = !retries && r.IntN(3) == 0
	for range 1 + r.IntN(6) {
		key := propPick(r, propNBKeys)
		if r.IntN(12) == 0 {
			key = propPick(r, propRareNBKeys)
		}
		if r.IntN(10) < 3 {
			t.ops = append(t.ops, propOp{key: key, del: true})
		} else {
			t.ops = append(t.ops, propOp{key: key, value: propGenValue(r, key)})
		}
	}
	switch {
	case t.revert:
		if r.IntN(2) == 0 {
			t.fails = append(t.fails, propFail{key: propPick(r, t.ops).key, op: propPick(r, propOpNames), partial: r.IntN(2) == 0})
		}
	case r.IntN(5) < 2:
		for range 1 + r.IntN(2) {
			f := propFail{key: propPick(r, t.ops).key, op: propPick(r, propOpNames)}
			if retries {
				f.times = 1 + r.IntN(3)
			}
			if !slices.ContainsFunc(t.fails, func(g propFail) bool { return g.key == f.key && g.op == f.op }) {
				t.fails = append(t.fails, f)
			}
		}
	}
	return t
}

func propGenTrace(seed int64, n int, retries bool) []propTxn {
	r := rand.New(rand.NewPCG(uint64(seed), 0x6b7664657363))
	trace := make([]propTxn, n)
	for i := range trace {
		trace[i] = propGenTxn(r, retries)
	}
	return trace
}

// propViolation is the first invariant a run found broken.
type propViolation struct {
	txn  int    // index of the transaction after which it was found
	kind string // short name of the invariant, for shrinking
	msg  string
}

func (v *propViolation) Error() string {
	return fmt.Sprintf("after transaction %d: %s: %s", v.txn, v.kind, v.msg)
}

// propRun runs a trace against a fresh scheduler and southbound and
// returns the first violation, with the transaction log of the run.
type propRun struct {
	retry bool // transactions retry failures; wait for the state to settle
	// mode is how calls are made: "" one at a time, "batch" (every
	// descriptor applies batches) or "concurrent" (every descriptor takes
	// four calls at once).
	mode string
	log  strings.Builder
}

func propText(m proto.Message) string {
	if m == nil {
		return "<nil>"
	}
	if sv, ok := m.(*wrapperspb.StringValue); ok {
		return sv.GetValue()
	}
	return fmt.Sprintf("<%T>", m)
}

func (pr *propRun) run(trace []propTxn) (v *propViolation) {
	ctx := context.Background()
	sb := kvtest.NewSB()
	s, err := scheduler.New(scheduler.WithLogger(slog.New(slog.DiscardHandler)), scheduler.WithTxnLog(false))
	if err != nil {
		return &propViolation{kind: "setup", msg: err.Error()}
	}
	defer func() {
		if err := s.Close(ctx); err != nil && v == nil {
			v = &propViolation{txn: len(trace) - 1, kind: "close", msg: err.Error()}
		}
	}()
	for _, c := range propDescriptors {
		switch pr.mode {
		case "batch":
			c.Batch = true
		case "concurrent":
			c.Concurrent = 4
		}
		d, err := sb.Descriptor(c)
		if err == nil {
			err = s.Register(d)
		}
		if err != nil {
			return &propViolation{kind: "setup", msg: err.Error()}
		}
	}
	// drainer consumes planned failures that a transaction did not meet;
	// it is never registered, and its handler is called directly, with
	// keys of the other descriptors.
	defer func() { propBatches.Add(int64(len(sb.Batches()))) }()
	drainDesc, err := sb.Descriptor(kvtest.Config{Name: "drainer", KeyPrefix: "drainer/"})
	if err != nil {
		return &propViolation{kind: "setup", msg: err.Error()}
	}
	drainer := drainDesc.Handler()
	drainUpdater := drainer.(kv.Updater[string, *wrapperspb.StringValue, kvtest.Meta])
	policy := scheduler.RetryPolicy{Period: time.Millisecond, MaxAttempts: 2}
	prev := map[string]scheduler.Status{}

	for i, txn := range trace {
		before := sb.Values()
		for _, f := range txn.fails {
			sb.Fail(f.key, kvtest.Failure{Op: f.op, Partial: f.partial, Times: f.times})
		}
		t := s.Txn(scheduler.Description(fmt.Sprintf("txn %d", i)))
		if txn.revert {
			t.With(scheduler.Revert())
		}
		if pr.retry {
			t.With(scheduler.Retry(policy))
		}
		for _, op := range txn.ops {
			if op.del {
				t.Delete(op.key)
			} else {
				t.Set(op.key, kvtest.Value(op.value))
			}
		}
		res, err := t.Commit(ctx)
		var txnErr *scheduler.TxnError
		if err != nil && !errors.As(err, &txnErr) {
			return &propViolation{txn: i, kind: "commit", msg: err.Error()}
		}
		if pr.retry {
			if msg := propWaitSettled(s); msg != "" {
				return &propViolation{txn: i, kind: "settle", msg: msg}
			}
		}
		calls := sb.TakeCalls()
		pr.logTxn(i, txn, res, calls)

		sts := map[string]scheduler.Status{}
		for _, st := range s.Statuses("") {
			sts[st.Key] = st
		}
		c := &propCheck{i: i, txn: txn, res: res, before: before, after: sb.Values(), prev: prev, sts: sts, retry: pr.retry}
		if v := c.check(); v != nil {
			return v
		}
		prev = sts

		// Consume the planned failures that nothing met, leaving the
		// southbound as it is.
		for _, f := range txn.fails {
			times := max(f.times, 1)
			for _, call := range calls {
				if call.Key == f.key && call.Op == f.op {
					times--
				}
			}
			for range times {
				old, had := sb.Get(f.key)
				switch f.op {
				case "create":
					_, _ = drainer.Create(ctx, f.key, kvtest.Value("drain"))
				case "update":
					_, _ = drainUpdater.Update(ctx, f.key, kvtest.Value("drain"), kvtest.Value("drain"), 0)
				case "delete":
					_ = drainer.Delete(ctx, f.key, kvtest.Value("drain"), 0)
				}
				if had {
					sb.Put(f.key, old)
				} else {
					sb.Remove(f.key)
				}
			}
		}
		sb.TakeCalls()
	}
	return nil
}

// propWaitSettled waits until no value is RETRYING and the scheduler is
// idle: an empty queue is not enough, a job may run or a retry's timer be
// set (a retry due while the run is checked would change what it reads).
func propWaitSettled(s *scheduler.Scheduler) string {
	deadline := time.Now().Add(30 * time.Second)
	for {
		retrying := ""
		for _, st := range s.Statuses("") {
			if st.State == scheduler.RETRYING {
				retrying = st.Key
				break
			}
		}
		if retrying == "" && s.Idle() {
			return ""
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("%s still RETRYING, or the scheduler busy, after 30s", retrying)
		}
		time.Sleep(time.Millisecond)
	}
}

func (pr *propRun) logTxn(i int, txn propTxn, res *scheduler.Result, calls []kvtest.Call) {
	fmt.Fprintf(&pr.log, "--- transaction %d", i)
	if txn.revert {
		pr.log.WriteString(" (revert)")
	}
	pr.log.WriteString("\n")
	for _, f := range txn.fails {
		fmt.Fprintf(&pr.log, "  fail %s %s", f.key, f.op)
		if f.partial {
			pr.log.WriteString(" partial")
		}
		if f.times > 0 {
			fmt.Fprintf(&pr.log, " times=%d", f.times)
		}
		pr.log.WriteString("\n")
	}
	for _, op := range txn.ops {
		if op.del {
			fmt.Fprintf(&pr.log, "  del %s\n", op.key)
		} else {
			fmt.Fprintf(&pr.log, "  set %s %s\n", op.key, op.value)
		}
	}
	if res != nil {
		pr.log.WriteString("  executed:\n")
		for _, l := range strings.Split(strings.TrimSuffix(scheduler.FormatOps(res.Executed), "\n"), "\n") {
			pr.log.WriteString("  " + l + "\n")
		}
		for _, e := range res.Errors {
			fmt.Fprintf(&pr.log, "  error: %v\n", e)
		}
	}
	for _, c := range calls {
		fmt.Fprintf(&pr.log, "  call: %s\n", c)
	}
}

// propCheck checks the invariants after one transaction.
type propCheck struct {
	i             int
	txn           propTxn
	res           *scheduler.Result
	before, after map[string]string
	// prev and sts are the statuses before and after the transaction.
	prev, sts map[string]scheduler.Status
	retry     bool
	msgs      []string
	kind      string
}

func (c *propCheck) fail(kind, format string, args ...any) {
	if c.kind == "" {
		c.kind = kind
	}
	c.msgs = append(c.msgs, kind+": "+fmt.Sprintf(format, args...))
}

// applied returns the applied text of key, if any.
func (c *propCheck) applied(key string) (string, bool) {
	st, ok := c.sts[key]
	if !ok || st.Applied == nil {
		return "", false
	}
	return propText(st.Applied), true
}

// met reports whether dependency d is satisfied by the applied values.
func (c *propCheck) met(d kv.Dependency) bool {
	if !d.IsAnyOf() {
		_, ok := c.applied(d.Key)
		return ok
	}
	for k, st := range c.sts {
		if st.Applied != nil && d.AnyOf.Accepts(k) {
			return true
		}
	}
	return false
}

// propCanonical renders a harness value text as the harness's comparison sees
// it: without derive: and note: tokens, the other tokens sorted.
func propCanonical(t string) string {
	var toks []string
	for _, tok := range strings.Fields(t) {
		if !strings.HasPrefix(tok, "derive:") && !strings.HasPrefix(tok, "note:") {
			toks = append(toks, tok)
		}
	}
	slices.Sort(toks)
	return strings.Join(toks, " ")
}

func propCanonicalMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = propCanonical(v)
	}
	return out
}

func propParse(t string) kvtest.Spec {
	s, _ := kvtest.Parse(t)
	return s
}

func propDescribe(d kv.Dependency) string {
	if d.IsAnyOf() {
		return scheduler.UnmetDependency{Label: d.Label, AnyOf: d.AnyOf.Prefixes, Match: d.AnyOf.Describe}.String()
	}
	return scheduler.UnmetDependency{Label: d.Label, Key: d.Key}.String()
}

func (c *propCheck) check() *propViolation {
	keys := slices.Sorted(maps.Keys(c.sts))

	// 1. The scheduler's view of the southbound is the southbound, up to
	// what the descriptors' comparison leaves out: an update that changes
	// only derive: or note: tokens is never sent to the southbound.
	view := map[string]string{}
	for _, k := range keys {
		if t, ok := c.applied(k); ok {
			view[k] = propCanonical(t)
		}
	}
	if diff := cmp.Diff(propCanonicalMap(c.after), view); diff != "" {
		c.fail("view", "applied values differ from the southbound (-southbound +scheduler):\n%s", diff)
	}

	// 2. A reverted transaction leaves the southbound as it was.
	if c.res != nil && c.res.Reverted {
		if !c.txn.revert {
			c.fail("revert", "a best-effort transaction was reverted")
		}
		// An undo that fails leaves the southbound changed, by necessity;
		// check 1 still holds: the scheduler knows what it holds.
		undoFailed := slices.ContainsFunc(c.res.Executed, func(o scheduler.Op) bool {
			return o.Flags&scheduler.FlagRevert != 0 && o.Err != nil
		})
		if diff := cmp.Diff(propCanonicalMap(c.before), propCanonicalMap(c.after)); diff != "" && !undoFailed {
			c.fail("revert", "southbound after the revert differs from before the transaction (-before +after):\n%s", diff)
		}
	}

	for _, k := range keys {
		st := c.sts[k]
		// 3. Existing values of ours have their dependencies.
		if st.Applied != nil && st.Origin == kv.OriginNB {
			for _, d := range propParse(propText(st.Applied)).Deps {
				if !c.met(d) {
					c.fail("deps", "%s exists (%s) but its dependency %s is unmet", k, st.State, propDescribe(d))
				}
			}
		}
		// 4. Derived values live only while their base exists and
		// derives them; one whose delete failed (FAILED, RETRYING) stays
		// with its base until it is deleted.
		if st.Base != "" {
			bt, ok := c.applied(st.Base)
			stuck := st.State == scheduler.FAILED || st.State == scheduler.RETRYING
			if !ok {
				c.fail("derived", "%s (%s) is derived from %s, which does not exist", k, st.State, st.Base)
			} else if !stuck && !slices.ContainsFunc(propParse(bt).Derived, func(d kv.Derived) bool { return d.Key == k }) {
				c.fail("derived", "%s (%s) is derived from %s, whose applied value %q does not derive it", k, st.State, st.Base, bt)
			}
		}
		// 4b. What the applied version of a value of ours derives is
		// known, derived from it (in whatever state).
		if st.Applied != nil && st.Origin == kv.OriginNB && st.Descriptor != "" {
			for _, d := range propParse(propText(st.Applied)).Derived {
				if dst, ok := c.sts[d.Key]; (!ok || dst.Base != k) && !c.derivedByOther(d.Key, k) {
					c.fail("derived", "%s (%s) derives %s, which is unknown or derived from %q", k, st.State, d.Key, dst.Base)
				}
			}
		}
		// 6. States agree with what is applied.
		switch st.State {
		case scheduler.CONFIGURED:
			if st.Applied == nil {
				c.fail("state", "%s is CONFIGURED with nothing applied", k)
			} else if propText(st.Applied) != propText(st.Value) {
				c.fail("state", "%s is CONFIGURED with %q applied, intended %q", k, propText(st.Applied), propText(st.Value))
			}
		case scheduler.PENDING, scheduler.UNIMPLEMENTED:
			if st.Applied != nil {
				c.fail("state", "%s is %s with %q applied", k, st.State, propText(st.Applied))
			}
		case scheduler.INVALID:
			if !errors.Is(st.LastErr, kv.ErrInvalidValue) {
				c.fail("state", "%s is INVALID with error %v", k, st.LastErr)
			}
			if len(propParse(propText(st.Value)).Invalid) == 0 {
				c.fail("state", "%s is INVALID, but its value %q is valid", k, propText(st.Value))
			}
		case scheduler.FAILED:
		default:
			c.fail("state", "%s is %s; no notification and no retry can lead there", k, st.State)
		}
		if (st.Descriptor == "") != (st.State == scheduler.UNIMPLEMENTED) {
			c.fail("state", "%s is %s with descriptor %q", k, st.State, st.Descriptor)
		}
		// 5. A PENDING value waits for dependencies that are really unmet.
		if st.State == scheduler.PENDING {
			c.checkPending(st)
		}
	}

	// 7. Without failures, the plan is what was executed: the plan is a
	// simulation by the same algorithm.
	if c.res != nil && len(c.txn.fails) == 0 && !c.retry {
		if diff := cmp.Diff(propFormatOps(c.res.Planned), propFormatOps(c.res.Executed)); diff != "" {
			c.fail("plan", "the plan differs from the executed operations (-planned +executed):\n%s", diff)
		}
		if c.res.Reverted {
			c.fail("plan", "a transaction without failures was reverted")
		}
	}

	// 8. Without failures, each key of the transaction reaches its
	// target: a deleted value is gone, a set value is the intended one.
	if c.res != nil && len(c.txn.fails) == 0 {
		last := map[string]propOp{}
		for _, op := range c.txn.ops {
			last[op.key] = op
		}
		for _, k := range slices.Sorted(maps.Keys(last)) {
			op, st := last[k], c.sts[k]
			if st.Base != "" || slices.ContainsFunc(c.res.Errors, func(e scheduler.KeyError) bool { return e.Key == k && errors.Is(e, scheduler.ErrDerivedKey) }) {
				continue // a derived key: the change was refused
			}
			switch {
			case op.del && st.Applied != nil:
				c.fail("target", "%s was deleted, but it is %s with %q applied", k, st.State, propText(st.Applied))
			case !op.del && propText(st.Value) != op.value:
				c.fail("target", "%s was set to %q, but it is %s with intended value %q", k, op.value, st.State, propText(st.Value))
			}
		}
	}

	// 10. Without failures, the scheduler refuses nothing (no value is
	// "still needed": it finds an order for every removal), except what
	// the transaction may not do: change a derived key, derive a key that
	// another value derives, or set an invalid value or one no descriptor
	// handles.
	if c.res != nil && len(c.txn.fails) == 0 {
		for _, e := range c.res.Errors {
			if !errors.Is(e, scheduler.ErrDerivedKey) && !errors.Is(e, kv.ErrInvalidValue) && !errors.Is(e, scheduler.ErrUnimplemented) && !(strings.Contains(e.Error(), "already used by another value") && c.derivedByOther(e.Key, "")) {
				c.fail("errors", "an error in a transaction without failures: %v", e)
			}
		}
	}

	// 9. Every southbound call honours the dependencies at the moment it
	// is made (not checked with retries, whose calls are spread over
	// several transactions).
	if c.res != nil && !c.retry {
		c.checkOrder()
	}

	if len(c.msgs) == 0 {
		return nil
	}
	return &propViolation{txn: c.i, kind: c.kind, msg: strings.Join(c.msgs, "\n")}
}

// derivedByOther reports whether key is derived from a value other than
// base whose applied version derives it. The keys each base may derive are
// its own, but a key derived at one level of a base's derived values may be
// derived at another level too: when an INVALID derived value keeps its
// last valid version (see doc.go), two values derive the key at once, a
// conflict the scheduler reports.
func (c *propCheck) derivedByOther(key, base string) bool {
	st, ok := c.sts[key]
	if !ok || st.Base == "" || st.Base == base {
		return false
	}
	holder, ok := c.applied(st.Base)
	return ok && slices.ContainsFunc(propParse(holder).Derived, func(d kv.Derived) bool { return d.Key == key })
}

// checkPending checks a PENDING value: Status.Unmet lists exactly its
// dependencies that are unmet, at least one; and the value is not part of a
// group that could be created now (its unmet dependencies, followed
// transitively, all PENDING with nothing else missing: a dependency cycle
// the scheduler must create as a unit). A group that holds a value that is
// FAILED, INVALID, UNIMPLEMENTED or absent, or an unmet AnyOf dependency,
// is blocked.
func (c *propCheck) checkPending(st scheduler.Status) {
	var want, got []string
	for _, d := range propParse(propText(st.Value)).Deps {
		if !c.met(d) {
			want = append(want, propDescribe(d))
		}
	}
	for _, u := range st.Unmet {
		got = append(got, u.String())
	}
	if len(got) == 0 {
		c.fail("pending", "%s is PENDING with no unmet dependency listed (value %q)", st.Key, propText(st.Value))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		c.fail("pending", "unmet dependencies of PENDING %s (value %q) (-actual +listed):\n%s", st.Key, propText(st.Value), diff)
	}
	if len(want) == 0 {
		return
	}
	seen := map[string]bool{}
	blocked := false
	var visit func(key string)
	visit = func(key string) {
		seen[key] = true
		for _, d := range propParse(propText(c.sts[key].Value)).Deps {
			if blocked {
				return
			}
			if c.met(d) {
				continue
			}
			t, ok := c.sts[d.Key]
			if d.IsAnyOf() || !ok || t.State != scheduler.PENDING {
				blocked = true
				return
			}
			if !seen[d.Key] {
				visit(d.Key)
			}
		}
	}
	visit(st.Key)
	if !blocked {
		c.fail("pending", "%s is PENDING, but it and the values it waits for could be created as a unit: %v", st.Key, slices.Sorted(maps.Keys(seen)))
	}
}

// checkOrder replays the executed operations over the values applied
// before the transaction and checks each southbound call when it is made: a
// value is created or updated only when its dependencies exist, and deleted
// only when nothing that exists depends on it. Members of a dependency cycle
// (a value that depends, through AnyOf dependencies and derived values' need
// of their base, on the one at hand: through any version of the values the
// transaction deals with, or, for a delete, through the values applied at
// that moment) are exempt: a cycle is created and deleted one member at a
// time.
func (c *propCheck) checkOrder() {
	state := map[string]string{}
	// known holds every version of a value the transaction deals with:
	// the intended one before and after it, those it sets and those of its
	// operations. A key may
	// take several in one transaction (a revert restores the old one), and
	// a cycle through any of them is one whatever the order of the
	// operations; so are the bases (a derived key may change base).
	known := map[string][]string{}
	addKnown := func(k, v string) {
		if !slices.Contains(known[k], v) {
			known[k] = append(known[k], v)
		}
	}
	for k, st := range c.prev {
		if st.Applied != nil {
			state[k] = propText(st.Applied)
		}
		if st.Value != nil {
			addKnown(k, propText(st.Value))
		}
	}
	for _, o := range c.res.Executed {
		if o.Value != nil {
			addKnown(o.Key, propText(o.Value))
		}
	}
	// Intended versions that no operation carried: a cycle created as a
	// unit whose second member failed leaves the first one's partner
	// intended only.
	for _, op := range c.txn.ops {
		if !op.del {
			addKnown(op.key, op.value)
		}
	}
	for k, st := range c.sts {
		if st.Value != nil {
			addKnown(k, propText(st.Value))
		}
	}
	base := map[string][]string{}
	for _, sts := range []map[string]scheduler.Status{c.prev, c.sts} {
		for k, st := range sts {
			if st.Base != "" && !slices.Contains(base[k], st.Base) {
				base[k] = append(base[k], st.Base)
			}
		}
	}
	// intended is what the transaction intends for a key: its last Set or
	// Delete, or else the value the key has after it.
	intended := map[string]string{}
	for k, st := range c.sts {
		if st.Value != nil {
			intended[k] = propText(st.Value)
		}
	}
	for _, op := range c.txn.ops {
		if op.del {
			delete(intended, op.key)
		} else {
			intended[op.key] = op.value
		}
	}
	// reachesIn reports whether from depends on to through the values vals
	// (an AnyOf dependency leads to every key of vals it accepts).
	reachesIn := func(vals map[string][]string, from, to string) bool {
		seen := map[string]bool{}
		var dfs func(k string) bool
		dfs = func(k string) bool {
			if k == to {
				return true
			}
			if seen[k] {
				return false
			}
			seen[k] = true
			for _, b := range base[k] {
				if dfs(b) {
					return true // a derived value needs its base
				}
			}
			for _, v := range vals[k] {
				for _, d := range propParse(v).Deps {
					if !d.IsAnyOf() {
						if dfs(d.Key) {
							return true
						}
						continue
					}
					for x := range vals {
						if d.AnyOf.Accepts(x) && dfs(x) {
							return true
						}
					}
				}
			}
			return false
		}
		return dfs(from)
	}
	// reaches reports whether from depends on to through known values.
	reaches := func(from, to string) bool { return reachesIn(known, from, to) }
	// inCycle reports whether dependency d of key may be unmet because d
	// leads back to key: a cycle.
	inCycle := func(d kv.Dependency, key string) bool {
		if !d.IsAnyOf() {
			return reaches(d.Key, key)
		}
		for x := range known {
			if d.AnyOf.Accepts(x) && reaches(x, key) {
				return true
			}
		}
		return false
	}
	metIn := func(d kv.Dependency, st map[string]string) bool {
		if !d.IsAnyOf() {
			_, ok := st[d.Key]
			return ok
		}
		for k := range st {
			if d.AnyOf.Accepts(k) {
				return true
			}
		}
		return false
	}
	partial := map[string]bool{}
	for _, f := range c.txn.fails {
		if f.partial {
			partial[f.key+" "+f.op] = true
		}
	}
	for n, o := range c.res.Executed {
		var op string
		switch o.Kind {
		case scheduler.OpCreate:
			op = "create"
		case scheduler.OpUpdate:
			op = "update"
		case scheduler.OpDelete:
			op = "delete"
		default:
			continue
		}
		if errors.Is(o.Err, scheduler.ErrStillNeeded) {
			continue // refused by the scheduler: no call was made
		}
		where := fmt.Sprintf("operation %d (%s %s [%s])", n+1, o.Kind, o.Key, o.Flags)
		_, exists := state[o.Key]
		next := maps.Clone(state)
		if op == "delete" {
			delete(next, o.Key)
			for k, t := range next {
				for _, d := range propParse(t).Deps {
					// A delete breaks a cycle of intended values, or one
					// of the values applied now (the applied version of
					// the deleted value may depend on what the new one
					// does not): some member goes first while another
					// depends on it.
					if (d.IsAnyOf() && d.AnyOf.Accepts(o.Key) || d.Key == o.Key) && !metIn(d, next) &&
						!reaches(o.Key, k) && !reachesIn(propVersions(state), o.Key, k) {
						kind := "order"
						if !slices.ContainsFunc(propParse(intended[k]).Deps, func(e kv.Dependency) bool { return e.Key == d.Key && e.Label == d.Label }) {
							kind = "order-stale" // k no longer intends to depend on it
						}
						c.fail(kind, "%s while %s depends on it (%s)", where, k, propDescribe(d))
					}
				}
			}
		} else {
			v := propText(o.Value)
			for _, d := range propParse(v).Deps {
				if !metIn(d, state) && !inCycle(d, o.Key) {
					c.fail("order", "%s with value %q while its dependency %s is unmet", where, v, propDescribe(d))
				}
			}
			next[o.Key] = v
		}
		applied := o.Err == nil
		if o.Err != nil && partial[o.Key+" "+op] {
			delete(partial, o.Key+" "+op)
			applied = exists == (op != "create")
		}
		if applied {
			state = next
		}
	}
}

// propVersions returns vals with one version per key, as checkOrder's
// reachesIn reads them.
func propVersions(vals map[string]string) map[string][]string {
	out := make(map[string][]string, len(vals))
	for k, v := range vals {
		out[k] = []string{v}
	}
	return out
}

// propFormatOps renders operations by key, kind, flags and values.
func propFormatOps(ops []scheduler.Op) []string {
	out := make([]string, len(ops))
	for i, o := range ops {
		out[i] = fmt.Sprintf("%s %s [%s]", o.Kind, o.Key, o.Flags)
		if o.Value != nil {
			out[i] += " value=" + propText(o.Value)
		}
		if o.PrevValue != nil {
			out[i] += " prev=" + propText(o.PrevValue)
		}
		if o.Err != nil {
			out[i] += " error=" + o.Err.Error()
		}
	}
	return out
}

// propFormatTrace renders a trace as a script of testdata/*.txtar.
func propFormatTrace(trace []propTxn) string {
	var b strings.Builder
	for _, c := range propDescriptors {
		fmt.Fprintf(&b, "register %s %s", c.Name, c.KeyTemplate)
		if c.NoUpdate {
			b.WriteString(" noupdate")
		}
		b.WriteString("\n")
	}
	for i, t := range trace {
		fmt.Fprintf(&b, "# transaction %d\n", i)
		for _, f := range t.fails {
			fmt.Fprintf(&b, "fail %s %s", f.key, f.op)
			if f.partial {
				b.WriteString(" partial")
			}
			if f.times > 0 {
				fmt.Fprintf(&b, " times=%d", f.times)
			}
			b.WriteString("\n")
		}
		for _, op := range t.ops {
			if op.del {
				fmt.Fprintf(&b, "del %s\n", op.key)
			} else {
				fmt.Fprintf(&b, "set %s %s\n", op.key, op.value)
			}
		}
		b.WriteString("commit")
		if t.revert {
			b.WriteString(" revert")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// propParseTrace reads a script in the form propFormatTrace writes: fail, set, del
// and commit [revert] lines; register lines and comments are ignored.
func propParseTrace(script string) ([]propTxn, error) {
	var trace []propTxn
	var cur propTxn
	for n, line := range strings.Split(script, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") || fields[0] == "register" {
			continue
		}
		switch {
		case fields[0] == "fail" && len(fields) >= 3:
			f := propFail{key: fields[1], op: fields[2]}
			for _, a := range fields[3:] {
				if a == "partial" {
					f.partial = true
				} else if t, ok := strings.CutPrefix(a, "times="); ok {
					f.times, _ = strconv.Atoi(t)
				}
			}
			cur.fails = append(cur.fails, f)
		case fields[0] == "set" && len(fields) >= 2:
			cur.ops = append(cur.ops, propOp{key: fields[1], value: strings.Join(fields[2:], " ")})
		case fields[0] == "del" && len(fields) == 2:
			cur.ops = append(cur.ops, propOp{key: fields[1], del: true})
		case fields[0] == "commit":
			cur.revert = slices.Contains(fields[1:], "revert")
			trace = append(trace, cur)
			cur = propTxn{}
		default:
			return nil, fmt.Errorf("line %d: cannot parse %q", n+1, line)
		}
	}
	return trace, nil
}

// propShrink minimises a failing trace: fewer transactions, fewer operations,
// fewer failures, fewer tokens, keeping a violation of the same kind.
func propShrink(trace []propTxn, kind string, retry bool) ([]propTxn, *propViolation) {
	fails := func(tr []propTxn) *propViolation {
		pr := &propRun{retry: retry}
		if v := pr.run(tr); v != nil && v.kind == kind {
			return v
		}
		return nil
	}
	clone := func(tr []propTxn) []propTxn {
		out := make([]propTxn, len(tr))
		for i, t := range tr {
			out[i] = propTxn{ops: slices.Clone(t.ops), revert: t.revert, fails: slices.Clone(t.fails)}
		}
		return out
	}
	best := fails(trace)
	if best == nil {
		return trace, nil
	}
	trace = clone(trace[:best.txn+1])
	for changed := true; changed; {
		changed = false
		try := func(cand []propTxn) {
			if v := fails(cand); v != nil {
				trace, best, changed = cand, v, true
				trace = trace[:v.txn+1]
			}
		}
		for i := len(trace) - 1; i >= 0; i-- {
			if i < len(trace) {
				try(slices.Delete(clone(trace), i, i+1))
			}
		}
		for i := 0; i < len(trace); i++ {
			for j := len(trace[i].ops) - 1; j >= 0; j-- {
				if i < len(trace) && j < len(trace[i].ops) && len(trace[i].ops) > 1 {
					cand := clone(trace)
					cand[i].ops = slices.Delete(cand[i].ops, j, j+1)
					try(cand)
				}
			}
			for j := len(trace[i].fails) - 1; i < len(trace) && j >= 0; j-- {
				if j < len(trace[i].fails) {
					cand := clone(trace)
					cand[i].fails = slices.Delete(cand[i].fails, j, j+1)
					try(cand)
				}
			}
			if i < len(trace) && trace[i].revert {
				cand := clone(trace)
				cand[i].revert = false
				for j := range cand[i].fails {
					cand[i].fails[j].partial = false
				}
				try(cand)
			}
			if i < len(trace) {
				for j := range trace[i].fails {
					if j < len(trace[i].fails) && trace[i].fails[j].partial {
						cand := clone(trace)
						cand[i].fails[j].partial = false
						try(cand)
					}
				}
			}
			for j := 0; i < len(trace) && j < len(trace[i].ops); j++ {
				toks := strings.Fields(trace[i].ops[j].value)
				for k := len(toks) - 1; k >= 0; k-- {
					if i >= len(trace) || j >= len(trace[i].ops) {
						break
					}
					toks = strings.Fields(trace[i].ops[j].value)
					if k >= len(toks) {
						continue
					}
					cand := clone(trace)
					cand[i].ops[j].value = strings.Join(slices.Delete(slices.Clone(toks), k, k+1), " ")
					try(cand)
				}
			}
		}
	}
	return trace, best
}

func runPropertySeeds(t *testing.T, seeds []int64, txns int, retry bool, mode ...string) {
	for _, seed := range seeds {
		if *propertySeed >= 0 && seed != *propertySeed {
			continue
		}
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			trace := propGenTrace(seed, txns, retry)
			pr := &propRun{retry: retry}
			if len(mode) > 0 {
				pr.mode = mode[0]
			}
			v := pr.run(trace)
			if v == nil {
				return
			}
			t.Errorf("seed %d, transaction %d: %s\n%s", seed, v.txn, v.kind, v.msg)
			log := pr.log.String()
			if tail := strings.Split(log, "--- transaction "); len(tail) > 4 {
				log = "--- transaction " + strings.Join(tail[len(tail)-3:], "--- transaction ")
			}
			t.Logf("last transactions:\n%s", log)
			if *propertyShrink {
				small, sv := propShrink(trace, v.kind, retry)
				spr := &propRun{retry: retry, mode: pr.mode}
				spr.run(small)
				t.Logf("minimised (%d transactions): %v\n%s\nlog:\n%s", len(small), sv, propFormatTrace(small), spr.log.String())
			} else {
				t.Logf("run with -property.seed=%d -property.shrink to minimise", seed)
			}
		})
	}
}

func propSeedRange(from, n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = from + int64(i)
	}
	return out
}

// TestProperty runs random transactions, best-effort and reverting, with
// planned failures, and checks the invariants after each.
func TestProperty(t *testing.T) {
	t.Parallel()
	n := int64(200) // about 5 s with -race on 2 cores
	if *propertyAll > 0 {
		n = int64(*propertyAll)
	}
	runPropertySeeds(t, propSeedRange(1, n), propertyTxns, false)
}

// TestPropertyBatched runs TestProperty's transactions with batches and
// with concurrent calls: the invariants hold however the calls are made.
func TestPropertyBatched(t *testing.T) {
	t.Parallel()
	n := int64(80)
	if *propertyAll > 0 {
		n = int64(*propertyAll)
	}
	for _, mode := range []string{"batch", "concurrent"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			runPropertySeeds(t, propSeedRange(1, n), propertyTxns, false, mode)
			runPropertySeeds(t, propSeedRange(1001, n/4), 25, true, mode)
		})
	}
	t.Cleanup(func() {
		if propBatches.Load() == 0 {
			t.Error("the batched runs made no batch")
		}
	})
}

// propBatches counts the batches of the property runs.
var propBatches atomic.Int64

// TestPropertyRetry runs fewer best-effort transactions that retry their
// failures, waits after each until nothing is RETRYING, then checks the
// same invariants.
func TestPropertyRetry(t *testing.T) {
	t.Parallel()
	n := int64(40)
	if *propertyAll > 0 {
		n = int64(*propertyAll)
	}
	runPropertySeeds(t, propSeedRange(1001, n), 25, true)
}

// propertyRegressions are minimal reproductions of engine bugs that the
// property tests found (all fixed), one per bug, in the script form of
// propFormatTrace; bug says what went wrong.
var propertyRegressions = []struct {
	name, bug, script string
}{
	{
		name: "plan-derived-key",
		bug:  "setting a derived key directly plans a NOOP that the execution does not record (the simulation leaks opSeq: opFor without mut)",
		script: `
set a/0 derive:d/0[w=0]
commit
set d/0 v=1
commit
`,
	},
	{
		name: "update-after-own-removal",
		bug:  "update() calls Update on a value that dropObsoleteDerived's removal cascade has just deleted (the value depends on what its old version derived)",
		script: `
set a/0 derive:d/0[w=0]
commit
set a/0 dep:d/0
commit
`,
	},
	{
		name: "recreate-without-dependency",
		bug:  "a re-create creates the new value without re-checking its dependencies after the delete cascade removed one of them",
		script: `
set b/0 derive:d/0[w=0]
commit
set b/0 dep:d/0
commit
`,
	},
	{
		name: "stale-dependency-order",
		bug:  "the dependency index holds the new intent's dependencies while the old value is still applied, so a dependency of the applied value is deleted first",
		script: `
set a/0 v=0
set a/1 dep:a/0
commit
del a/0
set a/1 v=1
commit
`,
	},
	{
		name: "stale-dependency-failed-update",
		bug:  "after a failed update the old value stays applied, but its dependencies are no longer indexed, so what it depends on can be deleted under it",
		script: `
set a/0 v=0
set a/1 dep:a/0
commit
fail a/1 update
set a/1 v=1
del a/0
commit
`,
	},
	{
		name: "failed-delete-leaves-dependents-pending",
		bug:  "when a delete fails, the dependents removed before it stay PENDING with every dependency met",
		script: `
set a/0 v=0
set a/1 dep:a/0
commit
fail a/0 delete
del a/0
commit
`,
	},
	{
		name: "derived-removed-twice",
		bug:  "a derived value already being removed is removed again through its base (dropDerived ignores n.removing): a second Delete with a nil value, and a ghost key left in the existing index",
		script: `
set a/1 v=0
set a/2 derive:d/3[w=0,dep:a/1]
commit
set a/2 any:d/ derive:d/3[w=0,dep:a/1]
commit
del a/1
commit
`,
	},
	{
		name: "invalid-loses-error",
		bug:  "an INVALID value whose last valid version is deleted (a dependency went away) is left INVALID with no LastErr",
		script: `
set a/0 v=0
set a/1 dep:a/0
commit
set a/1 invalid:f
commit
del a/0
commit
`,
	},
	{
		name: "revert-overwrites-error",
		bug:  "after a revert, LastErr of the rolled-back values is set to the transaction's error, so an INVALID value carries an operation error",
		script: `
set a/0 invalid:f
commit
fail a/0 create
set a/0 v=0
commit revert
`,
	},
	{
		name: "chain-as-cycle",
		bug:  "cycleGroup takes any chain of PENDING values for a cycle, and inside the unit a member counts as met before it is created, so a value is created before its dependency",
		script: `
set b/2 dep:c/2
set b/1 dep:c/2
commit
set a/1 dep:b/2 dep:b/1
set c/2 v=0
commit
`,
	},
	{
		name: "unit-members-met-for-others",
		bug:  "while a cycle is created as a unit, a dependency on a member not created yet counts as met for every value reconciled meanwhile, so a value outside the cycle is created before its dependency",
		script: `
set a/1 dep:a/2
set a/0 dep:a/1 dep:a/2
commit
set a/2 dep:a/1
commit
`,
	},
	{
		name: "nested-cycle-stays-pending",
		bug:  "a cycle that becomes creatable while another unit is being created is never created: reconcile looks for cycles only when no unit is open",
		script: `
set a/0 dep:a/1 dep:c/0
set a/1 dep:a/0
commit
set c/0 dep:c/1
set c/1 v=0
commit
`,
	},
	{
		name: "dependency-deleted-under-failed-dependent",
		bug:  "when deleting a dependent fails, its dependency is deleted anyway, leaving the dependent in the southbound without it",
		script: `
set a/0 v=0
set a/1 dep:a/0
commit
fail a/1 delete
del a/0
commit
`,
	},
	{
		name: "derived-orphan-after-failed-delete",
		bug:  "a derived value whose delete failed stays applied with its Base set although the base no longer derives it, and nothing deletes it later",
		script: `
set a/0 derive:d/0[w=1]
commit
fail d/0 delete
set a/0 v=0
commit
`,
	},
	{
		name: "failed-revert-diverges",
		bug:  "when an operation of a revert fails, the graph is rolled back anyway and believes the southbound holds what it no longer holds",
		script: `
set a/0 v=0
commit
fail a/0 create
fail a/1 create
del a/0
set a/1 v=0
commit revert
`,
	},
	{
		name: "derived-after-base-removed",
		bug:  "when reconciling a derived value removes its base (the base depends on the value it derives), derive goes on creating the other derived values of the base that is gone",
		script: `
set c/2 derive:d/c2[w=0]
commit
set c/2 dep:d/c2 derive:d/c2[w=2,dep:p/b2/10.0.0.1/24] derive:d/c2.1[w=2]
commit
`,
	},
	{
		name: "removal-completes-after-reason-gone",
		bug:  "a derived value is deleted although, during its removal cascade, its base failed to change and derives it again (it is left NONEXISTENT and missing)",
		script: `
set c/0 derive:p/c0/10.0.0.1/24[w=0]
commit
fail c/0 delete
set c/0 dep:p/c0/10.0.0.1/24
commit
`,
	},
	{
		name: "anyof-cycle-not-deleted",
		bug:  "a cycle closed by an AnyOf dependency cannot be deleted (leadsTo ignored AnyOf dependencies, so each member waits for the other): the delete fails with still needed",
		script: `
set c/1 v=0
commit
set a/1 any:c/
set c/1 dep:a/1
commit
del c/1
commit
`,
	},
	{
		name: "still-needed-by-waiting-value",
		bug:  "a removal blocked by a value whose own removal waits for a removal further up fails with still needed instead of waiting too",
		script: `
set b/3 derive:p/b3/10.0.1.1/24[w=2]
commit
set a/1 dep:p/b3/10.0.1.1/24
commit
set b/1 dep:a/1
commit
set c/1 dep:b/1
commit
set b/1 v=0
set b/3 any:c/
commit revert
`,
	},
	// The next three guard the fixes above: simpler readings of AnyOf
	// dependencies in leadsTo and needs, and of when a removal is
	// abandoned, break them.
	{
		name: "anyof-cycle-through-all-satisfiers",
		bug:  "(guard) an AnyOf leads to a key only when every applied value it accepts does: with any one of them, a/1 any:c/ (c/1 and c/3 exist) counts as needing c/3, and d/b1.1 is deleted while c/3 needs it",
		script: `
set c/3 dep:d/b1.1
commit
set c/1 v=0
commit
set b/1 any:c/ derive:d/b1.1[w=2]
commit
fail c/3 delete
set c/3 recreate:p
del b/1
commit
`,
	},
	{
		name: "anyof-satisfied-by-value-being-removed",
		bug:  "(guard) a value being removed further up still satisfies an AnyOf until it is deleted: otherwise d/b1 (any:c/) and c/0 (dep:d/b1) wait for each other while c/3 goes",
		script: `
set c/3 v=0
commit
set b/1 derive:d/b1[w=1,any:c/,derive:d/b1.1[w=0]]
commit
set c/0 dep:c/3 dep:d/b1
commit
set c/3 dep:p/a0/10.0.0.1/24
commit
`,
	},
	{
		name: "revert-drops-derived-of-new-base",
		bug:  "(guard) a revert removes the derived value of a base's new version although it targets the old version of the same key (it has no intent: its removal is not abandoned)",
		script: `
set b/2 v=0
commit
set b/0 derive:p/b0/10.0.0.1/24[w=1,recreate:p]
commit
fail b/2 delete
set b/0 v=0 derive:p/b0/10.0.0.1/24[w=1,dep:b/0]
del b/2
commit revert
`,
	},
	{
		name: "derived-key-moves-up",
		bug:  "a key derived by a value's derived value in one version and by the value itself in the next is refused as used by another value, and goes missing",
		script: `
set b/2 v=1 derive:d/b2.1[w=0,derive:d/b2[w=2]]
commit
set b/2 v=1 derive:d/b2[w=0]
commit
`,
	},
	{
		name: "derived-key-moves-across",
		bug:  "a key that moves between two derived values of one base is refused when the new holder comes first, and goes missing",
		script: `
set b/0 derive:p/b0/10.0.1.1/24[w=2]
set c/3 derive:p/c3/10.0.1.1/24[w=0,derive:d/c3.1[w=1,dep:d/b0]]
commit
set c/3 derive:p/c3/10.0.0.1/24[w=2,dep:p/b0/10.0.1.1/24,derive:d/c3.1[w=2,dep:p/b2/10.0.0.1/24]] derive:p/c3/10.0.1.1/24[w=0]
commit
`,
	},
	{
		name: "derived-key-conflict-resolved",
		bug:  "a derived key refused because another value held it (an INVALID value keeping its last valid version) stays missing once that value is gone",
		script: `
set a/1 derive:d/a1[w=1]
set c/3 derive:p/c3/10.0.0.1/24[w=2,dep:d/a1,derive:d/c3[w=0],recreate:q]
commit
set c/3 derive:p/c3/10.0.0.1/24[w=0,any:d/,derive:p/c3/10.0.1.1/24[w=0,dep:a/0],invalid:g] derive:d/c3[w=2]
commit
set a/1 v=0
commit
`,
	},
	{
		name: "obsolete-derived-dropped-after-base-failed",
		bug:  "when an update's removal of an obsolete derived value fails the base (its delete was needed), the base keeps its old version, but the other derived values of that version are still dropped",
		script: `
set c/0 derive:d/c0[w=0,dep:p/b2/10.0.1.1/24] derive:p/c0/10.0.0.1/24[w=0]
commit
fail c/0 delete
set c/0 dep:p/c0/10.0.0.1/24
commit
`,
	},
	{
		name: "obsolete-derived-after-base-removed",
		bug:  "(guard) when dropping an obsolete derived value removes the base, the other obsolete ones must still be dropped: the base's removal no longer lists them",
		script: `
set c/2 derive:p/c2/10.0.1.1/24[w=0,any:p/a0/@10.0.1.9] derive:d/c2[w=2]
commit
set c/2 any:d/
commit
`,
	},
}

// TestPropertyRegressions replays the minimal reproductions of the engine
// bugs the property tests found; each must pass the invariants.
func TestPropertyRegressions(t *testing.T) {
	t.Parallel()
	for _, kb := range propertyRegressions {
		t.Run(kb.name, func(t *testing.T) {
			t.Parallel()
			trace, err := propParseTrace(kb.script)
			if err != nil {
				t.Fatal(err)
			}
			pr := &propRun{}
			if v := pr.run(trace); v != nil {
				t.Errorf("%s\n%v\nlog:\n%s", kb.bug, v, pr.log.String())
			}
		})
	}
}
