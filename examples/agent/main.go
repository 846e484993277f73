// Command agent is the reference network agent built on kvdescriptor: the
// one place that wires the pieces together. It keeps the Linux kernel (a
// network namespace of it) in sync with the configuration it is given by
// its northbound sources — a watched file, etcd, or both, each key owned by
// the source that set it — and serves the HTTP API.
//
// On start it runs a startup resync, so that only what differs is
// applied; it remembers, in its state directory, what it applied, so that
// after a restart a value of ours that nothing wants any more is removed
// while what it never created is never touched. On SIGINT or SIGTERM it
// finishes the transaction in flight and exits without tearing anything
// down: a restart does not flap the data plane.
//
//	agent -file config.yaml [-netns NAME] [-http 127.0.0.1:9191] [-state-dir DIR]
//	agent -config agent.yaml
//
// `agent -h` lists every flag; README.md describes the configuration file
// and the HTTP API. Extensions (package ext) linked by extensions.go add
// models of their own, e.g. examples/extension.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vishvananda/netns"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kvdescriptor/kvdescriptor/examples/agent/ext"
	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/plugins/vpp"
	"github.com/kvdescriptor/kvdescriptor/runtime/grpcapi"
	"github.com/kvdescriptor/kvdescriptor/runtime/httpapi"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/metrics"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/boltstore"
	nbetcd "github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd"
	nbfile "github.com/kvdescriptor/kvdescriptor/runtime/nb/file"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func main() {
	cfg, err := parseConfig(os.Args[1:], os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "agent: %v\n(agent -h lists the flags)\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "agent: %v\n", err)
		os.Exit(1)
	}
}

