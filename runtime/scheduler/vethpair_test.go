package scheduler_test

// The veth pair test: a model-based test of the scheduler over a southbound
// where the two ends of a veth pair are one kernel object, as the Linux
// plugin sees them (plugins/linux/interface.go): creating one end creates
// the pair (the other end under a temporary name, not a value yet),
// creating the other end then takes over that end, and deleting either end
// deletes the pair, both ends. The scheduler knows only the schema: each
// end is a value that depends on its peer (a dependency cycle of two).
//
// Faults fire at random on about 6 % of the calls: errors (retriable or
// not, nothing applied), changes applied and then an error, panics, calls
// that outlive the call timeout (applied or not), and failed Retrieves (so
// failed read-backs; some panic, as any call may). Steps are transactions
// (best-effort or reverting, with or without retries), groups of
// transactions committed at once from several goroutines, downstream and
// full resyncs, and restarts, over three ways of calling: one call at a
// time, batches, concurrent calls. After each step, once retries settled:
//
//	pair-half-sb     the southbound holds one end of a pair as a value and
//	                 not the other, and no status records a failed or
//	                 refused call that explains it by a rule of doc.go
//	                 (the present end's delete failed or was refused, or
//	                 either end is of unknown outcome);
//	pair-half-graph  the scheduler holds an end as applied while the
//	                 southbound has no such end, and its status records
//	                 no failed or refused delete of it;
//	view-*           for any other key, the scheduler's Applied is what the
//	                 southbound holds (doc.go: after a failed call the value
//	                 is read back and "the graph takes what the southbound
//	                 holds"), unless its outcome is unknown;
//
// and every 25 steps (and at the end) a checkpoint: faults off, a full
// resync with the intended state, then the southbound holds exactly the
// intended values whose dependencies can be met (both ends of a pair or
// neither) and their statuses say so (CONFIGURED, else PENDING).
//
// The host may stall a call beyond the call timeout, which no step plans
// (a loaded CI host under -race; vStalling does it on purpose): the
// scheduler gives up on it, a failed call as any other. The run observes
// those give-ups (vGiveUps): a checkpoint whose resync had one runs it
// again, and a Retrieve given up on refreshes nothing.
//
// The default run (CI) is a few hundred steps per mode. The long run:
//
//	KVD_VETH_STEPS=2000 KVD_VETH_SEEDS=10 go test -v -count=1 -timeout 2h \
//		-run 'TestVethPairFaults$' ./runtime/scheduler/
//
// (also in the README, with the other long runs); -fault.mode=serial,
// batch or concurrent runs one way of calling, -fault.shrink=false skips
// shrinking the first incident of each class.
//
// A divergence prints the steps since the run last started afresh, with
// the faults that fired, as a Go literal for runVethReplay.
//
// Open (issue 28; the long run finds them, with two or three faults in one
// step): none known. Fixed: a resync created an end found MISSING on its
// peer, FAILED in a version it re-creates, then deleted it with the peer
// (plan-create-delete; reached after a revert whose create of the end and
// both read-backs failed, its peer's undo refused meanwhile): the resync
// dooms such a peer (TestVethReproResyncRecreateFailedOnDoomed). Fixed: a
// revert's blind undo of an end of unknown outcome (a Delete without the
// metadata, answered "not found"; a re-create that made a new pair): a
// revert reads it back again instead (doc.go; the repros
// TestVethReproRevertBlindDeleteNotFound, TestVethReproRevertBlindRecreate);
// a read-back before a transaction that found an end of unknown outcome
// gone did not read back its peer (TestVethReproFoundGonePeer*); what was
// refused for an end of unknown outcome that the read-back found was not
// doomed, so its peer was created on it and deleted again
// (TestVethReproRefusedForFoundDoomed, 30 seeds). A harness fix: an end
// whose own create applied in part stays without its peer after a revert
// (TestVethReproUnsureEndFoundByRevertingTxn, 12 seeds).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// The schema. Values are "field=value" texts, as in fault_sb_test.go.
//
//	vrf/{1,2}       table          Update
//	if/v{1..4}      peer mtu vrf ns   Update (mtu, vrf), metadata: the
//	                pair's generation; ns re-creates; peer -> if/{peer},
//	                vrf -> vrf/{vrf}. v1-v2 and v3-v4 are pairs.
//	x/{1,2}         n              no Update, no dependency
var (
	vKeys  = []string{"vrf/1", "vrf/2", "if/v1", "if/v2", "if/v3", "if/v4", "x/1", "x/2"}
	vPeers = map[string]string{"v1": "v2", "v2": "v1", "v3": "v4", "v4": "v3"}
	vPairs = [][2]string{{"v1", "v2"}, {"v3", "v4"}}
)

func vGenValue(r *rand.Rand, key string) string {
	switch name, label, _ := strings.Cut(key, "/"); name {
	case "vrf":
		return "table=" + strconv.Itoa(1+r.IntN(3))
	case "if":
		return fFormat("peer", vPeers[label], "mtu", fPick(r, []string{"1500", "9000"}),
			"vrf", fPick(r, []string{"", "", "1", "2"}), "ns", fPick(r, []string{"", "", "", "n1"}))
	}
	return "n=" + strconv.Itoa(r.IntN(3))
}

func vDeps(key string, v fValue) []kv.Dependency {
	if !strings.HasPrefix(key, "if/") {
		return nil
	}
	var d []kv.Dependency
	if v["peer"] != "" {
		d = append(d, fDep("peer", "if/"+v["peer"]))
	}
	if v["vrf"] != "" {
		d = append(d, fDep("vrf", "vrf/"+v["vrf"]))
	}
	return d
}

// vPair is a veth pair in the southbound: its generation (an index the
// kernel gives the link) and the ends that are values (by label), with
// their value texts; an end that is no value has its temporary name.
type vPair struct {
	gen  int
	ends map[string]string
}

// vCall is one call the southbound received.
type vCall struct {
	op, key, value string
	// readKey: the key a Retrieve was given alone to correlate.
	readKey string
	fault   fFaultKind
	err     error
	refused bool // the southbound refused it (a missing dependency, busy)
}

func (c vCall) String() string {
	s := c.op + " " + c.key
	if c.value != "" {
		s += " {" + c.value + "}"
	}
	if c.fault != 0 {
		s += " [" + vFaultName(c.fault) + "]"
	}
	if c.err != nil {
		s += " ! " + c.err.Error()
	}
	return s
}

