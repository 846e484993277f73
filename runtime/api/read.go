package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
	"github.com/kvdescriptor/kvdescriptor/runtime/graphviz"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// DefaultWatchBuffer is the bound of the updates a Watch holds for a slow
// client, by default.
const DefaultWatchBuffer = 256

// anyOf is a value as the API shows it: every value the API serves passes
// here, with its sensitive fields redacted (kv.Redact).
func anyOf(m proto.Message) *anypb.Any {
	m = kv.Redact(m)
	if m == nil || !m.ProtoReflect().IsValid() {
		return nil
	}
	a, err := anypb.New(m)
	if err != nil {
		return nil
	}
	return a
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func flagsOf(f scheduler.Flags) []string {
	if f == 0 {
		return nil
	}
	return strings.Split(f.String(), " ")
}

func opsOf(ops []scheduler.Op) []*apiv1.Op {
	out := make([]*apiv1.Op, len(ops))
	for i, op := range ops {
		out[i] = &apiv1.Op{
			Key: op.Key, Kind: op.Kind.String(), State: op.State.String(), Flags: flagsOf(op.Flags),
			Value: anyOf(op.Value), PrevValue: anyOf(op.PrevValue), Error: errText(op.Err), Called: op.Called,
		}
	}
	return out
}

// whyPending explains a PENDING value, one line an entry (nil for a value
// in another state).
func (svc *Service) whyPending(key string, st scheduler.State) []string {
	if st != scheduler.PENDING {
		return nil
	}
	why, ok := svc.s.WhyPending(key)
	if !ok {
		return nil
	}
	return strings.Split(strings.TrimRight(why.String(), "\n"), "\n")
}

func (svc *Service) statusOf(st scheduler.Status) *apiv1.ValueStatus {
	out := &apiv1.ValueStatus{
		Key: st.Key, Descriptor_: st.Descriptor, State: st.State.String(), Origin: st.Origin.String(),
		Value: anyOf(st.Value), Applied: anyOf(st.Applied), Intended: st.Intended, LastOp: st.LastOp.String(),
		Error: errText(st.LastErr), Seq: st.Seq, Base: st.Base, Derived: st.Derived,
		WhyPending: svc.whyPending(st.Key, st.State),
	}
	out.Owner, out.Overridden = svc.mux.Owner(st.Key)
	out.Drift = driftOf(st.Drift)
	return out
}

// driftOf is the API's form of a value's drift (nil: none).
func driftOf(d *scheduler.DriftError) *apiv1.Drift {
	if d == nil {
		return nil
	}
	out := &apiv1.Drift{Missing: d.Missing, Policy: d.Policy.String(), Repairs: int32(d.Repairs), Noticed: timestamppb.New(d.Noticed)}
	if !d.BackoffUntil.IsZero() {
		out.BackoffUntil = timestamppb.New(d.BackoffUntil)
	}
	for _, f := range d.Diff {
		out.Diff = append(out.Diff, &apiv1.FieldDiff{Path: f.Path, Want: f.Want, Found: f.Found})
	}
	return out
}

// Status returns the statuses selected by key, prefix, descriptor or
// owner. A key without a value is NOT_FOUND.
func (svc *Service) Status(_ context.Context, req *connect.Request[apiv1.StatusRequest]) (*connect.Response[apiv1.StatusResponse], error) {
	m := req.Msg
	if err := bounded(keyLen("key", m.GetKey()), keyLen("prefix", m.GetPrefix()), keyLen("descriptor", m.GetDescriptor_()), keyLen("owner", m.GetOwner())); err != nil {
		return nil, err
	}
	n := 0
	for _, s := range []string{m.GetKey(), m.GetPrefix(), m.GetDescriptor_(), m.GetOwner()} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		return nil, invalid("key, prefix, descriptor, owner", "give one at most")
	}
	var sts []scheduler.Status
	switch {
	case m.GetKey() != "":
		st := svc.s.Status(m.GetKey())
		if st.State == scheduler.NONEXISTENT {
			return nil, svc.unknownKey(m.GetKey())
		}
		sts = []scheduler.Status{st}
	case m.GetDescriptor_() != "":
		if _, ok := svc.s.Descriptor(m.GetDescriptor_()); !ok {
			return nil, notFound("descriptor", "%q is not registered (Models lists them)", m.GetDescriptor_())
		}
		sts = svc.s.DescriptorStatuses(m.GetDescriptor_())
	default:
		sts = svc.s.Statuses(m.GetPrefix())
	}
	out := &apiv1.StatusResponse{}
	for _, st := range sts {
		vs := svc.statusOf(st)
		if o := m.GetOwner(); o != "" && vs.Owner != o {
			continue
		}
		out.Statuses = append(out.Statuses, vs)
	}
	return connect.NewResponse(out), nil
}

