package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// The schema and the southbound of the fault test (fault_test.go). They
// are independent of runtime/kvtest: the models are small versions of the
// shipped ones, written against the public runtime/kv API, and the
// southbound behaves like a kernel (it refuses what it cannot hold) with
// faults injected at random or as planned.
//
// A value is a StringValue whose text is "field=value" pairs separated by
// spaces, lists comma-separated, e.g. "type=tap mtu=0 addrs=10.0.0.1/24".
//
//	vrf/{n}           table                 Update
//	if/{n}            type peer vrf mtu addrs   Update, metadata; type and peer
//	                  re-create; mtu 0 equals 1500; vrf -> vrf/{vrf};
//	                  peer -> if/{peer} (a veth pair is a cycle of two);
//	                  each of addrs derives addr/{n}/{prefix}
//	addr/{if}/{p}     derived, no Update, no dependency of its own
//	bd/{n}            flood ifs             Update; each of ifs derives
//	                  bdif/{n}/{if}, which depends on if/{if} (no Update)
//	route/{n}         out gw metric          no Update, metadata;
//	                  out -> if/{out}; gw -> AnyOf addr/{out}/ whose network
//	                  contains gw
//	arp/{n}           if mac                no Update; if -> if/{if}
//	fib/{n}           bd if mac             no Update; -> bd/{bd} and the
//	                  derived bdif/{bd}/{if}

// fValue is a parsed value: its fields by name.
type fValue map[string]string

func fParse(text string) fValue {
	v := fValue{}
	for _, tok := range strings.Fields(text) {
		k, val, _ := strings.Cut(tok, "=")
		v[k] = val
	}
	return v
}

func (v fValue) list(field string) []string {
	if v[field] == "" {
		return nil
	}
	return strings.Split(v[field], ",")
}

func fText(m any) string {
	if sv, ok := m.(*wrapperspb.StringValue); ok {
		return sv.GetValue()
	}
	return ""
}

// fModel is one model of the schema.
type fModel struct {
	name   string // descriptor name; keys are name + "/" + label
	update bool   // has Update
	meta   bool   // values carry metadata
	// deps, derived, equal, recreate: the model's schema functions.
	deps     func(key string, v fValue) []kv.Dependency
	derived  func(key string, v fValue) []kv.Derived
	equal    func(a, b fValue) bool
	recreate func(a, b fValue) bool
	// alters are the fields the southbound may change behind the
	// scheduler's back (no dependency rides on them), with values.
	alters map[string][]string
}

func (m *fModel) prefix() string { return m.name + "/" }

func fLabel(key string) string { _, l, _ := strings.Cut(key, "/"); return l }

// fEqualExcept compares the fields of a and b, leaving out those named.
func fEqualExcept(a, b fValue, skip ...string) bool {
	for _, v := range []fValue{a, b} {
		for k := range v {
			if !slices.Contains(skip, k) && a[k] != b[k] {
				return false
			}
		}
	}
	return true
}

func fDep(label, key string) kv.Dependency { return kv.Dependency{Label: label, Key: key} }

