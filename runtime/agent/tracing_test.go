package agent

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1/apiv1connect"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
	"github.com/kvdescriptor/kvdescriptor/runtime/tracing"
)

// spanAttr returns the attribute key of s as text ("" when it has none).
func spanAttr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

// TestTraceThroughAPI: a commit through the HTTP API (REST, and gRPC)
// whose request carries the client's traceparent is one trace with the
// client's span: the transaction's span (source api) is its child, the
// plan and the calls are the transaction's, and the failed call records
// its error. Without a traceparent the transaction starts a trace.
func TestTraceThroughAPI(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	writeFile(t, file, "x/a: from-file\n")
	sb := kvtest.NewSB()
	sb.Fail("x/bad", kvtest.Failure{Op: "create", Err: errors.New("device busy"), Terminal: true})
	r := startTestAgent(t, sb, file, filepath.Join(dir, "state"), func(c *Config) {
		c.HTTP.Address = anyPort
		c.TracerProvider = tp
	})
	defer r.stop(t)
	addr := httpAddr(t, r)
	base := "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// REST: POST /v1/commit with a traceparent header.
	rctx, restSpan := tp.Tracer("client").Start(ctx, "client REST commit")
	body := `{"values":[{"key":"x/b","json":"\"b\"","jsonType":"google.protobuf.StringValue"},` +
		`{"key":"x/bad","json":"\"bad\"","jsonType":"google.protobuf.StringValue"}],"wait":true}`
	req, _ := http.NewRequestWithContext(rctx, http.MethodPost, base+"/v1/commit", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	tracing.Inject(rctx, req.Header)
	if req.Header.Get("traceparent") == "" {
		t.Fatal("Inject wrote no traceparent")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	restSpan.End()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/commit: %d %s", resp.StatusCode, b)
	}

	// gRPC: the same header, as the call's metadata.
	gctx, grpcSpan := tp.Tracer("client").Start(ctx, "client gRPC commit")
	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true)
	cl := apiv1connect.NewAgentServiceClient(&http.Client{Transport: &http.Transport{Protocols: h2c}}, base, connect.WithGRPC())
	creq := connect.NewRequest(&apiv1.CommitRequest{Values: []*apiv1.Value{strValue("x/c", "c")}, Wait: true})
	tracing.Inject(gctx, creq.Header())
	if _, err := cl.Commit(gctx, creq); err != nil {
		t.Fatalf("Commit over gRPC: %v", err)
	}
	grpcSpan.End()

	// Without a traceparent: a trace of its own.
	if _, err := cl.Commit(ctx, connect.NewRequest(&apiv1.CommitRequest{Values: []*apiv1.Value{strValue("x/d", "d")}, Wait: true})); err != nil {
		t.Fatalf("Commit: %v", err)
	}

	all := rec.Ended()
	under := func(parent trace.SpanContext, name string) []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, s := range all {
			if s.Name() == name && s.Parent().SpanID() == parent.SpanID() && s.SpanContext().TraceID() == parent.TraceID() {
				out = append(out, s)
			}
		}
		return out
	}
	dump := func() string {
		var b strings.Builder
		for _, s := range all {
			b.WriteString("  " + s.Name() + " " + s.SpanContext().SpanID().String() + " parent " + s.Parent().SpanID().String() + "\n")
		}
		return b.String()
	}

	txns := under(restSpan.SpanContext(), scheduler.SpanTxn)
	if len(txns) != 1 {
		t.Fatalf("%d transaction spans under the client's REST span, want 1:\n%s", len(txns), dump())
	}
	txn := txns[0]
	if spanAttr(txn, scheduler.AttrTxnSource) != "api" || spanAttr(txn, scheduler.AttrTxnValues) != "2" || spanAttr(txn, scheduler.AttrTxnOutcome) != "failed" {
		t.Errorf("transaction span attributes: %v", txn.Attributes())
	}
	if len(under(txn.SpanContext(), scheduler.SpanPlan)) != 1 {
		t.Errorf("no plan span under the transaction:\n%s", dump())
	}
	calls := map[string]sdktrace.ReadOnlySpan{}
	for _, c := range under(txn.SpanContext(), scheduler.SpanCall) {
		calls[spanAttr(c, scheduler.AttrOp)+" "+spanAttr(c, scheduler.AttrKey)] = c
	}
	if c, ok := calls["CREATE x/b"]; !ok || c.Status().Code == codes.Error {
		t.Errorf("create x/b: %v (calls %v)", ok, calls)
	}
	if c, ok := calls["CREATE x/bad"]; !ok || c.Status().Code != codes.Error || !strings.Contains(c.Status().Description, "device busy") {
		t.Errorf("create x/bad: %v, want its error recorded (calls %v)", ok, calls)
	}

	gtxns := under(grpcSpan.SpanContext(), scheduler.SpanTxn)
	if len(gtxns) != 1 || len(under(gtxns[0].SpanContext(), scheduler.SpanCall)) != 1 {
		t.Fatalf("the gRPC commit: %d transaction spans under the client's:\n%s", len(gtxns), dump())
	}
	var roots int
	for _, s := range all {
		if s.Name() == scheduler.SpanTxn && !s.Parent().IsValid() && spanAttr(s, scheduler.AttrTxnValues) == "1" && spanAttr(s, scheduler.AttrTxnSource) == "api" {
			roots++
		}
	}
	if roots != 1 {
		t.Errorf("%d root transaction spans of one value from the API, want 1 (the commit without traceparent):\n%s", roots, dump())
	}
}

