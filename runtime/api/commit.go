package api

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	nbfile "github.com/kvdescriptor/kvdescriptor/runtime/nb/file"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// DefaultWaitTimeout bounds a Commit's wait for its values to settle when
// the request gives no timeout.
const DefaultWaitTimeout = 30 * time.Second

// Commit applies, or plans, a transaction of the API's source.
func (svc *Service) Commit(ctx context.Context, req *connect.Request[apiv1.CommitRequest]) (*connect.Response[apiv1.CommitResponse], error) {
	resp, err := svc.commit(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(resp), nil
}

func (svc *Service) commit(ctx context.Context, req *apiv1.CommitRequest) (*apiv1.CommitResponse, error) {
	if err := checkCommit(req); err != nil {
		return nil, err
	}
	changes, err := svc.changes(req.GetValues(), req.GetDeletes())
	if err != nil {
		return nil, err
	}
	opts, err := txnOptions(req)
	if err != nil {
		return nil, err
	}
	if req.GetResync() == apiv1.ResyncKind_RESYNC_KIND_DOWNSTREAM {
		if len(changes) > 0 {
			return nil, invalid("values, deletes", "a downstream resync takes none")
		}
		if req.GetConfirmWithin() != nil {
			return nil, invalid("confirm_within", "a downstream resync cannot be confirmed")
		}
		opts = append(opts, scheduler.DownstreamResync())
		if req.GetPlanOnly() {
			opts = append(opts, scheduler.DryRun())
		}
		res, err := svc.s.Txn(opts...).With(scheduler.Description(describe("downstream resync", req.GetDescription()))).Commit(ctx)
		if err := txnError(res, err); err != nil {
			return nil, err
		}
		return svc.response(ctx, req, res, nil), nil
	}
	u := nb.Update{Resync: req.GetResync() == apiv1.ResyncKind_RESYNC_KIND_SOURCE, Changes: changes, Description: req.GetDescription()}
	if req.GetPlanOnly() {
		return svc.plan(ctx, u, opts)
	}
	var within time.Duration
	if d := req.GetConfirmWithin(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() <= 0 {
			return nil, invalid("confirm_within", "must be a positive duration")
		}
		within = d.AsDuration()
	}
	res, deadline, err := svc.remote.Commit(ctx, u, within, opts...)
	if err := txnError(res, err); err != nil {
		return nil, err
	}
	resp := svc.response(ctx, req, res, keysOf(changes))
	if !deadline.IsZero() {
		resp.ConfirmDeadline = timestamppb.New(deadline)
	}
	return resp, nil
}

// plan plans u over the merged state: the outcomes say, per value, the
// state the plan leads to (INVALID, with the descriptor's error, for a
// value its descriptor refuses: data, not an error of the call).
func (svc *Service) plan(ctx context.Context, u nb.Update, opts []scheduler.TxnOption) (*apiv1.CommitResponse, error) {
	res, err := svc.mux.Plan(ctx, svc.remote.Name(), u, opts...)
	if err := txnError(res, err); err != nil {
		return nil, err
	}
	resp := svc.response(ctx, &apiv1.CommitRequest{PlanOnly: true}, res, nil)
	resp.Outcomes = svc.planOutcomes(res, u)
	return resp, nil
}

// Plan plans values, or a configuration file of the file source.
func (svc *Service) Plan(ctx context.Context, req *connect.Request[apiv1.PlanRequest]) (*connect.Response[apiv1.CommitResponse], error) {
	m := req.Msg
	if f := m.GetFile(); f != nil && len(f.GetData()) > 0 {
		if len(m.GetValues())+len(m.GetDeletes()) > 0 || m.GetResync() {
			return nil, invalid("file", "a file is planned alone (no values, deletes or resync with it)")
		}
		if svc.d.PlanFile == nil {
			return nil, argErr(connect.CodeUnimplemented, "file", "this agent has no file source to plan the file against")
		}
		res, err := svc.d.PlanFile(ctx, "file", f.GetData())
		var pe *nbfile.ParseError
		if errors.As(err, &pe) {
			return nil, invalid("file", "%v", err)
		}
		if err := txnError(res, err); err != nil {
			return nil, err
		}
		resp := &apiv1.CommitResponse{Settled: true}
		if res != nil {
			resp.Planned = opsOf(res.Planned)
			resp.Outcomes = svc.opOutcomes(res.Planned)
		}
		return connect.NewResponse(resp), nil
	}
	creq := &apiv1.CommitRequest{Values: m.GetValues(), Deletes: m.GetDeletes(), PlanOnly: true}
	if m.GetResync() {
		creq.Resync = apiv1.ResyncKind_RESYNC_KIND_SOURCE
	} else if len(m.GetValues())+len(m.GetDeletes()) == 0 {
		return nil, invalid("values, deletes", "nothing to plan (no values, deletes or file)")
	}
	resp, err := svc.commit(ctx, creq)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(resp), nil
}

// opOutcomes are the outcomes of planned operations: the state each key's
// last operation leads to.
func (svc *Service) opOutcomes(ops []scheduler.Op) []*apiv1.Outcome {
	last := map[string]scheduler.Op{}
	for _, op := range ops {
		last[op.Key] = op
	}
	var out []*apiv1.Outcome
	for _, k := range slices.Sorted(maps.Keys(last)) {
		owner, _ := svc.mux.Owner(k)
		out = append(out, &apiv1.Outcome{Key: k, State: last[k].State.String(), Error: errText(last[k].Err), Owner: owner})
	}
	return out
}

// Confirm confirms a commit awaiting confirmation.
func (svc *Service) Confirm(_ context.Context, req *connect.Request[apiv1.ConfirmRequest]) (*connect.Response[apiv1.ConfirmResponse], error) {
	if req.Msg.GetSeq() == 0 {
		return nil, invalid("seq", "required")
	}
	if err := txnError(nil, svc.remote.Confirm(req.Msg.GetSeq())); err != nil {
		return nil, err
	}
	return connect.NewResponse(&apiv1.ConfirmResponse{}), nil
}

// Cancel rolls back a commit awaiting confirmation now.
func (svc *Service) Cancel(ctx context.Context, req *connect.Request[apiv1.CancelRequest]) (*connect.Response[apiv1.CancelResponse], error) {
	if req.Msg.GetSeq() == 0 {
		return nil, invalid("seq", "required")
	}
	res, err := svc.remote.Cancel(ctx, req.Msg.GetSeq())
	if err := txnError(res, err); err != nil {
		return nil, err
	}
	out := &apiv1.CancelResponse{}
	if res != nil {
		out.Seq = res.Seq
	}
	return connect.NewResponse(out), nil
}

// RollbackTo makes the source's state after transaction seq a new
// transaction.
func (svc *Service) RollbackTo(ctx context.Context, req *connect.Request[apiv1.RollbackToRequest]) (*connect.Response[apiv1.RollbackToResponse], error) {
	seq := req.Msg.GetSeq()
	if seq == 0 {
		return nil, invalid("seq", "required")
	}
	if err := bounded(apilimits.Length("description", req.Msg.GetDescription(), apilimits.MaxDescriptionLen)); err != nil {
		return nil, err
	}
	res, keys, err := svc.remote.RollbackTo(ctx, seq, describe(fmt.Sprintf("rollback to the state after transaction %d", seq), req.Msg.GetDescription()))
	if err := txnError(res, err); err != nil {
		return nil, err
	}
	out := svc.response(ctx, &apiv1.CommitRequest{}, res, keys)
	return connect.NewResponse(&apiv1.RollbackToResponse{Result: out}), nil
}

// DownstreamResync runs a downstream resync.
func (svc *Service) DownstreamResync(ctx context.Context, req *connect.Request[apiv1.DownstreamResyncRequest]) (*connect.Response[apiv1.DownstreamResyncResponse], error) {
	m := req.Msg
	if err := bounded(apilimits.Length("description", m.GetDescription(), apilimits.MaxDescriptionLen)); err != nil {
		return nil, err
	}
	opts := []scheduler.TxnOption{scheduler.DownstreamResync(), scheduler.Description(describe("downstream resync", m.GetDescription()))}
	if m.GetRetry() {
		opts = append(opts, scheduler.Retry(scheduler.RetryPolicy{Period: time.Second, MaxAttempts: 3, Backoff: true}))
	}
	res, err := svc.s.Txn(opts...).Commit(ctx)
	if err := txnError(res, err); err != nil {
		return nil, err
	}
	out := &apiv1.DownstreamResyncResponse{}
	if res != nil {
		out.Seq, out.Operations, out.Error = res.Seq, uint64(len(res.Executed)), errText(res.Err)
		if m.GetVerbose() {
			out.Executed = opsOf(res.Executed)
		}
	}
	return connect.NewResponse(out), nil
}

func describe(what, description string) string {
	if description == "" {
		return what
	}
	return what + ": " + description
}

// checkCommit checks the bounds of a commit (runtime/apilimits) before
// anything is decoded.
func checkCommit(req *apiv1.CommitRequest) error {
	errs := []error{
		apilimits.Count("values, deletes", int64(len(req.GetValues())+len(req.GetDeletes())), apilimits.MaxCommitKeys),
		apilimits.Length("description", req.GetDescription(), apilimits.MaxDescriptionLen),
	}
	if r := req.GetRetry(); r != nil {
		errs = append(errs, apilimits.Count("retry.max_attempts", int64(r.GetMaxAttempts()), apilimits.MaxRetryAttempts))
		if d := r.GetPeriod(); d != nil {
			errs = append(errs, apilimits.Duration("retry.period", d.AsDuration(), apilimits.MaxRetryPeriod))
		}
		if d := r.GetMaxPeriod(); d != nil {
			errs = append(errs, apilimits.Duration("retry.max_period", d.AsDuration(), apilimits.MaxRetryPeriod))
		}
	}
	if d := req.GetWaitTimeout(); d != nil {
		errs = append(errs, apilimits.Duration("wait_timeout", d.AsDuration(), apilimits.MaxWaitTimeout))
	}
	if d := req.GetConfirmWithin(); d != nil {
		errs = append(errs, apilimits.Duration("confirm_within", d.AsDuration(), apilimits.MaxConfirmWithin))
	}
	// A key's field is named only when the key is too long: a commit of
	// many keys formats no name for the ones that are not.
	for i, v := range req.GetValues() {
		if len(v.GetKey()) > apilimits.MaxKeyLen {
			errs = append(errs, keyLen(fmt.Sprintf("values[%d].key", i), v.GetKey()))
		}
	}
	for i, k := range req.GetDeletes() {
		if len(k) > apilimits.MaxKeyLen {
			errs = append(errs, keyLen(fmt.Sprintf("deletes[%d]", i), k))
		}
	}
	return bounded(errs...)
}

// changes decodes and checks values and deletes. A key no model handles
// is INVALID_ARGUMENT, for a delete too (it can never have had a value:
// a typo); a delete of a key the source does not set changes nothing.
func (svc *Service) changes(values []*apiv1.Value, deletes []string) ([]nb.Change, error) {
	seen := map[string]string{}
	var out []nb.Change
	for i, v := range values {
		field := fmt.Sprintf("values[%d]", i)
		key := v.GetKey()
		if err := svc.checkKey(field+".key", key, seen); err != nil {
			return nil, err
		}
		mt, _ := svc.models.MessageType(key)
		want := mt.Descriptor().FullName()
		m := mt.New().Interface()
		switch x := v.GetValue().(type) {
		case *apiv1.Value_Any:
			if got := x.Any.MessageName(); got != want {
				return nil, invalid(field+".any", "a %s, but the model of %q is %s", got, key, want)
			}
			if err := proto.Unmarshal(x.Any.GetValue(), m); err != nil {
				return nil, invalid(field+".any", "not a %s: %v", want, err)
			}
		case *apiv1.Value_Json:
			if t := v.GetJsonType(); t != "" && t != string(want) {
				return nil, invalid(field+".json_type", "%s, but the model of %q is %s", t, key, want)
			}
			if err := protojson.Unmarshal([]byte(x.Json), m); err != nil {
				return nil, invalid(field+".json", "not a %s: %v", want, err)
			}
		default:
			return nil, invalid(field, "no value (any or json; a delete goes in deletes)")
		}
		// A secret sent back as the API showed it (REDACTED) keeps the
		// key's current one.
		if _, ok := m.(kv.Redactor); ok {
			m = kv.Unredact(m, svc.s.Status(key).Value)
		}
		out = append(out, nb.Change{Key: key, Value: m})
	}
	for i, key := range deletes {
		if err := svc.checkKey(fmt.Sprintf("deletes[%d]", i), key, seen); err != nil {
			return nil, err
		}
		out = append(out, nb.Change{Key: key})
	}
	return out, nil
}

func (svc *Service) checkKey(field, key string, seen map[string]string) error {
	if key == "" {
		return invalid(field, "empty")
	}
	if _, ok := svc.models.MessageType(key); !ok {
		return invalid(field, "%q is not a key of any model", key)
	}
	if prev, ok := seen[key]; ok {
		return invalid(field, "%q is given twice (also %s)", key, prev)
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
				return nil, invalid("retry.period", "must be a duration of zero or more")
			}
			p.Period = r.GetPeriod().AsDuration()
		}
		if r.GetMaxPeriod() != nil {
			if err := r.GetMaxPeriod().CheckValid(); err != nil || r.GetMaxPeriod().AsDuration() < 0 {
				return nil, invalid("retry.max_period", "must be a duration of zero or more")
			}
			p.MaxPeriod = r.GetMaxPeriod().AsDuration()
		}
		if p.MaxAttempts < 0 {
			return nil, invalid("retry.max_attempts", "must be zero or more")
		}
		opts = append(opts, scheduler.Retry(p))
	}
	if d := req.GetWaitTimeout(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() < 0 {
			return nil, invalid("wait_timeout", "must be a duration of zero or more")
		}
	}
	if req.GetPlanOnly() && req.GetConfirmWithin() != nil {
		return nil, invalid("confirm_within", "a plan only applies nothing to confirm")
	}
	return opts, nil
}

