package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// DefaultWaitTimeout bounds a Commit's wait for its values to settle when
// the request gives no timeout.
const DefaultWaitTimeout = 30 * time.Second

// startTimeout bounds the initial load at NewServer.
const startTimeout = time.Minute

// start gives the Mux the source's initial load, rolling back a commit that
// awaited confirmation when the previous server stopped.
func (srv *Server) start() error {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	ctx, cancel := context.WithTimeout(srv.ctx, startTimeout)
	defer cancel()
	st := srv.st
	desired, desc := st.current, "initial load"
	p := st.pending
	if p != nil {
		desired = p.previous
		desc = fmt.Sprintf("rollback of commit %d, which awaited confirmation when the agent stopped", p.seq)
		if p.seq == 0 {
			desc = "rollback of a confirmed commit that was in flight when the agent stopped"
		}
		srv.logger.Warn("grpcapi: "+desc, "source", srv.cfg.Source)
	}
	res, err := srv.mux.ApplyWith(ctx, srv.cfg.Source, nb.Update{Resync: true, Changes: changesOf(desired), Description: desc})
	if err != nil {
		return fmt.Errorf("grpcapi: the initial load of source %s: %w", srv.cfg.Source, err)
	}
	st.current = maps.Clone(desired)
	st.pending = nil
	// The state loaded is the source's state since the transaction
	// before this one (or since the start: 0).
	seq := uint64(0)
	if res != nil {
		seq = res.Seq
	} else if h := srv.s.History(); len(h) > 0 {
		// Applied by the startup resync (or waiting for it).
		seq = h[len(h)-1].Seq
	}
	st.record(seq, srv.cfg.StatesKept)
	if p == nil {
		return nil
	}
	return st.save()
}

// Commit applies, or plans, a transaction of the gRPC source.
func (srv *Server) Commit(ctx context.Context, req *apiv1.CommitRequest) (*apiv1.CommitResponse, error) {
	if err := checkCommit(req); err != nil {
		return nil, err
	}
	changes, err := srv.changes(req)
	if err != nil {
		return nil, err
	}
	opts, err := txnOptions(req)
	if err != nil {
		return nil, err
	}
	if req.GetResync() == apiv1.ResyncKind_RESYNC_KIND_DOWNSTREAM {
		if len(changes) > 0 {
			return nil, status.Error(codes.InvalidArgument, "values, deletes: a downstream resync takes none")
		}
		if req.GetConfirmWithin() != nil {
			return nil, status.Error(codes.InvalidArgument, "confirm_within: a downstream resync cannot be confirmed")
		}
		opts = append(opts, scheduler.DownstreamResync())
		if req.GetPlanOnly() {
			opts = append(opts, scheduler.DryRun())
		}
		res, err := srv.s.Txn(opts...).With(scheduler.Description(describe("downstream resync", req.GetDescription()))).Commit(ctx)
		if err := commitError(res, err); err != nil {
			return nil, err
		}
		return srv.response(ctx, req, res, nil)
	}
	u := nb.Update{Resync: req.GetResync() == apiv1.ResyncKind_RESYNC_KIND_SOURCE, Changes: changes, Description: req.GetDescription()}
	if req.GetPlanOnly() {
		res, err := srv.mux.Plan(ctx, srv.cfg.Source, u, opts...)
		if err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "plan_only: %v", err)
		}
		resp, err := srv.response(ctx, req, res, keysOf(changes))
		if err != nil {
			return nil, err
		}
		resp.Outcomes = srv.planOutcomes(res, u)
		return resp, nil
	}
	var within time.Duration
	if d := req.GetConfirmWithin(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() <= 0 {
			return nil, status.Error(codes.InvalidArgument, "confirm_within: must be a positive duration")
		}
		within = d.AsDuration()
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if p := srv.st.pending; p != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "commit %d awaits confirmation until %s: confirm or cancel it first", p.seq, p.deadline.UTC().Format(time.RFC3339))
	}
	previous := maps.Clone(srv.st.current)
	if within > 0 && sameValues(previous, next(previous, u)) {
		return nil, errNothingToConfirm
	}
	// Write-ahead: the state file holds the source's next state (and,
	// for a confirmed commit, a confirmation awaited, its seq not known
	// yet) before the transaction, so that an agent that dies during it
	// starts with what the client asked, and rolls back a confirmed
	// commit whatever became of it.
	srv.st.current = next(previous, u)
	if within > 0 {
		srv.st.pending = &pendingCommit{deadline: time.Now().Add(within), previous: previous}
	}
	if err := srv.st.save(); err != nil {
		srv.st.current, srv.st.pending = previous, nil
		return nil, status.Errorf(codes.Unavailable, "recording the commit before applying it: %v", err)
	}
	res, err := srv.mux.ApplyWith(ctx, srv.cfg.Source, u, opts...)
	if err := commitError(res, err); err != nil {
		srv.st.current, srv.st.pending = previous, nil
		if serr := srv.st.save(); serr != nil {
			srv.logger.Error("grpcapi: saving the source's state", "err", serr)
		}
		return nil, err
	}
	if within > 0 && (res == nil || res.Seq == 0) {
		return nil, srv.undoUnconfirmable(ctx, previous)
	}
	srv.st.current = srv.desired()
	srv.st.pending = nil
	var deadline time.Time
	if res != nil && res.Seq > 0 {
		srv.st.record(res.Seq, srv.cfg.StatesKept)
		if within > 0 && !res.Reverted {
			// The deadline counts from the end of the transaction.
			deadline = time.Now().Add(within)
			srv.st.pending = &pendingCommit{seq: res.Seq, deadline: deadline, previous: previous}
			srv.arm(res.Seq, within)
		}
	}
	if err := srv.st.save(); err != nil {
		srv.logger.Error("grpcapi: saving the source's state", "err", err)
	}
	resp, err := srv.response(ctx, req, res, keysOf(changes))
	if err != nil {
		return nil, err
	}
	if !deadline.IsZero() {
		resp.ConfirmDeadline = timestamppb.New(deadline)
	}
	return resp, nil
}

