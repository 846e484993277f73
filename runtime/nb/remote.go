package nb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// DefaultRemoteSource is the owner of the values set through the agent's
// API (Remote).
const DefaultRemoteSource = "api"

// DefaultStatesKept is how many past states of the remote source
// RollbackTo can go back to, by default.
const DefaultStatesKept = 100

// The refusals of a Remote, wrapped by its errors (which name the
// argument): test them with errors.Is.
var (
	// ErrAwaitingConfirmation: a commit awaits confirmation; confirm or
	// cancel it first.
	ErrAwaitingConfirmation = errors.New("a commit awaits confirmation")
	// ErrNothingToConfirm: a confirmed commit that would make no
	// transaction (nothing to confirm); nothing was changed.
	ErrNothingToConfirm = errors.New("no transaction to confirm")
	// ErrNotAwaiting: the commit named does not await confirmation.
	ErrNotAwaiting = errors.New("does not await confirmation")
	// ErrUnknownTransaction: the transaction named has not run, or is
	// older than the states kept.
	ErrUnknownTransaction = errors.New("unknown transaction")
)

// RemoteConfig configures a Remote.
type RemoteConfig struct {
	// Source names the source (default DefaultRemoteSource).
	Source string
	// StatesKept bounds the past states kept for RollbackTo (default
	// DefaultStatesKept).
	StatesKept int
	// Logger logs rollbacks (default slog.Default()).
	Logger *slog.Logger
}

// Remote is the northbound source of remote transactions (the agent's
// API): a source of the Mux like the file or etcd ones, whose updates come
// one call at a time, with confirmed commits and rollbacks to a past
// state. Its state (what its clients intend, and a commit awaiting
// confirmation with the state before it) is kept in the Mux's store when
// that is a SourceStore, written ahead of every commit and after it: a
// Remote started over a store that holds a commit awaiting confirmation
// rolls it back first. The states the source had after its recent
// transactions (for RollbackTo, at most StatesKept) are kept in the same
// record (the first whole, the next ones as their changes), so that a
// rollback to a transaction before a restart or a crash still works: the
// sequence numbers go on across restarts when the scheduler's do
// (scheduler.WithSeqAfter).
//
// A confirmed commit must make a transaction, the one Confirm and Cancel
// name: one that changes nothing in the merged state (its values are
// already intended, or another source's values win) is refused with
// ErrNothingToConfirm, and the source's state stays as it was. A router's
// "commit confirmed" arms its timer even then, because every commit there
// makes a numbered revision; here the confirmation names a transaction,
// and a timer armed for none would leave the client a deadline with
// nothing to name, and a rollback that changes nothing either.
type Remote struct {
	m      *Mux
	name   string
	kept   int
	logger *slog.Logger
	store  SourceStore

	// mu serialises the source's changes (commits, confirmations,
	// rollbacks) and guards the fields below.
	mu      sync.Mutex
	current map[string]proto.Message
	// states are the source's states after its transactions, by
	// increasing seq; floor is the seq of the oldest one once older ones
	// were dropped (0: none dropped).
	states  []remoteSnapshot
	floor   uint64
	pending *pendingCommit
	// noHistory: the record loaded kept no states.
	noHistory bool
	// What save writes to a SourceEntryStore (es): the keys of current
	// changed since the last save (dirty), the changes of the states'
	// entries in order (stateOps), the keys of current changed since the
	// last state recorded (touched, or all of them: touchedAll), the
	// pending commit on disk (savedPending), and rewrite: everything
	// (the store holds the single record of before, or nothing).
	es           SourceEntryStore
	dirty        map[string]struct{}
	stateOps     []SourceEntry
	touched      map[string]struct{}
	touchedAll   bool
	savedPending *pendingCommit
	rewrite      bool
	timer        *time.Timer
	ctx          context.Context
	cancel       context.CancelFunc
}

