package grpcapi

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// DefaultSource is the owner of the values set over gRPC.
const DefaultSource = "grpc"

// DefaultStatesKept is how many past states of the source RollbackTo can
// go back to, by default.
const DefaultStatesKept = 100

// Config configures a Server.
type Config struct {
	// Scheduler is read; Mux applies the source's updates. Both required.
	Scheduler *scheduler.Scheduler
	Mux       *nb.Mux
	// Source names the gRPC source (default DefaultSource).
	Source string
	// Models resolves keys to their models (default
	// nb.SchedulerModels(Scheduler)).
	Models nb.Models
	// StateFile keeps the source's state and a commit awaiting
	// confirmation across restarts ("" keeps them in memory only).
	StateFile string
	// StatesKept bounds the past states kept for RollbackTo (default
	// DefaultStatesKept).
	StatesKept int
	// Token, when set, is required of every call as the metadata
	// "authorization: Bearer <token>".
	Token string
	// TLS, when set, serves TLS.
	TLS *tls.Config
	// Logger logs rollbacks and recovered panics (default slog.Default()).
	Logger *slog.Logger
	// ServerOptions are added to the grpc.Server's.
	ServerOptions []grpc.ServerOption
}

// Server is the gRPC API server.
type Server struct {
	apiv1.UnimplementedAgentServiceServer

	cfg    Config
	s      *scheduler.Scheduler
	mux    *nb.Mux
	models nb.Models
	logger *slog.Logger
	grpc   *grpc.Server

	// mu serialises the source's changes (commits, confirmations,
	// rollbacks) and guards st and timer.
	mu    sync.Mutex
	st    *state
	timer *time.Timer
	// ctx ends at Close, stopping the confirmation timer's rollback.
	ctx    context.Context
	cancel context.CancelFunc
}

// NewServer returns a server with the service registered on a new
// grpc.Server. It loads the state file and gives the Mux the source's
// initial load: the source's state, or, when a commit was awaiting
// confirmation, the state before it (the commit is rolled back). Make the
// Mux's other sources known first (nb.WithSources, or their Sink): when
// the gRPC source is the last one to load, the startup resync runs here.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Scheduler == nil || cfg.Mux == nil {
		return nil, errors.New("grpcapi: Config.Scheduler and Config.Mux are required")
	}
	if cfg.Source == "" {
		cfg.Source = DefaultSource
	}
	if cfg.Models == nil {
		cfg.Models = nb.SchedulerModels(cfg.Scheduler)
	}
	if cfg.StatesKept <= 0 {
		cfg.StatesKept = DefaultStatesKept
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	srv := &Server{cfg: cfg, s: cfg.Scheduler, mux: cfg.Mux, models: cfg.Models, logger: cfg.Logger}
	srv.ctx, srv.cancel = context.WithCancel(context.Background())
	st, err := loadState(cfg.StateFile, cfg.Models)
	if err != nil {
		return nil, err
	}
	srv.st = st
	if err := srv.start(); err != nil {
		return nil, err
	}
	opts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(srv.recoverUnary, srv.authUnary),
		grpc.ChainStreamInterceptor(srv.recoverStream, srv.authStream),
	}
	if cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.TLS)))
	}
	opts = append(opts, cfg.ServerOptions...)
	srv.grpc = grpc.NewServer(opts...)
	apiv1.RegisterAgentServiceServer(srv.grpc, srv)
	return srv, nil
}

// GRPC returns the grpc.Server the service is registered on.
func (srv *Server) GRPC() *grpc.Server { return srv.grpc }

// Serve serves on ln until Close.
func (srv *Server) Serve(ln net.Listener) error { return srv.grpc.Serve(ln) }

// Close stops serving (the calls in flight end) and stops the
// confirmation timer; a commit still awaiting confirmation stays recorded
// in the state file, and is rolled back by the next server.
func (srv *Server) Close() {
	srv.cancel()
	srv.mu.Lock()
	if srv.timer != nil {
		srv.timer.Stop()
	}
	srv.mu.Unlock()
	srv.grpc.Stop()
}

// Listen listens on addr: "unix:PATH" (or a path) for a Unix socket, made
// accessible to its owner only, else a TCP address. A TCP address beyond
// the loopback needs TLS and a token (exposed says whether they are
// configured).
func Listen(addr string, exposed bool) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok || strings.HasPrefix(addr, "/") {
		if !ok {
			path = addr
		}
		// A socket left by a previous run is removed; any other file
		// at the path is an error.
		if fi, err := os.Lstat(path); err == nil {
			if fi.Mode().Type() != os.ModeSocket {
				return nil, fmt.Errorf("grpcapi: %s exists and is not a socket", path)
			}
			if err := os.Remove(path); err != nil {
				return nil, fmt.Errorf("grpcapi: removing the old socket: %w", err)
			}
		}
		ln, err := net.Listen("unix", path)
		if err != nil {
			return nil, err
		}
		if err := os.Chmod(path, 0o600); err != nil {
			ln.Close()
			return nil, err
		}
		return ln, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("grpcapi: address %q: %w", addr, err)
	}
	if !exposed {
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("grpcapi: address %q is beyond the loopback: configure TLS and a token", addr)
		}
	}
	return net.Listen("tcp", addr)
}

// The interceptors: a panic becomes Internal; a missing or wrong token
// Unauthenticated.

func (srv *Server) recovered(method string, r any) error {
	srv.logger.Error("grpcapi: panic in a call", "method", method, "panic", r, "stack", string(debug.Stack()))
	return status.Errorf(codes.Internal, "internal error in %s (logged)", method)
}

func (srv *Server) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, srv.recovered(info.FullMethod, r)
		}
	}()
	return h(ctx, req)
}

func (srv *Server) recoverStream(s any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = srv.recovered(info.FullMethod, r)
		}
	}()
	return h(s, ss)
}

func (srv *Server) checkToken(ctx context.Context) error {
	if srv.cfg.Token == "" {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		if tok, ok := strings.CutPrefix(v, "Bearer "); ok && subtle.ConstantTimeCompare([]byte(tok), []byte(srv.cfg.Token)) == 1 {
			return nil
		}
	}
	return status.Error(codes.Unauthenticated, `metadata "authorization": a bearer token is required ("Bearer <token>")`)
}

func (srv *Server) authUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := srv.checkToken(ctx); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (srv *Server) authStream(s any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := srv.checkToken(ss.Context()); err != nil {
		return err
	}
	return h(s, ss)
}

// TokenCredentials returns per-RPC credentials sending token as a bearer
// token (for clients; insecure says whether they may go over a connection
// without TLS, a Unix socket or the loopback).
func TokenCredentials(token string, insecure bool) credentials.PerRPCCredentials {
	return tokenCreds{token: token, insecure: insecure}
}

type tokenCreds struct {
	token    string
	insecure bool
}

func (t tokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + t.token}, nil
}

func (t tokenCreds) RequireTransportSecurity() bool { return !t.insecure }