// Three more fault kinds: the call outlives its deadline (the handler
// returns when its context ends), with nothing applied or applied first;
// and the host stalls the call before it starts, for longer than the call
// timeout (see vMachine), then it runs as if nothing happened.
const (
	vTimeout fFaultKind = 100 + iota
	vTimeoutApplied
	vStall
)

func vFaultName(k fFaultKind) string {
	switch k {
	case vTimeout:
		return "timeout"
	case vTimeoutApplied:
		return "applied-timeout"
	case vStall:
		return "stall"
	}
	return k.String()
}

// vethSB is the southbound.
type vethSB struct {
	mu      sync.Mutex
	pairs   map[string]*vPair // by the first end's label (v1, v3)
	plain   map[string]string // vrf/ and x/ values
	nextGen int

	inject  bool
	retired bool // the run went on with a new southbound (see retire)
	step    int  // counts the steps begun (see recordLocked)
	rate    float64
	rng     *rand.Rand
	planned []fFault
	counts  map[string]int
	fired   []fFault
	calls   []vCall
	// stall is the machine's (see vMachine); stalls counts the calls
	// made, stallsLeft how many may stall yet (negative: any), stalled
	// those that did.
	stall      vMachine
	stalls     int
	stallsLeft int
	stalled    atomic.Int64
}

func newVethSB(rng *rand.Rand, rate float64) *vethSB {
	return &vethSB{pairs: map[string]*vPair{}, plain: map[string]string{}, rng: rng, rate: rate, counts: map[string]int{}}
}

func vPairOf(label string) string {
	if label == "v2" || label == "v4" {
		return vPeers[label]
	}
	return label
}

// snapshot returns the values the southbound holds (the ends of pairs
// that are values, and the plain values).
func (sb *vethSB) snapshot() map[string]string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.valuesLocked()
}

func (sb *vethSB) valuesLocked() map[string]string {
	out := maps.Clone(sb.plain)
	for _, p := range sb.pairs {
		for l, v := range p.ends {
			out["if/"+l] = v
		}
	}
	return out
}

func (sb *vethSB) beginStep(planned []fFault) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.planned = planned
	clear(sb.counts)
	sb.fired, sb.calls = nil, nil
	sb.step++
}

// recordLocked records a call that started in step: a call the host held
// past the end of its step (given up on, it applies nothing) is not one
// of the step that runs when it returns.
func (sb *vethSB) recordLocked(step int, c vCall) {
	if step == sb.step {
		sb.calls = append(sb.calls, c)
	}
}

func (sb *vethSB) setInject(on bool) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.inject = on
	// A checkpoint (faults off) stalls its first call, and that one only:
	// its resync, given up on once, runs again (see checkpoint).
	sb.stallsLeft = -1
	if !on {
		sb.stallsLeft, sb.stalls = 1, sb.stall.every-1
	}
}

// retire ends sb's use by the run, which goes on with a new southbound
// and the same random source: a call of a scheduler given up on that
// returns late (a stall) draws no fault from it.
func (sb *vethSB) retire() {
	sb.mu.Lock()
	sb.retired = true
	sb.mu.Unlock()
}

// stallLocked reports whether the host stalls this call: about one call
// in stall.every, as many as stallsLeft allows.
func (sb *vethSB) stallLocked() bool {
	if sb.stall.every == 0 || sb.stallsLeft == 0 {
		return false
	}
	if sb.stalls++; sb.stalls%sb.stall.every != 0 {
		return false
	}
	sb.stallsLeft--
	sb.stalled.Add(1)
	return true
}

// holdLocked stalls a call, sb.mu held: it lets the lock go meanwhile, as
// a call held before it starts holds nothing.
func (sb *vethSB) holdLocked() {
	sb.mu.Unlock()
	time.Sleep(sb.stall.hold)
	sb.mu.Lock()
}

func (sb *vethSB) stepCalls() []vCall {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return slices.Clone(sb.calls)
}

func (sb *vethSB) stepFaults() []fFault {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return slices.Clone(sb.fired)
}

// faultLocked decides whether the call op on key fails, and how.
func (sb *vethSB) faultLocked(op, key string) fFaultKind {
	ck := op + " " + key
	sb.counts[ck]++
	nth := sb.counts[ck]
	if sb.retired {
		return 0
	}
	var kind fFaultKind
	stall := false
	if sb.rng == nil {
		// A replay: the faults planned (at a checkpoint, stalls only).
		for _, f := range sb.planned {
			if f.op == op && f.key == key && f.nth == nth {
				stall = stall || f.kind == vStall
				if f.kind != vStall {
					kind = f.kind
				}
			}
		}
	} else if stall = sb.stallLocked(); sb.inject && sb.rng.Float64() < sb.rate {
		if op == "retrieve" {
			kind = fPick(sb.rng, []fFaultKind{fRetriable, fRetriable, fTerminal, fPanic})
		} else {
			// Timeouts are rare: each costs the call timeout.
			kinds := []fFaultKind{fRetriable, fRetriable, fTerminal, fTerminal, fPartial, fPartial, fPartialTerminal, fPanic}
			if sb.rng.IntN(20) == 0 {
				kinds = []fFaultKind{vTimeout, vTimeoutApplied}
			}
			kind = fPick(sb.rng, kinds)
		}
	}
	if kind != 0 {
		sb.fired = append(sb.fired, fFault{op: op, key: key, nth: nth, kind: kind})
	}
	if stall {
		// It may also fail as drawn once it runs: two faults.
		sb.fired = append(sb.fired, fFault{op: op, key: key, nth: nth, kind: vStall})
		sb.holdLocked()
	}
	return kind
}

// do runs a create, update or delete call.
func (sb *vethSB) do(ctx context.Context, op, key, text string, meta int) (int, error) {
	sb.mu.Lock()
	step := sb.step
	kind := sb.faultLocked(op, key)
	call := vCall{op: op, key: key, value: text, fault: kind}
	var err error
	switch {
	case ctx.Err() != nil:
		// Given up on already (an operation of a batch after one that
		// outlived the deadline): nothing applied.
		err = ctx.Err()
	case kind == fPanic:
		sb.recordLocked(step, call)
		sb.mu.Unlock()
		panic(fmt.Sprintf("injected panic in %s %s", op, key))
	case kind == fRetriable || kind == fTerminal:
		err = injectedErr(op, key, kind)
	case kind == vTimeout:
	default:
		meta, err = sb.applyLocked(op, key, text, meta)
		call.refused = err != nil && !errors.Is(err, kv.ErrNotFound)
		if err == nil && (kind == fPartial || kind == fPartialTerminal) {
			err = injectedErr(op, key, kind)
		}
	}
	if kind == vTimeout || kind == vTimeoutApplied {
		sb.mu.Unlock()
		<-ctx.Done() // the call outlives its deadline
		sb.mu.Lock()
		if err == nil {
			err = ctx.Err()
		}
	}
	call.err = err
	sb.recordLocked(step, call)
	sb.mu.Unlock()
	return meta, err
}

