package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	"connectrpc.com/vanguard"

	"github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1/apiv1connect"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// Deps is what the service serves.
type Deps struct {
	// Scheduler is read; Mux merges the sources; Remote is the API's own
	// source (nb.NewRemote over Mux). All three required.
	Scheduler *scheduler.Scheduler
	Mux       *nb.Mux
	Remote    *nb.Remote
	// Models resolves keys to their models (default
	// nb.SchedulerModels(Scheduler)).
	Models nb.Models
	// Token, when set, is required of every call (health and readiness
	// probes excepted) as "Authorization: Bearer <token>", compared in
	// constant time.
	Token string
	// LogLevel is the agent's log level, which SetLogLevel changes
	// (without it, SetLogLevel is UNIMPLEMENTED).
	LogLevel *slog.LevelVar
	// PlanFile plans what the file source would apply if its file held
	// data: the file source's own apply, in a dry run (nbfile.Source.Plan
	// over the Mux); its parse errors are *nbfile.ParseError. Without it,
	// a Plan of a file is UNIMPLEMENTED.
	PlanFile func(ctx context.Context, name string, data []byte) (*scheduler.Result, error)
	// Info describes the agent, for AgentInfo (its zero value: an
	// agent with no name, version or configuration said).
	Info Info
	// MaxMessageBytes bounds a request message, and so a request body
	// (default DefaultMaxMessageBytes).
	MaxMessageBytes int64
	// Logger logs recovered panics (default slog.Default()).
	Logger *slog.Logger
}

// Service is the one implementation of apiv1connect.AgentServiceHandler.
type Service struct {
	d      Deps
	s      *scheduler.Scheduler
	mux    *nb.Mux
	remote *nb.Remote
	models nb.Models
	logger *slog.Logger
	// done ends the Watch streams at Close.
	done      chan struct{}
	closeOnce sync.Once
}

var _ apiv1connect.AgentServiceHandler = (*Service)(nil)

// New returns the service.
func New(d Deps) (*Service, error) {
	if d.Scheduler == nil || d.Mux == nil || d.Remote == nil {
		return nil, errors.New("api: Deps.Scheduler, Mux and Remote are required")
	}
	if d.Models == nil {
		d.Models = nb.SchedulerModels(d.Scheduler)
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.MaxMessageBytes <= 0 {
		d.MaxMessageBytes = DefaultMaxMessageBytes
	}
	return &Service{d: d, s: d.Scheduler, mux: d.Mux, remote: d.Remote, models: d.Models, logger: d.Logger, done: make(chan struct{})}, nil
}

// Close ends the Watch streams. The Remote is the caller's to close.
func (svc *Service) Close() {
	svc.closeOnce.Do(func() { close(svc.done) })
}

// Handler returns the one handler of every transport: gRPC, gRPC-Web and
// Connect (its JSON and protobuf forms) at /kvdescriptor.api.v1.AgentService/,
// REST at the paths of the google.api.http rules of api.proto (transcoded
// by vanguard), gRPC server reflection, and the probes /healthz and
// /readyz (503 until ready). It checks the token; the transport's limits
// (timeouts, Origin and Host) are Server's.
func (svc *Service) Handler() (http.Handler, error) {
	opts := []connect.HandlerOption{
		connect.WithInterceptors(svc.auth(), recoverer{svc.logger}),
		connect.WithReadMaxBytes(int(svc.d.MaxMessageBytes)),
		connect.WithSendMaxBytes(int(svc.d.MaxMessageBytes)),
	}
	path, h := apiv1connect.NewAgentServiceHandler(svc, opts...)
	mux := http.NewServeMux()
	reflector := grpcreflect.NewStaticReflector(apiv1connect.AgentServiceName)
	mux.Handle(grpcreflect.NewHandlerV1(reflector))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", svc.readyz)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeRESTError(w, http.StatusNotFound, connect.CodeNotFound, fmt.Sprintf("path: no endpoint %s %s (the REST paths are in api.proto's google.api.http rules; docs/api.md)", r.Method, r.URL.Path))
	})
	limit := uint32(min(svc.d.MaxMessageBytes, 1<<32-1))
	tc, err := vanguard.NewTranscoder(
		[]*vanguard.Service{vanguard.NewService(path, h)},
		vanguard.WithUnknownHandler(mux),
		vanguard.WithDefaultServiceOptions(vanguard.WithMaxMessageBufferBytes(limit)),
	)
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	return restParams(tc), nil
}

// Authorize checks the token of a request's header as every call of the
// service does (nil without a token; else the bearer token, compared in
// constant time): for a handler served beside the service, such as the
// operator page (runtime/ui). Its error is UNAUTHENTICATED naming
// authorization.
func (svc *Service) Authorize(h http.Header) error {
	return authInterceptor{token: svc.d.Token}.check(h)
}

// auth requires the token of every call, in constant time.
func (svc *Service) auth() connect.Interceptor {
	return authInterceptor{token: svc.d.Token}
}

type authInterceptor struct{ token string }

func (a authInterceptor) check(h http.Header) error {
	if a.token == "" {
		return nil
	}
	got, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if ok && subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) == 1 {
		return nil
	}
	msg := "authorization: a bearer token is required (Authorization: Bearer <token>)"
	if ok {
		msg = "authorization: the bearer token is wrong"
	}
	return connect.NewError(connect.CodeUnauthenticated, errors.New(msg))
}

func (a authInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if err := a.check(req.Header()); err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
}

func (a authInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (a authInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		if err := a.check(conn.RequestHeader()); err != nil {
			return err
		}
		return next(ctx, conn)
	}
}

// recoverer turns a panic of a call into INTERNAL, and logs it.
type recoverer struct{ logger *slog.Logger }

func (r recoverer) recovered(procedure string, p any) error {
	r.logger.Error("api: panic in a call", "procedure", procedure, "panic", p, "stack", string(debug.Stack()))
	return connect.NewError(connect.CodeInternal, fmt.Errorf("internal error in %s (logged)", procedure))
}

func (r recoverer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (resp connect.AnyResponse, err error) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				resp, err = nil, r.recovered(req.Spec().Procedure, p)
			}
		}()
		return next(ctx, req)
	}
}

func (r recoverer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (r recoverer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) (err error) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				err = r.recovered(conn.Spec().Procedure, p)
			}
		}()
		return next(ctx, conn)
	}
}

// Guard returns h behind the service's token (when it has one): a
// request without it is refused, 401 with the error as JSON, as REST's
// are. For what a Server mounts beside the service (the agent's metrics).
func (svc *Service) Guard(h http.Handler) http.Handler {
	a := authInterceptor{token: svc.d.Token}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := a.check(r.Header); err != nil {
			var ce *connect.Error
			msg := err.Error()
			if errors.As(err, &ce) {
				msg = ce.Message()
			}
			writeRESTError(w, http.StatusUnauthorized, connect.CodeUnauthenticated, msg)
			return
		}
		h.ServeHTTP(w, r)
	})
}