type remoteSnapshot struct {
	seq    uint64
	values map[string]proto.Message
	// set and deleted are the changes from the state before (none for
	// the first state).
	set     map[string]proto.Message
	deleted []string
}

type pendingCommit struct {
	seq      uint64
	deadline time.Time
	// previous is the source's state before the commit, restored by a
	// rollback.
	previous map[string]proto.Message
	// keys are those the commit may have changed (nil: any): previous
	// and the source's state differ on them only.
	keys []string
}

// remoteStartTimeout bounds the initial load of NewRemote.
const remoteStartTimeout = time.Minute

// NewRemote returns the remote source of m, with its state loaded from the
// Mux's store, and gives the Mux its initial load: that state, or, when a
// commit was awaiting confirmation, the state before it (the commit is
// rolled back). Make the Mux's other sources known first (WithSources, or
// their Sink): when this one is the last to load, the startup resync runs
// here. models decodes the recorded values.
func NewRemote(m *Mux, models Models, cfg RemoteConfig) (*Remote, error) {
	if cfg.Source == "" {
		cfg.Source = DefaultRemoteSource
	}
	if cfg.StatesKept <= 0 {
		cfg.StatesKept = DefaultStatesKept
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &Remote{m: m, name: cfg.Source, kept: cfg.StatesKept, logger: cfg.Logger, current: map[string]proto.Message{},
		dirty: map[string]struct{}{}, touched: map[string]struct{}{}}
	r.store, _ = m.opts.store.(SourceStore)
	r.es, _ = m.opts.store.(SourceEntryStore)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if err := r.load(models); err != nil {
		return nil, err
	}
	if err := r.start(); err != nil {
		return nil, err
	}
	return r, nil
}

// Name returns the source's name.
func (r *Remote) Name() string { return r.name }

// Close stops the confirmation timer; a commit still awaiting
// confirmation stays recorded, and is rolled back by the next Remote.
func (r *Remote) Close() {
	r.cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer != nil {
		r.timer.Stop()
	}
}

// Pending returns the commit awaiting confirmation, if any.
func (r *Remote) Pending() (seq uint64, deadline time.Time, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		return 0, time.Time{}, false
	}
	return r.pending.seq, r.pending.deadline, true
}

// After returns what the source would intend after u.
func (r *Remote) After(u Update) map[string]proto.Message {
	return nextDesired(r.m.Desired(r.name), u)
}

// start gives the Mux the initial load, rolling back a commit that awaited
// confirmation when the previous Remote stopped.
func (r *Remote) start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.ctx, remoteStartTimeout)
	defer cancel()
	desired, desc := r.current, "initial load"
	p := r.pending
	if p != nil {
		desired = p.previous
		desc = fmt.Sprintf("rollback of commit %d, which awaited confirmation when the agent stopped", p.seq)
		if p.seq == 0 {
			desc = "rollback of a confirmed commit that was in flight when the agent stopped"
		}
		r.logger.Warn("nb: "+desc, "source", r.name)
	}
	res, err := r.m.ApplyWith(ctx, r.name, Update{Resync: true, Changes: changesOf(desired), Description: desc})
	if err != nil {
		return fmt.Errorf("nb: the initial load of source %s: %w", r.name, err)
	}
	r.setCurrent(maps.Clone(desired), nil)
	r.pending = nil
	// The state loaded is the source's state since this transaction, or
	// since the last one of the history (the startup resync applies it
	// later, or applied it).
	seq := uint64(0)
	if res != nil {
		seq = res.Seq
	} else if h := r.m.s.History(); len(h) > 0 {
		seq = h[len(h)-1].Seq
	}
	if r.noHistory && seq > 0 {
		r.floor = seq
	}
	r.record(seq)
	return r.save()
}

