package api

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
)

// The default limits of a Server, sized for transactions of a million
// values: a Commit of 1,000,000 routes as google.protobuf.Any is about
// 150 MB in protobuf and more in JSON.
const (
	// DefaultMaxMessageBytes bounds one message (a request or a response;
	// gRPC's receive limit, Connect's and REST's alike), and so a
	// request body.
	DefaultMaxMessageBytes = apilimits.MaxMessageBytes
	// DefaultReadHeaderTimeout bounds the reading of a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds the reading of a whole request, body
	// included (a client that announces more than it sends is cut off
	// then): enough for DefaultMaxMessageBytes at 5 MB/s.
	DefaultReadTimeout = 2 * time.Minute
	// DefaultIdleTimeout closes a keep-alive connection idle that long.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxHeaderBytes bounds a request's headers.
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultMaxConcurrentStreams bounds the concurrent calls (HTTP/2
	// streams, so gRPC calls and Watch streams) of one connection.
	DefaultMaxConcurrentStreams = 100
	// DefaultMaxConnections bounds the open connections; one beyond is
	// closed at once.
	DefaultMaxConnections = 256
)

// Limits are a Server's transport limits; zero fields take the defaults.
// There is no write timeout: a Watch streams for as long as its client
// reads, and a Commit that waits for its values is bounded by its
// wait_timeout.
type Limits struct {
	ReadHeaderTimeout    time.Duration
	ReadTimeout          time.Duration
	IdleTimeout          time.Duration
	MaxHeaderBytes       int
	MaxMessageBytes      int64
	MaxConcurrentStreams int
	MaxConnections       int
}

func (l Limits) withDefaults() Limits {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&l.ReadTimeout, DefaultReadTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxMessageBytes <= 0 {
		l.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if l.MaxConcurrentStreams <= 0 {
		l.MaxConcurrentStreams = DefaultMaxConcurrentStreams
	}
	if l.MaxConnections <= 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	return l
}

// ServerConfig configures a Server.
type ServerConfig struct {
	// Address is "unix:PATH" (or an absolute path) for a Unix socket,
	// made accessible to its owner only, else a TCP address. A TCP
	// address beyond the loopback needs TLS and the service's token.
	Address string
	// TLS, when set, serves TLS (HTTP/2 negotiated by ALPN); without it,
	// HTTP/1.1 and HTTP/2 without TLS (h2c, which gRPC clients speak).
	TLS *tls.Config
	// Limits are the transport's limits (zero: the defaults).
	Limits Limits
	// Logger logs the server's errors (default slog.Default()).
	Logger *slog.Logger
	// Mount serves more handlers on the same listener, by http.ServeMux
	// pattern ("/ui/": the operator page, runtime/ui; "/metrics"), behind
	// the same limits and, on the tokenless default, the same refusal of
	// web pages of other sites. A mounted handler checks the token itself
	// (Service.Authorize). The service keeps every other path.
	Mount map[string]http.Handler
	// Middleware, when set, wraps the whole handler, outermost: it sees
	// every request first (the agent's reads a request's trace context,
	// runtime/tracing.Extract).
	Middleware func(http.Handler) http.Handler
}

// Server serves a Service's Handler on a listener it owns, with the
// transport's limits: timeouts, sizes, streams and connections; on the
// tokenless default (no token, the loopback or a Unix socket), requests
// from a web page are refused: one with an Origin that is not the
// server's own, or, over TCP, with a Host that is not the listen address
// (a DNS rebinding).
type Server struct {
	ln     net.Listener
	http   *http.Server
	addr   string
	limits Limits
}

// NewServer listens on cfg.Address and returns the server of svc, not yet
// serving (Serve).
func NewServer(svc *Service, cfg ServerConfig) (*Server, error) {
	l := cfg.Limits.withDefaults()
	if svc.d.MaxMessageBytes != l.MaxMessageBytes {
		// One bound for every transport: the service's is the server's.
		svc.d.MaxMessageBytes = l.MaxMessageBytes
	}
	h, err := svc.Handler()
	if err != nil {
		return nil, err
	}
	if len(cfg.Mount) > 0 {
		m := http.NewServeMux()
		m.Handle("/", h)
		for pattern, mh := range cfg.Mount {
			if mh == nil {
				return nil, fmt.Errorf("api: ServerConfig.Mount[%q] is nil", pattern)
			}
			if err := handle(m, pattern, mh); err != nil {
				return nil, fmt.Errorf("api: ServerConfig.Mount[%q]: %v", pattern, err)
			}
		}
		h = m
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	exposed := cfg.TLS != nil && svc.d.Token != ""
	ln, unix, err := Listen(cfg.Address, exposed)
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	if svc.d.Token == "" {
		h = guardBrowsers(h, addr, unix)
	}
	// A request body beyond one message and its framing is cut off; a
	// body that fails to arrive (the read timeout) closes an HTTP/1
	// connection after the error's response, rather than leave it to
	// the idle timeout.
	maxBody := l.MaxMessageBytes + 1<<20
	inner := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &closingBody{ReadCloser: http.MaxBytesReader(w, r.Body, maxBody), w: w, http1: r.ProtoMajor == 1}
		inner.ServeHTTP(w, r)
	})
	if cfg.Middleware != nil {
		h = cfg.Middleware(h)
	}
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: l.MaxConcurrentStreams,
			// A frame may carry a large message's chunk; the
			// default (16 KiB) is fine, the receive buffers too.
		},
		Protocols: new(http.Protocols),
	}
	hs.Protocols.SetHTTP1(true)
	ln = limitListener(ln, l.MaxConnections)
	if cfg.TLS != nil {
		hs.Protocols.SetHTTP2(true)
		tc := cfg.TLS.Clone()
		if len(tc.NextProtos) == 0 {
			tc.NextProtos = []string{"h2", "http/1.1"}
		}
		hs.TLSConfig = tc
		ln = tls.NewListener(ln, tc)
	} else {
		hs.Protocols.SetUnencryptedHTTP2(true)
	}
	return &Server{ln: ln, http: hs, addr: addr, limits: l}, nil
}

