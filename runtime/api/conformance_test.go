package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1/apiv1connect"
	"github.com/kvdescriptor/kvdescriptor/runtime/api"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

const confToken = "conf-token"

// auth of a call: the right token, none, or a wrong one.
const (
	authRight = iota
	authNone
	authWrong
)

// confCall is one call of the conformance table: an RPC and its request
// (made from the responses of the calls before it, by name), the token
// it sends, and the result required of every transport: the code, and
// for an error the argument its message names first.
type confCall struct {
	name   string
	method string
	req    func(prev map[string]proto.Message) proto.Message
	auth   int
	code   connect.Code
	arg    string
	// check, when set, checks the data of a success (once, on the first
	// transport; the others must answer the same).
	check func(t *testing.T, resp proto.Message)
}

func fixed(m proto.Message) func(map[string]proto.Message) proto.Message {
	return func(map[string]proto.Message) proto.Message { return m }
}

func seqOf(name string, delta int64) func(map[string]proto.Message) uint64 {
	return func(prev map[string]proto.Message) uint64 {
		return uint64(int64(prev[name].(*apiv1.CommitResponse).GetSeq()) + delta)
	}
}

var confTable = []confCall{
	{name: "readiness", method: "Readiness", req: fixed(&apiv1.ReadinessRequest{}),
		check: func(t *testing.T, m proto.Message) {
			if r := m.(*apiv1.ReadinessResponse); !r.GetReady() || len(r.GetSources()) != 2 {
				t.Errorf("readiness: %v", r)
			}
		}},
	{name: "no token", method: "Status", req: fixed(&apiv1.StatusRequest{}), auth: authNone, code: connect.CodeUnauthenticated, arg: "authorization"},
	{name: "wrong token", method: "Commit", req: fixed(&apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/x", "x")}}), auth: authWrong, code: connect.CodeUnauthenticated, arg: "authorization"},
	{name: "models", method: "Models", req: fixed(&apiv1.ModelsRequest{})},
	{name: "agent info", method: "AgentInfo", req: fixed(&apiv1.AgentInfoRequest{}),
		check: func(t *testing.T, m proto.Message) {
			r := m.(*apiv1.AgentInfoResponse)
			if r.GetName() != "conf-agent" || r.GetVersion() != "v9.8.7" || r.GetGoVersion() != runtime.Version() || r.GetDescriptors() == 0 ||
				!r.GetStartTime().AsTime().Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) || r.GetConfig() != "name: conf-agent\n" {
				t.Errorf("agent info: %v", r)
			}
		}},
	{name: "agent info: no token", method: "AgentInfo", req: fixed(&apiv1.AgentInfoRequest{}), auth: authNone, code: connect.CodeUnauthenticated, arg: "authorization"},
	{name: "commit", method: "Commit", req: fixed(&apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a1"), jsonValue("route/r", "dep:iface/a"), value("route/p", "dep:iface/p")}, Description: "first"}),
		check: func(t *testing.T, m proto.Message) {
			if r := m.(*apiv1.CommitResponse); r.GetSeq() == 0 || outcome(r, "route/r").GetState() != "CONFIGURED" || len(outcome(r, "route/p").GetWhyPending()) < 2 {
				t.Errorf("commit: %v", r)
			}
		}},
	{name: "commit: unknown key", method: "Commit", req: fixed(&apiv1.CommitRequest{Values: []*apiv1.Value{value("nope/x", "x")}}), code: connect.CodeInvalidArgument, arg: "values[0].key"},
	{name: "commit: delete of a key of no model", method: "Commit", req: fixed(&apiv1.CommitRequest{Deletes: []string{"nope/x"}}), code: connect.CodeInvalidArgument, arg: "deletes[0]"},
	{name: "commit: delete of a key not set", method: "Commit", req: fixed(&apiv1.CommitRequest{Deletes: []string{"iface/zz"}}),
		check: func(t *testing.T, m proto.Message) {
			if r := m.(*apiv1.CommitResponse); r.GetSeq() != 0 {
				t.Errorf("a delete of nothing made transaction %d", r.GetSeq())
			}
		}},
	{name: "commit: bad JSON", method: "Commit", req: fixed(&apiv1.CommitRequest{Values: []*apiv1.Value{{Key: "iface/j", Value: &apiv1.Value_Json{Json: "{"}}}}), code: connect.CodeInvalidArgument, arg: "values[0].json"},
	{name: "commit: description beyond its bound", method: "Commit", req: fixed(&apiv1.CommitRequest{Description: strings.Repeat("d", 5000)}), code: connect.CodeInvalidArgument, arg: "description"},
	{name: "commit: retry beyond its bound", method: "Commit", req: fixed(&apiv1.CommitRequest{Retry: &apiv1.RetryPolicy{MaxAttempts: 5000}}), code: connect.CodeInvalidArgument, arg: "retry.max_attempts"},
	{name: "commit: message beyond the size bound", method: "Commit", req: fixed(&apiv1.CommitRequest{Description: strings.Repeat("d", 3<<20)}), code: connect.CodeResourceExhausted},
	{name: "commit: negative confirm_within", method: "Commit", req: fixed(&apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/n", "n")}, ConfirmWithin: durationpb.New(-time.Second)}), code: connect.CodeInvalidArgument, arg: "confirm_within"},
	{name: "confirmed commit", method: "Commit", req: fixed(&apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/b", "b")}, ConfirmWithin: durationpb.New(time.Hour)})},
	{name: "commit awaiting confirmation", method: "Commit", req: fixed(&apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/c", "c")}}), code: connect.CodeFailedPrecondition},
	{name: "confirm: no seq", method: "Confirm", req: fixed(&apiv1.ConfirmRequest{}), code: connect.CodeInvalidArgument, arg: "seq"},
	{name: "confirm: another seq", method: "Confirm", req: func(p map[string]proto.Message) proto.Message {
		return &apiv1.ConfirmRequest{Seq: seqOf("confirmed commit", 100)(p)}
	}, code: connect.CodeNotFound, arg: "seq"},
	{name: "confirm", method: "Confirm", req: func(p map[string]proto.Message) proto.Message {
		return &apiv1.ConfirmRequest{Seq: seqOf("confirmed commit", 0)(p)}
	}},
	{name: "cancel: nothing awaits", method: "Cancel", req: func(p map[string]proto.Message) proto.Message {
		return &apiv1.CancelRequest{Seq: seqOf("confirmed commit", 0)(p)}
	}, code: connect.CodeNotFound, arg: "seq"},
	{name: "rollback: no seq", method: "RollbackTo", req: fixed(&apiv1.RollbackToRequest{}), code: connect.CodeInvalidArgument, arg: "seq"},
	{name: "rollback: not run", method: "RollbackTo", req: fixed(&apiv1.RollbackToRequest{Seq: 9999}), code: connect.CodeNotFound, arg: "seq"},
	{name: "rollback", method: "RollbackTo", req: func(p map[string]proto.Message) proto.Message {
		return &apiv1.RollbackToRequest{Seq: seqOf("commit", 0)(p), Description: "back"}
	}},
	{name: "plan: invalid value is data", method: "Plan", req: fixed(&apiv1.PlanRequest{Values: []*apiv1.Value{value("iface/v", "invalid:name")}}),
		check: func(t *testing.T, m proto.Message) {
			if o := outcome(m.(*apiv1.CommitResponse), "iface/v"); o.GetState() != "INVALID" || o.GetError() == "" {
				t.Errorf("plan of an invalid value: %v", m)
			}
		}},
	{name: "plan: nothing", method: "Plan", req: fixed(&apiv1.PlanRequest{}), code: connect.CodeInvalidArgument, arg: "values, deletes"},
	{name: "plan: file without a file source", method: "Plan", req: fixed(&apiv1.PlanRequest{File: &httpbody.HttpBody{ContentType: "application/yaml", Data: []byte("x: 1\n")}}), code: connect.CodeUnimplemented, arg: "file"},
	{name: "status", method: "Status", req: fixed(&apiv1.StatusRequest{})},
	{name: "status: key", method: "Status", req: fixed(&apiv1.StatusRequest{Key: "iface/a"})},
	{name: "status: owner", method: "Status", req: fixed(&apiv1.StatusRequest{Owner: "file"}),
		check: func(t *testing.T, m proto.Message) {
			if r := m.(*apiv1.StatusResponse); len(r.GetStatuses()) != 1 || r.GetStatuses()[0].GetKey() != "iface/f" {
				t.Errorf("owner file: %v", r)
			}
		}},
	{name: "status: unknown key", method: "Status", req: fixed(&apiv1.StatusRequest{Key: "iface/none"}), code: connect.CodeNotFound, arg: "key"},
	{name: "status: key of no model", method: "Status", req: fixed(&apiv1.StatusRequest{Key: "nope/none"}), code: connect.CodeNotFound, arg: "key"},
	{name: "status: unknown descriptor", method: "Status", req: fixed(&apiv1.StatusRequest{Descriptor_: "nope"}), code: connect.CodeNotFound, arg: "descriptor"},
	{name: "status: two selectors", method: "Status", req: fixed(&apiv1.StatusRequest{Key: "iface/a", Prefix: "iface/"}), code: connect.CodeInvalidArgument, arg: "key, prefix, descriptor, owner"},
	{name: "status: key beyond its bound", method: "Status", req: fixed(&apiv1.StatusRequest{Key: strings.Repeat("k", 2000)}), code: connect.CodeInvalidArgument, arg: "key"},
	{name: "dump", method: "Dump", req: fixed(&apiv1.DumpRequest{View: apiv1.View_VIEW_INTENDED})},
	{name: "dump: southbound", method: "Dump", req: fixed(&apiv1.DumpRequest{View: apiv1.View_VIEW_SOUTHBOUND, Descriptor_: "iface"})},
	{name: "dump: unknown descriptor", method: "Dump", req: fixed(&apiv1.DumpRequest{Descriptor_: "nope"}), code: connect.CodeNotFound, arg: "descriptor"},
	{name: "dump: prefix of no key", method: "Dump", req: fixed(&apiv1.DumpRequest{Descriptor_: "iface", Prefix: "route/"}), code: connect.CodeInvalidArgument, arg: "prefix"},
	{name: "history", method: "History", req: fixed(&apiv1.HistoryRequest{})},
	{name: "history: seq", method: "History", req: func(p map[string]proto.Message) proto.Message {
		return &apiv1.HistoryRequest{Seq: seqOf("commit", 0)(p)}
	}},
	{name: "history: seq not in it", method: "History", req: fixed(&apiv1.HistoryRequest{Seq: 9999}), code: connect.CodeNotFound, arg: "seq"},
	{name: "history: until before since", method: "History", req: fixed(&apiv1.HistoryRequest{Since: timestamppb.New(time.Unix(2000, 0)), Until: timestamppb.New(time.Unix(1000, 0))}), code: connect.CodeInvalidArgument, arg: "until"},
	{name: "timeline", method: "Timeline", req: fixed(&apiv1.TimelineRequest{Key: "iface/a"})},
	{name: "timeline: unknown key", method: "Timeline", req: fixed(&apiv1.TimelineRequest{Key: "iface/none"}), code: connect.CodeNotFound, arg: "key"},
	{name: "timeline: no key", method: "Timeline", req: fixed(&apiv1.TimelineRequest{}), code: connect.CodeInvalidArgument, arg: "key"},
	{name: "graph", method: "Graph", req: fixed(&apiv1.GraphRequest{Format: apiv1.GraphFormat_GRAPH_FORMAT_DOT}),
		check: func(t *testing.T, m proto.Message) {
			if b := m.(*httpbody.HttpBody); !strings.HasPrefix(b.GetContentType(), "text/vnd.graphviz") || !bytes.Contains(b.GetData(), []byte("digraph")) {
				t.Errorf("graph: %s %s", b.GetContentType(), b.GetData())
			}
		}},
	{name: "graph: as of a transaction", method: "Graph", req: func(p map[string]proto.Message) proto.Message {
		return &apiv1.GraphRequest{Seq: seqOf("commit", 0)(p), Format: apiv1.GraphFormat_GRAPH_FORMAT_JSON}
	}},
	{name: "graph: transaction not in the history", method: "Graph", req: fixed(&apiv1.GraphRequest{Seq: 9999}), code: connect.CodeNotFound, arg: "seq"},
	{name: "graph: unknown format", method: "Graph", req: fixed(&apiv1.GraphRequest{Format: 99}), code: connect.CodeInvalidArgument, arg: "format"},
	{name: "graph snapshot", method: "GraphSnapshot", req: fixed(&apiv1.GraphSnapshotRequest{})},
	{name: "graph snapshot: by model", method: "GraphSnapshot", req: fixed(&apiv1.GraphSnapshotRequest{Filter: &apiv1.GraphFilter{Model: "route"}}),
		check: func(t *testing.T, m proto.Message) {
			keys := graphKeys(m.(*apiv1.GraphSnapshotResponse))
			if !slices.Contains(keys, "route/r") || slices.ContainsFunc(keys, func(k string) bool { return !strings.HasPrefix(k, "route/") }) {
				t.Errorf("the route model's graph: %v", keys)
			}
		}},
	{name: "graph snapshot: by state", method: "GraphSnapshot", req: fixed(&apiv1.GraphSnapshotRequest{Filter: &apiv1.GraphFilter{State: "PENDING"}}),
		check: func(t *testing.T, m proto.Message) {
			g := m.(*apiv1.GraphSnapshotResponse)
			if len(g.GetNodes()) == 0 || slices.ContainsFunc(g.GetNodes(), func(n *apiv1.GraphNode) bool { return n.GetState() != "PENDING" }) {
				t.Errorf("the PENDING graph: %v", g.GetNodes())
			}
		}},
	{name: "graph snapshot: neighbourhood", method: "GraphSnapshot", req: fixed(&apiv1.GraphSnapshotRequest{Filter: &apiv1.GraphFilter{Key: "iface/a", Depth: 1}}),
		check: func(t *testing.T, m proto.Message) {
			g := m.(*apiv1.GraphSnapshotResponse)
			keys := graphKeys(g)
			if !slices.Contains(keys, "iface/a") || !slices.Contains(keys, "route/r") || slices.Contains(keys, "route/p") || slices.Contains(keys, "iface/f") || len(g.GetEdges()) == 0 {
				t.Errorf("iface/a's neighbourhood: %v, edges %v", keys, g.GetEdges())
			}
		}},
	{name: "graph: neighbourhood as DOT", method: "Graph", req: fixed(&apiv1.GraphRequest{Filter: &apiv1.GraphFilter{Key: "route/p"}}),
		check: func(t *testing.T, m proto.Message) {
			if b := m.(*httpbody.HttpBody); !bytes.Contains(b.GetData(), []byte("iface/p")) || bytes.Contains(b.GetData(), []byte("iface/a")) {
				t.Errorf("route/p's neighbourhood: %s", b.GetData())
			}
		}},
	{name: "graph: unknown model", method: "Graph", req: fixed(&apiv1.GraphRequest{Filter: &apiv1.GraphFilter{Model: "nope"}}), code: connect.CodeInvalidArgument, arg: "filter.model"},
	{name: "graph: unknown state", method: "Graph", req: fixed(&apiv1.GraphRequest{Filter: &apiv1.GraphFilter{State: "HAPPY"}}), code: connect.CodeInvalidArgument, arg: "filter.state"},
	{name: "graph: depth without a key", method: "Graph", req: fixed(&apiv1.GraphRequest{Filter: &apiv1.GraphFilter{Depth: 2}}), code: connect.CodeInvalidArgument, arg: "filter.depth"},
	{name: "graph: depth beyond its bound", method: "GraphSnapshot", req: fixed(&apiv1.GraphSnapshotRequest{Filter: &apiv1.GraphFilter{Key: "iface/a", Depth: 101}}), code: connect.CodeInvalidArgument, arg: "filter.depth"},
	{name: "graph: key beyond its bound", method: "Graph", req: fixed(&apiv1.GraphRequest{Filter: &apiv1.GraphFilter{Key: strings.Repeat("k", 2000)}}), code: connect.CodeInvalidArgument, arg: "filter.key"},
	{name: "graph: key not in the graph", method: "Graph", req: fixed(&apiv1.GraphRequest{Filter: &apiv1.GraphFilter{Key: "iface/none"}}), code: connect.CodeNotFound, arg: "filter.key"},
	{name: "graph: more nodes than max_nodes", method: "Graph", req: fixed(&apiv1.GraphRequest{Filter: &apiv1.GraphFilter{MaxNodes: 1}}), code: connect.CodeFailedPrecondition, arg: "max_nodes"},
	{name: "stats", method: "Stats", req: fixed(&apiv1.StatsRequest{Prefix: "iface/"})},
	{name: "stats: unknown flag", method: "Stats", req: fixed(&apiv1.StatsRequest{Flag: "nope"}), code: connect.CodeInvalidArgument, arg: "flag"},
	{name: "downstream resync", method: "DownstreamResync", req: fixed(&apiv1.DownstreamResyncRequest{Verbose: true})},
	{name: "log level", method: "SetLogLevel", req: fixed(&apiv1.SetLogLevelRequest{Level: "debug"}),
		check: func(t *testing.T, m proto.Message) {
			if r := m.(*apiv1.SetLogLevelResponse); r.GetLevel() != "debug" || r.GetPrevious() != "info" {
				t.Errorf("log level: %v", r)
			}
		}},
	{name: "log level: unknown", method: "SetLogLevel", req: fixed(&apiv1.SetLogLevelRequest{Level: "loud"}), code: connect.CodeInvalidArgument, arg: "level"},
}

// confResult is what a transport answered.
type confResult struct {
	code connect.Code
	msg  string
	resp proto.Message
}

type confTransport struct {
	name string
	call func(t *testing.T, base, method string, req proto.Message, auth int) confResult
}

var service = apiv1.File_kvdescriptor_api_v1_api_proto.Services().ByName("AgentService")

func outputOf(method string) proto.Message {
	md := service.Methods().ByName(protoreflect.Name(method))
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
	if err != nil {
		panic(err)
	}
	return mt.New().Interface()
}

func tokenOf(auth int) string {
	switch auth {
	case authNone:
		return ""
	case authWrong:
		return "wrong"
	}
	return confToken
}

// dyn carries any message through a Connect client; dynCodec encodes it.
type dyn struct{ m proto.Message }

type dynCodec struct {
	json bool
	resp proto.Message
}

func (c dynCodec) Name() string {
	if c.json {
		return "json"
	}
	return "proto"
}

func (c dynCodec) Marshal(v any) ([]byte, error) {
	if m, ok := v.(proto.Message); ok {
		return proto.Marshal(m)
	}
	if c.json {
		return protojson.Marshal(v.(*dyn).m)
	}
	return proto.Marshal(v.(*dyn).m)
}

func (c dynCodec) Unmarshal(b []byte, v any) error {
	if m, ok := v.(proto.Message); ok {
		// An error's status and details.
		return proto.Unmarshal(b, m)
	}
	v.(*dyn).m = c.resp
	if c.json {
		return protojson.Unmarshal(b, c.resp)
	}
	return proto.Unmarshal(b, c.resp)
}

func connectTransport(name string, hc func() *http.Client, json bool, opts ...connect.ClientOption) confTransport {
	return confTransport{name: name, call: func(t *testing.T, base, method string, req proto.Message, auth int) confResult {
		resp := outputOf(method)
		o := append([]connect.ClientOption{connect.WithCodec(dynCodec{json: json, resp: resp})}, opts...)
		if tok := tokenOf(auth); tok != "" {
			o = append(o, connect.WithInterceptors(header("Authorization", "Bearer "+tok)))
		}
		cl := connect.NewClient[dyn, dyn](hc(), base+"/"+apiv1connect.AgentServiceName+"/"+method, o...)
		r, err := cl.CallUnary(ctx(t), connect.NewRequest(&dyn{m: req}))
		if err != nil {
			return confResult{code: connect.CodeOf(err), msg: connectMessage(err)}
		}
		return confResult{resp: r.Msg.m}
	}}
}

// grpcGoTransport is grpc-go's client, as kvctl's today.
var grpcGoTransport = confTransport{name: "grpc-go", call: func(t *testing.T, base, method string, req proto.Message, auth int) confResult {
	conn, err := grpc.NewClient(strings.TrimPrefix(base, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := ctx(t)
	if tok := tokenOf(auth); tok != "" {
		c = metadata.AppendToOutgoingContext(c, "authorization", "Bearer "+tok)
	}
	resp := outputOf(method)
	if err := conn.Invoke(c, "/"+apiv1connect.AgentServiceName+"/"+method, req, resp); err != nil {
		st := status.Convert(err)
		return confResult{code: connect.Code(st.Code()), msg: st.Message()}
	}
	return confResult{resp: resp}
}}

// restTransport calls the primary google.api.http rule of each method:
// path parameters and, without a body, the query from the request's
// fields; the body its JSON form.
var restTransport = confTransport{name: "rest", call: func(t *testing.T, base, method string, req proto.Message, auth int) confResult {
	md := service.Methods().ByName(protoreflect.Name(method))
	rule := proto.GetExtension(md.Options(), annotations.E_Http).(*annotations.HttpRule)
	verb, path := "GET", rule.GetGet()
	if p := rule.GetPost(); p != "" {
		verb, path = "POST", p
	}
	rm := req.ProtoReflect()
	q := url.Values{}
	fields := rm.Descriptor().Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		if !rm.Has(f) {
			continue
		}
		v := rm.Get(f)
		var s string
		switch {
		case f.Enum() != nil:
			if ev := f.Enum().Values().ByNumber(v.Enum()); ev != nil {
				s = string(ev.Name())
			} else {
				s = strconv.Itoa(int(v.Enum()))
			}
		case f.Message() != nil && f.Message().FullName() == "google.protobuf.Timestamp":
			s = v.Message().Interface().(*timestamppb.Timestamp).AsTime().Format(time.RFC3339Nano)
		case f.Message() != nil && !f.IsList() && verb == "GET":
			// A message of scalars (a graph's filter): its fields as
			// parent.field parameters.
			sub := v.Message()
			sub.Range(func(sf protoreflect.FieldDescriptor, sv protoreflect.Value) bool {
				q.Set(f.JSONName()+"."+sf.JSONName(), fmt.Sprint(sv.Interface()))
				return true
			})
			continue
		case f.Message() != nil || f.IsList():
			continue // in the body
		default:
			s = fmt.Sprint(v.Interface())
		}
		if ph := "{" + string(f.Name()) + "}"; strings.Contains(path, ph) {
			path = strings.ReplaceAll(path, ph, s)
			continue
		}
		q.Set(f.JSONName(), s)
	}
	// Path parameters not set are their zero value.
	for i := range fields.Len() {
		path = strings.ReplaceAll(path, "{"+string(fields.Get(i).Name())+"}", "0")
	}
	var body io.Reader
	if rule.GetBody() == "*" {
		b, err := protojson.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(b)
	} else if len(q) > 0 {
		path += "?" + q.Encode()
	}
	hr, err := http.NewRequest(verb, base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if tok := tokenOf(auth); tok != "" {
		hr.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := h1().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		var st struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("REST %s %s: %d %s", verb, path, res.StatusCode, b)
		}
		if want := connectHTTPStatus(connect.Code(st.Code)); res.StatusCode != want {
			t.Errorf("REST %s %s: HTTP %d for %v, want %d", verb, path, res.StatusCode, connect.Code(st.Code), want)
		}
		return confResult{code: connect.Code(st.Code), msg: st.Message}
	}
	resp := outputOf(method)
	if hb, ok := resp.(*httpbody.HttpBody); ok {
		hb.ContentType, hb.Data = res.Header.Get("Content-Type"), b
		return confResult{resp: hb}
	}
	if err := protojson.Unmarshal(b, resp); err != nil {
		t.Fatalf("REST %s %s: %v: %s", verb, path, err, b)
	}
	return confResult{resp: resp}
}}

// connectHTTPStatus is the HTTP status of a code (the mapping of
// google.api.http, which vanguard follows).
func connectHTTPStatus(c connect.Code) int {
	switch c {
	case connect.CodeInvalidArgument, connect.CodeFailedPrecondition, connect.CodeOutOfRange:
		return 400
	case connect.CodeUnauthenticated:
		return 401
	case connect.CodePermissionDenied:
		return 403
	case connect.CodeNotFound:
		return 404
	case connect.CodeAlreadyExists, connect.CodeAborted:
		return 409
	case connect.CodeResourceExhausted:
		return 429
	case connect.CodeCanceled:
		return 499
	case connect.CodeUnimplemented:
		return 501
	case connect.CodeUnavailable:
		return 503
	case connect.CodeDeadlineExceeded:
		return 504
	}
	return 500
}

var confTransports = []confTransport{
	connectTransport("grpc", h2c, false, connect.WithGRPC()),
	grpcGoTransport,
	connectTransport("grpc-web", h1, false, connect.WithGRPCWeb()),
	connectTransport("connect-json", h1, true),
	connectTransport("connect-proto", h2c, false),
	restTransport,
}

// stripTimes clears the timestamps of a message (they differ between
// runs) and the graph's, so that the data of two runs compare.
func stripTimes(m protoreflect.Message) {
	m.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case f.Message() != nil && f.Message().FullName() == "google.protobuf.Timestamp":
			m.Clear(f)
		case f.IsList() && f.Message() != nil:
			for i := range v.List().Len() {
				stripTimes(v.List().Get(i).Message())
			}
		case f.Message() != nil && !f.IsMap():
			stripTimes(v.Message())
		}
		return true
	})
	if hb, ok := m.Interface().(*httpbody.HttpBody); ok && strings.HasPrefix(hb.GetContentType(), "text/vnd.graphviz") {
		// The graph's label says when its transaction ran.
		hb.Data = dotTime.ReplaceAll(hb.Data, []byte("(TIME)"))
	}
	if hb, ok := m.Interface().(*httpbody.HttpBody); ok && strings.HasPrefix(hb.GetContentType(), "application/json") {
		var g apiv1.GraphSnapshotResponse
		if protojson.Unmarshal(hb.GetData(), &g) == nil {
			stripTimes(g.ProtoReflect())
			hb.Data, _ = proto.MarshalOptions{Deterministic: true}.Marshal(&g)
		}
	}
}

// TestConformance runs the table over every transport, each against an
// agent of its own that went through the same calls, and requires the
// same result everywhere: the code, the argument the error names, the
// same data.
func TestConformance(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range confTable {
		covered[c.method] = true
	}
	methods := service.Methods()
	for i := range methods.Len() {
		if m := string(methods.Get(i).Name()); !covered[m] && m != "Watch" {
			t.Errorf("the table has no call of %s", m)
		}
	}
	var first []confResult
	for _, tr := range confTransports {
		t.Run(tr.name, func(t *testing.T) {
			e := newEnv(t, envOptions{token: confToken, limits: api.Limits{MaxMessageBytes: 1 << 20},
				file: []nb.Change{{Key: "iface/f", Value: kvtest.Value("from-file")}}})
			prev := map[string]proto.Message{}
			var got []confResult
			for i, c := range confTable {
				r := tr.call(t, e.base, c.method, c.req(prev), c.auth)
				got = append(got, r)
				if r.code != c.code {
					t.Errorf("%s: %v %q, want %v", c.name, r.code, r.msg, c.code)
					continue
				}
				if c.code != 0 && c.arg != "" && !strings.HasPrefix(r.msg, c.arg+":") {
					t.Errorf("%s: %q does not name %s first", c.name, r.msg, c.arg)
				}
				if c.code == 0 {
					prev[c.name] = r.resp
					if c.check != nil {
						c.check(t, r.resp)
					}
					stripTimes(r.resp.ProtoReflect())
					if first != nil && first[i].resp != nil && !proto.Equal(first[i].resp, r.resp) {
						t.Errorf("%s: the data differ from %s's:\n%.2000v\n%.2000v", c.name, confTransports[0].name, r.resp, first[i].resp)
					}
				}
			}
			if first == nil {
				first = got
			}
		})
	}
}

var dotTime = regexp.MustCompile(`\(\d{4}-\d\d-\d\dT[0-9:.]+Z\)`)

var _ = context.Background

// graphKeys are the keys of a graph's nodes.
func graphKeys(g *apiv1.GraphSnapshotResponse) []string {
	var out []string
	for _, n := range g.GetNodes() {
		out = append(out, n.GetKey())
	}
	return out
}
