package scheduler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"
)

// Txn builds a transaction: a batch of changes of intended values that the
// scheduler plans and executes as one. Build it with Set and Delete, then
// Commit. A Txn is not safe for concurrent use; it may be committed again.
type Txn struct {
	s     *Scheduler
	opts  txnOptions
	items []KeyValue
	index map[string]int
	err   error
	// first holds the first item, so that a transaction of one key
	// allocates nothing more than itself.
	first [1]KeyValue
}

// Txn starts a transaction.
func (s *Scheduler) Txn(opts ...TxnOption) *Txn { return (&Txn{s: s}).With(opts...) }

// With adds options to the transaction.
func (t *Txn) With(opts ...TxnOption) *Txn {
	for _, o := range opts {
		o(&t.opts)
	}
	return t
}

// Set sets the intended value of key. A later Set or Delete of the same key
// in the transaction replaces it. Setting nil is the same as Delete; a nil
// message of a type (a nil *Route, say) is an error of the commit, which
// names the key. A value of a type other than the key's descriptor takes
// is INVALID, with an error wrapping kv.ErrWrongType.
func (t *Txn) Set(key string, value proto.Message) *Txn {
	if key == "" {
		if t.err == nil {
			t.err = errors.New("scheduler: Set with an empty key")
		}
		return t
	}
	if value != nil && !value.ProtoReflect().IsValid() {
		if t.err == nil {
			t.err = fmt.Errorf("scheduler: Set %s: a nil %T message (Delete removes a value)", key, value)
		}
		return t
	}
	if i, ok := t.find(key); ok {
		t.items[i].Value = value
		return t
	}
	if t.index != nil {
		t.index[key] = len(t.items)
	}
	if t.items == nil {
		t.items = t.first[:0]
	}
	t.items = append(grow(t.items), KeyValue{Key: key, Value: value})
	if t.index == nil && len(t.items) > txnScanMax {
		t.index = make(map[string]int, 2*len(t.items))
		for i := range t.items {
			t.index[t.items[i].Key] = i
		}
	}
	return t
}

// txnScanMax is the size up to which a Txn finds its keys by scanning
// instead of through a map (most transactions set a key or two).
const txnScanMax = 8

func (t *Txn) find(key string) (int, bool) {
	if t.index != nil {
		i, ok := t.index[key]
		return i, ok
	}
	for i := range t.items {
		if t.items[i].Key == key {
			return i, true
		}
	}
	return 0, false
}

// Delete removes the intended value of key: the value, its derived values
// and (first) the values that depend on it are deleted from the southbound;
// the dependents become PENDING.
func (t *Txn) Delete(key string) *Txn { return t.Set(key, nil) }

// Len returns the number of keys in the transaction.
func (t *Txn) Len() int { return len(t.items) }

// job copies the items, so that the Txn may change after a commit: one
// item into the job itself.
func (t *Txn) job(ctx context.Context) *job {
	j := &job{kind: t.opts.resync, ctx: ctx, opts: t.opts}
	if len(t.items) == 1 {
		j.items = append(j.one[:0], t.items...)
	} else {
		j.items = append([]KeyValue(nil), t.items...)
	}
	return j
}

// doneChans are the channels of Commit's results: a channel that
// delivered its one result is empty, and serves the next Commit.
var doneChans = sync.Pool{New: func() any { return make(chan *Result, 1) }}

// check returns the error of a transaction that cannot be committed.
func (t *Txn) check() error {
	if t.err != nil {
		return t.err
	}
	if len(t.s.opts.descCallTimeouts) > 0 {
		descs := t.s.view.State.Load().Descs
		for _, name := range slices.Sorted(maps.Keys(t.s.opts.descCallTimeouts)) {
			if descs[name] == nil {
				return fmt.Errorf("scheduler: WithDescriptorCallTimeout names descriptor %q, which is not registered (register it before committing, or fix the name)", name)
			}
		}
	}
	if t.opts.resync == DownstreamResyncTxn && len(t.items) > 0 {
		return fmt.Errorf("scheduler: a downstream resync takes no values (the transaction sets or deletes %d keys, e.g. %s): use FullResync to replace the intended state", len(t.items), t.items[0].Key)
	}
	return nil
}

// Commit queues the transaction and blocks until it has run, or until ctx
// ends. The error is Result.Err: nil, ErrClosed, the context's error (a
// transaction still queued when ctx ends is dropped; one already running
// completes and is recorded, and the error, wrapping ctx.Err(), names its
// sequence number), or a *TxnError with the per-key errors.
func (t *Txn) Commit(ctx context.Context) (*Result, error) {
	// The transaction runs on the worker, never on this goroutine, with
	// or without a deadline on ctx: a southbound call given up on at its
	// timeout still holds the goroutine that made it, and the caller gets
	// the result as soon as the transaction has one.
	j, failed := t.submit(ctx, doneChans.Get().(chan *Result))
	if failed != nil {
		return failed, failed.Err
	}
	select {
	case r := <-j.done:
		doneChans.Put(j.done)
		return r, r.Err
	case <-ctx.Done():
		err := ctx.Err()
		if seq := j.seq.Load(); seq != 0 {
			err = fmt.Errorf("scheduler: transaction #%d still running (it completes and is recorded): %w", seq, err)
		}
		return &Result{Seq: j.seq.Load(), Kind: j.kind, Err: err}, err
	}
}

// CommitAsync queues the transaction and returns at once; the channel
// receives the result when it has run.
func (t *Txn) CommitAsync(ctx context.Context) <-chan *Result {
	j, failed := t.submit(ctx, make(chan *Result, 1))
	if failed != nil {
		return resolved(failed)
	}
	return j.done
}

