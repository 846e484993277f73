package grpcapi

import (
	"context"
	"errors"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
	"github.com/kvdescriptor/kvdescriptor/runtime/graphviz"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// DefaultWatchBuffer is the bound of the updates a Watch holds for a slow
// client, by default.
const DefaultWatchBuffer = 256

func anyOf(m proto.Message) *anypb.Any {
	if m == nil || !m.ProtoReflect().IsValid() {
		return nil
	}
	a, err := anypb.New(m)
	if err != nil {
		return nil
	}
	return a
}

// whyLines is the explanation of a PENDING value, one line an entry.
func whyLines(why *scheduler.PendingReason) []string {
	return strings.Split(strings.TrimRight(why.String(), "\n"), "\n")
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

func (srv *Server) statusOf(st scheduler.Status) *apiv1.ValueStatus {
	out := &apiv1.ValueStatus{
		Key: st.Key, Descriptor_: st.Descriptor, State: st.State.String(), Origin: st.Origin.String(),
		Value: anyOf(st.Value), Applied: anyOf(st.Applied), Intended: st.Intended, LastOp: st.LastOp.String(),
		Error: errText(st.LastErr), Seq: st.Seq, Base: st.Base, Derived: st.Derived,
	}
	if st.State == scheduler.PENDING {
		if why, ok := srv.s.WhyPending(st.Key); ok {
			out.WhyPending = whyLines(why)
		}
	}
	out.Owner, out.Overridden = srv.mux.Owner(st.Key)
	return out
}

// Status returns the statuses selected by key, prefix, descriptor or owner.
func (srv *Server) Status(_ context.Context, req *apiv1.StatusRequest) (*apiv1.StatusResponse, error) {
	if err := bounded(keyLen("key", req.GetKey()), keyLen("prefix", req.GetPrefix()), keyLen("descriptor", req.GetDescriptor_()), keyLen("owner", req.GetOwner())); err != nil {
		return nil, err
	}
	n := 0
	for _, s := range []string{req.GetKey(), req.GetPrefix(), req.GetDescriptor_(), req.GetOwner()} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		return nil, status.Error(codes.InvalidArgument, "key, prefix, descriptor, owner: give one at most")
	}
	var sts []scheduler.Status
	switch {
	case req.GetKey() != "":
		st := srv.s.Status(req.GetKey())
		if st.State == scheduler.NONEXISTENT {
			return nil, status.Errorf(codes.NotFound, "key: %q is not known", req.GetKey())
		}
		sts = []scheduler.Status{st}
	case req.GetDescriptor_() != "":
		if _, ok := srv.s.Descriptor(req.GetDescriptor_()); !ok {
			return nil, status.Errorf(codes.NotFound, "descriptor: %q is not registered", req.GetDescriptor_())
		}
		sts = srv.s.DescriptorStatuses(req.GetDescriptor_())
	default:
		sts = srv.s.Statuses(req.GetPrefix())
	}
	out := &apiv1.StatusResponse{}
	for _, st := range sts {
		vs := srv.statusOf(st)
		if o := req.GetOwner(); o != "" && vs.Owner != o {
			continue
		}
		out.Statuses = append(out.Statuses, vs)
	}
	return out, nil
}

// Dump returns the values of one view, those under a prefix when asked.
func (srv *Server) Dump(ctx context.Context, req *apiv1.DumpRequest) (*apiv1.DumpResponse, error) {
	if err := bounded(keyLen("descriptor", req.GetDescriptor_()), keyLen("prefix", req.GetPrefix())); err != nil {
		return nil, err
	}
	switch req.GetView() {
	case apiv1.View_VIEW_INTENDED, apiv1.View_VIEW_SCHEDULER, apiv1.View_VIEW_SOUTHBOUND:
	default:
		return nil, status.Errorf(codes.InvalidArgument, "view: %s: give VIEW_INTENDED, VIEW_SOUTHBOUND or VIEW_SCHEDULER", req.GetView())
	}
	prefix := req.GetPrefix()
	var names []string
	if d := req.GetDescriptor_(); d != "" {
		desc, ok := srv.s.Descriptor(d)
		if !ok {
			return nil, status.Errorf(codes.NotFound, "descriptor: %q is not registered", d)
		}
		if !prefixMeets(prefix, desc.KeyPrefix()) {
			return nil, status.Errorf(codes.InvalidArgument, "prefix: no key of descriptor %s (keys %s...) starts with %q", d, desc.KeyPrefix(), prefix)
		}
		names = []string{d}
	} else {
		// Only the descriptors whose keys can start with the prefix: the
		// southbound view then reads no more than it must.
		for _, name := range srv.s.Descriptors() {
			if desc, _ := srv.s.Descriptor(name); prefixMeets(prefix, desc.KeyPrefix()) {
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
	switch req.GetView() {
	case apiv1.View_VIEW_INTENDED, apiv1.View_VIEW_SCHEDULER:
		intended := req.GetView() == apiv1.View_VIEW_INTENDED
		for _, name := range names {
			for _, st := range srv.s.DescriptorStatuses(name) {
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
			d, _ := srv.s.Descriptor(name)
			if !d.CanRetrieve() {
				continue
			}
			items, err := srv.s.Southbound(ctx, name)
			if err != nil {
				return nil, status.Errorf(codes.Unavailable, "descriptor %s: reading the southbound: %v", name, err)
			}
			for _, it := range items {
				add(&apiv1.DumpItem{Key: it.Key, Descriptor_: name, Value: anyOf(it.Value), Origin: it.Origin.String()})
			}
		}
	}
	return out, nil
}

// prefixMeets reports whether a key that starts with keyPrefix (a
// descriptor's) can start with prefix: one of the two starts with the
// other. A descriptor without a key prefix may have any key.
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
	return out
}

// History returns the transaction records.
func (srv *Server) History(_ context.Context, req *apiv1.HistoryRequest) (*apiv1.HistoryResponse, error) {
	out := &apiv1.HistoryResponse{}
	if seq := req.GetSeq(); seq > 0 {
		r, ok := srv.s.Record(seq)
		if !ok {
			return nil, status.Errorf(codes.NotFound, "seq: transaction %d is not in the history", seq)
		}
		out.Records = []*apiv1.Record{recordOf(r)}
		return out, nil
	}
	var since time.Time
	if t := req.GetSince(); t != nil {
		if err := t.CheckValid(); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "since: %v", err)
		}
		since = t.AsTime()
	}
	for _, r := range srv.s.History() {
		if r.End.Before(since) {
			continue
		}
		out.Records = append(out.Records, recordOf(r))
	}
	return out, nil
}

// Timeline returns the changes of one key.
func (srv *Server) Timeline(_ context.Context, req *apiv1.TimelineRequest) (*apiv1.TimelineResponse, error) {
	if req.GetKey() == "" {
		return nil, status.Error(codes.InvalidArgument, "key: empty")
	}
	if err := bounded(keyLen("key", req.GetKey())); err != nil {
		return nil, err
	}
	out := &apiv1.TimelineResponse{}
	entries := srv.s.Timeline(req.GetKey())
	if len(entries) == 0 && srv.s.Status(req.GetKey()).State == scheduler.NONEXISTENT {
		if _, ok := srv.s.DescriptorForKey(req.GetKey()); !ok {
			return nil, status.Errorf(codes.NotFound, "key: %q has no value, and no descriptor handles it", req.GetKey())
		}
	}
	for _, e := range entries {
		out.Entries = append(out.Entries, &apiv1.TimelineEntry{
			Seq: e.Seq, Time: timestamppb.New(e.Time), Op: e.Op.String(), State: e.State.String(),
			Flags: flagsOf(e.Flags), Value: anyOf(e.Value), Error: errText(e.Err),
		})
	}
	return out, nil
}

// Models lists the registered models; with include_schema, the .proto
// files of their messages too.
func (srv *Server) Models(_ context.Context, req *apiv1.ModelsRequest) (*apiv1.ModelsResponse, error) {
	out := &apiv1.ModelsResponse{}
	var messages []protoreflect.MessageDescriptor
	for _, name := range srv.s.Descriptors() {
		d, _ := srv.s.Descriptor(name)
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
	if req.GetIncludeSchema() {
		out.Schema = schemaOf(messages)
	}
	return out, nil
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

// Graph renders the graph.
func (srv *Server) Graph(ctx context.Context, req *apiv1.GraphRequest) (*httpbody.HttpBody, error) {
	snap, err := srv.s.GraphSnapshot(req.GetSeq())
	if err != nil {
		return nil, status.Errorf(codes.NotFound, "seq: %v", err)
	}
	opts := graphviz.DefaultOptions()
	var data []byte
	ctype := "text/vnd.graphviz; charset=utf-8"
	switch req.GetFormat() {
	case apiv1.GraphFormat_GRAPH_FORMAT_UNSPECIFIED, apiv1.GraphFormat_GRAPH_FORMAT_DOT:
		data, err = graphviz.DOT(snap, opts)
	case apiv1.GraphFormat_GRAPH_FORMAT_SVG:
		ctype = "image/svg+xml"
		data, err = graphviz.SVG(ctx, snap, opts)
		if errors.Is(err, graphviz.ErrNoGraphviz) {
			return nil, status.Errorf(codes.Unimplemented, "format: SVG needs graphviz: %v", err)
		}
	default:
		return nil, status.Errorf(codes.InvalidArgument, "format: %s is not a format", req.GetFormat())
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "rendering the graph: %v", err)
	}
	return &httpbody.HttpBody{ContentType: ctype, Data: data}, nil
}

// Watch streams the status changes of the keys under the prefix. Its
// header is sent once the watch is registered. The
// scheduler's watcher drops what its bounded buffer cannot hold (the
// scheduler never waits for a client); the stream then says how many
// updates were lost, and the client re-reads.
func (srv *Server) Watch(req *apiv1.WatchRequest, stream apiv1.AgentService_WatchServer) error {
	buf := int(req.GetBuffer())
	if buf < 0 {
		return status.Error(codes.InvalidArgument, "buffer: must be zero or more")
	}
	if err := bounded(apilimits.Count("buffer", int64(buf), apilimits.MaxWatchBuffer), keyLen("prefix", req.GetPrefix())); err != nil {
		return err
	}
	if buf == 0 {
		buf = DefaultWatchBuffer
	}
	w := srv.s.Watch(scheduler.KeyPrefix(req.GetPrefix()), buf)
	defer w.Close()
	// The header says the watch is registered: a client that waits for it
	// (the stream's Header) sees every change made after.
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	ctx := stream.Context()
	var lost uint64
	checkLost := func() error {
		if d := w.Dropped(); d > lost {
			n := d - lost
			lost = d
			return stream.Send(&apiv1.WatchResponse{Event: &apiv1.WatchResponse_LostUpdates{LostUpdates: n}})
		}
		return nil
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-srv.ctx.Done():
			return status.Error(codes.Unavailable, "the server is closing")
		case <-tick.C:
			if err := checkLost(); err != nil {
				return err
			}
		case st, ok := <-w.C:
			if !ok {
				return status.Error(codes.Unavailable, "the scheduler is closed")
			}
			if err := stream.Send(&apiv1.WatchResponse{Event: &apiv1.WatchResponse_Status{Status: srv.statusOf(st)}}); err != nil {
				return err
			}
			if err := checkLost(); err != nil {
				return err
			}
		}
	}
}