// Commit applies u as a transaction of the source, made with opts. within
// > 0 makes it a confirmed commit: rolled back unless Confirm names it
// within that time (counted from the end of the transaction), whose
// deadline is returned. The result is nil when the update changed nothing
// in the merged state. A transaction that ran with errors of its keys is
// no error here (the result's Err says them).
func (r *Remote) Commit(ctx context.Context, u Update, within time.Duration, opts ...scheduler.TxnOption) (*scheduler.Result, time.Time, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.pending; p != nil {
		return nil, time.Time{}, fmt.Errorf("commit %d awaits confirmation until %s: confirm or cancel it first: %w",
			p.seq, p.deadline.UTC().Format(time.RFC3339), ErrAwaitingConfirmation)
	}
	previous := r.current
	after := nextDesired(previous, u)
	// The keys the commit may change (nil: any).
	var keys []string
	if !u.Resync {
		keys = make([]string, 0, len(u.Changes))
		for _, c := range u.Changes {
			keys = append(keys, c.Key)
		}
	}
	if within > 0 && sameOn(previous, after, keys) {
		return nil, time.Time{}, fmt.Errorf("confirm_within: the commit leaves the %s source's values as they are; nothing was changed: %w", r.name, ErrNothingToConfirm)
	}
	// Write-ahead: the store holds the source's next state (and, for a
	// confirmed commit, a confirmation awaited, its seq not known yet)
	// before the transaction, so that an agent that dies during it
	// starts with what the client asked, and rolls back a confirmed
	// commit whatever became of it.
	r.setCurrent(after, keys)
	if within > 0 {
		r.pending = &pendingCommit{deadline: time.Now().Add(within), previous: previous, keys: keys}
	}
	if err := r.save(); err != nil {
		r.setCurrent(previous, keys)
		r.pending = nil
		return nil, time.Time{}, fmt.Errorf("recording the commit before applying it: %w", err)
	}
	// The Mux takes after as the source's next state (its own state is
	// previous, the map this source shares with it): the state is copied
	// once per commit.
	res, err := r.m.applyNext(ctx, r.name, u, previous, after, opts...)
	if err != nil && !isTxnError(err) {
		r.setCurrent(previous, keys)
		r.pending = nil
		if serr := r.save(); serr != nil {
			r.logger.Error("nb: saving the remote source's state", "err", serr)
		}
		return res, time.Time{}, err
	}
	if within > 0 && (res == nil || res.Seq == 0) {
		return nil, time.Time{}, r.undoUnconfirmable(ctx, previous)
	}
	// The Mux's state of the source is after, or previous (a reverted
	// transaction): they differ on keys only.
	r.setCurrent(r.desired(), keys)
	r.pending = nil
	var deadline time.Time
	if res != nil && res.Seq > 0 {
		r.record(res.Seq)
		if within > 0 && !res.Reverted {
			deadline = time.Now().Add(within)
			r.pending = &pendingCommit{seq: res.Seq, deadline: deadline, previous: previous, keys: keys}
			r.arm(res.Seq, within)
		}
	}
	if err := r.save(); err != nil {
		r.logger.Error("nb: saving the remote source's state", "err", err)
	}
	return res, deadline, nil
}

func isTxnError(err error) bool {
	var te *scheduler.TxnError
	return errors.As(err, &te)
}

// undoUnconfirmable restores the source's state before a confirmed commit
// that made no transaction, and returns the error refusing it; r.mu held.
func (r *Remote) undoUnconfirmable(ctx context.Context, previous map[string]proto.Message) error {
	res, err := r.m.ApplyWith(ctx, r.name, Update{
		Resync: true, Changes: changesOf(previous),
		Description: "undo of a confirmed commit that made no transaction",
	})
	if err != nil && isTxnError(err) {
		err = nil
	}
	if err != nil {
		r.logger.Error("nb: undoing a confirmed commit that made no transaction", "err", err)
	}
	r.setCurrent(r.desired(), nil)
	r.pending = nil
	if res != nil && res.Seq > 0 {
		r.record(res.Seq)
	}
	if serr := r.save(); serr != nil {
		r.logger.Error("nb: saving the remote source's state", "err", serr)
	}
	if err != nil {
		return fmt.Errorf("confirm_within: the commit made no transaction to confirm, and undoing its change of the source's state failed: %w", err)
	}
	return fmt.Errorf("confirm_within: the commit changes nothing in the agent (another source's values win, or the agent has not run its startup resync yet); nothing was changed: %w", ErrNothingToConfirm)
}