// applyLocked applies a call as a kernel would.
func (sb *vethSB) applyLocked(op, key, text string, meta int) (int, error) {
	name, label, _ := strings.Cut(key, "/")
	if name != "if" {
		_, exists := sb.plain[key]
		switch {
		case op == "create" && exists:
			return 0, kv.NonRetriable(fmt.Errorf("create %s: already exists", key))
		case op != "create" && !exists:
			return 0, fmt.Errorf("%s %s: %w", op, key, kv.ErrNotFound)
		case op == "delete" && name == "vrf":
			for k, v := range sb.valuesLocked() {
				if strings.HasPrefix(k, "if/") && "vrf/"+fParse(v)["vrf"] == key {
					return 0, kv.NonRetriable(fmt.Errorf("delete %s: busy, %s is in it", key, k))
				}
			}
		}
		if op == "delete" {
			delete(sb.plain, key)
		} else {
			sb.plain[key] = text
		}
		return 0, nil
	}
	if vrf := fParse(text)["vrf"]; op != "delete" && vrf != "" {
		if _, ok := sb.plain["vrf/"+vrf]; !ok {
			return 0, kv.NonRetriable(fmt.Errorf("%s %s: refused, vrf/%s is missing", op, key, vrf))
		}
	}
	p := sb.pairs[vPairOf(label)]
	_, isEnd := p.endOf(label)
	switch op {
	case "create":
		if isEnd {
			return 0, kv.NonRetriable(fmt.Errorf("create %s: already exists", key))
		}
		if p == nil {
			// ip link add LABEL type veth peer name TEMP
			sb.nextGen++
			p = &vPair{gen: sb.nextGen, ends: map[string]string{}}
			sb.pairs[vPairOf(label)] = p
		}
		// (or: take over the end the peer's create left)
		p.ends[label] = text
		return p.gen, nil
	case "update":
		if !isEnd || p.gen != meta {
			return 0, fmt.Errorf("update %s: %w", key, kv.ErrNotFound)
		}
		p.ends[label] = text
		return p.gen, nil
	default:
		if !isEnd || p.gen != meta {
			return 0, fmt.Errorf("delete %s: %w", key, kv.ErrNotFound)
		}
		// ip link del LABEL: the pair goes, both ends.
		delete(sb.pairs, vPairOf(label))
		return 0, nil
	}
}

func (p *vPair) endOf(label string) (string, bool) {
	if p == nil {
		return "", false
	}
	v, ok := p.ends[label]
	return v, ok
}

func (sb *vethSB) retrieve(ctx context.Context, name, readKey string) ([]kv.Item[string, *wrapperspb.StringValue, int], error) {
	sb.mu.Lock()
	step := sb.step
	kind := sb.faultLocked("retrieve", name)
	call := vCall{op: "retrieve", key: name, fault: kind, readKey: readKey}
	if kind != 0 {
		call.err = injectedErr("retrieve", name, kind)
	}
	sb.recordLocked(step, call)
	var out []kv.Item[string, *wrapperspb.StringValue, int]
	if call.err == nil {
		for k, v := range sb.valuesLocked() {
			if !strings.HasPrefix(k, name+"/") {
				continue
			}
			meta := 0
			if name == "if" {
				meta = sb.pairs[vPairOf(fLabel(k))].gen
			}
			out = append(out, kv.Item[string, *wrapperspb.StringValue, int]{Key: k, Value: wrapperspb.String(v), Metadata: meta, Origin: kv.OriginNB})
		}
	}
	sb.mu.Unlock()
	if kind == fPanic {
		// The scheduler recovers it, as any call into a handler.
		panic("injected panic in retrieve " + name)
	}
	return out, call.err
}

// vHandler is the handler of one descriptor of the schema.
type vHandler struct {
	sb   *vethSB
	name string
}

type (
	vUpdHandler      struct{ vHandler }
	vBatchHandler    struct{ vHandler }
	vBatchUpdHandler struct{ vUpdHandler }
	vConcHandler     struct{ vHandler }
	vConcUpdHandler  struct{ vUpdHandler }
)

func (h vHandler) Create(ctx context.Context, key string, v *wrapperspb.StringValue) (int, error) {
	return h.sb.do(ctx, "create", key, v.GetValue(), 0)
}

func (h vHandler) Delete(ctx context.Context, key string, v *wrapperspb.StringValue, meta int) error {
	_, err := h.sb.do(ctx, "delete", key, v.GetValue(), meta)
	return err
}

func (h vHandler) Retrieve(ctx context.Context, correlate []kv.Item[string, *wrapperspb.StringValue, int]) ([]kv.Item[string, *wrapperspb.StringValue, int], error) {
	readKey := ""
	if len(correlate) == 1 {
		readKey = correlate[0].Key
	}
	return h.sb.retrieve(ctx, h.name, readKey)
}

func (h vUpdHandler) Update(ctx context.Context, key string, _, v *wrapperspb.StringValue, meta int) (int, error) {
	return h.sb.do(ctx, "update", key, v.GetValue(), meta)
}

func (h vHandler) batch(ctx context.Context, kind kv.BatchKind, ops []kv.BatchOp[string, *wrapperspb.StringValue, int]) {
	for i := range ops {
		op := &ops[i]
		switch kind {
		case kv.BatchCreate:
			op.Metadata, op.Err = h.sb.do(ctx, "create", op.Key, op.Value.GetValue(), 0)
		case kv.BatchUpdate:
			op.Metadata, op.Err = h.sb.do(ctx, "update", op.Key, op.Value.GetValue(), op.OldMetadata)
		default:
			_, op.Err = h.sb.do(ctx, "delete", op.Key, op.Value.GetValue(), op.OldMetadata)
		}
	}
}

func (h vBatchHandler) Batch(ctx context.Context, kind kv.BatchKind, ops []kv.BatchOp[string, *wrapperspb.StringValue, int]) {
	h.batch(ctx, kind, ops)
}