// submit queues the transaction, its result to go to done; or returns the
// result of a transaction that cannot be queued.
func (t *Txn) submit(ctx context.Context, done chan *Result) (*job, *Result) {
	if ctx == nil {
		return nil, &Result{Kind: t.opts.resync, Err: errNilContext("commit")}
	}
	if err := t.check(); err != nil {
		return nil, &Result{Kind: NBTxn, Err: err}
	}
	j := t.job(ctx)
	j.done = done
	if err := t.s.enqueue(j); err != nil {
		return nil, &Result{Kind: NBTxn, Err: err}
	}
	return j, nil
}

func resolved(r *Result) <-chan *Result {
	ch := make(chan *Result, 1)
	ch <- r
	return ch
}

// CommitAndWait commits the transaction, then waits until every value it
// touched has settled (any state but PENDING and RETRYING) or ctx ends.
// Result.Outcomes gives the state of each value; values still PENDING come
// with their WhyPending. The error is about the outcomes: a *TxnError
// naming the values that ended FAILED, INVALID or UNIMPLEMENTED (a failure
// repaired by a retry is not one), joined with ErrNotSettled when ctx ended
// first; when ctx ends before the transaction has ended, Commit's error.
func (t *Txn) CommitAndWait(ctx context.Context) (*Result, error) {
	keys := make([]string, 0, len(t.items)) // outcomes skips repeats
	for _, it := range t.items {
		keys = append(keys, it.Key)
	}
	// Every change wakes the wait: derived values of the touched ones may
	// appear later (after a retry), and outcomes are read afresh anyway.
	w := t.s.Watch(nil, 0)
	defer w.Close()

	res, err := t.Commit(ctx)
	if res == nil || res.Seq == 0 || res.DryRun {
		return res, err
	}
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		// The context ended while the transaction ran: it has no
		// outcomes yet (what the view holds is from before it).
		return res, err
	}
	for _, op := range res.Executed {
		keys = append(keys, op.Key)
	}
	for {
		outcomes, settled := t.s.outcomes(keys)
		res.Outcomes = outcomes
		if settled {
			res.Err = outcomeError(res)
			return res, res.Err
		}
		select {
		case <-w.C:
		case <-ctx.Done():
			res.Err = errors.Join(outcomeError(res), fmt.Errorf("%w: %w", ErrNotSettled, ctx.Err()))
			return res, res.Err
		}
	}
}

// outcomeError is the error of a waited-for transaction: the values that
// ended FAILED, INVALID or UNIMPLEMENTED, whatever happened on the way (a
// failure that a retry repaired is not an error any more).
func outcomeError(res *Result) error {
	var errs []KeyError
	for _, o := range res.Outcomes {
		switch o.State {
		case FAILED, INVALID, UNIMPLEMENTED:
			err := o.Err
			if err == nil {
				err = errors.New(o.State.String())
			}
			errs = append(errs, KeyError{Key: o.Key, Op: o.LastOp, Err: err})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &TxnError{Seq: res.Seq, Errors: errs, Reverted: res.Reverted}
}

// ErrNotSettled is wrapped by CommitAndWait's error when its context ended
// while some values were still PENDING or RETRYING.
var ErrNotSettled = errors.New("values not settled")

// outcomes returns the outcome of each key and of the values derived from
// them (as they are now), and whether all have settled.
func (s *Scheduler) outcomes(keys []string) ([]Outcome, bool) {
	v := s.view.Read()
	defer v.Done()
	all := true
	out := make([]Outcome, 0, len(keys))
	seen := make(map[string]bool, len(keys))
	for i := 0; i < len(keys); i++ {
		k := keys[i]
		if seen[k] {
			continue
		}
		seen[k] = true
		st := v.Status(k, v.Get(k), false)
		keys = append(keys, st.Derived...)
		if st.State == NONEXISTENT {
			st.State = REMOVED // the transaction touched it, and it is gone
		}
		o := Outcome{Key: k, State: st.State, Err: st.LastErr, LastOp: st.LastOp}
		if st.State == PENDING {
			o.WhyPending = v.WhyPending(k)
		}
		if !st.State.Settled() {
			all = false
		}
		out = append(out, o)
	}
	return out, all
}

// Notification is one value pushed by the southbound: present (Value set)
// or gone (Value nil).
type Notification struct {
	Key      string
	Value    proto.Message
	Metadata any
}

// Notify applies southbound notifications as one transaction of kind
// SBNotification and blocks until it has run. A value present in the
// southbound and not intended by us becomes OBTAINED: it satisfies
// dependencies and is never created or deleted by us. Notifications are
// queued like transactions and never dropped.
func (s *Scheduler) Notify(ctx context.Context, ns ...Notification) (*Result, error) {
	if ctx == nil {
		err := errNilContext("notify")
		return &Result{Kind: SBNotification, Err: err}, err
	}
	select {
	case r := <-s.NotifyAsync(ns...):
		return r, r.Err
	case <-ctx.Done():
		return &Result{Kind: SBNotification, Err: ctx.Err()}, ctx.Err()
	}
}

// NotifyAsync is Notify without waiting.
func (s *Scheduler) NotifyAsync(ns ...Notification) <-chan *Result {
	j := &job{kind: SBNotification, ctx: context.Background(), done: make(chan *Result, 1)}
	for _, n := range ns {
		if n.Key == "" {
			return resolved(&Result{Kind: SBNotification, Err: errors.New("scheduler: notification with an empty key")})
		}
		j.items = append(j.items, KeyValue(n))
	}
	if err := s.enqueue(j); err != nil {
		return resolved(&Result{Kind: SBNotification, Err: err})
	}
	return j.done
}