// unknownKey is the NOT_FOUND of a key without a value (or, for a
// timeline, without a change either).
func (svc *Service) unknownKey(key string) error {
	if _, ok := svc.s.DescriptorForKey(key); !ok {
		return notFound("key", "%q has no value, and no descriptor handles it", key)
	}
	return notFound("key", "%q has no value", key)
}

// Dump returns the values of one view, those under a prefix when asked.
func (svc *Service) Dump(ctx context.Context, req *connect.Request[apiv1.DumpRequest]) (*connect.Response[apiv1.DumpResponse], error) {
	m := req.Msg
	if err := bounded(keyLen("descriptor", m.GetDescriptor_()), keyLen("prefix", m.GetPrefix())); err != nil {
		return nil, err
	}
	view := m.GetView()
	switch view {
	case apiv1.View_VIEW_UNSPECIFIED:
		view = apiv1.View_VIEW_SCHEDULER
	case apiv1.View_VIEW_INTENDED, apiv1.View_VIEW_SCHEDULER, apiv1.View_VIEW_SOUTHBOUND:
	default:
		return nil, invalid("view", "%s: give VIEW_INTENDED, VIEW_SOUTHBOUND or VIEW_SCHEDULER", view)
	}
	prefix := m.GetPrefix()
	var names []string
	if d := m.GetDescriptor_(); d != "" {
		desc, ok := svc.s.Descriptor(d)
		if !ok {
			return nil, notFound("descriptor", "%q is not registered (Models lists them)", d)
		}
		if !prefixMeets(prefix, desc.KeyPrefix()) {
			return nil, invalid("prefix", "no key of descriptor %s (keys %s...) starts with %q", d, desc.KeyPrefix(), prefix)
		}
		names = []string{d}
	} else {
		// Only the descriptors whose keys can start with the prefix: the
		// southbound view then reads no more than it must.
		for _, name := range svc.s.Descriptors() {
			if desc, _ := svc.s.Descriptor(name); prefixMeets(prefix, desc.KeyPrefix()) {
				names = append(names, name)
			}
		}
	}
	out := &apiv1.DumpResponse{}
	add := func(it *apiv1.DumpItem) {
		if strings.HasPrefix(it.GetKey(), prefix) {
			out.Items = append(out.Items, it)
		}
	}
	switch view {
	case apiv1.View_VIEW_INTENDED, apiv1.View_VIEW_SCHEDULER:
		intended := view == apiv1.View_VIEW_INTENDED
		for _, name := range names {
			for _, st := range svc.s.DescriptorStatuses(name) {
				v := st.Applied
				if intended {
					v = nil
					if st.Intended {
						v = st.Value
					}
				}
				if v == nil {
					continue
				}
				add(&apiv1.DumpItem{Key: st.Key, Descriptor_: name, Value: anyOf(v), Origin: st.Origin.String()})
			}
		}
	case apiv1.View_VIEW_SOUTHBOUND:
		for _, name := range names {
			d, _ := svc.s.Descriptor(name)
			if !d.CanRetrieve() {
				continue
			}
			items, err := svc.s.Southbound(ctx, name)
			if err != nil {
				return nil, connect.NewError(connect.CodeUnavailable, fmt.Errorf("descriptor %s: reading the southbound: %w", name, err))
			}
			for _, it := range items {
				add(&apiv1.DumpItem{Key: it.Key, Descriptor_: name, Value: anyOf(it.Value), Origin: it.Origin.String()})
			}
		}
		slices.SortFunc(out.Items, func(a, b *apiv1.DumpItem) int { return strings.Compare(a.GetKey(), b.GetKey()) })
	}
	return connect.NewResponse(out), nil
}

// prefixMeets reports whether a key that starts with keyPrefix (a
// descriptor's) can start with prefix: one of the two starts with the
// other.
func prefixMeets(prefix, keyPrefix string) bool {
	return strings.HasPrefix(prefix, keyPrefix) || strings.HasPrefix(keyPrefix, prefix)
}

