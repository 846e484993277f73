package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kvdescriptor/kvdescriptor/runtime/grpcapi"
	"github.com/kvdescriptor/kvdescriptor/runtime/httpapi"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// startAPI starts the API listeners of the configuration over the run's
// scheduler and Mux, stopped when the run ends. It is the one place that
// knows the API's implementation: today the HTTP API (runtime/httpapi)
// and the gRPC API (runtime/grpcapi), the latter a source ("grpc") like
// the file and etcd.
func (r *run) startAPI(context.Context) error {
	if r.cfg.HTTP.Address != "" {
		if err := r.serveHTTP(); err != nil {
			return err
		}
	}
	if r.cfg.GRPC.Address != "off" {
		// The gRPC source loads at once: the other sources must be
		// known before, or the startup resync would not wait for them.
		for _, src := range r.sources {
			r.mux.Sink(src.Name())
		}
		if err := r.serveGRPC(); err != nil {
			return err
		}
	}
	return nil
}

// serveHTTP starts the HTTP API.
func (r *run) serveHTTP() error {
	token, err := readToken("token file (-token-file)", r.cfg.HTTP.TokenFile)
	if err != nil {
		return err
	}
	var planFile func(context.Context, string, []byte) (*scheduler.Result, error)
	if fs := r.fileSource; fs != nil {
		// POST /plan?format=file: the file source's own apply, as a
		// dry run.
		planFile = func(ctx context.Context, name string, data []byte) (*scheduler.Result, error) {
			return fs.Plan(ctx, r.mux, name, data)
		}
	}
	h, err := httpapi.New(httpapi.Config{
		PlanFile:   planFile,
		Scheduler:  r.s,
		Models:     r.models,
		Owners:     r.mux,
		Ready:      func() (bool, any) { return r.mux.Ready(), r.mux.Sources() },
		Southbound: r.s.Southbound,
		Metrics:    promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg}),
		Token:      token,
		Logger:     r.logger,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", r.cfg.HTTP.Address)
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	lim := r.cfg.Limits
	srv := &http.Server{Handler: h, ReadHeaderTimeout: lim.ReadHeaderTimeout, ReadTimeout: lim.ReadTimeout, IdleTimeout: lim.IdleTimeout}
	go func() { _ = srv.Serve(ln) }()
	r.atEnd(func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	})
	r.logger.Info("HTTP API", "url", "http://"+ln.Addr().String()+"/")
	return nil
}

// serveGRPC starts the gRPC API: one more source, "grpc", whose state (and
// a commit awaiting confirmation) is kept in grpc.json in the state
// directory.
func (r *run) serveGRPC() error {
	gcfg := grpcapi.Config{
		Scheduler: r.s,
		Mux:       r.mux,
		Models:    r.models,
		StateFile: filepath.Join(r.cfg.StateDir, "grpc.json"),
		Logger:    r.logger,
	}
	token, err := readToken("grpc token file (-grpc-token-file)", r.cfg.GRPC.TokenFile)
	if err != nil {
		return err
	}
	gcfg.Token = token
	if r.cfg.GRPC.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(r.cfg.GRPC.CertFile, r.cfg.GRPC.KeyFile)
		if err != nil {
			return fmt.Errorf("grpc TLS: %w", err)
		}
		gcfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	addr := r.cfg.GRPC.Address
	if addr == "" {
		addr = "unix:" + filepath.Join(r.cfg.StateDir, "grpc.sock")
	}
	ln, err := grpcapi.Listen(addr, gcfg.TLS != nil && gcfg.Token != "")
	if err != nil {
		return fmt.Errorf("grpc: %w", err)
	}
	srv, err := grpcapi.NewServer(gcfg)
	if err != nil {
		ln.Close()
		return err
	}
	go func() { _ = srv.Serve(ln) }()
	r.atEnd(func() error { srv.Close(); return nil })
	r.logger.Info("gRPC API", "address", addr)
	return nil
}

// readToken reads the bearer token of a token file ("" when none is
// named). A file that holds nothing but white space is refused: its token
// would be "", which checks nothing.
func readToken(what, file string) (string, error) {
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("%s: %s is empty (or white space only): it must hold the token", what, file)
	}
	return token, nil
}
