package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1/apiv1connect"
)

// widgetProto is a model that kvctl is not built with: only the schema
// the agent sends describes it. It imports a file (Duration's).
const widgetProto = `
name: "widget/v1/widget.proto"
package: "widget.v1"
syntax: "proto3"
dependency: "google/protobuf/duration.proto"
message_type {
  name: "Widget"
  field { name: "name" number: 1 type: TYPE_STRING label: LABEL_OPTIONAL json_name: "name" }
  field { name: "size" number: 2 type: TYPE_UINT32 label: LABEL_OPTIONAL json_name: "size" }
  field { name: "colour" number: 3 type: TYPE_ENUM type_name: ".widget.v1.Widget.Colour" label: LABEL_OPTIONAL json_name: "colour" }
  field { name: "period" number: 4 type: TYPE_MESSAGE type_name: ".google.protobuf.Duration" label: LABEL_OPTIONAL json_name: "period" }
  enum_type {
    name: "Colour"
    value { name: "COLOUR_UNSPECIFIED" number: 0 }
    value { name: "COLOUR_RED" number: 1 }
  }
}`

// widgetAgent is an agent of two models: widgets, which kvctl does not
// know, and names (google.protobuf.StringValue), which it does. It counts
// the requests for its schema and keeps the values committed to it.
type widgetAgent struct {
	apiv1connect.UnimplementedAgentServiceHandler
	schema *descriptorpb.FileDescriptorSet
	widget protoreflect.MessageType

	mu        sync.Mutex
	schemaReq int
	committed []*apiv1.Value
}

func newWidgetAgent(t *testing.T) *widgetAgent {
	t.Helper()
	fdp := &descriptorpb.FileDescriptorProto{}
	if err := prototext.Unmarshal([]byte(widgetProto), fdp); err != nil {
		t.Fatal(err)
	}
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{
		protodesc.ToFileDescriptorProto(durationpb.File_google_protobuf_duration_proto),
		fdp,
		protodesc.ToFileDescriptorProto(wrapperspb.File_google_protobuf_wrappers_proto),
	}}
	// The agent's own types, apart from the test binary's (kvctl's).
	reg, err := dynamicTypes(set)
	if err != nil {
		t.Fatal(err)
	}
	mt, err := reg.FindMessageByName("widget.v1.Widget")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := protoregistry.GlobalTypes.FindMessageByName("widget.v1.Widget"); err == nil {
		t.Fatal("kvctl knows widget.v1.Widget: the test proves nothing")
	}
	return &widgetAgent{schema: set, widget: mt}
}

// value returns the Any of a widget written in JSON.
func (a *widgetAgent) value(t *testing.T, js string) *anypb.Any {
	t.Helper()
	m := a.widget.New().Interface()
	if err := protojson.Unmarshal([]byte(js), m); err != nil {
		t.Fatal(err)
	}
	v, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (a *widgetAgent) schemaRequests() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.schemaReq
}

func (a *widgetAgent) Models(_ context.Context, creq *connect.Request[apiv1.ModelsRequest]) (*connect.Response[apiv1.ModelsResponse], error) {
	req := creq.Msg
	resp := &apiv1.ModelsResponse{Models: []*apiv1.Model{
		{Descriptor_: "name", Message: "google.protobuf.StringValue", KeyTemplate: "name/{value}", KeyPrefix: "name/"},
		{Descriptor_: "widget", Message: "widget.v1.Widget", KeyTemplate: "widget/{name}", KeyPrefix: "widget/"},
		// A model whose message the schema lacks.
		{Descriptor_: "gadget", Message: "gadget.v1.Gadget", KeyTemplate: "gadget/{name}", KeyPrefix: "gadget/"},
	}}
	if req.GetIncludeSchema() {
		a.mu.Lock()
		a.schemaReq++
		a.mu.Unlock()
		resp.Schema = a.schema
	}
	return connect.NewResponse(resp), nil
}