// fModels is the schema, in registration order.
var fModels = []*fModel{
	{name: "vrf", update: true, alters: map[string][]string{"table": {"0", "1", "7"}}},
	{
		name: "if", update: true, meta: true, alters: map[string][]string{"mtu": {"1400", "9000"}, "type": {"tap", "dummy"}},
		deps: func(key string, v fValue) []kv.Dependency {
			var d []kv.Dependency
			if v["vrf"] != "" {
				d = append(d, fDep("vrf", "vrf/"+v["vrf"]))
			}
			if v["peer"] != "" {
				d = append(d, fDep("peer", "if/"+v["peer"]))
			}
			return d
		},
		derived: func(key string, v fValue) []kv.Derived {
			var out []kv.Derived
			for _, a := range v.list("addrs") {
				out = append(out, kv.Derived{Key: "addr/" + fLabel(key) + "/" + a, Value: wrapperspb.String("if=" + fLabel(key) + " ip=" + a)})
			}
			return out
		},
		equal: func(a, b fValue) bool {
			mtu := func(v fValue) string {
				if v["mtu"] == "" || v["mtu"] == "0" {
					return "1500"
				}
				return v["mtu"]
			}
			return mtu(a) == mtu(b) && fEqualExcept(a, b, "mtu", "addrs")
		},
		recreate: func(a, b fValue) bool { return a["type"] != b["type"] || a["peer"] != b["peer"] },
	},
	{name: "addr", alters: map[string][]string{"scope": {"link", "host"}}},
	{
		name: "bd", update: true, alters: map[string][]string{"flood": {"0", "1"}},
		derived: func(key string, v fValue) []kv.Derived {
			var out []kv.Derived
			for _, i := range v.list("ifs") {
				out = append(out, kv.Derived{Key: "bdif/" + fLabel(key) + "/" + i, Value: wrapperspb.String("bd=" + fLabel(key) + " if=" + i)})
			}
			return out
		},
		equal: func(a, b fValue) bool { return fEqualExcept(a, b, "ifs") },
	},
	{
		name: "bdif", alters: map[string][]string{"bvi": {"1"}},
		deps: func(key string, v fValue) []kv.Dependency { return []kv.Dependency{fDep("interface", "if/"+v["if"])} },
	},
	{
		name: "route", meta: true, alters: map[string][]string{"metric": {"5", "6"}},
		deps: func(key string, v fValue) []kv.Dependency {
			d := []kv.Dependency{fDep("out", "if/"+v["out"])}
			if gw, err := netip.ParseAddr(v["gw"]); err == nil {
				d = append(d, kv.Dependency{Label: "gateway", AnyOf: kv.AnyOf{
					Prefixes: []string{"addr/" + v["out"] + "/"}, Match: kv.NetworkContains(gw), Describe: "network contains " + v["gw"]}})
			}
			return d
		},
	},
	{
		name: "arp", alters: map[string][]string{"mac": {"m9"}},
		deps: func(key string, v fValue) []kv.Dependency { return []kv.Dependency{fDep("interface", "if/"+v["if"])} },
	},
	{
		name: "fib", alters: map[string][]string{"mac": {"m9"}},
		deps: func(key string, v fValue) []kv.Dependency {
			return []kv.Dependency{fDep("bd", "bd/"+v["bd"]), fDep("binding", "bdif/"+v["bd"]+"/"+v["if"])}
		},
	},
}

// fModelOf returns the model of key.
func fModelOf(key string) *fModel {
	for _, m := range fModels {
		if strings.HasPrefix(key, m.prefix()) {
			return m
		}
	}
	return nil
}

// fBaseOf returns the key of the base of a derived key, "" for others.
func fBaseOf(key string) string {
	parts := strings.SplitN(key, "/", 3)
	switch {
	case len(parts) < 3:
		return ""
	case parts[0] == "addr":
		return "if/" + parts[1]
	case parts[0] == "bdif":
		return "bd/" + parts[1]
	}
	return ""
}

// fDeps returns the dependencies of a value text of key.
func fDeps(key, text string) []kv.Dependency {
	m := fModelOf(key)
	if m == nil || m.deps == nil {
		return nil
	}
	return m.deps(key, fParse(text))
}

// fEquivalent compares two value texts of key as the descriptor does.
func fEquivalent(key, a, b string) bool {
	m := fModelOf(key)
	if m != nil && m.equal != nil {
		return m.equal(fParse(a), fParse(b))
	}
	return fEqualExcept(fParse(a), fParse(b))
}

// fDependencyMet reports whether d is satisfied by the keys of vals.
func fDependencyMet(d kv.Dependency, vals map[string]string) bool {
	if !d.IsAnyOf() {
		_, ok := vals[d.Key]
		return ok
	}
	for k := range vals {
		if d.AnyOf.Accepts(k) {
			return true
		}
	}
	return false
}