func recordOf(r scheduler.Record) *apiv1.Record {
	out := &apiv1.Record{
		Seq: r.Seq, Kind: r.Kind.String(), Description: r.Description, Planned: opsOf(r.Planned), Executed: opsOf(r.Executed),
		Reverted: r.Reverted, Start: timestamppb.New(r.Start), End: timestamppb.New(r.End),
	}
	for _, e := range r.Errors {
		out.Errors = append(out.Errors, e.Error())
	}
	out.Batches, out.BatchedOps = uint32(r.Batches), uint32(r.BatchedOps)
	for _, kv := range r.Values {
		v := &apiv1.Value{Key: kv.Key}
		if a := anyOf(kv.Value); a != nil {
			v.Value = &apiv1.Value_Any{Any: a}
		}
		out.Values = append(out.Values, v)
	}
	return out
}

// timeOf checks an optional time argument.
func timeOf(field string, t *timestamppb.Timestamp) (time.Time, bool, error) {
	if t == nil {
		return time.Time{}, false, nil
	}
	if err := t.CheckValid(); err != nil {
		return time.Time{}, false, invalid(field, "%v", err)
	}
	return t.AsTime(), true, nil
}

// History returns the transaction records: one by seq, or those begun in
// [since, until].
func (svc *Service) History(_ context.Context, req *connect.Request[apiv1.HistoryRequest]) (*connect.Response[apiv1.HistoryResponse], error) {
	m := req.Msg
	since, hasSince, err := timeOf("since", m.GetSince())
	if err != nil {
		return nil, err
	}
	until, hasUntil, err := timeOf("until", m.GetUntil())
	if err != nil {
		return nil, err
	}
	out := &apiv1.HistoryResponse{}
	if seq := m.GetSeq(); seq > 0 {
		if hasSince || hasUntil {
			return nil, invalid("seq", "give seq or a time window (since, until), not both")
		}
		r, ok := svc.s.Record(seq)
		if !ok {
			return nil, notFound("seq", "transaction %d is not in the history", seq)
		}
		out.Records = []*apiv1.Record{recordOf(r)}
		return connect.NewResponse(out), nil
	}
	if hasSince && hasUntil && until.Before(since) {
		return nil, invalid("until", "%s is before since (%s)", until.Format(time.RFC3339), since.Format(time.RFC3339))
	}
	for _, r := range svc.s.History() {
		if (hasSince && r.Start.Before(since)) || (hasUntil && r.Start.After(until)) {
			continue
		}
		out.Records = append(out.Records, recordOf(r))
	}
	return connect.NewResponse(out), nil
}

// Timeline returns the changes of one key (up to a time). A key without a
// value or a change is NOT_FOUND.
func (svc *Service) Timeline(_ context.Context, req *connect.Request[apiv1.TimelineRequest]) (*connect.Response[apiv1.TimelineResponse], error) {
	key := req.Msg.GetKey()
	if key == "" {
		return nil, invalid("key", "required")
	}
	if err := bounded(keyLen("key", key)); err != nil {
		return nil, err
	}
	at, hasAt, err := timeOf("time", req.Msg.GetTime())
	if err != nil {
		return nil, err
	}
	entries := svc.s.Timeline(key)
	if len(entries) == 0 && svc.s.Status(key).State == scheduler.NONEXISTENT {
		return nil, svc.unknownKey(key)
	}
	out := &apiv1.TimelineResponse{}
	for _, e := range entries {
		if hasAt && e.Time.After(at) {
			break
		}
		te := &apiv1.TimelineEntry{
			Seq: e.Seq, Time: timestamppb.New(e.Time), Op: e.Op.String(), State: e.State.String(),
			Flags: flagsOf(e.Flags), Value: anyOf(e.Value), Error: errText(e.Err),
		}
		for _, d := range e.Dependencies {
			dep := &apiv1.Dependency{Label: d.Label, Key: d.Key}
			if d.IsAnyOf() {
				dep.AnyOf, dep.Match = d.AnyOf.Prefixes, d.AnyOf.Describe
			}
			te.Dependencies = append(te.Dependencies, dep)
		}
		out.Entries = append(out.Entries, te)
	}
	return connect.NewResponse(out), nil
}