// desired returns the source's state as the Mux holds it: its very map,
// which neither changes in place.
func (r *Remote) desired() map[string]proto.Message {
	d := r.m.desiredShared(r.name)
	if d == nil {
		d = map[string]proto.Message{}
	}
	return d
}

// arm starts the confirmation timer of commit seq; r.mu held.
func (r *Remote) arm(seq uint64, within time.Duration) {
	if r.timer != nil {
		r.timer.Stop()
	}
	r.timer = time.AfterFunc(within, func() { r.expire(seq, within) })
}

// expire rolls back commit seq if it still awaits confirmation.
func (r *Remote) expire(seq uint64, within time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pending
	if p == nil || p.seq != seq || r.ctx.Err() != nil {
		return
	}
	desc := fmt.Sprintf("rollback of commit %d: not confirmed within %s", seq, within)
	r.logger.Warn("nb: " + desc)
	if _, err := r.rollback(r.ctx, p.previous, desc); err != nil {
		r.logger.Error("nb: "+desc, "err", err)
		if r.ctx.Err() == nil {
			// Try again: the commit must not stay.
			r.timer = time.AfterFunc(time.Second, func() { r.expire(seq, within) })
		}
	}
}

// rollback makes target the source's state in a transaction described by
// desc, and forgets the pending confirmation; r.mu held.
func (r *Remote) rollback(ctx context.Context, target map[string]proto.Message, desc string) (*scheduler.Result, error) {
	res, err := r.m.ApplyWith(ctx, r.name, Update{Resync: true, Changes: changesOf(target), Description: desc})
	if err != nil && !isTxnError(err) {
		return res, err
	}
	r.setCurrent(r.desired(), nil)
	r.pending = nil
	if r.timer != nil {
		r.timer.Stop()
	}
	if res != nil && res.Seq > 0 {
		r.record(res.Seq)
	}
	if err := r.save(); err != nil {
		r.logger.Error("nb: saving the remote source's state", "err", err)
	}
	return res, nil
}

// pendingFor returns the commit seq awaiting confirmation; r.mu held.
func (r *Remote) pendingFor(seq uint64) (*pendingCommit, error) {
	p := r.pending
	if p == nil || p.seq != seq || seq == 0 {
		return nil, fmt.Errorf("seq: commit %d %w", seq, ErrNotAwaiting)
	}
	return p, nil
}

// Confirm confirms commit seq, which awaits confirmation.
func (r *Remote) Confirm(seq uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.pendingFor(seq); err != nil {
		return err
	}
	r.pending = nil
	if r.timer != nil {
		r.timer.Stop()
	}
	if err := r.save(); err != nil {
		return fmt.Errorf("saving the confirmation: %w", err)
	}
	return nil
}

// Cancel rolls back commit seq, which awaits confirmation, now.
func (r *Remote) Cancel(ctx context.Context, seq uint64) (*scheduler.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, err := r.pendingFor(seq)
	if err != nil {
		return nil, err
	}
	return r.rollback(ctx, p.previous, fmt.Sprintf("rollback of commit %d: cancelled", p.seq))
}