// A confirmed commit that makes no transaction is refused. The choice: a
// router's "commit confirmed" arms its timer even when nothing changes,
// because every commit there makes a numbered configuration revision to
// confirm. Here the confirmation names a transaction (Confirm and Cancel
// take its seq; the history records the commit and its rollback by it),
// and a commit that changes nothing in the merged state makes none: a
// timer armed for it would leave the client a deadline with nothing to
// name, and a rollback that changes nothing either. So the client is
// told, with FAILED_PRECONDITION, that there is nothing to confirm, and
// the source's state stays as it was: its values are not taken without
// the confirmation asked for (a value that another source overrides
// would otherwise come into effect, unconfirmed, once that source drops
// it).
var errNothingToConfirm = status.Error(codes.FailedPrecondition,
	"confirm_within: the commit leaves the gRPC source's values as they are, so there is no transaction to confirm; nothing was changed")

// undoUnconfirmable restores the source's state before a confirmed commit
// that made no transaction, and returns the error refusing it; srv.mu
// held.
func (srv *Server) undoUnconfirmable(ctx context.Context, previous map[string]proto.Message) error {
	res, err := srv.mux.ApplyWith(ctx, srv.cfg.Source, nb.Update{
		Resync: true, Changes: changesOf(previous),
		Description: "undo of a confirmed commit that made no transaction",
	})
	err = commitError(res, err)
	if err != nil {
		// The source's state keeps the values, as the Mux does; the
		// state file says so.
		srv.logger.Error("grpcapi: undoing a confirmed commit that made no transaction", "err", err)
	}
	srv.st.current = srv.desired()
	srv.st.pending = nil
	if res != nil && res.Seq > 0 {
		// Another source changed the merged state meanwhile.
		srv.st.record(res.Seq, srv.cfg.StatesKept)
	}
	if err := srv.st.save(); err != nil {
		srv.logger.Error("grpcapi: saving the source's state", "err", err)
	}
	if err != nil {
		return status.Errorf(codes.Internal, "confirm_within: the commit made no transaction to confirm, and undoing its change of the source's state failed: %v", err)
	}
	return status.Error(codes.FailedPrecondition,
		"confirm_within: the commit changes nothing in the agent (another source's values win, or the agent has not run its startup resync yet), "+
			"so there is no transaction to confirm; nothing was changed")
}

// sameValues reports whether two states of the source are equal.
func sameValues(a, b map[string]proto.Message) bool {
	return maps.EqualFunc(a, b, proto.Equal)
}

