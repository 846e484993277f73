package grpcapi_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/grpcapi"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/boltstore"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is an agent in a test: a scheduler over the in-memory southbound,
// a Mux with a file source (of higher priority) and the gRPC source, the
// gRPC server on a loopback listener and a client.
type env struct {
	sb     *kvtest.SB
	s      *scheduler.Scheduler
	mux    *nb.Mux
	file   nb.Sink
	srv    *grpcapi.Server
	client apiv1.AgentServiceClient
	addr   string
	stop   func()
}

type envOptions struct {
	extra     []grpc.ServerOption
	token     string
	dialToken string
	file      []nb.Change
}

func newEnv(t *testing.T, sb *kvtest.SB, dir string, o envOptions) *env {
	t.Helper()
	e := &env{sb: sb}
	var err error
	if e.s, err = scheduler.New(scheduler.WithLogger(quiet)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []kvtest.Config{{Name: "iface", KeyTemplate: "iface/{name}"}, {Name: "route", KeyTemplate: "route/{name}"}} {
		d, err := sb.Descriptor(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.s.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	store, err := boltstore.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	e.mux = nb.NewMux(e.s, nb.WithMuxLogger(quiet), nb.WithLoadDeadline(0), nb.WithStore(store), nb.WithPriorityOrder("file", "grpc"), nb.WithSources("grpc"))
	e.file = e.mux.Sink("file")
	if err := e.file.Apply(context.Background(), nb.Update{Resync: true, Changes: o.file}); err != nil {
		t.Fatal(err)
	}
	e.srv, err = grpcapi.NewServer(grpcapi.Config{
		Scheduler: e.s, Mux: e.mux, StateFile: filepath.Join(dir, "grpc.json"), Token: o.token, Logger: quiet,
		ServerOptions: o.extra,
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := grpcapi.Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = e.srv.Serve(ln) }()
	dial := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if o.dialToken != "" {
		dial = append(dial, grpc.WithPerRPCCredentials(grpcapi.TokenCredentials(o.dialToken, true)))
	}
	e.addr = ln.Addr().String()
	conn, err := grpc.NewClient(e.addr, dial...)
	if err != nil {
		t.Fatal(err)
	}
	e.client = apiv1.NewAgentServiceClient(conn)
	stopped := false
	e.stop = func() {
		if stopped {
			return
		}
		stopped = true
		conn.Close()
		e.srv.Close()
		e.mux.Close()
		_ = e.s.Close(context.Background())
		store.Close()
	}
	t.Cleanup(e.stop)
	return e
}

func value(key, text string) *apiv1.Value {
	a, err := anypb.New(kvtest.Value(text))
	if err != nil {
		panic(err)
	}
	return &apiv1.Value{Key: key, Value: &apiv1.Value_Any{Any: a}}
}

func jsonValue(key, text string) *apiv1.Value {
	return &apiv1.Value{Key: key, Value: &apiv1.Value_Json{Json: `"` + text + `"`}, JsonType: "google.protobuf.StringValue"}
}

func (e *env) commit(t *testing.T, req *apiv1.CommitRequest) *apiv1.CommitResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := e.client.Commit(ctx, req)
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return resp
}

func (e *env) want(t *testing.T, key, text string) {
	t.Helper()
	got, ok := e.sb.Get(key)
	if text == "" && ok {
		t.Fatalf("%s = %q in the southbound, want none", key, got)
	}
	if text != "" && got != text {
		t.Fatalf("%s = %q (present %v) in the southbound, want %q", key, got, ok, text)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func outcome(resp *apiv1.CommitResponse, key string) *apiv1.Outcome {
	for _, o := range resp.GetOutcomes() {
		if o.GetKey() == key {
			return o
		}
	}
	return nil
}

func TestCommitPlanWait(t *testing.T) {
	e := newEnv(t, kvtest.NewSB(), t.TempDir(), envOptions{file: []nb.Change{{Key: "iface/f", Value: kvtest.Value("from-file")}}})

	// Plan only: the plan, nothing applied.
	plan := e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a1")}, PlanOnly: true})
	if plan.GetSeq() != 0 || len(plan.GetPlanned()) != 1 || plan.GetPlanned()[0].GetKey() != "iface/a" || plan.GetPlanned()[0].GetKind() != "CREATE" {
		t.Fatalf("plan: %v", plan)
	}
	e.want(t, "iface/a", "")

	// A commit, values as Any and as JSON; the key the file source
	// sets stays the file's.
	resp := e.commit(t, &apiv1.CommitRequest{
		Values:      []*apiv1.Value{value("iface/a", "a1"), jsonValue("route/r", "dep:iface/a"), value("iface/f", "from-grpc")},
		Description: "first",
	})
	if resp.GetSeq() == 0 || len(resp.GetExecuted()) != 2 {
		t.Fatalf("commit: %v", resp)
	}
	e.want(t, "iface/a", "a1")
	e.want(t, "route/r", "dep:iface/a")
	e.want(t, "iface/f", "from-file")
	if o := outcome(resp, "iface/f"); o.GetOwner() != "file" || o.GetState() != "CONFIGURED" {
		t.Fatalf("iface/f: %v", o)
	}
	if o := outcome(resp, "iface/a"); o.GetOwner() != "grpc" || o.GetState() != "CONFIGURED" {
		t.Fatalf("iface/a: %v", o)
	}
	rec, err := e.client.History(context.Background(), &apiv1.HistoryRequest{Seq: resp.GetSeq()})
	if err != nil || !strings.Contains(rec.GetRecords()[0].GetDescription(), "source grpc: first") {
		t.Fatalf("history: %v %v", rec, err)
	}

	// Wait: a value whose dependency is missing is not settled when the
	// wait ends, and says why.
	resp = e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("route/p", "dep:iface/p")}, Wait: true, WaitTimeout: durationpb.New(100 * time.Millisecond)})
	if o := outcome(resp, "route/p"); resp.GetSettled() || o.GetState() != "PENDING" || !strings.Contains(strings.Join(o.GetWhyPending(), "\n"), "iface/p") {
		t.Fatalf("pending: %v", resp)
	}
	// A failure retried: the wait ends once the retry has succeeded.
	e.sb.Fail("iface/p", kvtest.Failure{Op: "create"})
	resp = e.commit(t, &apiv1.CommitRequest{
		Values: []*apiv1.Value{value("iface/p", "p")}, Wait: true,
		Retry: &apiv1.RetryPolicy{Period: durationpb.New(50 * time.Millisecond), MaxAttempts: 3},
	})
	if !resp.GetSettled() || outcome(resp, "iface/p").GetState() != "CONFIGURED" {
		t.Fatalf("retried: %v", resp)
	}
	e.want(t, "route/p", "dep:iface/p")

	// Deletes by key.
	resp = e.commit(t, &apiv1.CommitRequest{Deletes: []string{"route/r"}})
	if o := outcome(resp, "route/r"); o.GetState() != "NONEXISTENT" && o.GetState() != "REMOVED" {
		t.Fatalf("delete: %v", o)
	}
	e.want(t, "route/r", "")

	// The reads.
	st, err := e.client.Status(context.Background(), &apiv1.StatusRequest{Owner: "file"})
	if err != nil || len(st.GetStatuses()) != 1 || st.GetStatuses()[0].GetKey() != "iface/f" || st.GetStatuses()[0].GetOverridden()[0] != "grpc" {
		t.Fatalf("status by owner: %v %v", st, err)
	}
	st, err = e.client.Status(context.Background(), &apiv1.StatusRequest{Descriptor_: "route"})
	if err != nil || len(st.GetStatuses()) != 1 {
		t.Fatalf("status by descriptor: %v %v", st, err)
	}
	for _, view := range []apiv1.View{apiv1.View_VIEW_INTENDED, apiv1.View_VIEW_SCHEDULER, apiv1.View_VIEW_SOUTHBOUND} {
		d, err := e.client.Dump(context.Background(), &apiv1.DumpRequest{View: view})
		if err != nil || len(d.GetItems()) != 4 {
			t.Fatalf("dump %s: %v %v", view, d, err)
		}
	}
	tl, err := e.client.Timeline(context.Background(), &apiv1.TimelineRequest{Key: "route/r"})
	if err != nil || len(tl.GetEntries()) != 2 {
		t.Fatalf("timeline: %v %v", tl, err)
	}
	ms, err := e.client.Models(context.Background(), &apiv1.ModelsRequest{})
	if err != nil || len(ms.GetModels()) != 2 || ms.GetModels()[0].GetKeyTemplate() != "iface/{name}" || ms.GetModels()[0].GetMessage() != "google.protobuf.StringValue" || ms.GetModels()[0].GetFields()[0].GetName() != "value" {
		t.Fatalf("models: %v %v", ms, err)
	}
	g, err := e.client.Graph(context.Background(), &apiv1.GraphRequest{Format: apiv1.GraphFormat_GRAPH_FORMAT_DOT})
	if err != nil || !strings.Contains(string(g.GetData()), `"iface/a"`) {
		t.Fatalf("graph: %v", err)
	}
	g, err = e.client.Graph(context.Background(), &apiv1.GraphRequest{Format: apiv1.GraphFormat_GRAPH_FORMAT_SVG})
	if err != nil || !strings.Contains(string(g.GetData()), "<svg") {
		t.Fatalf("graph svg: %v", err)
	}
}

func TestConfirmedCommit(t *testing.T) {
	e := newEnv(t, kvtest.NewSB(), t.TempDir(), envOptions{})
	e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a1")}})

	// Confirmed in time: it stays. (The window is long: a confirm that a
	// loaded machine delays must not find it rolled back; the rollback of
	// a commit not confirmed is the 200 ms case below.)
	resp := e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a2"), value("iface/b", "b")}, ConfirmWithin: durationpb.New(time.Hour)})
	if resp.GetConfirmDeadline() == nil {
		t.Fatalf("no deadline: %v", resp)
	}
	// Another commit waits for the confirmation.
	_, err := e.client.Commit(context.Background(), &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/c", "c")}})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("commit while one awaits confirmation: %v", err)
	}
	if _, err := e.client.Confirm(context.Background(), &apiv1.ConfirmRequest{Seq: resp.GetSeq()}); err != nil {
		t.Fatal(err)
	}
	// Confirmed, nothing awaits confirmation any more: a commit goes
	// through, and the confirmed values stand.
	e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/x", "x")}})
	e.want(t, "iface/a", "a2")
	e.want(t, "iface/b", "b")

	// Not confirmed: rolled back to the values before it, in a
	// transaction that says so.
	resp = e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a3"), value("iface/c", "c")}, Deletes: []string{"iface/b"}, ConfirmWithin: durationpb.New(200 * time.Millisecond)})
	// What the commit did is read from its outcomes, not the southbound:
	// the rollback may have begun already, however slow the host.
	for key, want := range map[string]string{"iface/a": "CONFIGURED", "iface/b": "NONEXISTENT", "iface/c": "CONFIGURED"} {
		if got := outcome(resp, key).GetState(); got != want {
			t.Fatalf("commit awaiting confirmation: %s %s, want %s", key, got, want)
		}
	}
	eventually(t, "the rollback", func() bool { v, _ := e.sb.Get("iface/a"); return v == "a2" })
	e.want(t, "iface/b", "b")
	e.want(t, "iface/c", "")
	h, _ := e.client.History(context.Background(), &apiv1.HistoryRequest{})
	last := h.GetRecords()[len(h.GetRecords())-1]
	if want := "rollback of commit " + itoa(resp.GetSeq()) + ": not confirmed within 200ms"; !strings.Contains(last.GetDescription(), want) {
		t.Fatalf("rollback record %q, want it to say %q", last.GetDescription(), want)
	}
	if _, err := e.client.Confirm(context.Background(), &apiv1.ConfirmRequest{Seq: resp.GetSeq()}); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "seq:") {
		t.Fatalf("confirm after the rollback: %v", err)
	}

	// Cancelled: rolled back at once.
	resp = e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/d", "d")}, ConfirmWithin: durationpb.New(time.Hour)})
	e.want(t, "iface/d", "d")
	c, err := e.client.Cancel(context.Background(), &apiv1.CancelRequest{Seq: resp.GetSeq()})
	if err != nil || c.GetSeq() <= resp.GetSeq() {
		t.Fatalf("cancel: %v %v", c, err)
	}
	e.want(t, "iface/d", "")
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

func TestConfirmedCommitAcrossRestart(t *testing.T) {
	sb, dir := kvtest.NewSB(), t.TempDir()
	e := newEnv(t, sb, dir, envOptions{})
	e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a1")}})
	resp := e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a2"), value("iface/b", "b")}, ConfirmWithin: durationpb.New(time.Hour)})
	e.want(t, "iface/b", "b")
	e.stop()

	// The agent starts again over the same state: the commit is rolled
	// back by the startup.
	e = newEnv(t, sb, dir, envOptions{})
	e.want(t, "iface/a", "a1")
	e.want(t, "iface/b", "")
	h, err := e.client.History(context.Background(), &apiv1.HistoryRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if d, want := h.GetRecords()[0].GetDescription(), "source grpc: rollback of commit "+itoa(resp.GetSeq())+", which awaited confirmation when the agent stopped"; !strings.Contains(d, want) {
		t.Fatalf("startup %q, want it to say %q", d, want)
	}
	if _, err := e.client.Confirm(context.Background(), &apiv1.ConfirmRequest{Seq: resp.GetSeq()}); status.Code(err) != codes.NotFound {
		t.Fatalf("confirm after the restart: %v", err)
	}
	// The source's state survived: a new commit adds to it.
	e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/c", "c")}})
	e.want(t, "iface/a", "a1")
	e.want(t, "iface/c", "c")
}

func TestRollbackTo(t *testing.T) {
	e := newEnv(t, kvtest.NewSB(), t.TempDir(), envOptions{})
	r1 := e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a1")}})
	e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a2"), value("iface/b", "b")}})
	// A transaction of another source in between: it is not undone.
	if err := e.file.Apply(context.Background(), nb.Update{Changes: []nb.Change{{Key: "iface/f", Value: kvtest.Value("f")}}}); err != nil {
		t.Fatal(err)
	}
	resp, err := e.client.RollbackTo(context.Background(), &apiv1.RollbackToRequest{Seq: r1.GetSeq()})
	if err != nil {
		t.Fatal(err)
	}
	e.want(t, "iface/a", "a1")
	e.want(t, "iface/b", "")
	e.want(t, "iface/f", "f")
	h, _ := e.client.History(context.Background(), &apiv1.HistoryRequest{Seq: resp.GetResult().GetSeq()})
	if d := h.GetRecords()[0].GetDescription(); !strings.Contains(d, "rollback to the state after transaction "+itoa(r1.GetSeq())) {
		t.Fatalf("description %q", d)
	}
	// Back to before the source's first transaction: nothing.
	if _, err := e.client.RollbackTo(context.Background(), &apiv1.RollbackToRequest{Seq: r1.GetSeq() - 1}); err != nil {
		t.Fatal(err)
	}
	e.want(t, "iface/a", "")
}

func TestBadRequests(t *testing.T) {
	e := newEnv(t, kvtest.NewSB(), t.TempDir(), envOptions{})
	ctx := context.Background()
	wrong, _ := anypb.New(wrapperspb.Int32(1))
	commit := func(req *apiv1.CommitRequest) error { _, err := e.client.Commit(ctx, req); return err }
	for _, c := range []struct {
		name string
		err  error
		code codes.Code
		msg  string
	}{
		{"unknown key", commit(&apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a"), value("x", "x")}}), codes.InvalidArgument, `values[1].key: "x" is not a key of any model`},
		{"empty key", commit(&apiv1.CommitRequest{Values: []*apiv1.Value{value("", "x")}}), codes.InvalidArgument, "values[0].key: empty"},
		{"no value", commit(&apiv1.CommitRequest{Values: []*apiv1.Value{{Key: "iface/a"}}}), codes.InvalidArgument, "values[0]: no value"},
		{"wrong type", commit(&apiv1.CommitRequest{Values: []*apiv1.Value{{Key: "iface/a", Value: &apiv1.Value_Any{Any: wrong}}}}), codes.InvalidArgument, "values[0].any: a google.protobuf.Int32Value"},
		{"bad json", commit(&apiv1.CommitRequest{Values: []*apiv1.Value{{Key: "iface/a", Value: &apiv1.Value_Json{Json: "{"}}}}), codes.InvalidArgument, "values[0].json: not a google.protobuf.StringValue"},
		{"json type", commit(&apiv1.CommitRequest{Values: []*apiv1.Value{{Key: "iface/a", Value: &apiv1.Value_Json{Json: `"a"`}, JsonType: "x.Y"}}}), codes.InvalidArgument, "values[0].json_type"},
		{"twice", commit(&apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a")}, Deletes: []string{"iface/a"}}), codes.InvalidArgument, `deletes[0]: "iface/a" is given twice`},
		{"unknown delete", commit(&apiv1.CommitRequest{Deletes: []string{"y/z"}}), codes.InvalidArgument, `deletes[0]: "y/z" is not a key of any model`},
		{"retry", commit(&apiv1.CommitRequest{Retry: &apiv1.RetryPolicy{MaxAttempts: -1}}), codes.InvalidArgument, "retry.max_attempts"},
		{"confirm within", commit(&apiv1.CommitRequest{ConfirmWithin: durationpb.New(-time.Second)}), codes.InvalidArgument, "confirm_within"},
		{"downstream values", commit(&apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a")}, Resync: apiv1.ResyncKind_RESYNC_KIND_DOWNSTREAM}), codes.InvalidArgument, "values, deletes"},
		{"confirm none", func() error { _, err := e.client.Confirm(ctx, &apiv1.ConfirmRequest{Seq: 7}); return err }(), codes.NotFound, "seq: commit 7 does not await confirmation"},
		{"cancel zero", func() error { _, err := e.client.Cancel(ctx, &apiv1.CancelRequest{}); return err }(), codes.InvalidArgument, "seq: required"},
		{"rollback future", func() error { _, err := e.client.RollbackTo(ctx, &apiv1.RollbackToRequest{Seq: 999}); return err }(), codes.NotFound, "seq: transaction 999 has not run"},
		{"status selectors", func() error { _, err := e.client.Status(ctx, &apiv1.StatusRequest{Key: "a", Prefix: "b"}); return err }(), codes.InvalidArgument, "give one at most"},
		{"status key", func() error { _, err := e.client.Status(ctx, &apiv1.StatusRequest{Key: "iface/none"}); return err }(), codes.NotFound, `key: "iface/none" is not known`},
		{"dump view", func() error { _, err := e.client.Dump(ctx, &apiv1.DumpRequest{}); return err }(), codes.InvalidArgument, "view:"},
		{"dump descriptor", func() error {
			_, err := e.client.Dump(ctx, &apiv1.DumpRequest{View: apiv1.View_VIEW_INTENDED, Descriptor_: "nope"})
			return err
		}(), codes.NotFound, "descriptor:"},
		{"history seq", func() error { _, err := e.client.History(ctx, &apiv1.HistoryRequest{Seq: 999}); return err }(), codes.NotFound, "seq:"},
		{"timeline key", func() error { _, err := e.client.Timeline(ctx, &apiv1.TimelineRequest{}); return err }(), codes.InvalidArgument, "key: empty"},
		{"timeline unknown key", func() error { _, err := e.client.Timeline(ctx, &apiv1.TimelineRequest{Key: "no/such"}); return err }(), codes.NotFound, `key: "no/such" has no value`},
		{"graph seq", func() error { _, err := e.client.Graph(ctx, &apiv1.GraphRequest{Seq: 999}); return err }(), codes.NotFound, "seq:"},
	} {
		if status.Code(c.err) != c.code || !strings.Contains(status.Convert(c.err).Message(), c.msg) {
			t.Errorf("%s: %v, want %s naming %q", c.name, c.err, c.code, c.msg)
		}
	}
	e.want(t, "iface/a", "")
}

func TestToken(t *testing.T) {
	e := newEnv(t, kvtest.NewSB(), t.TempDir(), envOptions{token: "s3cret"})
	_, err := e.client.Models(context.Background(), &apiv1.ModelsRequest{})
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("no token: %v", err)
	}
	w, err := e.client.Watch(context.Background(), &apiv1.WatchRequest{})
	if err == nil {
		_, err = w.Recv()
	}
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("watch with no token: %v", err)
	}
	e2 := newEnv(t, kvtest.NewSB(), t.TempDir(), envOptions{token: "s3cret", dialToken: "wrong"})
	if _, err := e2.client.Models(context.Background(), &apiv1.ModelsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("wrong token: %v", err)
	}
	e3 := newEnv(t, kvtest.NewSB(), t.TempDir(), envOptions{token: "s3cret", dialToken: "s3cret"})
	if _, err := e3.client.Models(context.Background(), &apiv1.ModelsRequest{}); err != nil {
		t.Fatalf("right token: %v", err)
	}
}

// TestPanicRecovered: a panic in a call (here, an interceptor after the
// server's own) is an Internal status, and the server goes on.
func TestPanicRecovered(t *testing.T) {
	boom := grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if info.FullMethod == apiv1.AgentService_Models_FullMethodName {
			panic("boom")
		}
		return h(ctx, req)
	})
	e := newEnv(t, kvtest.NewSB(), t.TempDir(), envOptions{extra: []grpc.ServerOption{boom}})
	if _, err := e.client.Models(context.Background(), &apiv1.ModelsRequest{}); status.Code(err) != codes.Internal {
		t.Fatalf("a panicking call: %v", err)
	}
	if _, err := e.client.History(context.Background(), &apiv1.HistoryRequest{}); err != nil {
		t.Fatalf("after the panic: %v", err)
	}
}

func TestListenRefusesExposedWithoutTLS(t *testing.T) {
	if _, err := grpcapi.Listen("0.0.0.0:0", false); err == nil {
		t.Fatal("listening beyond the loopback without TLS and a token")
	}
	dir := t.TempDir()
	for range 2 { // the second time over the socket the first left
		ln, err := grpcapi.Listen("unix:"+filepath.Join(dir, "grpc.sock"), false)
		if err != nil {
			t.Fatal(err)
		}
		if l, ok := ln.(*net.UnixListener); ok {
			l.SetUnlinkOnClose(false)
		}
		ln.Close()
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := grpcapi.Listen(filepath.Join(dir, "file"), false); err == nil {
		t.Fatal("a file that is not a socket was replaced")
	}
}

func TestWatchSlowClient(t *testing.T) {
	e := newEnv(t, kvtest.NewSB(), t.TempDir(), envOptions{})
	// The watcher's own connection, with fixed flow-control windows (no
	// growth), so that a client that does not read holds the server's
	// sends back soon.
	conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(1<<16), grpc.WithInitialConnWindowSize(1<<16))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := apiv1.NewAgentServiceClient(conn).Watch(ctx, &apiv1.WatchRequest{Prefix: "iface/", Buffer: 4})
	if err != nil {
		t.Fatal(err)
	}
	// The header comes once the watch is registered: what is committed
	// after it is seen.
	if _, err := w.Header(); err != nil {
		t.Fatal(err)
	}
	// The first update arrives: the stream is set up.
	e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "start")}})
	first, err := w.Recv()
	if err != nil || first.GetStatus().GetKey() != "iface/a" {
		t.Fatalf("first: %v %v", first, err)
	}
	// The client reads nothing while many large updates come: the
	// commits are not slowed (each one takes no longer than without a
	// watcher), the stream drops updates.
	big := strings.Repeat("x", 64<<10)
	const n = 30
	// Each commit on a watched key is timed beside the same commit on a
	// key nobody watches (the baseline), interleaved so that the load of
	// the machine weighs on both alike.
	var watched, unwatched time.Duration
	timed := func(key string, i int) time.Duration {
		start := time.Now()
		e.commit(t, &apiv1.CommitRequest{Values: []*apiv1.Value{value(key, big+itoa(uint64(i)))}})
		return time.Since(start)
	}
	for i := range n {
		unwatched += timed("route/a", i)
		watched += timed("iface/a", i)
	}
	if watched > 3*unwatched+2*time.Second {
		t.Fatalf("%d commits took %s with a slow watcher, %s without", n, watched, unwatched)
	}
	t.Logf("%d commits: %s with a slow watcher, %s without", n, watched, unwatched)
	// Reading again: somewhere the stream says updates were lost, and a
	// re-read gives the last value.
	lost := false
	for !lost {
		m, err := w.Recv()
		if err != nil {
			t.Fatal(err)
		}
		lost = m.GetLostUpdates() > 0
	}
	st, err := e.client.Status(context.Background(), &apiv1.StatusRequest{Key: "iface/a"})
	if err != nil {
		t.Fatal(err)
	}
	var v wrapperspb.StringValue
	if err := st.GetStatuses()[0].GetValue().UnmarshalTo(&v); err != nil || v.GetValue() != big+itoa(n-1) {
		t.Fatalf("re-read: %v", err)
	}
	cancel()
	if _, err := w.Recv(); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("after cancel: %v", err)
	}
}