// RollbackTo makes the source's state after transaction seq its state, in
// a new transaction described by desc; it returns that state's keys too.
func (r *Remote) RollbackTo(ctx context.Context, seq uint64, desc string) (*scheduler.Result, []string, error) {
	if h := r.m.s.History(); seq == 0 || len(h) == 0 || h[len(h)-1].Seq < seq {
		return nil, nil, fmt.Errorf("seq: transaction %d has not run: %w", seq, ErrUnknownTransaction)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.pending; p != nil {
		return nil, nil, fmt.Errorf("commit %d awaits confirmation: confirm or cancel it first: %w", p.seq, ErrAwaitingConfirmation)
	}
	target, ok := r.after(seq)
	if !ok {
		return nil, nil, fmt.Errorf("seq: transaction %d is older than the states kept (the oldest: after %d): %w", seq, r.floor, ErrUnknownTransaction)
	}
	res, err := r.rollback(ctx, target, desc)
	return res, slices.Sorted(maps.Keys(target)), err
}

// record keeps the source's state after transaction seq, dropping the
// oldest beyond the bound; r.mu held.
func (r *Remote) record(seq uint64) {
	if n := len(r.states); n > 0 && r.states[n-1].seq > seq {
		// The scheduler's numbers started again (a scheduler without
		// WithSeqAfter): the states kept name other transactions.
		r.logger.Warn("nb: transaction numbers went back: the states kept for RollbackTo are dropped", "source", r.name, "seq", seq, "last", r.states[n-1].seq)
		r.states, r.floor = nil, seq
	}
	// r.current is never changed in place: the state shares it.
	st := remoteSnapshot{seq: seq, values: r.current}
	if r.es != nil {
		if n := len(r.states); n == 0 {
			r.stateOps = append(r.stateOps[:0], SourceEntry{Key: []byte(entryBase), Prefix: true}, SourceEntry{Key: []byte(entryDiff), Prefix: true})
			r.putValues(entryBase, st.values)
		} else {
			var keys []string
			if !r.touchedAll {
				keys = slices.Collect(maps.Keys(r.touched))
			}
			st.set, st.deleted = diffOn(r.states[n-1].values, st.values, keys)
			r.putDiff(st)
		}
	}
	clear(r.touched)
	r.touchedAll = false
	r.states = append(r.states, st)
	for len(r.states) > r.kept {
		// The second state becomes the first, whole: its changes go
		// into the base entries.
		next := r.states[1]
		if r.es != nil {
			r.putValues(entryBase, next.set)
			for _, k := range next.deleted {
				r.stateOps = append(r.stateOps, SourceEntry{Key: []byte(entryBase + k)})
			}
			r.stateOps = append(r.stateOps, SourceEntry{Key: diffKey(next.seq)})
		}
		r.states = slices.Delete(r.states, 0, 1)
		r.floor = r.states[0].seq
	}
}

// setCurrent makes next the source's state, next differing from it on
// keys only (nil: on any); r.mu held. next is not changed afterwards.
func (r *Remote) setCurrent(next map[string]proto.Message, keys []string) {
	if keys == nil {
		r.touchedAll = true
		if r.es != nil {
			set, deleted := diffOn(r.current, next, nil)
			for k := range set {
				r.dirty[k] = struct{}{}
			}
			for _, k := range deleted {
				r.dirty[k] = struct{}{}
			}
		}
	} else if r.es != nil {
		for _, k := range keys {
			r.dirty[k] = struct{}{}
			r.touched[k] = struct{}{}
		}
	}
	r.current = next
}

// sameOn reports whether a and b are equal on keys (nil: all of them).
func sameOn(a, b map[string]proto.Message, keys []string) bool {
	if keys == nil {
		return maps.EqualFunc(a, b, proto.Equal)
	}
	for _, k := range keys {
		va, oka := a[k]
		vb, okb := b[k]
		if oka != okb || (oka && !proto.Equal(va, vb)) {
			return false
		}
	}
	return true
}

// diffOn returns the values of next that differ from prev's, and the keys
// of prev that next has not, looking at keys only (nil: all).
func diffOn(prev, next map[string]proto.Message, keys []string) (map[string]proto.Message, []string) {
	if keys == nil {
		for k := range prev {
			keys = append(keys, k)
		}
		for k := range next {
			if _, ok := prev[k]; !ok {
				keys = append(keys, k)
			}
		}
	}
	set := map[string]proto.Message{}
	var deleted []string
	for _, k := range keys {
		pv, had := prev[k]
		nv, has := next[k]
		switch {
		case has && (!had || (pv != nv && !proto.Equal(pv, nv))):
			set[k] = nv
		case !has && had:
			deleted = append(deleted, k)
		}
	}
	slices.Sort(deleted)
	deleted = slices.Compact(deleted)
	return set, deleted
}

// after returns the source's state after transaction seq; false when the
// states kept no longer go back that far.
func (r *Remote) after(seq uint64) (map[string]proto.Message, bool) {
	for i := len(r.states) - 1; i >= 0; i-- {
		if r.states[i].seq <= seq {
			return r.states[i].values, true
		}
	}
	if r.floor == 0 {
		return map[string]proto.Message{}, true
	}
	return nil, false
}

// The record's form in the store: values in the protobuf wire form with
// their message full name, decoded by the key's model.
type recordValue struct {
	Key  string `json:"key"`
	Type string `json:"type"`
	Data []byte `json:"data"`
}

type recordPending struct {
	Seq      uint64        `json:"seq"`
	Deadline time.Time     `json:"deadline"`
	Previous []recordValue `json:"previous"`
}

type remoteRecord struct {
	Current []recordValue  `json:"current"`
	Pending *recordPending `json:"pending,omitempty"`
	// States are the states RollbackTo returns to, oldest first: the
	// first whole, each next one as its changes from the one before;
	// Floor is r.floor.
	States []recordState `json:"states,omitempty"`
	Floor  uint64        `json:"floor,omitempty"`
}

// recordState is a state of the source after transaction Seq: its values
// (the first state), or the values set and the keys deleted since the
// state before.
type recordState struct {
	Seq     uint64        `json:"seq"`
	Set     []recordValue `json:"set,omitempty"`
	Deleted []string      `json:"deleted,omitempty"`
}

// load reads the source's record from the store (none: an empty state).
func (r *Remote) load(models Models) error {
	if r.store == nil {
		return nil
	}
	b, err := r.store.LoadSource(r.name)
	if err != nil {
		return fmt.Errorf("nb: the state of source %s: %w", r.name, err)
	}
	if r.es != nil {
		// Every write of entries removes the single record of before:
		// one in the store is newer than the entries (an agent of
		// before ran over them), and replaces them.
		if b == nil {
			found, err := r.loadEntries(models)
			if err != nil {
				return fmt.Errorf("nb: the state of source %s: %w", r.name, err)
			}
			if found {
				return nil
			}
		}
		// Nothing, or the single record: the first save writes every
		// entry (and removes that record).
		r.rewrite = true
	}
	if b == nil {
		return nil
	}
	var rec remoteRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("nb: the state of source %s: %w", r.name, err)
	}
	if r.current, err = decodeValues(models, rec.Current); err != nil {
		return fmt.Errorf("nb: the state of source %s: %w", r.name, err)
	}
	if p := rec.Pending; p != nil {
		prev, err := decodeValues(models, p.Previous)
		if err != nil {
			return fmt.Errorf("nb: the state of source %s before commit %d: %w", r.name, p.Seq, err)
		}
		r.pending = &pendingCommit{seq: p.Seq, deadline: p.Deadline, previous: prev}
	}
	state := map[string]proto.Message{}
	for _, st := range rec.States {
		set, err := decodeValues(models, st.Set)
		if err != nil {
			return fmt.Errorf("nb: the state of source %s after transaction %d: %w", r.name, st.Seq, err)
		}
		state = maps.Clone(state)
		maps.Copy(state, set)
		for _, k := range st.Deleted {
			delete(state, k)
		}
		r.states = append(r.states, remoteSnapshot{seq: st.Seq, values: state, set: set, deleted: st.Deleted})
	}
	r.floor = rec.Floor
	// A record without states (written before they were kept): what the
	// source had before this run is not known.
	r.noHistory = len(rec.States) == 0
	if n := len(r.states) - r.kept; n > 0 {
		r.states = slices.Delete(r.states, 0, n)
		r.floor = r.states[0].seq
	}
	return nil
}