func (h vBatchUpdHandler) Batch(ctx context.Context, kind kv.BatchKind, ops []kv.BatchOp[string, *wrapperspb.StringValue, int]) {
	h.batch(ctx, kind, ops)
}

func (vConcHandler) ConcurrentCalls() int    { return 4 }
func (vConcUpdHandler) ConcurrentCalls() int { return 4 }

func vDescriptors(sb *vethSB, mode string) ([]kv.Descriptor, error) {
	var out []kv.Descriptor
	for _, name := range []string{"vrf", "if", "x"} {
		spec := kv.Spec[string, *wrapperspb.StringValue, int]{
			Name: name, KeyPrefix: name + "/", WithMetadata: name == "if",
			Equivalent: func(_ string, a, b *wrapperspb.StringValue) bool {
				return fEqualExcept(fParse(a.GetValue()), fParse(b.GetValue()))
			},
		}
		if name == "if" {
			spec.Dependencies = func(key string, v *wrapperspb.StringValue) []kv.Dependency { return vDeps(key, fParse(v.GetValue())) }
			spec.NeedsRecreate = func(_ string, a, b *wrapperspb.StringValue) bool {
				pa, pb := fParse(a.GetValue()), fParse(b.GetValue())
				return pa["ns"] != pb["ns"] || pa["peer"] != pb["peer"]
			}
		}
		base := vHandler{sb: sb, name: name}
		upd := name != "x"
		var h kv.Handler[string, *wrapperspb.StringValue, int]
		switch {
		case mode == "batch" && upd:
			h = vBatchUpdHandler{vUpdHandler{base}}
		case mode == "batch":
			h = vBatchHandler{base}
		case mode == "concurrent" && upd:
			h = vConcUpdHandler{vUpdHandler{base}}
		case mode == "concurrent":
			h = vConcHandler{base}
		case upd:
			h = vUpdHandler{base}
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

// vStep is one step of a run.
type vStep struct {
	kind          string // txn, conc, downstream, full, restart, checkpoint
	revert, retry bool
	items         []fItem
	// conc: the transactions committed at once (their own items).
	conc   [][]fItem
	faults []fFault
}

func (st vStep) literal() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{kind: %q", st.kind)
	if st.revert {
		b.WriteString(", revert: true")
	}
	if st.retry {
		b.WriteString(", retry: true")
	}
	items := func(its []fItem) string {
		var parts []string
		for _, it := range its {
			parts = append(parts, fmt.Sprintf("{%q, %q}", it.key, it.value))
		}
		return "[]fItem{" + strings.Join(parts, ", ") + "}"
	}
	if len(st.items) > 0 {
		b.WriteString(", items: " + items(st.items))
	}
	if len(st.conc) > 0 {
		var parts []string
		for _, c := range st.conc {
			parts = append(parts, items(c))
		}
		b.WriteString(", conc: [][]fItem{" + strings.Join(parts, ", ") + "}")
	}
	if len(st.faults) > 0 {
		var parts []string
		for _, f := range st.faults {
			kind := fFaultIdents[f.kind]
			switch f.kind {
			case vTimeout:
				kind = "vTimeout"
			case vTimeoutApplied:
				kind = "vTimeoutApplied"
			case vStall:
				kind = "vStall"
			}
			parts = append(parts, fmt.Sprintf("{%q, %q, %d, %s}", f.op, f.key, f.nth, kind))
		}
		b.WriteString(", faults: []fFault{" + strings.Join(parts, ", ") + "}")
	}
	return b.String() + "}"
}

func vGenItems(r *rand.Rand) []fItem {
	var items []fItem
	for range 1 + r.IntN(4) {
		k := fPick(r, vKeys)
		if r.IntN(100) < 25 {
			items = append(items, fItem{key: k})
		} else {
			items = append(items, fItem{key: k, value: vGenValue(r, k)})
		}
	}
	return items
}

func vGenStep(r *rand.Rand, intent map[string]string) vStep {
	switch p := r.IntN(100); {
	case p < 65:
		return vStep{kind: "txn", revert: r.IntN(10) < 4, retry: r.IntN(10) < 3, items: vGenItems(r)}
	case p < 78:
		st := vStep{kind: "conc", revert: r.IntN(10) < 3}
		for range 2 + r.IntN(2) {
			st.conc = append(st.conc, vGenItems(r))
		}
		return st
	case p < 86:
		return vStep{kind: "downstream"}
	case p < 90:
		return vStep{kind: "restart", items: vIntentItems(intent)}
	default:
		next := maps.Clone(intent)
		for _, it := range vGenItems(r)[:1] {
			if it.value == "" {
				delete(next, it.key)
			} else {
				next[it.key] = it.value
			}
		}
		return vStep{kind: "full", items: vIntentItems(next)}
	}
}

func vIntentItems(intent map[string]string) []fItem {
	var items []fItem
	for _, k := range slices.Sorted(maps.Keys(intent)) {
		items = append(items, fItem{key: k, value: intent[k]})
	}
	return items
}

// vRun runs steps against a scheduler and the veth southbound.
type vRun struct {
	rng    *rand.Rand // nil: replay the steps' faults
	rate   float64
	mode   string
	sb     *vethSB
	s      *scheduler.Scheduler
	intent map[string]string
	// stale are the keys a new scheduler has not read yet (doc.go: "A
	// Retrieve that fails is an error of the transaction; its descriptor
	// keeps the scheduler's view", and a new scheduler's view is empty):
	// left out of the checks after each step until read.
	stale  map[string]bool
	wedged bool
	// machine is the host's behaviour the run assumes; gaveUp the calls
	// the scheduler gave up on in the step.
	machine vMachine
	gaveUp  vGiveUps

	commits, concCommits, reverted, halvesExplained, rechecks int
}

// vMachine is the host under a run: the scheduler's call timeout, and
// stalls of the southbound's calls (one call in every, held hold before it
// starts), as a loaded host holds any goroutine now and then.
type vMachine struct {
	timeout, hold time.Duration
	every         int
}

// vHost is the machine of the default runs: a call timeout long enough
// that a call outlives it only when injected to, or when the host stalls
// (a loaded CI host under -race); the run tells the latter apart (see
// vGiveUps), as it does on vStalling.
var vHost = vMachine{timeout: 500 * time.Millisecond}

// vGiveUps records the calls that the scheduler gave up on (it is the
// scheduler's Observer). The southbound injects no timeout into a
// Retrieve, nor any fault at a checkpoint: a give-up there is the host's
// stall, a fault no step planned.
type vGiveUps struct {
	mu  sync.Mutex
	all []*scheduler.CallTimeoutError
}

func (g *vGiveUps) TxnDone(*scheduler.Record) {}

func (g *vGiveUps) OpDone(_ string, _ scheduler.OpKind, _ time.Duration, err error) {
	var te *scheduler.CallTimeoutError
	if errors.As(err, &te) {
		g.mu.Lock()
		g.all = append(g.all, te)
		g.mu.Unlock()
	}
}

// take returns the give-ups recorded since the last take.
func (g *vGiveUps) take() []*scheduler.CallTimeoutError {
	g.mu.Lock()
	defer g.mu.Unlock()
	all := g.all
	g.all = nil
	return all
}

func newVRun(rng *rand.Rand, rate float64, mode string, machine vMachine) (*vRun, error) {
	r := &vRun{rng: rng, rate: rate, mode: mode, machine: machine}
	return r, r.start()
}

func (r *vRun) start() error {
	if r.sb != nil {
		r.sb.retire()
	}
	r.sb = newVethSB(r.rng, r.rate)
	r.sb.stall = r.machine
	r.intent, r.stale = map[string]string{}, map[string]bool{}
	return r.newScheduler()
}

func (r *vRun) newScheduler() error {
	s, err := scheduler.New(faultLogger(nil), scheduler.WithTxnLog(os.Getenv("KVD_FAULT_LOG") != ""),
		scheduler.WithHistory(0, 0), scheduler.WithCallTimeout(r.machine.timeout), scheduler.WithObserver(&r.gaveUp))
	if err != nil {
		return err
	}
	ds, err := vDescriptors(r.sb, r.mode)
	if err == nil {
		err = s.Register(ds...)
	}
	if err != nil {
		_ = s.Close(context.Background())
		return err
	}
	r.s, r.wedged = s, false
	return nil
}

func (r *vRun) close() {
	if r.wedged || r.s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_ = r.s.Close(ctx)
}

// commit commits t, reporting a panic or a wedge (the caller marks the
// run wedged: commit runs on several goroutines at once).
func vCommit(t *scheduler.Txn) (res *scheduler.Result, div *fDiv) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			res, div = nil, &fDiv{"commit-panic", fmt.Sprint(p)}
		}
	}()
	res, _ = t.Commit(ctx)
	switch {
	case res == nil:
		return nil, &fDiv{"commit-nil", "Commit returned no result"}
	case errors.Is(res.Err, context.DeadlineExceeded):
		return nil, &fDiv{"wedge", res.Err.Error()}
	}
	return res, nil
}