// response makes the response of a transaction (res nil: nothing to do),
// waiting for keys to settle when asked.
func (svc *Service) response(ctx context.Context, req *apiv1.CommitRequest, res *scheduler.Result, keys []string) *apiv1.CommitResponse {
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
		return out
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
		out.Settled = svc.wait(ctx, all, d)
	} else {
		out.Settled = svc.settled(all)
	}
	for _, k := range all {
		st := svc.s.Status(k)
		o := &apiv1.Outcome{Key: k, State: st.State.String(), Error: errText(st.LastErr), WhyPending: svc.whyPending(k, st.State)}
		o.Owner, _ = svc.mux.Owner(k)
		out.Outcomes = append(out.Outcomes, o)
	}
	return out
}

func (svc *Service) settled(keys []string) bool {
	for _, k := range keys {
		if !svc.s.Status(k).State.Settled() {
			return false
		}
	}
	return true
}

// wait waits until keys have settled, at most d; it reports whether they
// did. The scheduler's watchers tell when to look again.
func (svc *Service) wait(ctx context.Context, keys []string, d time.Duration) bool {
	if svc.settled(keys) {
		return true
	}
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	w := svc.s.Watch(func(k string) bool { return want[k] }, 64)
	defer w.Close()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !svc.settled(keys) {
		select {
		case <-ctx.Done():
			return svc.settled(keys)
		case <-w.C:
		case <-tick.C:
		}
	}
	return true
}