// next returns the source's state after u.
func next(prev map[string]proto.Message, u nb.Update) map[string]proto.Message {
	out := maps.Clone(prev)
	if u.Resync || out == nil {
		out = map[string]proto.Message{}
	}
	for _, c := range u.Changes {
		if c.Value == nil {
			delete(out, c.Key)
		} else {
			out[c.Key] = c.Value
		}
	}
	return out
}

// desired returns the source's state as the Mux holds it.
func (srv *Server) desired() map[string]proto.Message {
	d := srv.mux.Desired(srv.cfg.Source)
	if d == nil {
		d = map[string]proto.Message{}
	}
	return d
}

// arm starts the confirmation timer of commit seq; srv.mu held.
func (srv *Server) arm(seq uint64, within time.Duration) {
	if srv.timer != nil {
		srv.timer.Stop()
	}
	srv.timer = time.AfterFunc(within, func() { srv.expire(seq, within) })
}

// expire rolls back commit seq if it still awaits confirmation.
func (srv *Server) expire(seq uint64, within time.Duration) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	p := srv.st.pending
	if p == nil || p.seq != seq || srv.ctx.Err() != nil {
		return
	}
	desc := fmt.Sprintf("rollback of commit %d: not confirmed within %s", seq, within)
	srv.logger.Warn("grpcapi: " + desc)
	if _, err := srv.rollback(srv.ctx, p.previous, desc); err != nil {
		srv.logger.Error("grpcapi: "+desc, "err", err)
		if srv.ctx.Err() == nil {
			// Try again: the commit must not stay.
			srv.timer = time.AfterFunc(time.Second, func() { srv.expire(seq, within) })
		}
	}
}

// rollback makes target the source's state in a transaction described by
// desc, and forgets the pending confirmation; srv.mu held.
func (srv *Server) rollback(ctx context.Context, target map[string]proto.Message, desc string) (*scheduler.Result, error) {
	res, err := srv.mux.ApplyWith(ctx, srv.cfg.Source, nb.Update{Resync: true, Changes: changesOf(target), Description: desc})
	if err := commitError(res, err); err != nil {
		return nil, err
	}
	srv.st.current = srv.desired()
	srv.st.pending = nil
	if srv.timer != nil {
		srv.timer.Stop()
	}
	if res != nil && res.Seq > 0 {
		srv.st.record(res.Seq, srv.cfg.StatesKept)
	}
	if err := srv.st.save(); err != nil {
		srv.logger.Error("grpcapi: saving the source's state", "err", err)
	}
	return res, nil
}

// pendingFor returns the commit seq awaiting confirmation; srv.mu held.
func (srv *Server) pendingFor(seq uint64) (*pendingCommit, error) {
	if seq == 0 {
		return nil, status.Error(codes.InvalidArgument, "seq: required")
	}
	p := srv.st.pending
	if p == nil || p.seq != seq {
		return nil, status.Errorf(codes.NotFound, "seq: commit %d does not await confirmation", seq)
	}
	return p, nil
}

// Confirm confirms a commit awaiting confirmation.
func (srv *Server) Confirm(_ context.Context, req *apiv1.ConfirmRequest) (*apiv1.ConfirmResponse, error) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if _, err := srv.pendingFor(req.GetSeq()); err != nil {
		return nil, err
	}
	srv.st.pending = nil
	if srv.timer != nil {
		srv.timer.Stop()
	}
	if err := srv.st.save(); err != nil {
		return nil, status.Errorf(codes.Internal, "saving the confirmation: %v", err)
	}
	return &apiv1.ConfirmResponse{}, nil
}

// Cancel rolls back a commit awaiting confirmation now.
func (srv *Server) Cancel(ctx context.Context, req *apiv1.CancelRequest) (*apiv1.CancelResponse, error) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	p, err := srv.pendingFor(req.GetSeq())
	if err != nil {
		return nil, err
	}
	res, err := srv.rollback(ctx, p.previous, fmt.Sprintf("rollback of commit %d: cancelled", p.seq))
	if err != nil {
		return nil, err
	}
	out := &apiv1.CancelResponse{}
	if res != nil {
		out.Seq = res.Seq
	}
	return out, nil
}