func (r *vRun) commit(t *scheduler.Txn) (*scheduler.Result, *fDiv) {
	res, div := vCommit(t)
	if div != nil && div.class != "commit-nil" {
		r.wedged = true
	}
	return res, div
}

func (r *vRun) txn(items []fItem, opts ...scheduler.TxnOption) *scheduler.Txn {
	t := r.s.Txn(opts...)
	for _, it := range items {
		if it.value == "" {
			t.Delete(it.key)
		} else {
			t.Set(it.key, wrapperspb.String(it.value))
		}
	}
	return t
}

// settle waits until nothing is RETRYING and the scheduler is idle (see
// fRun.settle).
func (r *vRun) settle() (map[string]scheduler.Status, *fDiv) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		idle := r.s.Idle()
		sts := map[string]scheduler.Status{}
		retrying := false
		for _, st := range r.s.Statuses("") {
			sts[st.Key] = st
			retrying = retrying || st.State == scheduler.RETRYING
		}
		if !retrying && idle {
			return sts, nil
		}
		if time.Now().After(deadline) {
			r.wedged = true
			return nil, &fDiv{"wedge", "still RETRYING (or jobs queued) after 20s"}
		}
		time.Sleep(time.Millisecond) // waiting for a state, not for a time
	}
}

func (r *vRun) apply(items []fItem) {
	for _, it := range items {
		if it.value == "" {
			delete(r.intent, it.key)
		} else {
			r.intent[it.key] = it.value
		}
	}
}

func vTxnOpts(st vStep) []scheduler.TxnOption {
	var opts []scheduler.TxnOption
	if st.revert {
		opts = append(opts, scheduler.Revert())
	}
	if st.retry {
		opts = append(opts, scheduler.Retry(scheduler.RetryPolicy{Period: time.Millisecond, MaxAttempts: 2}))
	}
	return opts
}

// runStep runs one step and checks it.
func (r *vRun) runStep(st *vStep) []fDiv {
	var planned []fFault
	if r.rng == nil {
		planned = st.faults
	}
	r.sb.beginStep(planned)
	r.gaveUp.take()
	defer func() {
		if r.rng != nil {
			st.faults = r.sb.stepFaults()
		}
	}()
	if st.kind == "checkpoint" {
		return r.checkpoint()
	}
	r.sb.setInject(true)
	var planDivs []fDiv
	switch st.kind {
	case "txn", "downstream", "full", "restart":
		var opts []scheduler.TxnOption
		switch st.kind {
		case "txn":
			opts = vTxnOpts(*st)
		case "downstream":
			opts = append(opts, scheduler.DownstreamResync())
		default:
			opts = append(opts, scheduler.FullResync())
		}
		if st.kind == "restart" {
			r.close()
			if err := r.newScheduler(); err != nil {
				return []fDiv{{"setup", err.Error()}}
			}
			for k := range r.sb.snapshot() {
				r.stale[k] = true
			}
		}
		res, div := r.commit(r.txn(st.items, opts...))
		if div != nil {
			return []fDiv{*div}
		}
		planDivs = vCheckPlan(res)
		r.commits++
		switch {
		case res.Reverted:
			r.reverted++
		case st.kind == "txn":
			r.apply(st.items)
		case st.kind == "full" || st.kind == "restart":
			r.intent = map[string]string{}
			r.apply(st.items)
		}
	case "conc":
		// Transactions committed at once from goroutines: they run one
		// at a time, in an order Result.Seq tells.
		results := make([]*scheduler.Result, len(st.conc))
		divs := make([]*fDiv, len(st.conc))
		var wg sync.WaitGroup
		for i, items := range st.conc {
			t := r.txn(items, vTxnOpts(*st)...)
			wg.Go(func() { results[i], divs[i] = vCommit(t) })
		}
		wg.Wait()
		for _, d := range divs {
			if d != nil {
				r.wedged = r.wedged || d.class != "commit-nil"
				return []fDiv{*d}
			}
		}
		order := make([]int, len(st.conc))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return int(results[a].Seq) - int(results[b].Seq) })
		for _, i := range order {
			planDivs = append(planDivs, vCheckPlan(results[i])...)
			r.commits++
			r.concCommits++
			if results[i].Reverted {
				r.reverted++
			} else {
				r.apply(st.conc[i])
			}
		}
	}
	sts, div := r.settle()
	if div != nil {
		return []fDiv{*div}
	}
	r.refreshed(r.gaveUp.take())
	return append(planDivs, r.check(sts)...)
}