// run is the agent, until ctx ends.
func run(ctx context.Context, cfg Config, logOut io.Writer) (err error) {
	logger, err := newLogger(cfg, logOut)
	if err != nil {
		return err
	}
	logger = logger.With("agent", cfg.Name)

	// The southbound.
	var descs []kv.Descriptor
	var plugin *linux.Plugin
	if cfg.Southbound.Memory {
		if descs, err = newMemory().descriptors(); err != nil {
			return err
		}
		logger.Info("southbound: in memory (no kernel)")
	} else {
		opts := []linux.Option{linux.WithLogger(logger)}
		if name := cfg.Southbound.Linux.Netns; name != "" {
			h, err := openNetns(name)
			if err != nil {
				return fmt.Errorf("netns %s: %w", name, err)
			}
			defer h.Close()
			opts = append(opts, linux.WithNamespace(h))
		}
		if allow := cfg.Southbound.Linux.NetnsAllow; allow != nil {
			opts = append(opts, linux.WithAllowedNamespaces(allow...))
		}
		if p := cfg.Southbound.Linux.RouteProtocol; p != 0 {
			opts = append(opts, linux.WithRouteProtocol(p))
		}
		if cfg.Southbound.Linux.ClaimRouteProtocol {
			opts = append(opts, linux.WithClaimedRouteProtocol(true))
		}
		if plugin, err = linux.New(opts...); err != nil {
			return err
		}
		defer plugin.Close()
		descs = plugin.Descriptors()
		allowed := "(any)"
		if allow := cfg.Southbound.Linux.NetnsAllow; allow != nil {
			allowed = "[" + strings.Join(allow, ",") + "]"
		}
		logger.Info("southbound: the Linux kernel", "netns", cmpOr(cfg.Southbound.Linux.Netns, "(the agent's own)"), "netns_allow", allowed)
	}

	// VPP, when a socket is configured. A VPP that comes back after the
	// connection was lost has restarted and lost its state: a downstream
	// resync restores it.
	vppBack := make(chan struct{}, 1)
	if sock := cfg.Southbound.VPP.Socket; sock != "" {
		opts := []vpp.Option{vpp.WithSocket(sock), vpp.WithLogger(logger), vpp.WithReconnect(func() {
			select {
			case vppBack <- struct{}{}:
			default:
			}
		})}
		if sock == mockVPPSocket {
			opts = append(opts, vpp.WithAdapter(newMockVPP()))
		}
		vp, err := vpp.New(opts...)
		if err != nil {
			return err
		}
		defer vp.Close()
		descs = append(descs, vp.Descriptors()...)
		if sock == mockVPPSocket {
			logger.Info("southbound: no VPP: the VPP plugin over govpp's mock adapter, which accepts every request")
		} else {
			logger.Info("southbound: VPP", "socket", sock)
		}
	}

	// The extensions linked into the agent (extensions.go): more models
	// and their handlers, registered like the plugins'.
	extDescs, err := ext.Descriptors(ext.Env{Logger: logger, Memory: cfg.Southbound.Memory, AllowedNetns: cfg.Southbound.Linux.NetnsAllow})
	if err != nil {
		return err
	}
	descs = append(descs, extDescs...)
	if names := ext.Names(); len(names) > 0 {
		logger.Info("extensions", "names", strings.Join(names, ","), "descriptors", len(extDescs))
	}

	// The scheduler, with its metrics.
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		return err
	}
	// What the agent applied, and the last transaction number it
	// reserved, remembered across restarts (seq.go). Opened before the
	// scheduler, closed after it.
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	store, err := boltstore.Open(filepath.Join(cfg.StateDir, "state.db"))
	if err != nil {
		return err
	}
	defer store.Close()
	seqs, lastSeq, err := newSeqKeeper(m, store, logger)
	if err != nil {
		return err
	}
	sopts := []scheduler.Option{
		scheduler.WithLogger(logger),
		scheduler.WithObserver(seqs),
		scheduler.WithSeqAfter(lastSeq),
		scheduler.WithHistory(cfg.History.Records, cfg.History.MaxAge),
	}
	if cfg.ResyncInterval > 0 {
		sopts = append(sopts, scheduler.WithPeriodicResync(cfg.ResyncInterval))
	}
	s, err := scheduler.New(sopts...)
	if err != nil {
		return err
	}
	defer func() {
		// Finish the transaction in flight; tear nothing down.
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if cerr := s.Close(cctx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := s.Register(descs...); err != nil {
		return err
	}
	if err := m.Attach(s); err != nil {
		return err
	}

	// The northbound.
	models := nb.SchedulerModels(s)
	mux := nb.NewMux(s,
		nb.WithStore(store),
		nb.WithPriorityOrder(cfg.Sources.Priority...),
		nb.WithLoadDeadline(cfg.LoadDeadline),
		nb.WithMuxLogger(logger),
	)
	defer mux.Close()
	var sources []nb.Source
	var fileSource *nbfile.Source
	if p := cfg.Sources.File.Path; p != "" {
		fileSource = nbfile.New(p, models, nbfile.WithLogger(logger), nbfile.WithMaxSize(cfg.Sources.File.MaxSize))
		sources = append(sources, fileSource)
	}
	if eps := cfg.Sources.Etcd.Endpoints; len(eps) > 0 {
		client, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: nil})
		if err != nil {
			return fmt.Errorf("etcd: %w", err)
		}
		defer client.Close()
		eopts := []nbetcd.Option{
			nbetcd.WithAgent(cfg.Name),
			nbetcd.WithLogger(logger),
			nbetcd.WithStatusOwner(func(key string) string { owner, _ := mux.Owner(key); return owner }),
		}
		if p := cfg.Sources.Etcd.Prefix; p != "" {
			eopts = append(eopts, nbetcd.WithPrefix(p))
		}
		src := nbetcd.New(client, models, eopts...)
		sources = append(sources, src)
		if cfg.Sources.Etcd.Status {
			go func() {
				if err := src.WriteStatus(ctx, s); err != nil && ctx.Err() == nil {
					logger.Error("etcd status write-back stopped", "error", err)
				}
			}()
		}
	}

	// The HTTP API.
	if cfg.HTTP.Address != "" {
		token, err := readToken("token file (-token-file)", cfg.HTTP.TokenFile)
		if err != nil {
			return err
		}
		var planFile func(context.Context, string, []byte) (*scheduler.Result, error)
		if fileSource != nil {
			// POST /plan?format=file: the file source's own apply,
			// as a dry run.
			planFile = func(ctx context.Context, name string, data []byte) (*scheduler.Result, error) {
				return fileSource.Plan(ctx, mux, name, data)
			}
		}
		h, err := httpapi.New(httpapi.Config{
			PlanFile:   planFile,
			Scheduler:  s,
			Models:     models,
			Owners:     mux,
			Ready:      func() (bool, any) { return mux.Ready(), mux.Sources() },
			Southbound: s.Southbound,
			Metrics:    promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}),
			Token:      token,
			Logger:     logger,
		})
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", cfg.HTTP.Address)
		if err != nil {
			return fmt.Errorf("http: %w", err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		logger.Info("HTTP API", "url", "http://"+ln.Addr().String()+"/")
	}

	// The gRPC API: one more source, "grpc", whose state (and a commit
	// awaiting confirmation) is kept in grpc.json in the state directory.
	if cfg.GRPC.Address != "off" {
		// The gRPC source loads at once: the other sources must be
		// known before, or the startup resync would not wait for them.
		for _, src := range sources {
			mux.Sink(src.Name())
		}
		stopGRPC, err := serveGRPC(cfg, s, mux, models, logger)
		if err != nil {
			return err
		}
		defer stopGRPC()
	}

	// Interfaces made by other programs become OBTAINED values. The
	// watcher starts once the startup resync has run: before, an
	// interface of ours that a previous run left (one the sources still
	// want, or a stale one to remove) is not known as ours yet, and a
	// notification would have it taken for another program's.
	if plugin != nil {
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			select {
			case <-mux.Started():
			case <-wctx.Done():
				return
			}
			logger.Debug("the kernel watcher starts: the startup resync has run")
			err := plugin.Watch(wctx, func(ctx context.Context, changes []linux.Change) error {
				ns := make([]scheduler.Notification, len(changes))
				for i, c := range changes {
					ns[i] = scheduler.Notification{Key: c.Key, Value: c.Value, Metadata: c.Metadata}
				}
				_, err := s.Notify(ctx, ns...)
				return err
			})
			if err != nil && wctx.Err() == nil {
				logger.Error("the kernel watcher stopped", "error", err)
			}
		}()
		defer func() { cancel(); <-done }()
	}

	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-vppBack:
				logger.Warn("VPP reconnected: downstream resync")
				if _, err := s.Txn(scheduler.DownstreamResync(), scheduler.Description("VPP reconnected")).Commit(ctx); err != nil && ctx.Err() == nil {
					logger.Error("downstream resync after VPP reconnected", "error", err)
				}
			}
		}
	}()

	logger.Info("agent started", "sources", len(sources), "state", cfg.StateDir)
	err = mux.Run(ctx, sources...)
	logger.Info("agent stopping: finishing the transaction in flight, tearing nothing down")
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// serveGRPC starts the gRPC API; the function returned stops it.
func serveGRPC(cfg Config, s *scheduler.Scheduler, mux *nb.Mux, models nb.Models, logger *slog.Logger) (func(), error) {
	gcfg := grpcapi.Config{
		Scheduler: s,
		Mux:       mux,
		Models:    models,
		StateFile: filepath.Join(cfg.StateDir, "grpc.json"),
		Logger:    logger,
	}
	token, err := readToken("grpc token file (-grpc-token-file)", cfg.GRPC.TokenFile)
	if err != nil {
		return nil, err
	}
	gcfg.Token = token
	if cfg.GRPC.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.GRPC.CertFile, cfg.GRPC.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("grpc TLS: %w", err)
		}
		gcfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	addr := cfg.GRPC.Address
	if addr == "" {
		addr = "unix:" + filepath.Join(cfg.StateDir, "grpc.sock")
	}
	ln, err := grpcapi.Listen(addr, gcfg.TLS != nil && gcfg.Token != "")
	if err != nil {
		return nil, fmt.Errorf("grpc: %w", err)
	}
	srv, err := grpcapi.NewServer(gcfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	go func() { _ = srv.Serve(ln) }()
	logger.Info("gRPC API", "address", addr)
	return srv.Close, nil
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

// openNetns opens a network namespace by name (under /var/run/netns) or
// path.
func openNetns(name string) (netns.NsHandle, error) {
	if strings.Contains(name, "/") {
		return netns.GetFromPath(name)
	}
	return netns.GetFromName(name)
}

func newLogger(cfg Config, w io.Writer) (*slog.Logger, error) {
	level, err := logLevel(cfg.Log.Level)
	if err != nil {
		return nil, err
	}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})), nil
	}
	return slog.New(scheduler.NewLogHandler(w, level)), nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