// Addr returns the address listened on.
func (s *Server) Addr() string { return s.addr }

// Limits returns the limits in force (defaults filled in).
func (s *Server) Limits() Limits { return s.limits }

// Serve serves until Shutdown or Close; it returns nil then.
func (s *Server) Serve() error {
	err := s.http.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting, and waits for the calls in flight until ctx
// ends (Watch streams end with the Service's Close).
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }

// Close closes the listener and every connection now.
func (s *Server) Close() error { return s.http.Close() }

// Listen listens on addr: "unix:PATH" (or an absolute path) for a Unix
// socket, made accessible to its owner only, else a TCP address. A TCP
// address beyond the loopback needs TLS and a token (exposed says whether
// they are configured). unix says whether it is a Unix socket.
func Listen(addr string, exposed bool) (ln net.Listener, unix bool, err error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok || strings.HasPrefix(addr, "/") {
		if !ok {
			path = addr
		}
		// A socket left by a previous run is removed; any other file
		// at the path is an error.
		if fi, err := os.Lstat(path); err == nil {
			if fi.Mode().Type() != os.ModeSocket {
				return nil, true, fmt.Errorf("api: %s exists and is not a socket", path)
			}
			if err := os.Remove(path); err != nil {
				return nil, true, fmt.Errorf("api: removing the old socket: %w", err)
			}
		}
		ln, err := net.Listen("unix", path)
		if err != nil {
			return nil, true, err
		}
		if err := os.Chmod(path, 0o600); err != nil {
			ln.Close()
			return nil, true, err
		}
		return ln, true, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, false, fmt.Errorf("api: address %q: %w", addr, err)
	}
	if !exposed && !isLoopback(host) {
		return nil, false, fmt.Errorf("api: address %q is beyond the loopback: configure TLS and a token", addr)
	}
	ln, err = net.Listen("tcp", addr)
	return ln, false, err
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// guardBrowsers refuses, with PERMISSION_DENIED, a request that a web page
// makes: one whose Origin is not the server's own, or (over TCP) whose
// Host is not the listen address, a loopback name or address with its
// port (a DNS rebinding names another host).
func guardBrowsers(next http.Handler, listen string, unix bool) http.Handler {
	_, port, _ := net.SplitHostPort(listen)
	ownHost := func(hostport string) bool {
		if unix {
			return true
		}
		h, p, err := net.SplitHostPort(hostport)
		if err != nil {
			h, p = hostport, ""
		}
		return isLoopback(strings.Trim(h, "[]")) && (p == "" || p == port)
	}
	ew := connect.NewErrorWriter()
	refuse := func(w http.ResponseWriter, r *http.Request, msg string) {
		err := connect.NewError(connect.CodePermissionDenied, errors.New(msg))
		if ew.IsSupported(r) {
			_ = ew.Write(w, r, err)
			return
		}
		writeRESTError(w, http.StatusForbidden, connect.CodePermissionDenied, msg)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !unix && !ownHost(r.Host) {
			refuse(w, r, fmt.Sprintf("host: %q is not this agent's address (%s): refused without a token (DNS rebinding)", r.Host, listen))
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || u.Host == "" || unix || !ownHost(u.Host) {
				refuse(w, r, fmt.Sprintf("origin: %q is not this agent: a request of a web page is refused without a token", o))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// limitListener closes at once the connections beyond max open ones.
func limitListener(ln net.Listener, max int) net.Listener {
	return &limitedListener{Listener: ln, sem: make(chan struct{}, max)}
}

type limitedListener struct {
	net.Listener
	sem chan struct{}
}

func (l *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.sem <- struct{}{}:
			return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
		default:
			c.Close()
		}
	}
}

type limitedConn struct {
	net.Conn
	release func()
	once    sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// closingBody asks an HTTP/1 server to close the connection once a read of
// the body failed (a timeout, a body beyond the bound).
type closingBody struct {
	io.ReadCloser
	w     http.ResponseWriter
	http1 bool
	once  sync.Once
}

func (b *closingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.http1 {
		b.once.Do(func() { b.w.Header().Set("Connection", "close") })
	}
	return n, err
}

// handle registers a pattern, turning the panic of a bad or conflicting
// pattern into an error.
func handle(m *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	m.Handle(pattern, h)
	return nil
}