// encodeStates returns the states kept in the record's form: the first
// whole, the next ones as changes.
func encodeStates(states []remoteSnapshot) ([]recordState, error) {
	out := make([]recordState, 0, len(states))
	prev := map[string]proto.Message{}
	for _, st := range states {
		set := map[string]proto.Message{}
		for k, v := range st.values {
			if pv, ok := prev[k]; !ok || !proto.Equal(pv, v) {
				set[k] = v
			}
		}
		enc, err := encodeValues(set)
		if err != nil {
			return nil, err
		}
		rs := recordState{Seq: st.seq, Set: enc}
		for _, k := range slices.Sorted(maps.Keys(prev)) {
			if _, ok := st.values[k]; !ok {
				rs.Deleted = append(rs.Deleted, k)
			}
		}
		out = append(out, rs)
		prev = st.values
	}
	return out, nil
}

// save writes the source's state to the store: to a SourceEntryStore
// what changed since the last save, else the whole record; r.mu held.
func (r *Remote) save() error {
	if r.store == nil {
		return nil
	}
	if r.es != nil {
		return r.saveEntries()
	}
	var rec remoteRecord
	var err error
	if rec.Current, err = encodeValues(r.current); err != nil {
		return err
	}
	if p := r.pending; p != nil {
		prev, err := encodeValues(p.previous)
		if err != nil {
			return err
		}
		rec.Pending = &recordPending{Seq: p.seq, Deadline: p.deadline, Previous: prev}
	}
	if rec.States, err = encodeStates(r.states); err != nil {
		return err
	}
	rec.Floor = r.floor
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return r.store.SaveSource(r.name, b)
}

