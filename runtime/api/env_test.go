package api_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/anypb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1/apiv1connect"
	"github.com/kvdescriptor/kvdescriptor/runtime/api"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/boltstore"
	nbfile "github.com/kvdescriptor/kvdescriptor/runtime/nb/file"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is an agent in a test: a scheduler over the in-memory southbound
// with the descriptors iface and route, a Mux with a file source (of
// higher priority) and the API's source, the service on a Server of the
// loopback.
type env struct {
	sb     *kvtest.SB
	s      *scheduler.Scheduler
	mux    *nb.Mux
	file   nb.Sink
	remote *nb.Remote
	svc    *api.Service
	srv    *api.Server
	base   string
	level  *slog.LevelVar
}

type envOptions struct {
	token  string
	file   []nb.Change
	limits api.Limits
	tls    *tls.Config
	addr   string
	dir    string
	// planFile gives the service a file source to plan files against.
	planFile bool
	// noStartup leaves a source that never loads: not ready.
	notReady bool
	// sopts are more options of the scheduler.
	sopts []scheduler.Option
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	e := &env{sb: kvtest.NewSB(), level: new(slog.LevelVar)}
	var err error
	if e.s, err = scheduler.New(append([]scheduler.Option{scheduler.WithLogger(quiet)}, o.sopts...)...); err != nil {
		t.Fatal(err)
	}
	for _, c := range []kvtest.Config{{Name: "iface", KeyTemplate: "iface/{name}"}, {Name: "route", KeyTemplate: "route/{name}"}} {
		d, err := e.sb.Descriptor(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.s.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	dir := o.dir
	if dir == "" {
		dir = t.TempDir()
	}
	store, err := boltstore.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	sources := []string{"api"}
	if o.notReady {
		sources = append(sources, "late")
	}
	e.mux = nb.NewMux(e.s, nb.WithMuxLogger(quiet), nb.WithLoadDeadline(0), nb.WithStore(store), nb.WithPriorityOrder("file", "api"), nb.WithSources(sources...))
	e.file = e.mux.Sink("file")
	if err := e.file.Apply(context.Background(), nb.Update{Resync: true, Changes: o.file}); err != nil {
		t.Fatal(err)
	}
	if e.remote, err = nb.NewRemote(e.mux, nil2models(e.s), nb.RemoteConfig{Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	deps := api.Deps{Scheduler: e.s, Mux: e.mux, Remote: e.remote, Token: o.token, LogLevel: e.level, Logger: quiet,
		Info: api.Info{Name: "conf-agent", Version: "v9.8.7", Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Config: "name: conf-agent\n"}}
	if o.planFile {
		src := nbfile.New(filepath.Join(dir, "config.yaml"), nb.SchedulerModels(e.s))
		deps.PlanFile = func(ctx context.Context, name string, data []byte) (*scheduler.Result, error) {
			return src.Plan(ctx, e.mux, name, data)
		}
	}
	e.svc, err = api.New(deps)
	if err != nil {
		t.Fatal(err)
	}
	addr := o.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	e.srv, err = api.NewServer(e.svc, api.ServerConfig{Address: addr, TLS: o.tls, Limits: o.limits, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = e.srv.Serve() }()
	scheme := "http://"
	if o.tls != nil {
		scheme = "https://"
	}
	e.base = scheme + e.srv.Addr()
	t.Cleanup(func() {
		e.srv.Close()
		<-served
		e.svc.Close()
		e.remote.Close()
		e.mux.Close()
		_ = e.s.Close(context.Background())
		store.Close()
	})
	return e
}

func nil2models(s *scheduler.Scheduler) nb.Models { return nb.SchedulerModels(s) }

// h2c is an HTTP client that speaks HTTP/2 without TLS (gRPC), h1 one that
// speaks HTTP/1.1 only.
func h2c() *http.Client {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: p}, Timeout: 30 * time.Second}
}

func h1() *http.Client {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	return &http.Client{Transport: &http.Transport{Protocols: p}, Timeout: 30 * time.Second}
}

// transports are the RPC transports of a Service, each as a client of
// the generated Connect code.
var transports = []struct {
	name   string
	client func(base string, opts ...connect.ClientOption) apiv1connect.AgentServiceClient
}{
	{"grpc", func(base string, opts ...connect.ClientOption) apiv1connect.AgentServiceClient {
		return apiv1connect.NewAgentServiceClient(h2c(), base, append(opts, connect.WithGRPC())...)
	}},
	{"grpc-web", func(base string, opts ...connect.ClientOption) apiv1connect.AgentServiceClient {
		return apiv1connect.NewAgentServiceClient(h1(), base, append(opts, connect.WithGRPCWeb())...)
	}},
	{"connect-json", func(base string, opts ...connect.ClientOption) apiv1connect.AgentServiceClient {
		return apiv1connect.NewAgentServiceClient(h1(), base, append(opts, connect.WithProtoJSON())...)
	}},
	{"connect-proto", func(base string, opts ...connect.ClientOption) apiv1connect.AgentServiceClient {
		return apiv1connect.NewAgentServiceClient(h2c(), base, opts...)
	}},
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

func outcome(resp *apiv1.CommitResponse, key string) *apiv1.Outcome {
	for _, o := range resp.GetOutcomes() {
		if o.GetKey() == key {
			return o
		}
	}
	return nil
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
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

type ctxT = context.Context