// refreshed forgets the staleness of what the step's successful
// Retrieves read: a descriptor's keys, or the key given alone. A Retrieve
// the scheduler gave up on failed for it, whatever the southbound
// returned late: none of its descriptor's Retrieves of the step counts.
func (r *vRun) refreshed(gaveUp []*scheduler.CallTimeoutError) {
	for _, c := range r.sb.stepCalls() {
		if c.op != "retrieve" || c.err != nil || slices.ContainsFunc(gaveUp, func(e *scheduler.CallTimeoutError) bool {
			return e.Op == scheduler.OpRetrieve && e.Descriptor == c.key
		}) {
			continue
		}
		for k := range r.stale {
			if c.readKey == k || c.readKey == "" && strings.HasPrefix(k, c.key+"/") {
				delete(r.stale, k)
			}
		}
	}
}

// vCheckPlan checks a transaction's plan: no value is created and then
// deleted in it. doc.go: "A value that needs one which the same
// transaction removes is not created (and deleted again): it stays
// PENDING."
func vCheckPlan(res *scheduler.Result) []fDiv {
	var divs []fDiv
	created := map[string]bool{}
	for _, op := range res.Planned {
		switch op.Kind {
		case scheduler.OpCreate:
			created[op.Key] = true
		case scheduler.OpDelete:
			if created[op.Key] {
				divs = append(divs, fDiv{"plan-create-delete", fmt.Sprintf("transaction %d plans to create %s and then delete it", res.Seq, op.Key)})
			}
		}
	}
	return divs
}

// vUnsure reports whether a status says that the value's outcome is
// unknown (a call and its read-back failed).
func vUnsure(st scheduler.Status) bool { return errors.Is(st.LastErr, scheduler.ErrOutcomeUnknown) }

// vFailedCall reports whether a status records a failed or refused call
// of the operation op (any when op is 0): FAILED or RETRYING with an
// error, refused as still needed, or of unknown outcome.
func vFailedCall(st scheduler.Status, op scheduler.OpKind) bool {
	if vUnsure(st) || errors.Is(st.LastErr, scheduler.ErrStillNeeded) {
		return true
	}
	failed := (st.State == scheduler.FAILED || st.State == scheduler.RETRYING) && st.LastErr != nil
	return failed && (op == 0 || st.LastOp == op)
}

// vPartialCreate reports whether a status records a create that failed
// and applied in part: FAILED or RETRYING after a create, holding a value.
func vPartialCreate(st scheduler.Status) bool {
	return (st.State == scheduler.FAILED || st.State == scheduler.RETRYING) && st.LastOp == scheduler.OpCreate && st.Applied != nil
}

// check checks the pairs and the view after a step.
func (r *vRun) check(sts map[string]scheduler.Status) []fDiv {
	var divs []fDiv
	sb := r.sb.snapshot()
	for _, p := range vPairs {
		ka, kb := "if/"+p[0], "if/"+p[1]
		if r.stale[ka] || r.stale[kb] {
			continue
		}
		_, inA := sb[ka]
		_, inB := sb[kb]
		for _, e := range [][2]string{{ka, kb}, {kb, ka}} {
			have, miss := e[0], e[1]
			if _, in := sb[have]; !in || inA && inB {
				continue
			}
			// The southbound holds have, not miss. doc.go: "when the
			// removal of a member fails, or is refused (ErrStillNeeded),
			// after another member went, it stays without it, FAILED
			// with that error"; and of a value of unknown outcome,
			// "nothing that needs it is created on it", nor is "a value
			// it may need" removed. (A failed create of miss is no
			// excuse: have, which needs it, goes then.) And have's own
			// create applied in part, found by a read-back before a
			// transaction that reverted: "a value that was there
			// without something it needs (its delete had failed, or its
			// create applied in part) stays as it was when the revert
			// deletes what the transaction created for it" (a forward
			// pass deletes such a value: create's read-back).
			if vFailedCall(sts[have], scheduler.OpDelete) || vUnsure(sts[miss]) || vUnsure(sts[have]) || vPartialCreate(sts[have]) {
				r.halvesExplained++
				continue
			}
			divs = append(divs, fDiv{"pair-half-sb", fmt.Sprintf("the southbound holds %s {%s} without %s (%s; %s)",
				have, sb[have], miss, fStateOf(sts, have), fStateOf(sts, miss))})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fUnion(sb, fStatusKeys(sts)))) {
		st := sts[k]
		if vUnsure(st) || r.stale[k] {
			continue
		}
		got, inSB := sb[k]
		applied := ""
		if st.Applied != nil {
			applied = fText(st.Applied)
		}
		switch {
		case inSB && applied == "":
			divs = append(divs, fDiv{"view-unknown", fmt.Sprintf("the southbound holds %s {%s}, the scheduler believes it absent (%s)", k, got, fStateOf(sts, k))})
		case !inSB && applied != "" && strings.HasPrefix(k, "if/"):
			// doc.go: a member whose removal failed "stays without it,
			// FAILED with that error" (the graph holds it; the pair
			// went with the other member). Nothing else: a failed
			// delete of the peer that removed k is read back with k.
			peer := "if/" + vPeers[fLabel(k)]
			if vFailedCall(st, scheduler.OpDelete) {
				r.halvesExplained++
				continue
			}
			divs = append(divs, fDiv{"pair-half-graph", fmt.Sprintf("%s is not in the southbound, the scheduler holds it applied {%s} (%s; %s %s)",
				k, applied, fStateOf(sts, k), peer, fStateOf(sts, peer))})
		case !inSB && applied != "":
			divs = append(divs, fDiv{"view-absent", fmt.Sprintf("%s is not in the southbound, the scheduler believes it applied (%s)", k, fStateOf(sts, k))})
		case inSB && !fEqualExcept(fParse(applied), fParse(got)):
			divs = append(divs, fDiv{"view-differs", fmt.Sprintf("the southbound holds %s {%s}, the scheduler believes {%s} (%s)", k, got, applied, fStateOf(sts, k))})
		}
	}
	return divs
}