// fFaultKind is the kind of an injected fault.
type fFaultKind uint8

// The fault kinds.
const (
	// fRetriable: the call fails, nothing applied, a retriable error.
	fRetriable fFaultKind = iota + 1
	// fTerminal: the call fails, nothing applied, kv.NonRetriable.
	fTerminal
	// fPartial: the change is applied, then a retriable error returned.
	fPartial
	// fPartialTerminal: the change is applied, then kv.NonRetriable.
	fPartialTerminal
	// fPanic: the handler panics, nothing applied.
	fPanic
)

var fFaultNames = map[fFaultKind]string{fRetriable: "retriable", fTerminal: "terminal", fPartial: "partial",
	fPartialTerminal: "partial-terminal", fPanic: "panic"}

func (k fFaultKind) String() string { return fFaultNames[k] }

// fFault is one injected fault: the nth call (from 1, counted in the step)
// of op on key fails with kind. Retrieve faults name the descriptor as key.
type fFault struct {
	op   string // create, update, delete, retrieve
	key  string
	nth  int
	kind fFaultKind
}

func (f fFault) String() string { return fmt.Sprintf("%s %s #%d %s", f.op, f.key, f.nth, f.kind) }

// fCall is one call the southbound received.
type fCall struct {
	step  int // the step of the committing context; -1: a retry (no step)
	op    string
	key   string
	value string
	fault fFaultKind
	err   error
	// noop: the call failed because the southbound already was as the
	// call wanted (a create of a key it holds with an equivalent value, a
	// delete of a key it lacks).
	noop bool
	// refused: the southbound refused the call (a create or update whose
	// base or dependency it lacks); orphans: what the southbound still
	// holds that needs the key a delete removed.
	refused string
	orphans []string
	// readKey is the key a Retrieve was given alone to correlate: a
	// read-back after a failed call on it (or a refresh of a descriptor
	// with one value).
	readKey string
	// batchPanic: the call was made in a batch that panicked, which fails
	// it for the scheduler whatever it did; batchKeys are the keys of all
	// the batch's operations, those the panic stopped before their call
	// included (the scheduler fails and reads back those too).
	batchPanic bool
	batchKeys  []string
}

func (c fCall) String() string {
	s := c.op + " " + c.key
	if c.readKey != "" {
		s += " (" + c.readKey + ")"
	}
	if c.value != "" {
		s += " = " + c.value
	}
	if c.fault != 0 {
		s += " [" + c.fault.String() + "]"
	}
	if c.err != nil {
		s += " ! " + c.err.Error()
	}
	if len(c.orphans) > 0 {
		s += " (still needed by " + strings.Join(c.orphans, ", ") + ")"
	}
	return s
}

// fStepKey carries the step number in the contexts of commits.
type fStepKey struct{}

// errInjected is the error of injected faults.
var errInjected = errors.New("injected fault")

// faultSB is the southbound: values by key, metadata (an index) by key.
type faultSB struct {
	mu       sync.Mutex
	vals     map[string]string
	meta     map[string]int
	nextMeta int

	inject bool    // faults are on
	rate   float64 // probability of a fault per call, in random mode
	rng    *rand.Rand
	// planned are the faults of the step in replay mode (rng nil).
	planned []fFault
	// panics allows Retrieve panics (on whatever goroutine calls it: the
	// scheduler recovers every call into a handler).
	panics bool
	// partial allows faults that apply the change before failing.
	partial bool
	counts  map[string]int // calls of the step by "op key"
	fired   []fFault       // faults injected in the step
	calls   []fCall        // calls of the step
	// txnFrom and txnTo are the southbound before the first and after
	// the last call made for the step's own transaction (its context
	// carries the step): a retry, a transaction of its own, may run
	// before or after it within the step, never amid its calls.
	txnFrom, txnTo map[string]string
}