// current is the agent's widget/w1 and name/n1.
func (a *widgetAgent) current(t *testing.T) (*anypb.Any, *anypb.Any) {
	n, err := anypb.New(wrapperspb.String("n1"))
	if err != nil {
		t.Fatal(err)
	}
	return a.value(t, `{"name": "w1", "size": 3, "period": "1s"}`), n
}

// widgetServer serves a with the current values of t.
type widgetServer struct {
	*widgetAgent
	w1, n1 *anypb.Any
}

func (s widgetServer) Dump(_ context.Context, creq *connect.Request[apiv1.DumpRequest]) (*connect.Response[apiv1.DumpResponse], error) {
	req := creq.Msg
	var items []*apiv1.DumpItem
	if strings.HasPrefix("widget/w1", req.GetPrefix()) {
		items = append(items, &apiv1.DumpItem{Key: "widget/w1", Descriptor_: "widget", Value: s.w1, Origin: "FROM_NB"})
	}
	if strings.HasPrefix("name/n1", req.GetPrefix()) {
		items = append(items, &apiv1.DumpItem{Key: "name/n1", Descriptor_: "name", Value: s.n1, Origin: "FROM_NB"})
	}
	return connect.NewResponse(&apiv1.DumpResponse{Items: items}), nil
}

func (s widgetServer) Status(context.Context, *connect.Request[apiv1.StatusRequest]) (*connect.Response[apiv1.StatusResponse], error) {
	return connect.NewResponse(&apiv1.StatusResponse{Statuses: []*apiv1.ValueStatus{
		{Key: "widget/w1", Descriptor_: "widget", State: "CONFIGURED", Value: s.w1, Applied: s.w1, Intended: true, Owner: "api"},
	}}), nil
}

// Commit plans an update of widget/w1 from its current value to the one
// committed, and keeps what it was given.
func (s widgetServer) Commit(_ context.Context, creq *connect.Request[apiv1.CommitRequest]) (*connect.Response[apiv1.CommitResponse], error) {
	req := creq.Msg
	s.mu.Lock()
	s.committed = append(s.committed, req.GetValues()...)
	s.mu.Unlock()
	var planned []*apiv1.Op
	for _, v := range req.GetValues() {
		planned = append(planned, &apiv1.Op{Key: v.GetKey(), Kind: "UPDATE", State: "CONFIGURED", Value: v.GetAny(), PrevValue: s.w1})
	}
	return connect.NewResponse(&apiv1.CommitResponse{Planned: planned}), nil
}

func (s widgetServer) Watch(_ context.Context, _ *connect.Request[apiv1.WatchRequest], stream *connect.ServerStream[apiv1.WatchResponse]) error {
	return stream.Send(&apiv1.WatchResponse{Event: &apiv1.WatchResponse_Status{Status: &apiv1.ValueStatus{
		Key: "widget/w1", State: "CONFIGURED", Value: s.w1,
	}}})
}