// otlpReceiver is an OTLP/HTTP trace receiver: it keeps what it is sent.
type otlpReceiver struct {
	mu    sync.Mutex
	paths []string
	reqs  []*coltracepb.ExportTraceServiceRequest
	errs  []error
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	req := &coltracepb.ExportTraceServiceRequest{}
	if err == nil {
		err = proto.Unmarshal(b, req)
	}
	o.mu.Lock()
	o.paths = append(o.paths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
	if err != nil {
		o.errs = append(o.errs, err)
	} else {
		o.reqs = append(o.reqs, req)
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// TestTraceExportOTLP: an agent with tracing.endpoint exports its spans
// to the OTLP receiver there (path /v1/traces when none is given), named
// as the agent; the last are sent when it stops.
func TestTraceExportOTLP(t *testing.T) {
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	writeFile(t, file, "x/a: from-file\n")
	sb := kvtest.NewSB()
	r := startTestAgent(t, sb, file, filepath.Join(dir, "state"), func(c *Config) {
		c.HTTP.Address = anyPort
		c.Tracing.Endpoint = srv.URL
	})
	addr := httpAddr(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := apiv1connect.NewAgentServiceClient(http.DefaultClient, "http://"+addr)
	if _, err := cl.Commit(ctx, connect.NewRequest(&apiv1.CommitRequest{Values: []*apiv1.Value{strValue("x/b", "b")}, Wait: true})); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	r.stop(t) // flushes the spans not yet exported

	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.errs) > 0 || len(recv.reqs) == 0 {
		t.Fatalf("the receiver got %d requests (%v), errors %v", len(recv.reqs), recv.paths, recv.errs)
	}
	for _, p := range recv.paths {
		if p != "POST /v1/traces application/x-protobuf" {
			t.Errorf("a request %q, want POST /v1/traces of protobuf", p)
		}
	}
	var txnFromAPI, create bool
	for _, req := range recv.reqs {
		for _, rs := range req.GetResourceSpans() {
			res := map[string]string{}
			for _, a := range rs.GetResource().GetAttributes() {
				res[a.GetKey()] = a.GetValue().GetStringValue()
			}
			if res["service.name"] != "kvdescriptor-agent" || res["service.instance.id"] != "t" {
				t.Errorf("resource %v, want service.name kvdescriptor-agent, service.instance.id t", res)
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					attrs := map[string]string{}
					for _, a := range s.GetAttributes() {
						attrs[a.GetKey()] = a.GetValue().GetStringValue()
					}
					switch {
					case s.GetName() == scheduler.SpanTxn && attrs[scheduler.AttrTxnSource] == "api":
						txnFromAPI = true
					case s.GetName() == scheduler.SpanCall && attrs[scheduler.AttrKey] == "x/b" && attrs[scheduler.AttrOp] == "CREATE":
						create = true
					}
				}
			}
		}
	}
	if !txnFromAPI || !create {
		t.Errorf("exported: the API's transaction %v, the create of x/b %v", txnFromAPI, create)
	}
}

// TestConfigTracing: the tracing settings from the file and the flag, and
// bad ones refused, naming the setting.
func TestConfigTracing(t *testing.T) {
	dir := t.TempDir()
	c, err := ParseArgs([]string{"-file", "x.yaml", "-state-dir", dir}, io.Discard)
	if err != nil || c.Tracing.Endpoint != "" || c.Tracing.SampleRatio != 1 {
		t.Errorf("default: %+v, %v; want off, ratio 1", c.Tracing, err)
	}
	conf := filepath.Join(dir, "agent.yaml")
	writeFile(t, conf, "tracing: {endpoint: \"https://collector:4318/otlp/v1/traces\", sample_ratio: 0.25}\n")
	c, err = ParseArgs([]string{"-config", conf, "-file", "x.yaml", "-state-dir", dir}, io.Discard)
	if err != nil || c.Tracing.Endpoint != "https://collector:4318/otlp/v1/traces" || c.Tracing.SampleRatio != 0.25 {
		t.Errorf("from the file: %+v, %v", c.Tracing, err)
	}
	c, err = ParseArgs([]string{"-config", conf, "-file", "x.yaml", "-state-dir", dir, "-trace-endpoint", "http://127.0.0.1:4318"}, io.Discard)
	if err != nil || c.Tracing.Endpoint != "http://127.0.0.1:4318" {
		t.Errorf("-trace-endpoint: %+v, %v", c.Tracing, err)
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"no scheme", "tracing: {endpoint: \"collector:4318\"}", `tracing: endpoint: "collector:4318": the scheme must be http or https`},
		{"grpc scheme", "tracing: {endpoint: \"grpc://collector:4317\"}", "the scheme must be http or https"},
		{"no host", "tracing: {endpoint: \"http://\"}", `tracing: endpoint: "http://": no host`},
		{"query", "tracing: {endpoint: \"http://c:4318/?x=1\"}", "only a scheme, a host with its port and a path"},
		{"ratio 0", "tracing: {endpoint: \"http://c:4318\", sample_ratio: 0}", "tracing: sample_ratio: 0 is not in (0, 1]"},
		{"ratio 2", "tracing: {endpoint: \"http://c:4318\", sample_ratio: 2}", "sample_ratio: 2 is not in (0, 1]"},
		{"unknown field", "tracing: {endpont: \"http://c:4318\"}", "tracing.endpont: unknown field"},
	} {
		_, err := ParseConfig(tc.name, []byte("sources: {file: {path: x.yaml}}\n"+tc.yaml+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}