func newFaultSB(rng *rand.Rand, rate float64) *faultSB {
	return &faultSB{vals: map[string]string{}, meta: map[string]int{}, rng: rng, rate: rate, counts: map[string]int{}}
}

// beginStep resets the per-step records; planned faults replace the
// random ones when the southbound replays.
func (sb *faultSB) beginStep(planned []fFault) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.planned = planned
	clear(sb.counts)
	sb.fired = nil
	sb.calls = nil
	sb.txnFrom, sb.txnTo = nil, nil
}

// txnWindow returns the southbound before the first and after the last
// call of the step's own transaction (nil when it made none).
func (sb *faultSB) txnWindow() (from, to map[string]string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return maps.Clone(sb.txnFrom), maps.Clone(sb.txnTo)
}

// markLocked records the southbound around a call of the step's
// transaction: before its first one (pre) and after each. sb.mu held.
func (sb *faultSB) markLocked(step int, pre bool) {
	switch {
	case step < 0:
	case pre && sb.txnFrom == nil:
		sb.txnFrom = maps.Clone(sb.vals)
	case !pre:
		sb.txnTo = maps.Clone(sb.vals)
	}
}

func (sb *faultSB) setInject(on bool) {
	sb.mu.Lock()
	sb.inject = on
	sb.mu.Unlock()
}

func (sb *faultSB) snapshot() map[string]string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return maps.Clone(sb.vals)
}

func (sb *faultSB) metaOf(key string) (int, bool) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	m, ok := sb.meta[key]
	return m, ok
}

func (sb *faultSB) stepCalls() []fCall {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return slices.Clone(sb.calls)
}

func (sb *faultSB) stepFaults() []fFault {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return slices.Clone(sb.fired)
}

// fault decides whether the call op on key fails, and how; sb.mu held.
func (sb *faultSB) fault(op, key string) fFaultKind {
	ck := op + " " + key
	sb.counts[ck]++
	nth := sb.counts[ck]
	if !sb.inject {
		return 0
	}
	var kind fFaultKind
	if sb.rng == nil {
		for _, f := range sb.planned {
			if f.op == op && f.key == key && f.nth == nth {
				kind = f.kind
			}
		}
	} else if sb.rng.Float64() < sb.rate {
		if op == "retrieve" {
			kind = []fFaultKind{fRetriable, fRetriable, fRetriable, fTerminal, fTerminal, fPanic}[sb.rng.IntN(6)]
		} else {
			kind = []fFaultKind{fRetriable, fRetriable, fRetriable, fTerminal, fTerminal, fPartial, fPartial, fPartialTerminal, fPanic}[sb.rng.IntN(9)]
		}
	}
	if !sb.partial && kind == fPartial {
		kind = fRetriable
	}
	if !sb.partial && kind == fPartialTerminal {
		kind = fTerminal
	}
	if kind == fPanic && op == "retrieve" && !sb.panics {
		kind = fRetriable
	}
	if kind != 0 {
		sb.fired = append(sb.fired, fFault{op: op, key: key, nth: nth, kind: kind})
	}
	return kind
}

// injectedErr returns the error of an injected fault.
func injectedErr(op, key string, kind fFaultKind) error {
	err := fmt.Errorf("%s %s: %w (%s)", op, key, errInjected, kind)
	if kind == fTerminal || kind == fPartialTerminal {
		return kv.NonRetriable(err)
	}
	return err
}

func stepOf(ctx context.Context) int {
	if n, ok := ctx.Value(fStepKey{}).(int); ok {
		return n
	}
	return -1
}

// unmetLocked returns what a value text of key needs that the southbound
// lacks (its base, its dependencies); the veth peer is left out: creating
// one end of a pair is how the pair comes to be. sb.mu held.
func (sb *faultSB) unmetLocked(key, text string) string {
	if b := fBaseOf(key); b != "" {
		if _, ok := sb.vals[b]; !ok {
			return "base " + b
		}
	}
	for _, d := range fDeps(key, text) {
		if d.Label != "peer" && !fDependencyMet(d, sb.vals) {
			return "dependency " + d.String()
		}
	}
	return ""
}