// Models lists the registered models; with include_schema, the .proto
// files of their messages too.
func (svc *Service) Models(_ context.Context, req *connect.Request[apiv1.ModelsRequest]) (*connect.Response[apiv1.ModelsResponse], error) {
	out := &apiv1.ModelsResponse{}
	var messages []protoreflect.MessageDescriptor
	for _, name := range svc.s.Descriptors() {
		d, _ := svc.s.Descriptor(name)
		md := d.ValueType().Descriptor()
		messages = append(messages, md)
		m := &apiv1.Model{Descriptor_: name, Message: string(md.FullName()), KeyPrefix: d.KeyPrefix()}
		if t := d.KeyTemplate(); t != nil {
			m.KeyTemplate = t.String()
		}
		fields := md.Fields()
		for i := range fields.Len() {
			f := fields.Get(i)
			m.Fields = append(m.Fields, &apiv1.Field{Name: string(f.Name()), Type: fieldType(f), Repeated: f.IsList()})
		}
		out.Models = append(out.Models, m)
	}
	if req.Msg.GetIncludeSchema() {
		out.Schema = schemaOf(messages)
	}
	return connect.NewResponse(out), nil
}

func fieldType(f protoreflect.FieldDescriptor) string {
	switch {
	case f.IsMap():
		return "map<" + fieldType(f.MapKey()) + ", " + fieldType(f.MapValue()) + ">"
	case f.Message() != nil:
		return string(f.Message().FullName())
	case f.Enum() != nil:
		return string(f.Enum().FullName())
	}
	return f.Kind().String()
}

// schemaOf returns the .proto files that define the messages, with every
// file they import: each once, after the files it imports.
func schemaOf(messages []protoreflect.MessageDescriptor) *descriptorpb.FileDescriptorSet {
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		imports := fd.Imports()
		for i := range imports.Len() {
			add(imports.Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	for _, md := range messages {
		add(md.ParentFile())
	}
	return set
}

// snapshot returns the graph as of seq, or as of the last transaction
// begun by time.
func (svc *Service) snapshot(seq uint64, t *timestamppb.Timestamp) (*scheduler.GraphSnapshot, error) {
	at, hasAt, err := timeOf("time", t)
	if err != nil {
		return nil, err
	}
	if hasAt {
		if seq != 0 {
			return nil, invalid("time", "give seq or time, not both")
		}
		for _, rec := range svc.s.History() {
			if !rec.Start.After(at) {
				seq = rec.Seq
			}
		}
		if seq == 0 {
			return nil, notFound("time", "no transaction in the history began by %s", at.Format(time.RFC3339))
		}
	}
	snap, err := svc.s.GraphSnapshot(seq)
	if err != nil {
		return nil, notFound("seq", "%v", err)
	}
	return snap, nil
}

// Graph renders the graph.
func (svc *Service) Graph(ctx context.Context, req *connect.Request[apiv1.GraphRequest]) (*connect.Response[httpbody.HttpBody], error) {
	m := req.Msg
	switch m.GetFormat() {
	case apiv1.GraphFormat_GRAPH_FORMAT_UNSPECIFIED, apiv1.GraphFormat_GRAPH_FORMAT_DOT, apiv1.GraphFormat_GRAPH_FORMAT_SVG, apiv1.GraphFormat_GRAPH_FORMAT_JSON:
	default:
		return nil, invalid("format", "%s is not a format (DOT, SVG, JSON)", m.GetFormat())
	}
	if err := svc.checkGraphFilter(m.GetFilter()); err != nil {
		return nil, err
	}
	snap, err := svc.snapshot(m.GetSeq(), m.GetTime())
	if err != nil {
		return nil, err
	}
	if snap, err = filterGraph(snap, m.GetFilter()); err != nil {
		return nil, err
	}
	opts := graphviz.DefaultOptions()
	opts.Highlight = snap.Seq != 0 && (m.GetSeq() != 0 || m.GetTime() != nil)
	var data []byte
	ctype := "text/vnd.graphviz; charset=utf-8"
	switch m.GetFormat() {
	case apiv1.GraphFormat_GRAPH_FORMAT_SVG:
		ctype = "image/svg+xml"
		data, err = graphviz.SVG(ctx, snap, opts)
		if errors.Is(err, graphviz.ErrNoGraphviz) {
			return nil, argErr(connect.CodeUnimplemented, "format", "SVG needs graphviz on the agent (DOT does not): %v", err)
		}
	case apiv1.GraphFormat_GRAPH_FORMAT_JSON:
		ctype = "application/json"
		data, err = protojson.Marshal(snapshotOf(snap))
	default:
		data, err = graphviz.DOT(snap, opts)
	}
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("rendering the graph: %w", err))
	}
	return connect.NewResponse(&httpbody.HttpBody{ContentType: ctype, Data: data}), nil
}