// RollbackTo makes the source's state after transaction seq a new
// transaction.
func (srv *Server) RollbackTo(ctx context.Context, req *apiv1.RollbackToRequest) (*apiv1.RollbackToResponse, error) {
	seq := req.GetSeq()
	if seq == 0 {
		return nil, status.Error(codes.InvalidArgument, "seq: required")
	}
	if err := bounded(apilimits.Length("description", req.GetDescription(), apilimits.MaxDescriptionLen)); err != nil {
		return nil, err
	}
	if h := srv.s.History(); len(h) == 0 || h[len(h)-1].Seq < seq {
		return nil, status.Errorf(codes.NotFound, "seq: transaction %d has not run", seq)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if p := srv.st.pending; p != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "commit %d awaits confirmation: confirm or cancel it first", p.seq)
	}
	target, ok := srv.st.after(seq)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "seq: transaction %d is older than the states kept (the oldest: after %d)", seq, srv.st.floor)
	}
	res, err := srv.rollback(ctx, target, describe(fmt.Sprintf("rollback to the state after transaction %d", seq), req.GetDescription()))
	if err != nil {
		return nil, err
	}
	out, err := srv.response(ctx, &apiv1.CommitRequest{}, res, slices.Sorted(maps.Keys(target)))
	if err != nil {
		return nil, err
	}
	return &apiv1.RollbackToResponse{Result: out}, nil
}

func describe(what, description string) string {
	if description == "" {
		return what
	}
	return what + ": " + description
}

// commitError maps the error of a transaction to a status; a transaction
// that ran with errors of its keys is no error (its outcomes say them).
func commitError(res *scheduler.Result, err error) error {
	if err == nil {
		return nil
	}
	var te *scheduler.TxnError
	if errors.As(err, &te) {
		return nil
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return status.Errorf(codes.DeadlineExceeded, "%v", err)
	case errors.Is(err, context.Canceled):
		return status.Errorf(codes.Canceled, "%v", err)
	case errors.Is(err, scheduler.ErrClosed), strings.Contains(err.Error(), "mux is closed"):
		return status.Errorf(codes.Unavailable, "%v", err)
	}
	if res != nil && res.Seq > 0 {
		return status.Errorf(codes.Internal, "transaction %d: %v", res.Seq, err)
	}
	return status.Errorf(codes.Internal, "%v", err)
}

// changes decodes and checks the request's values and deletes.
func (srv *Server) changes(req *apiv1.CommitRequest) ([]nb.Change, error) {
	seen := map[string]string{}
	var out []nb.Change
	for i, v := range req.GetValues() {
		field := fmt.Sprintf("values[%d]", i)
		key := v.GetKey()
		if err := srv.checkKey(field+".key", key, seen); err != nil {
			return nil, err
		}
		mt, _ := srv.models.MessageType(key)
		want := mt.Descriptor().FullName()
		m := mt.New().Interface()
		switch x := v.GetValue().(type) {
		case *apiv1.Value_Any:
			if got := x.Any.MessageName(); got != want {
				return nil, status.Errorf(codes.InvalidArgument, "%s.any: a %s, but the model of %q is %s", field, got, key, want)
			}
			if err := proto.Unmarshal(x.Any.GetValue(), m); err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "%s.any: not a %s: %v", field, want, err)
			}
		case *apiv1.Value_Json:
			if t := v.GetJsonType(); t != "" && t != string(want) {
				return nil, status.Errorf(codes.InvalidArgument, "%s.json_type: %s, but the model of %q is %s", field, t, key, want)
			}
			if err := protojson.Unmarshal([]byte(x.Json), m); err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "%s.json: not a %s: %v", field, want, err)
			}
		default:
			return nil, status.Errorf(codes.InvalidArgument, "%s: no value (any or json; a delete goes in deletes)", field)
		}
		out = append(out, nb.Change{Key: key, Value: m})
	}
	for i, key := range req.GetDeletes() {
		if err := srv.checkKey(fmt.Sprintf("deletes[%d]", i), key, seen); err != nil {
			return nil, err
		}
		out = append(out, nb.Change{Key: key})
	}
	return out, nil
}

func (srv *Server) checkKey(field, key string, seen map[string]string) error {
	if key == "" {
		return status.Errorf(codes.InvalidArgument, "%s: empty", field)
	}
	if _, ok := srv.models.MessageType(key); !ok {
		return status.Errorf(codes.InvalidArgument, "%s: %q is not a key of any model", field, key)
	}
	if prev, ok := seen[key]; ok {
		return status.Errorf(codes.InvalidArgument, "%s: %q is given twice (also %s)", field, key, prev)
	}
	seen[key] = field
	return nil
}

