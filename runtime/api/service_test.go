package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/protobuf/encoding/protojson"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1/apiv1connect"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

// Every transport commits and reads through the one service.
func TestEveryTransportCommitsAndReads(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			e := newEnv(t, envOptions{file: []nb.Change{{Key: "iface/f", Value: kvtest.Value("from-file")}}})
			c := tr.client(e.base)
			resp, err := c.Commit(ctx(t), connect.NewRequest(&apiv1.CommitRequest{
				Values: []*apiv1.Value{value("iface/a", "a1"), jsonValue("route/r", "dep:iface/a"), value("iface/f", "from-api")},
			}))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Msg.GetSeq() == 0 || len(resp.Msg.GetExecuted()) != 2 {
				t.Fatalf("commit: %v", resp.Msg)
			}
			e.want(t, "iface/a", "a1")
			e.want(t, "iface/f", "from-file")
			if o := outcome(resp.Msg, "iface/a"); o.GetOwner() != "api" || o.GetState() != "CONFIGURED" {
				t.Fatalf("iface/a: %v", o)
			}
			st, err := c.Status(ctx(t), connect.NewRequest(&apiv1.StatusRequest{Owner: "api"}))
			if err != nil || len(st.Msg.GetStatuses()) != 2 {
				t.Fatalf("status owner api: %v, %v", st, err)
			}
			_, err = c.Status(ctx(t), connect.NewRequest(&apiv1.StatusRequest{Key: "iface/nope"}))
			if connect.CodeOf(err) != connect.CodeNotFound || !strings.HasPrefix(connectMessage(err), "key:") {
				t.Fatalf("unknown key: %v", err)
			}
		})
	}
}

func connectMessage(err error) string {
	var ce *connect.Error
	if e, ok := err.(*connect.Error); ok {
		ce = e
		return ce.Message()
	}
	return ""
}

// REST paths answer from the same service, the reference agent's too.
func TestREST(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := transports[0].client(e.base)
	if _, err := c.Commit(ctx(t), connect.NewRequest(&apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a1")}})); err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := h1().Get(e.base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/v1/status?key=iface/a")
	if code != 200 || !strings.Contains(body, `"iface/a"`) {
		t.Fatalf("/v1/status: %d %s", code, body)
	}
	code, body = get("/scheduler/status?key=iface/a")
	var list []map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list) != 1 {
		t.Fatalf("/scheduler/status: %d %s", code, body)
	}
	code, body = get("/scheduler/txn-history?since=0&until=99999999999")
	if code != 200 || !strings.HasPrefix(body, "[") {
		t.Fatalf("/scheduler/txn-history: %d %s", code, body)
	}
	code, body = get("/scheduler/graph?format=dot")
	if code != 200 || !strings.Contains(body, "digraph") {
		t.Fatalf("/scheduler/graph: %d %s", code, body)
	}
	code, body = get("/scheduler/dump?view=NB")
	if code != 200 || !strings.Contains(body, "iface/a") {
		t.Fatalf("/scheduler/dump: %d %s", code, body)
	}
	now := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	for path, want := range map[string]string{
		"/scheduler/txn-history?seq-num=1":                    `"seq":"1"`,
		"/scheduler/key-timeline?key=iface/a&time=" + now:     `"op":"CREATE"`,
		"/scheduler/graph-snapshot?time=" + now:               `"key":"iface/a"`,
		"/scheduler/flag-stats?flag=IS-PENDING&prefix=iface/": `"IS-PENDING":"0"`,
		"/scheduler/dump?key-prefix=iface/&view=cached":       `"key":"iface/a"`,
		"/v1/history?since=1h":                                `"records"`,
		"/scheduler/status?descriptor=iface":                  `"owner":"api"`,
		"/v1/graph?format=json":                               `"nodes"`,
	} {
		if code, body := get(path); code != 200 || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s, want %s", path, code, body, want)
		}
	}
	code, body = get("/scheduler/key-timeline?key=iface/a&time=0")
	if code != 200 || strings.Contains(body, "CREATE") {
		t.Errorf("the timeline up to 1970: %d %s", code, body)
	}
	code, body = get("/v1/status?key=iface/nope")
	if code != http.StatusNotFound || !strings.Contains(body, "key:") {
		t.Fatalf("unknown key: %d %s", code, body)
	}
	resp, err := h1().Post(e.base+"/scheduler/downstream-resync?retry=true", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "seq") {
		t.Fatalf("downstream resync: %d %s", resp.StatusCode, b)
	}
}