// GraphSnapshot returns the graph as data.
func (svc *Service) GraphSnapshot(_ context.Context, req *connect.Request[apiv1.GraphSnapshotRequest]) (*connect.Response[apiv1.GraphSnapshotResponse], error) {
	if err := svc.checkGraphFilter(req.Msg.GetFilter()); err != nil {
		return nil, err
	}
	snap, err := svc.snapshot(req.Msg.GetSeq(), req.Msg.GetTime())
	if err != nil {
		return nil, err
	}
	if snap, err = filterGraph(snap, req.Msg.GetFilter()); err != nil {
		return nil, err
	}
	return connect.NewResponse(snapshotOf(snap)), nil
}

func snapshotOf(snap *scheduler.GraphSnapshot) *apiv1.GraphSnapshotResponse {
	out := &apiv1.GraphSnapshotResponse{Seq: snap.Seq, Time: timestamppb.New(snap.Time), Touched: snap.Touched}
	for _, n := range snap.Nodes {
		out.Nodes = append(out.Nodes, &apiv1.GraphNode{Key: n.Key, Label: n.Label, Descriptor_: n.Descriptor, State: n.State.String(),
			Origin: n.Origin.String(), Value: anyOf(n.Value), Derived: n.Derived, Error: errText(n.Err), Placeholder: n.Placeholder})
	}
	for _, e := range snap.Edges {
		out.Edges = append(out.Edges, &apiv1.GraphEdge{From: e.From, To: e.To, Label: e.Label, Kind: fmt.Sprint(e.Kind), Met: e.Met})
	}
	return out
}

// Stats counts the values by state (now) and the operations of the
// history by flag, for keys under a prefix.
func (svc *Service) Stats(_ context.Context, req *connect.Request[apiv1.StatsRequest]) (*connect.Response[apiv1.StatsResponse], error) {
	prefix, flag := req.Msg.GetPrefix(), req.Msg.GetFlag()
	if err := bounded(keyLen("prefix", prefix), keyLen("flag", flag)); err != nil {
		return nil, err
	}
	if flag != "" && !slices.Contains(scheduler.FlagNames(), flag) {
		return nil, invalid("flag", "%q is not a flag (%s)", flag, strings.Join(scheduler.FlagNames(), ", "))
	}
	out := &apiv1.StatsResponse{States: map[string]uint64{}, Flags: map[string]uint64{}}
	for _, st := range svc.s.Statuses(prefix) {
		out.States[st.State.String()]++
	}
	if flag != "" {
		out.Flags[flag] = 0
	}
	for _, rec := range svc.s.History() {
		for _, op := range rec.Executed {
			if !strings.HasPrefix(op.Key, prefix) {
				continue
			}
			for _, name := range strings.Fields(op.Flags.String()) {
				if flag == "" || name == flag {
					out.Flags[name]++
				}
			}
		}
	}
	return connect.NewResponse(out), nil
}

func (svc *Service) readiness() *apiv1.ReadinessResponse {
	out := &apiv1.ReadinessResponse{Ready: svc.mux.Ready()}
	for _, src := range svc.mux.Sources() {
		s := &apiv1.SourceState{Name: src.Name, Loaded: src.Loaded, Keys: uint64(src.Keys), Problem: errText(src.Problem)}
		if !src.LastUpdate.IsZero() {
			s.LastUpdate = timestamppb.New(src.LastUpdate)
		}
		out.Sources = append(out.Sources, s)
	}
	return out
}

// Readiness tells whether the agent is ready, with its sources' states.
func (svc *Service) Readiness(context.Context, *connect.Request[apiv1.ReadinessRequest]) (*connect.Response[apiv1.ReadinessResponse], error) {
	return connect.NewResponse(svc.readiness()), nil
}