// do runs one create, update or delete call.
func (sb *faultSB) do(ctx context.Context, op, key, text string) (int, error) {
	sb.mu.Lock()
	kind := sb.fault(op, key)
	call := fCall{step: stepOf(ctx), op: op, key: key, value: text, fault: kind}
	sb.markLocked(call.step, true)
	var err error
	meta := sb.meta[key]
	switch {
	case kind == fPanic:
		sb.calls = append(sb.calls, call)
		sb.markLocked(call.step, false)
		sb.mu.Unlock()
		panic(fmt.Sprintf("injected panic in %s %s", op, key))
	case kind == fRetriable || kind == fTerminal:
		err = injectedErr(op, key, kind)
	default:
		old, had := sb.vals[key]
		err = sb.applyLocked(op, key, text)
		call.noop = err != nil && (op == "delete" && !had || op == "create" && had && fEquivalent(key, old, text))
		if err != nil && !call.noop {
			call.refused = err.Error()
		}
		if err == nil && op == "delete" {
			call.orphans = sb.needingLocked(key)
		}
		if err == nil && op != "delete" {
			meta = sb.meta[key]
		}
		if err == nil && kind != 0 {
			err = injectedErr(op, key, kind)
		}
	}
	call.err = err
	sb.calls = append(sb.calls, call)
	sb.markLocked(call.step, false)
	sb.mu.Unlock()
	return meta, err
}