// TestUnknownModel: kvctl, not built with the widget model, decodes the
// agent's widgets through the schema the agent sends (dump, status -o
// json and yaml, watch -o json), encodes a file's widgets by it (apply),
// and shows the fields a plan changes; it asks for the schema once per
// run, and never when it knows every value's type.
func TestUnknownModel(t *testing.T) {
	t.Parallel()
	agent := newWidgetAgent(t)
	w1, n1 := agent.current(t)
	path, h := apiv1connect.NewAgentServiceHandler(widgetServer{widgetAgent: agent, w1: w1, n1: n1})
	mux := http.NewServeMux()
	mux.Handle(path, h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, Protocols: new(http.Protocols)}
	srv.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	dir := t.TempDir()
	file := filepath.Join(dir, "widgets.yaml")
	if err := os.WriteFile(file, []byte("widget/w1:\n  name: w1\n  size: 4\n  colour: COLOUR_RED\n  period: 1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runOK := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"--server", ln.Addr().String()}, args...), &stdout, &stderr); code != 0 {
			t.Fatalf("kvctl %s: exit code %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
		return stdout.String()
	}

	for _, tc := range unknownModelCases(file) {
		before := agent.schemaRequests()
		out := runOK(tc.args...)
		rest := out
		for _, w := range tc.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("%s: the output lacks %q (in order):\n%s", tc.name, w, out)
				break
			}
			rest = rest[i+len(w):]
		}
		if got := agent.schemaRequests() - before; got != tc.schema {
			t.Errorf("%s: the schema was read %d times, want %d", tc.name, got, tc.schema)
		}
	}

	// A file of a model that neither kvctl nor the schema describes: the
	// error says which message is missing.
	gadgets := filepath.Join(dir, "gadgets.yaml")
	if err := os.WriteFile(gadgets, []byte("gadget/g1:\n  name: g1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"--server", ln.Addr().String(), "apply", "-f", gadgets}, &stdout, &stderr)
	if want := "the model gadget has the message gadget.v1.Gadget: neither kvctl nor the agent's schema describes it"; code != exitFailed || !strings.Contains(stderr.String(), want) {
		t.Errorf("kvctl apply of a gadget: exit code %d, want %d, saying %q:\n%s%s", code, exitFailed, want, stdout.String(), stderr.String())
	}

	checkCommittedWidget(t, agent)
}

// unknownModelCase is a kvctl command of TestUnknownModel.
type unknownModelCase struct {
	name string
	args []string
	// want are lines (or parts of lines) of the output, in order.
	want []string
	// schema is how many more times the agent's schema is read.
	schema int
}

// unknownModelCases are the commands of TestUnknownModel; file is a file
// of widgets.
func unknownModelCases(file string) []unknownModelCase {
	return []unknownModelCase{{
		name:   "known types only",
		args:   []string{"dump", "name/"},
		want:   []string{"name/n1  FROM_NB  \"n1\""},
		schema: 0,
	}, {
		name:   "dump",
		args:   []string{"dump"},
		want:   []string{"name/n1    FROM_NB  \"n1\"", `widget/w1  FROM_NB  {"name":"w1","period":"1s","size":3}`},
		schema: 1,
	}, {
		name: "dump json",
		args: []string{"dump", "widget/", "-o", "json"},
		want: []string{
			`"key": "widget/w1"`,
			`"@type": "type.googleapis.com/widget.v1.Widget"`,
			`"name": "w1"`,
			`"size": 3`,
			`"period": "1s"`,
		},
		schema: 1,
	}, {
		name:   "status yaml",
		args:   []string{"status", "-o", "yaml"},
		want:   []string{"applied:", "'@type': type.googleapis.com/widget.v1.Widget", "size: 3", "value:", "size: 3"},
		schema: 1,
	}, {
		name:   "watch json",
		args:   []string{"watch", "-o", "json"},
		want:   []string{`"@type": "type.googleapis.com/widget.v1.Widget"`, `"size": 3`},
		schema: 1,
	}, {
		name:   "apply plan",
		args:   []string{"apply", "-f", file, "--plan"},
		want:   []string{"~ widget/w1", "    size: 3 -> 4", "    colour: (unset) -> COLOUR_RED"},
		schema: 1,
	}}
}

// checkCommittedWidget checks that what apply sent is the widget of the
// file, in the model's encoding.
func checkCommittedWidget(t *testing.T, agent *widgetAgent) {
	t.Helper()
	agent.mu.Lock()
	committed := agent.committed
	agent.mu.Unlock()
	if len(committed) != 1 || committed[0].GetKey() != "widget/w1" {
		t.Fatalf("apply committed %v, want widget/w1", committed)
	}
	got := agent.widget.New().Interface()
	if err := committed[0].GetAny().UnmarshalTo(got); err != nil {
		t.Fatalf("apply committed %v: %v", committed[0].GetAny(), err)
	}
	want := agent.widget.New().Interface()
	if err := protojson.Unmarshal([]byte(`{"name": "w1", "size": 4, "colour": "COLOUR_RED", "period": "1s"}`), want); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Errorf("apply committed %v, want %v", got, want)
	}
}