// readyz is the probe: Readiness in JSON, 503 until ready.
func (svc *Service) readyz(w http.ResponseWriter, _ *http.Request) {
	r := svc.readiness()
	b, err := protojson.Marshal(r)
	if err != nil {
		writeRESTError(w, http.StatusInternalServerError, connect.CodeInternal, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if !r.GetReady() {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = w.Write(b)
}

// SetLogLevel sets (or reads) the agent's log level.
func (svc *Service) SetLogLevel(_ context.Context, req *connect.Request[apiv1.SetLogLevelRequest]) (*connect.Response[apiv1.SetLogLevelResponse], error) {
	lv := svc.d.LogLevel
	if lv == nil {
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("this agent's log level is not set at run time"))
	}
	prev := lv.Level()
	out := &apiv1.SetLogLevelResponse{Previous: levelName(prev), Level: levelName(prev)}
	if s := req.Msg.GetLevel(); s != "" {
		if err := bounded(keyLen("level", s)); err != nil {
			return nil, err
		}
		var l slog.Level
		if err := l.UnmarshalText([]byte(s)); err != nil {
			return nil, invalid("level", "%q is not a level (debug, info, warn, error)", s)
		}
		lv.Set(l)
		out.Level = levelName(l)
		svc.logger.Info("api: log level set", "level", out.Level, "previous", out.Previous)
	}
	return connect.NewResponse(out), nil
}

func levelName(l slog.Level) string { return strings.ToLower(l.String()) }

// Watch streams the status changes of the keys under the prefix. Its
// headers are sent once the watch is registered. The scheduler's watcher
// drops what its bounded buffer cannot hold (the scheduler never waits for
// a client); the stream then says how many updates were lost.
func (svc *Service) Watch(ctx context.Context, req *connect.Request[apiv1.WatchRequest], stream *connect.ServerStream[apiv1.WatchResponse]) error {
	return svc.watch(ctx, req.Msg, stream.Send)
}

// WatchFunc is Watch for a caller in the same program (the operator
// page's live updates): it checks the request's token as every call does
// (Authorize), validates the request as Watch does, and calls send with
// each message until ctx ends, the service closes or send fails (that
// error is returned). The first message, once the watch is registered, is
// empty (no event): a change made after it is sent. send is called on
// WatchFunc's goroutine; it must not block for long (the watch's buffer
// fills and updates are lost, then counted in lost_updates).
func (svc *Service) WatchFunc(ctx context.Context, req *connect.Request[apiv1.WatchRequest], send func(*apiv1.WatchResponse) error) error {
	if err := svc.Authorize(req.Header()); err != nil {
		return err
	}
	return svc.watch(ctx, req.Msg, func(m *apiv1.WatchResponse) error {
		if m == nil {
			m = &apiv1.WatchResponse{}
		}
		return send(m)
	})
}

// watch streams the status changes of the keys under the request's
// prefix to send; its first message is nil (the watch is registered).
func (svc *Service) watch(ctx context.Context, msg *apiv1.WatchRequest, send func(*apiv1.WatchResponse) error) error {
	buf := int(msg.GetBuffer())
	if buf < 0 {
		return invalid("buffer", "must be zero or more")
	}
	if err := bounded(apilimits.Count("buffer", int64(buf), apilimits.MaxWatchBuffer), keyLen("prefix", msg.GetPrefix())); err != nil {
		return err
	}
	if buf == 0 {
		buf = DefaultWatchBuffer
	}
	w := svc.s.Watch(scheduler.KeyPrefix(msg.GetPrefix()), buf)
	defer w.Close()
	// The headers say the watch is registered: a client that waits for
	// them sees every change made after.
	if err := send(nil); err != nil {
		return err
	}
	var lost uint64
	checkLost := func() error {
		if d := w.Dropped(); d > lost {
			n := d - lost
			lost = d
			return send(&apiv1.WatchResponse{Event: &apiv1.WatchResponse_LostUpdates{LostUpdates: n}})
		}
		return nil
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-svc.done:
			return connect.NewError(connect.CodeUnavailable, errors.New("the server is closing"))
		case <-tick.C:
			if err := checkLost(); err != nil {
				return err
			}
		case st, ok := <-w.C:
			if !ok {
				return connect.NewError(connect.CodeUnavailable, errors.New("the scheduler is closed"))
			}
			if err := send(&apiv1.WatchResponse{Event: &apiv1.WatchResponse_Status{Status: svc.statusOf(st)}}); err != nil {
				return err
			}
			if err := checkLost(); err != nil {
				return err
			}
		}
	}
}