// vExpected returns the intended values whose dependencies can be met,
// a pair as a unit.
func vExpected(intent map[string]string) map[string]string {
	exp := maps.Clone(intent)
	for changed := true; changed; {
		changed = false
		for _, k := range slices.Sorted(maps.Keys(exp)) {
			for _, d := range vDeps(k, fParse(exp[k])) {
				if !fDependencyMet(d, exp) {
					delete(exp, k)
					changed = true
					break
				}
			}
		}
	}
	return exp
}

// checkpoint switches faults off, runs a full resync with the intended
// state, and checks that the southbound and the statuses converged.
func (r *vRun) checkpoint() []fDiv {
	r.sb.setInject(false)
	if _, div := r.settle(); div != nil {
		return []fDiv{*div}
	}
	var (
		res    *scheduler.Result
		sts    map[string]scheduler.Status
		div    *fDiv
		gaveUp []*scheduler.CallTimeoutError
	)
	for range vCheckpointTries {
		r.gaveUp.take()
		if res, div = r.commit(r.txn(vIntentItems(r.intent), scheduler.FullResync())); div != nil {
			return []fDiv{*div}
		}
		r.commits++
		if sts, div = r.settle(); div != nil {
			return []fDiv{*div}
		}
		// Faults are off: a call given up on outlived the call timeout on
		// a stalled host, a failed call (doc.go: "the call fails with a
		// retriable error wrapping ErrCallTimeout"). Convergence is
		// promised of a fault-free resync: it runs again.
		if gaveUp = r.gaveUp.take(); len(gaveUp) == 0 {
			break
		}
		r.rechecks++
	}
	r.refreshed(gaveUp)
	var divs []fDiv
	if res.Err != nil {
		divs = append(divs, fDiv{"converge-error", fmt.Sprintf("the fault-free full resync failed: %v", res.Err)})
	}
	exp, sb := vExpected(r.intent), r.sb.snapshot()
	for _, k := range slices.Sorted(maps.Keys(fUnion(fUnion(exp, sb), r.intent))) {
		e, inE := exp[k]
		g, inG := sb[k]
		switch {
		case inE && !inG:
			divs = append(divs, fDiv{"converge-missing", fmt.Sprintf("%s {%s} can be created but the southbound lacks it (%s)", k, e, fStateOf(sts, k))})
		case !inE && inG:
			divs = append(divs, fDiv{"converge-extra", fmt.Sprintf("the southbound holds %s {%s}, which is not expected (%s)", k, g, fStateOf(sts, k))})
		case inE && !fEqualExcept(fParse(e), fParse(g)):
			divs = append(divs, fDiv{"converge-differs", fmt.Sprintf("%s: the southbound holds {%s}, expected {%s}", k, g, e)})
		}
		want := scheduler.PENDING
		if inE {
			want = scheduler.CONFIGURED
		}
		if _, intended := r.intent[k]; intended && sts[k].State != want {
			divs = append(divs, fDiv{"converge-state", fmt.Sprintf("%s should be %s, is %s", k, want, fStateOf(sts, k))})
		}
	}
	return append(divs, r.check(sts)...)
}

// detail describes the run's state for a report.
func (r *vRun) detail() string {
	if r.wedged {
		return ""
	}
	var b strings.Builder
	b.WriteString("  statuses:\n")
	for _, st := range r.s.Statuses("") {
		fmt.Fprintf(&b, "    %s: %s\n", st.Key, fStateOf(map[string]scheduler.Status{st.Key: st}, st.Key))
	}
	sb := r.sb.snapshot()
	b.WriteString("  southbound:\n")
	for _, k := range slices.Sorted(maps.Keys(sb)) {
		fmt.Fprintf(&b, "    %s {%s}\n", k, sb[k])
	}
	b.WriteString("  calls of the step:\n")
	for _, c := range r.sb.stepCalls() {
		fmt.Fprintf(&b, "    %s\n", c)
	}
	return b.String()
}

// vReport accumulates what the runs of one mode found.
type vReport struct {
	steps, commits, concCommits, reverted, halvesExplained, incidents int
	// stalls counts the calls the host stalled, rechecks the resyncs a
	// checkpoint ran again after a give-up (see vMachine, checkpoint).
	stalls, rechecks int
	byClass          map[string]int
	first            map[string]string
	firstSteps       map[string][]vStep
}

const vCheckpointEvery = 25

// vCheckpointTries bounds the resyncs of a checkpoint on a stalling host.
const vCheckpointTries = 5

func runVethSeed(t *testing.T, seed int64, n int, mode string, machine vMachine, rep *vReport) {
	gen := rand.New(rand.NewPCG(uint64(seed), 0x7e7))
	r, err := newVRun(rand.New(rand.NewPCG(uint64(seed), 0xfa)), 0.06, mode, machine)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.close() }()
	var hist []vStep
	for num := 1; num <= n+1; num++ {
		st := vStep{kind: "checkpoint"}
		if num <= n && num%vCheckpointEvery != 0 {
			st = vGenStep(gen, r.intent)
		}
		divs := r.runStep(&st)
		hist = append(hist, st)
		rep.steps++
		if len(divs) == 0 {
			continue
		}
		rep.incidents++
		seen := map[string]bool{}
		for _, d := range divs {
			if seen[d.class] {
				continue
			}
			seen[d.class] = true
			rep.byClass[d.class]++
			if _, ok := rep.first[d.class]; !ok {
				var b strings.Builder
				fmt.Fprintf(&b, "%s: seed %d step %d (mode %q)\n", d.class, seed, num, mode)
				for _, d := range divs {
					fmt.Fprintf(&b, "  %s: %s\n", d.class, d.msg)
				}
				b.WriteString(r.detail())
				rep.first[d.class] = b.String()
				rep.firstSteps[d.class] = slices.Clone(hist)
			}
		}
		hist = nil
		r.collect(rep)
		r.close()
		if err := r.start(); err != nil {
			t.Fatal(err)
		}
	}
	r.collect(rep)
}