func encodeValues(vs map[string]proto.Message) ([]recordValue, error) {
	out := make([]recordValue, 0, len(vs))
	for _, k := range slices.Sorted(maps.Keys(vs)) {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(vs[k])
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
		out = append(out, recordValue{Key: k, Type: string(vs[k].ProtoReflect().Descriptor().FullName()), Data: b})
	}
	return out, nil
}

func decodeValues(models Models, vs []recordValue) (map[string]proto.Message, error) {
	out := make(map[string]proto.Message, len(vs))
	for _, v := range vs {
		m, err := Decode(models, v.Key, v.Data, Binary)
		if err != nil {
			return nil, err
		}
		if got := string(m.ProtoReflect().Descriptor().FullName()); got != v.Type {
			return nil, fmt.Errorf("key %q: recorded as a %s, its model is %s", v.Key, v.Type, got)
		}
		out[v.Key] = m
	}
	return out, nil
}

func changesOf(vs map[string]proto.Message) []Change {
	out := make([]Change, 0, len(vs))
	for _, k := range slices.Sorted(maps.Keys(vs)) {
		out = append(out, Change{Key: k, Value: vs[k]})
	}
	return out
}

// ImportRemoteState records values as the state of the remote source
// named source in store, as a Remote with no past states would have saved
// it: the next Remote over the store loads them (and its initial load
// applies them). It moves a state kept elsewhere (the former gRPC API's
// grpc.json) into the store before the Remote starts, and refuses to
// replace a record the source has.
func ImportRemoteState(store SourceStore, source string, values map[string]proto.Message) error {
	if source == "" {
		source = DefaultRemoteSource
	}
	has, err := HasSourceState(store, source)
	if err != nil {
		return fmt.Errorf("nb: the state of source %s: %w", source, err)
	}
	if has {
		return fmt.Errorf("nb: source %s has a recorded state already", source)
	}
	var rec remoteRecord
	if rec.Current, err = encodeValues(values); err != nil {
		return fmt.Errorf("nb: importing the state of source %s: %w", source, err)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return store.SaveSource(source, b)
}