// needingLocked lists the values of the southbound that need key: derived
// from it, or depending on it (a veth peer aside), with no other key
// satisfying the dependency. sb.mu held.
func (sb *faultSB) needingLocked(key string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(sb.vals)) {
		if fBaseOf(k) == key {
			out = append(out, k)
			continue
		}
		for _, d := range fDeps(k, sb.vals[k]) {
			if d.Label == "peer" || fDependencyMet(d, sb.vals) {
				continue
			}
			if d.Key == key || d.IsAnyOf() && d.AnyOf.Accepts(key) {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// applyLocked applies a call as a kernel would: a create needs the key
// absent and what the value needs present; an update needs the key present
// and what the new value needs; a delete of an absent key is ErrNotFound.
func (sb *faultSB) applyLocked(op, key, text string) error {
	_, exists := sb.vals[key]
	switch op {
	case "create":
		if exists {
			return kv.NonRetriable(fmt.Errorf("create %s: already exists", key))
		}
		if u := sb.unmetLocked(key, text); u != "" {
			return kv.NonRetriable(fmt.Errorf("create %s: refused, %s is missing", key, u))
		}
		sb.nextMeta++
		sb.vals[key], sb.meta[key] = text, sb.nextMeta
	case "update":
		if !exists {
			return kv.NonRetriable(fmt.Errorf("update %s: %w", key, kv.ErrNotFound))
		}
		if u := sb.unmetLocked(key, text); u != "" {
			return kv.NonRetriable(fmt.Errorf("update %s: refused, %s is missing", key, u))
		}
		sb.vals[key] = text
	case "delete":
		if !exists {
			return fmt.Errorf("delete %s: %w", key, kv.ErrNotFound)
		}
		delete(sb.vals, key)
		delete(sb.meta, key)
	}
	return nil
}

// retrieve lists what the southbound holds under the descriptor's prefix
// (all of it ours).
func (sb *faultSB) retrieve(ctx context.Context, name, readKey string) ([]kv.Item[string, *wrapperspb.StringValue, int], error) {
	sb.mu.Lock()
	kind := sb.fault("retrieve", name)
	call := fCall{step: stepOf(ctx), op: "retrieve", key: name, fault: kind, readKey: readKey}
	sb.markLocked(call.step, true)
	sb.markLocked(call.step, false)
	if kind != 0 && kind != fPanic {
		call.err = injectedErr("retrieve", name, kind)
	}
	sb.calls = append(sb.calls, call)
	var out []kv.Item[string, *wrapperspb.StringValue, int]
	for _, k := range slices.Sorted(maps.Keys(sb.vals)) {
		if strings.HasPrefix(k, name+"/") {
			out = append(out, kv.Item[string, *wrapperspb.StringValue, int]{Key: k, Value: wrapperspb.String(sb.vals[k]), Metadata: sb.meta[k], Origin: kv.OriginNB})
		}
	}
	sb.mu.Unlock()
	switch {
	case kind == fPanic:
		panic("injected panic in retrieve " + name)
	case call.err != nil:
		return nil, call.err
	}
	return out, nil
}

// tamper changes the southbound behind the scheduler's back: text "" removes
// key and, as a kernel does, what can no longer exist without it (derived
// values, dependents, the other end of a veth pair); otherwise the value
// becomes text.
func (sb *faultSB) tamper(key, text string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if _, ok := sb.vals[key]; !ok {
		return
	}
	if text != "" {
		sb.vals[key] = text
		return
	}
	delete(sb.vals, key)
	delete(sb.meta, key)
	for changed := true; changed; {
		changed = false
		for _, k := range slices.Sorted(maps.Keys(sb.vals)) {
			gone := sb.unmetLocked(k, sb.vals[k]) != ""
			for _, d := range fDeps(k, sb.vals[k]) {
				gone = gone || (d.Label == "peer" && !fDependencyMet(d, sb.vals))
			}
			if gone {
				delete(sb.vals, k)
				delete(sb.meta, k)
				changed = true
			}
		}
	}
}

// fHandler is the handler of a model without Update; fUpdHandler adds it.
type fHandler struct {
	sb *faultSB
	m  *fModel
}

type fUpdHandler struct{ fHandler }

var (
	_ kv.Handler[string, *wrapperspb.StringValue, int]   = fHandler{}
	_ kv.Retriever[string, *wrapperspb.StringValue, int] = fHandler{}
	_ kv.Updater[string, *wrapperspb.StringValue, int]   = fUpdHandler{}
)

func (h fHandler) Create(ctx context.Context, key string, v *wrapperspb.StringValue) (int, error) {
	return h.sb.do(ctx, "create", key, v.GetValue())
}

func (h fHandler) Delete(ctx context.Context, key string, v *wrapperspb.StringValue, _ int) error {
	_, err := h.sb.do(ctx, "delete", key, v.GetValue())
	return err
}

func (h fHandler) Retrieve(ctx context.Context, correlate []kv.Item[string, *wrapperspb.StringValue, int]) ([]kv.Item[string, *wrapperspb.StringValue, int], error) {
	readKey := ""
	if len(correlate) == 1 {
		readKey = correlate[0].Key
	}
	return h.sb.retrieve(ctx, h.m.name, readKey)
}

func (h fUpdHandler) Update(ctx context.Context, key string, _, v *wrapperspb.StringValue, _ int) (int, error) {
	return h.sb.do(ctx, "update", key, v.GetValue())
}

// fBatch applies a batch one operation after the other through the
// faulty southbound. A panic of one (an injected fault) ends the batch:
// the scheduler fails every operation of it, applied or not, and reads
// back what it needs.
func (h fHandler) fBatch(ctx context.Context, kind kv.BatchKind, ops []kv.BatchOp[string, *wrapperspb.StringValue, int]) {
	fBatches.Add(1)
	fBatchedOps.Add(int64(len(ops)))
	h.sb.mu.Lock()
	start := len(h.sb.calls)
	h.sb.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			// The scheduler fails every operation of a batch that
			// panicked, those applied before the panic too.
			keys := make([]string, len(ops))
			for i := range ops {
				keys[i] = ops[i].Key
			}
			h.sb.mu.Lock()
			for i := start; i < len(h.sb.calls); i++ {
				h.sb.calls[i].batchPanic = true
				h.sb.calls[i].batchKeys = keys
			}
			h.sb.mu.Unlock()
			panic(p)
		}
	}()
	for i := range ops {
		op := &ops[i]
		switch kind {
		case kv.BatchCreate:
			op.Metadata, op.Err = h.sb.do(ctx, "create", op.Key, op.Value.GetValue())
		case kv.BatchUpdate:
			op.Metadata, op.Err = h.sb.do(ctx, "update", op.Key, op.Value.GetValue())
		default:
			_, op.Err = h.sb.do(ctx, "delete", op.Key, op.Value.GetValue())
		}
	}
}

// fBatches and fBatchedOps count the batches of the "batch" mode and the
// operations they held.
var fBatches, fBatchedOps atomic.Int64

// The handlers of the "batch" and "concurrent" modes.
type (
	fBatchHandler    struct{ fHandler }
	fBatchUpdHandler struct{ fUpdHandler }
	fConcHandler     struct{ fHandler }
	fConcUpdHandler  struct{ fUpdHandler }
)

func (h fBatchHandler) Batch(ctx context.Context, kind kv.BatchKind, ops []kv.BatchOp[string, *wrapperspb.StringValue, int]) {
	h.fBatch(ctx, kind, ops)
}

func (h fBatchUpdHandler) Batch(ctx context.Context, kind kv.BatchKind, ops []kv.BatchOp[string, *wrapperspb.StringValue, int]) {
	h.fBatch(ctx, kind, ops)
}

func (fConcHandler) ConcurrentCalls() int    { return 4 }
func (fConcUpdHandler) ConcurrentCalls() int { return 4 }

// fDescriptors builds the schema's descriptors over sb; mode "batch" or
// "concurrent" makes every descriptor apply batches or take concurrent
// calls.
func fDescriptors(sb *faultSB, mode string) ([]kv.Descriptor, error) {
	var out []kv.Descriptor
	for _, m := range fModels {
		spec := kv.Spec[string, *wrapperspb.StringValue, int]{
			Name:         m.name,
			KeyPrefix:    m.prefix(),
			WithMetadata: m.meta,
			Equivalent: func(key string, a, b *wrapperspb.StringValue) bool {
				return fEquivalent(key, a.GetValue(), b.GetValue())
			},
		}
		if m.deps != nil {
			spec.Dependencies = func(key string, v *wrapperspb.StringValue) []kv.Dependency { return m.deps(key, fParse(v.GetValue())) }
		}
		if m.derived != nil {
			spec.Derived = func(key string, v *wrapperspb.StringValue) []kv.Derived { return m.derived(key, fParse(v.GetValue())) }
		}
		if m.name == "addr" || m.name == "bdif" {
			// A key of a derived model tells its base, written by hand
			// here (the generator emits it from the derive key template).
			spec.BaseOf = fBaseOf
		}
		if m.recreate != nil {
			spec.NeedsRecreate = func(key string, a, b *wrapperspb.StringValue) bool {
				return m.recreate(fParse(a.GetValue()), fParse(b.GetValue()))
			}
		}
		base := fHandler{sb: sb, m: m}
		var h kv.Handler[string, *wrapperspb.StringValue, int]
		switch {
		case mode == "batch" && m.update:
			h = fBatchUpdHandler{fUpdHandler{base}}
		case mode == "batch":
			h = fBatchHandler{base}
		case mode == "concurrent" && m.update:
			h = fConcUpdHandler{fUpdHandler{base}}
		case mode == "concurrent":
			h = fConcHandler{base}
		case m.update:
			h = fUpdHandler{base}
		default:
			h = base
		}
		d, err := kv.NewDescriptor(spec, h)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// failed reports whether the call failed: it returned an error, or it
// panicked (the southbound recorded no error for it then).
func (c fCall) failed() bool { return c.err != nil || c.fault == fPanic || c.batchPanic }