// planOutcomes returns the outcomes of a plan (res nil: the plan has
// nothing to do): for each key the update names and each key the plan
// touches, the state the plan leads to, the source that would own the
// key, and a warning where the API's source sets a key whose value another
// source's would override.
func (svc *Service) planOutcomes(res *scheduler.Result, u nb.Update) []*apiv1.Outcome {
	after := svc.remote.After(u)
	// The last planned operation of each key says where the plan leaves
	// it (a re-creation is a delete, then a create).
	planned := map[string]scheduler.Op{}
	if res != nil {
		for _, op := range res.Planned {
			planned[op.Key] = op
		}
	}
	keys := map[string]struct{}{}
	for _, c := range u.Changes {
		keys[c.Key] = struct{}{}
	}
	for k := range planned {
		keys[k] = struct{}{}
	}
	var out []*apiv1.Outcome
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		o := &apiv1.Outcome{Key: k}
		op, ok := planned[k]
		if ok {
			o.State = op.State.String()
			o.Error = errText(op.Err)
		} else {
			st := svc.s.Status(k)
			o.State = st.State.String()
			o.Error = errText(st.LastErr)
			o.WhyPending = svc.whyPending(k, st.State)
		}
		o.Owner, o.Warning = svc.ownerAfter(k, after[k], ok)
		out = append(out, o)
	}
	return out
}

// ownerAfter returns the source that would own key once the API's source
// intends v (nil: nothing) for it, and a warning when v would not take
// effect; planned says whether the plan changes the key.
func (svc *Service) ownerAfter(key string, v proto.Message, planned bool) (owner, warning string) {
	src := svc.remote.Name()
	owner, overridden := svc.mux.Owner(key)
	if v == nil {
		// The source leaves the key to the others, the highest priority
		// first.
		if owner != src {
			return owner, ""
		}
		if len(overridden) > 0 {
			return overridden[0], ""
		}
		return "", ""
	}
	loses := func() (string, string) {
		return owner, fmt.Sprintf("source %s sets this key too, with a higher priority: the %s source's value would not take effect", owner, src)
	}
	switch {
	case owner == "" || owner == src:
		return src, ""
	case slices.Contains(overridden, src):
		return loses()
	case planned:
		// A key new to the source that another source sets: the plan
		// changes it only when this source's value wins.
		return src, ""
	case proto.Equal(v, svc.s.Status(key).Value):
		// The same value as the other source's: no warning.
		return owner, ""
	}
	return loses()
}