// A whole configuration file is planned by the file source's own apply:
// over REST its body is the file; a file that does not parse is
// INVALID_ARGUMENT naming file.
func TestPlanFile(t *testing.T) {
	e := newEnv(t, envOptions{planFile: true, file: []nb.Change{{Key: "iface/old", Value: kvtest.Value("old")}}})
	post := func(body string) (int, string) {
		resp, err := h1().Post(e.base+"/v1/plan/file", "application/yaml", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post("iface/a: up\nroute/r1: \"dep:iface/a\"\n")
	var resp apiv1.CommitResponse
	if code != 200 || protojson.Unmarshal([]byte(body), &resp) != nil {
		t.Fatalf("plan of a file: %d %s", code, body)
	}
	// The plan creates what the file sets and deletes what it drops.
	kinds := map[string]string{}
	for _, op := range resp.GetPlanned() {
		kinds[op.GetKey()] = op.GetKind()
	}
	if kinds["iface/a"] != "CREATE" || kinds["route/r1"] != "CREATE" || kinds["iface/old"] != "DELETE" {
		t.Fatalf("plan of a file: %v", kinds)
	}
	e.want(t, "iface/old", "old")
	e.want(t, "iface/a", "")
	code, body = post("iface/a: [\n")
	if code != 400 || !strings.Contains(body, `"file: `) {
		t.Fatalf("a file that does not parse: %d %s", code, body)
	}
	// The same over Connect.
	c := transports[2].client(e.base)
	_, err := c.Plan(ctx(t), connect.NewRequest(&apiv1.PlanRequest{File: &httpbody.HttpBody{Data: []byte("iface/a: [\n")}}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.HasPrefix(connectMessage(err), "file:") {
		t.Fatalf("over Connect: %v", err)
	}
}

// Watch streams over every RPC transport; the headers come once the watch
// is registered.
func TestWatch(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			c := tr.client(e.base)
			// Bad arguments: the stream ends at once with the error,
			// naming the field.
			for field, req := range map[string]*apiv1.WatchRequest{"buffer": {Buffer: -1}, "buffer ": {Buffer: 1 << 20}} {
				bad, err := c.Watch(ctx(t), connect.NewRequest(req))
				if err == nil {
					for bad.Receive() {
					}
					err = bad.Err()
					bad.Close()
				}
				if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.HasPrefix(connectMessage(err), strings.TrimSpace(field)+":") {
					t.Fatalf("Watch %v: %v, want INVALID_ARGUMENT naming %s", req, err, field)
				}
			}
			wctx, cancel := context.WithCancel(ctx(t))
			defer cancel()
			stream, err := c.Watch(wctx, connect.NewRequest(&apiv1.WatchRequest{Prefix: "iface/"}))
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Close()
			if _, err := stream.Conn(); err != nil {
				t.Fatal(err)
			}
			// The headers: the watch is registered.
			_ = stream.ResponseHeader()
			if _, err := c.Commit(ctx(t), connect.NewRequest(&apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/w", "w"), value("route/x", "x")}})); err != nil {
				t.Fatal(err)
			}
			for stream.Receive() {
				if s := stream.Msg().GetStatus(); s.GetKey() == "iface/w" && s.GetState() == "CONFIGURED" {
					return
				}
				if s := stream.Msg().GetStatus(); strings.HasPrefix(s.GetKey(), "route/") {
					t.Fatalf("a key outside the prefix: %v", s)
				}
			}
			t.Fatalf("the stream ended: %v", stream.Err())
		})
	}
}

// Server reflection: a client lists the service and resolves its file.
func TestReflection(t *testing.T) {
	e := newEnv(t, envOptions{})
	cl := grpcreflect.NewClient(h2c(), e.base, connect.WithGRPC())
	rs := cl.NewStream(ctx(t))
	defer rs.Close()
	names, err := rs.ListServices()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range names {
		found = found || n == apiv1connect.AgentServiceName
	}
	if !found {
		t.Fatalf("services %v", names)
	}
	fds, err := rs.FileContainingSymbol(apiv1connect.AgentServiceName)
	if err != nil || len(fds) == 0 {
		t.Fatalf("file of the service: %v %v", fds, err)
	}
}

// /readyz answers 503 until every source has loaded, with the detail;
// /healthz 200. Neither needs the token.
func TestProbes(t *testing.T) {
	e := newEnv(t, envOptions{notReady: true, token: "tok"})
	resp, err := h1().Get(e.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var r apiv1.ReadinessResponse
	if resp.StatusCode != 503 || protojson.Unmarshal(b, &r) != nil || r.GetReady() || len(r.GetSources()) != 3 {
		t.Fatalf("/readyz: %d %s", resp.StatusCode, b)
	}
	resp, err = h1().Get(e.base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
	resp, err = h1().Get(e.base + "/v1/readiness")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("/v1/readiness without the token: %d", resp.StatusCode)
	}
}

// A stream needs the token too.
func TestWatchToken(t *testing.T) {
	e := newEnv(t, envOptions{token: "tok"})
	for _, tr := range transports {
		s, err := tr.client(e.base).Watch(ctx(t), connect.NewRequest(&apiv1.WatchRequest{}))
		if err == nil {
			for s.Receive() {
			}
			err = s.Err()
			s.Close()
		}
		if connect.CodeOf(err) != connect.CodeUnauthenticated || !strings.HasPrefix(connectMessage(err), "authorization:") {
			t.Errorf("%s: Watch without the token: %v", tr.name, err)
		}
	}
}

// WatchFunc: the same stream for a caller of this program, behind the
// same token: refused without it; with it, an empty message once the
// watch is registered, then the changes of the keys under the prefix.
func TestWatchFunc(t *testing.T) {
	e := newEnv(t, envOptions{token: "tok"})
	err := e.svc.WatchFunc(ctx(t), connect.NewRequest(&apiv1.WatchRequest{}), func(*apiv1.WatchResponse) error { return nil })
	if connect.CodeOf(err) != connect.CodeUnauthenticated || !strings.HasPrefix(connectMessage(err), "authorization:") {
		t.Fatalf("WatchFunc without the token: %v", err)
	}
	req := connect.NewRequest(&apiv1.WatchRequest{Buffer: -1})
	req.Header().Set("Authorization", "Bearer tok")
	if err := e.svc.WatchFunc(ctx(t), req, func(*apiv1.WatchResponse) error { return nil }); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("WatchFunc of a bad buffer: %v", err)
	}
	req = connect.NewRequest(&apiv1.WatchRequest{Prefix: "iface/"})
	req.Header().Set("Authorization", "Bearer tok")
	msgs := make(chan *apiv1.WatchResponse, 64)
	stop := errors.New("stop")
	done := make(chan error, 1)
	go func() {
		done <- e.svc.WatchFunc(ctx(t), req, func(m *apiv1.WatchResponse) error {
			msgs <- m
			if m.GetStatus().GetKey() == "iface/w1" && m.GetStatus().GetState() == "CONFIGURED" {
				return stop
			}
			return nil
		})
	}()
	if first := <-msgs; first.GetEvent() != nil {
		t.Fatalf("the first message: %v, want none (registered)", first)
	}
	if err := e.file.Apply(ctx(t), nb.Update{Changes: []nb.Change{{Key: "route/w1", Value: kvtest.Value("x")}, {Key: "iface/w1", Value: kvtest.Value("up")}}}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, stop) {
		t.Fatalf("WatchFunc ended with %v, want the send's error", err)
	}
	for len(msgs) > 0 {
		if k := (<-msgs).GetStatus().GetKey(); k != "iface/w1" {
			t.Errorf("a change of %s, outside the prefix", k)
		}
	}
}