func keysOf(cs []nb.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Key
	}
	return out
}

// txnOptions returns the transaction options of the request.
func txnOptions(req *apiv1.CommitRequest) ([]scheduler.TxnOption, error) {
	var opts []scheduler.TxnOption
	if req.GetRevert() {
		opts = append(opts, scheduler.Revert())
	}
	if r := req.GetRetry(); r != nil {
		p := scheduler.RetryPolicy{MaxAttempts: int(r.GetMaxAttempts()), Backoff: r.GetBackoff()}
		if r.GetPeriod() != nil {
			if err := r.GetPeriod().CheckValid(); err != nil || r.GetPeriod().AsDuration() < 0 {
				return nil, status.Error(codes.InvalidArgument, "retry.period: must be a duration of zero or more")
			}
			p.Period = r.GetPeriod().AsDuration()
		}
		if r.GetMaxPeriod() != nil {
			if err := r.GetMaxPeriod().CheckValid(); err != nil || r.GetMaxPeriod().AsDuration() < 0 {
				return nil, status.Error(codes.InvalidArgument, "retry.max_period: must be a duration of zero or more")
			}
			p.MaxPeriod = r.GetMaxPeriod().AsDuration()
		}
		if p.MaxAttempts < 0 {
			return nil, status.Error(codes.InvalidArgument, "retry.max_attempts: must be zero or more")
		}
		opts = append(opts, scheduler.Retry(p))
	}
	if d := req.GetWaitTimeout(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() < 0 {
			return nil, status.Error(codes.InvalidArgument, "wait_timeout: must be a duration of zero or more")
		}
	}
	if req.GetPlanOnly() && req.GetConfirmWithin() != nil {
		return nil, status.Error(codes.InvalidArgument, "confirm_within: a plan only applies nothing to confirm")
	}
	return opts, nil
}

// response makes the response of a transaction (res nil: nothing to do),
// waiting for keys to settle when asked.
func (srv *Server) response(ctx context.Context, req *apiv1.CommitRequest, res *scheduler.Result, keys []string) (*apiv1.CommitResponse, error) {
	out := &apiv1.CommitResponse{Settled: true}
	if res != nil {
		out.Seq = res.Seq
		out.Planned = opsOf(res.Planned)
		out.Executed = opsOf(res.Executed)
		out.Reverted = res.Reverted
		if res.DryRun {
			out.Seq = 0
		}
	}
	if req.GetPlanOnly() {
		return out, nil
	}
	// The keys of the outcomes: those asked, and those the transaction
	// touched.
	set := map[string]struct{}{}
	for _, k := range keys {
		set[k] = struct{}{}
	}
	if res != nil {
		for _, op := range res.Executed {
			set[op.Key] = struct{}{}
		}
	}
	all := slices.Sorted(maps.Keys(set))
	if req.GetWait() {
		d := DefaultWaitTimeout
		if t := req.GetWaitTimeout(); t != nil && t.AsDuration() > 0 {
			d = t.AsDuration()
		}
		out.Settled = srv.wait(ctx, all, d)
	} else {
		out.Settled = srv.settled(all)
	}
	for _, k := range all {
		st := srv.s.Status(k)
		o := &apiv1.Outcome{Key: k, State: st.State.String()}
		if st.LastErr != nil {
			o.Error = st.LastErr.Error()
		}
		if why, ok := srv.s.WhyPending(k); ok {
			o.WhyPending = whyLines(why)
		}
		o.Owner, _ = srv.mux.Owner(k)
		out.Outcomes = append(out.Outcomes, o)
	}
	return out, nil
}

func (srv *Server) settled(keys []string) bool {
	for _, k := range keys {
		if !srv.s.Status(k).State.Settled() {
			return false
		}
	}
	return true
}

// wait waits until keys have settled, at most d; it reports whether they
// did. The scheduler's watchers tell when to look again.
func (srv *Server) wait(ctx context.Context, keys []string, d time.Duration) bool {
	if srv.settled(keys) {
		return true
	}
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	w := srv.s.Watch(func(k string) bool { return want[k] }, 64)
	defer w.Close()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !srv.settled(keys) {
		select {
		case <-ctx.Done():
			return srv.settled(keys)
		case <-w.C:
		case <-tick.C:
		}
	}
	return true
}
