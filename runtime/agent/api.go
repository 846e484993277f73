package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"gopkg.in/yaml.v3"

	"github.com/kvdescriptor/kvdescriptor/runtime/agent/redact"
	"github.com/kvdescriptor/kvdescriptor/runtime/api"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
	"github.com/kvdescriptor/kvdescriptor/runtime/tracing"
	"github.com/kvdescriptor/kvdescriptor/runtime/ui"
)

// startAPI starts the agent's API (runtime/api) on each listener of the
// configuration, stopped when the run ends: the API's own source (nb.Remote,
// named "api") over the Mux, and one api.Service per listener (each has
// its own token), with the metrics beside it. It is the one place that
// knows the API's implementation.
func (r *run) startAPI(context.Context) error {
	listeners := r.cfg.listeners()
	if len(listeners) == 0 {
		return nil
	}
	// The API's source loads at once: the other sources must be known
	// before, or the startup resync would not wait for them.
	for _, src := range r.sources {
		r.mux.Sink(src.Name())
	}
	remote, err := nb.NewRemote(r.mux, r.models, nb.RemoteConfig{Source: nb.DefaultRemoteSource, Logger: r.logger})
	if err != nil {
		return err
	}
	r.atEnd(func() error { remote.Close(); return nil })
	var planFile func(context.Context, string, []byte) (*scheduler.Result, error)
	if fs := r.fileSource; fs != nil {
		// Plan of a file: the file source's own apply, as a dry run.
		planFile = func(ctx context.Context, name string, data []byte) (*scheduler.Result, error) {
			return fs.Plan(ctx, r.mux, name, data)
		}
	}
	info, err := r.info()
	if err != nil {
		return err
	}
	metrics := promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg})
	for _, l := range listeners {
		token, err := readToken(l.what+" token file ("+l.tokenFlag+")", l.TokenFile)
		if err != nil {
			return err
		}
		var tc *tls.Config
		if l.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(l.CertFile, l.KeyFile)
			if err != nil {
				return fmt.Errorf("%s TLS: %w", l.what, err)
			}
			tc = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		}
		svc, err := api.New(api.Deps{
			Scheduler: r.s, Mux: r.mux, Remote: remote, Models: r.models,
			Token: token, LogLevel: r.a.level, PlanFile: planFile, Logger: r.logger, Info: info,
		})
		if err != nil {
			return err
		}
		// The operator page (runtime/ui) renders from svc's calls, beside
		// the API and behind the same limits and guard; / sends a browser
		// to it (the API has nothing at /). Its plots are kept in the
		// state file, one record per listener (each page has its own).
		page, err := ui.New(svc, ui.Options{Logger: r.logger, PlotsStore: r.store.Blob("ui.plots." + l.what)})
		if err != nil {
			svc.Close()
			return err
		}
		scfg := api.ServerConfig{
			Address: l.Address,
			TLS:     tc,
			Limits:  r.cfg.Limits.api(),
			Mount: map[string]http.Handler{
				"GET /metrics": svc.Guard(metrics),
				ui.DefaultPath: page,
				"GET /{$}":     http.RedirectHandler(ui.DefaultPath, http.StatusFound),
			},
			Logger: r.logger,
		}
		if r.tracing {
			// A request's traceparent header makes the transactions
			// it commits children of the client's span.
			scfg.Middleware = tracing.Extract
		}
		srv, err := api.NewServer(svc, scfg)
		if err != nil {
			svc.Close()
			return fmt.Errorf("%s: %w", l.what, err)
		}
		go func() {
			if err := srv.Serve(); err != nil {
				r.logger.Error("API listener stopped", "address", srv.Addr(), "error", err)
			}
		}()
		// The page's plots are fed while the agent runs, whether or not
		// a page is open; the last feed is saved before the store is
		// closed (it closes after the run's other cleanups).
		fctx, stopFeed := context.WithCancel(context.Background())
		fed := make(chan struct{})
		go func() {
			defer close(fed)
			if err := ui.Feed(fctx, page, 0); err != nil {
				r.logger.Error("operator page: the plots are not fed", "error", err)
			}
		}()
		r.atEnd(func() error { stopFeed(); <-fed; return nil })
		r.atEnd(func() error {
			svc.Close() // ends the Watch streams
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if srv.Shutdown(sctx) != nil {
				_ = srv.Close()
			}
			return nil
		})
		scheme := "http"
		if tc != nil {
			scheme = "https"
		}
		r.a.mu.Lock()
		if r.a.addrs == nil {
			r.a.addrs = map[string]string{}
		}
		r.a.addrs[l.what] = srv.Addr()
		r.a.mu.Unlock()
		r.logger.Info("API", "listener", l.what, "address", srv.Addr(), "scheme", scheme, "token", token != "")
	}
	return nil
}

// listener is one address the API is served on.
type listener struct {
	what, tokenFlag string
	ListenerConfig
}

// listeners returns the API's listeners: http.address and grpc.address
// (its default: the Unix socket grpc.sock in the state directory), each
// serving the whole API.
func (c *Config) listeners() []listener {
	var out []listener
	if c.HTTP.Address != "" && c.HTTP.Address != "off" {
		out = append(out, listener{"http", "-token-file", c.HTTP})
	}
	if c.GRPC.Address != "off" {
		g := c.GRPC
		if g.Address == "" {
			g.Address = "unix:" + filepath.Join(c.StateDir, "grpc.sock")
		}
		out = append(out, listener{"grpc", "-grpc-token-file", g})
	}
	return out
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

// info is what the API's AgentInfo says of the agent: its configuration
// in YAML without secrets, by the rule of kvctl report (runtime/agent/redact).
func (r *run) info() (api.Info, error) {
	b, err := yaml.Marshal(r.cfg)
	if err != nil {
		return api.Info{}, fmt.Errorf("the configuration in YAML: %w", err)
	}
	if b, err = redact.Config(b); err != nil {
		return api.Info{}, fmt.Errorf("the configuration in YAML: %w", err)
	}
	return api.Info{Name: r.cfg.Name, Version: r.cfg.Version, Started: r.startTime, Config: string(b)}, nil
}