func (r *vRun) collect(rep *vReport) {
	rep.commits += r.commits
	rep.concCommits += r.concCommits
	rep.reverted += r.reverted
	rep.halvesExplained += r.halvesExplained
	rep.rechecks += r.rechecks
	rep.stalls += int(r.sb.stalled.Swap(0))
	r.commits, r.concCommits, r.reverted, r.halvesExplained, r.rechecks = 0, 0, 0, 0, 0
}

// replayVeth replays steps (their faults planned) and returns the
// divergences of the first step that diverged, and its index.
func replayVeth(steps []vStep, mode string, machine vMachine) ([]fDiv, int, string) {
	r, err := newVRun(nil, 0, mode, machine)
	if err != nil {
		return []fDiv{{"setup", err.Error()}}, 0, ""
	}
	defer r.close()
	for i := range steps {
		st := steps[i]
		if divs := r.runStep(&st); len(divs) > 0 {
			return divs, i, r.detail()
		}
	}
	return nil, len(steps), ""
}

// shrinkVeth minimises steps keeping a divergence of class at the last
// step (see shrinkSteps).
func shrinkVeth(steps []vStep, class, mode string, machine vMachine) []vStep {
	return shrinkSteps(steps, class, 400, vStep.clone, vStep.simpler, func(c []vStep) ([]fDiv, int) {
		divs, at, _ := replayVeth(c, mode, machine)
		return divs, at
	})
}

func (st vStep) clone() vStep {
	st.items, st.faults, st.conc = slices.Clone(st.items), slices.Clone(st.faults), slices.Clone(st.conc)
	for i := range st.conc {
		st.conc[i] = slices.Clone(st.conc[i])
	}
	return st
}

// simpler returns the steps one change simpler than st: an item, a
// transaction committed at once, a fault or an option less.
func (st vStep) simpler() []vStep {
	return slices.Concat(shrinkDrops(st, vStep.clone, func(s *vStep) *[]fItem { return &s.items }),
		shrinkDrops(st, vStep.clone, func(s *vStep) *[][]fItem { return &s.conc }),
		shrinkDrops(st, vStep.clone, func(s *vStep) *[]fFault { return &s.faults }),
		shrinkFlags(st, vStep.clone, func(s *vStep) *bool { return &s.retry }, func(s *vStep) *bool { return &s.revert }))
}

// TestVethPairFaults runs the veth pair test (see the top of this file)
// in each way of calling.
func TestVethPairFaults(t *testing.T) {
	faultGate(t)
	runVethModes(t, faultSetting(0, "KVD_VETH_STEPS", 300), faultSetting(0, "KVD_VETH_SEEDS", 2), vHost)
}

// vStalling is a host that stalls one call in 40 for more than twice the
// call timeout (short, so that the run stays short; long enough that a
// loaded host seldom adds a stall of its own, which the run tolerates,
// and that the scheduler gives up on a stalled call even when the host
// is slow to run its watchdog).
var vStalling = vMachine{timeout: 50 * time.Millisecond, hold: 120 * time.Millisecond, every: 40}

// TestVethPairFaultsStalledHost runs the veth pair test on a host that
// stalls calls beyond the call timeout, which no step planned (a loaded CI
// host does so now and then to any call): the run must tell those
// give-ups apart from the faults it injects and find no incident, and the
// stalls must have made the scheduler give up on calls, and a checkpoint
// run its resync again.
func TestVethPairFaultsStalledHost(t *testing.T) {
	faultGate(t)
	rep := runVethModes(t, faultSetting(0, "KVD_VETH_STEPS", 150), faultSetting(0, "KVD_VETH_SEEDS", 1), vStalling)
	t.Logf("%d calls stalled, %d checkpoints ran their resync again", rep.stalls, rep.rechecks)
	if rep.stalls == 0 || rep.rechecks == 0 {
		t.Errorf("%d calls stalled, %d checkpoints ran their resync again: want both above 0", rep.stalls, rep.rechecks)
	}
}

// runVethModes runs seeds runs of n steps in each way of calling (the one
// -fault.mode names, else all), on machine, and fails on any incident.
// It returns what the runs found, summed over the modes.
func runVethModes(t *testing.T, n, seeds int, machine vMachine) *vReport {
	sum := &vReport{}
	for _, mode := range []string{"serial", "batch", "concurrent"} {
		if *faultMode != "" && *faultMode != mode {
			continue
		}
		t.Run(mode, func(t *testing.T) {
			m := mode
			if m == "serial" {
				m = ""
			}
			rep := &vReport{byClass: map[string]int{}, first: map[string]string{}, firstSteps: map[string][]vStep{}}
			start := time.Now()
			for seed := range seeds {
				runVethSeed(t, int64(seed+1), n, m, machine, rep)
			}
			sum.stalls += rep.stalls
			sum.rechecks += rep.rechecks
			t.Logf("%d seeds of %d steps: %d commits (%d of them committed at once with others), %d reverted, %d halves explained by a failed or refused call, %d incidents; took %v",
				seeds, n, rep.commits, rep.concCommits, rep.reverted, rep.halvesExplained, rep.incidents, time.Since(start).Round(time.Millisecond))
			for _, class := range slices.Sorted(maps.Keys(rep.byClass)) {
				t.Logf("  %-18s %d incidents", class, rep.byClass[class])
			}
			for _, class := range slices.Sorted(maps.Keys(rep.first)) {
				msg := rep.first[class]
				if *faultShrink {
					if small := shrinkVeth(rep.firstSteps[class], class, m, machine); small != nil {
						divs, at, detail := replayVeth(small, m, machine)
						var lit []string
						for _, st := range small {
							lit = append(lit, "\t"+st.literal()+",")
						}
						msg += fmt.Sprintf("  shrunk to %d steps; at step %d: %v\n%s  []vStep{\n%s\n  }\n", len(small), at+1, divs, detail, strings.Join(lit, "\n"))
					} else {
						msg += "  (the replay did not reproduce it)\n"
					}
				}
				t.Error(msg)
			}
		})
	}
	return sum
}

// runVethReplay replays steps in a mode on machine and fails on any
// divergence.
func runVethReplay(t *testing.T, mode string, machine vMachine, steps []vStep) {
	t.Helper()
	divs, at, detail := replayVeth(steps, mode, machine)
	for _, d := range divs {
		t.Errorf("step %d: %s: %s", at+1, d.class, d.msg)
	}
	if len(divs) > 0 {
		t.Log(detail)
	}
}
