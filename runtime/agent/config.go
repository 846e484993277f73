package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"gopkg.in/yaml.v3"

	"github.com/kvdescriptor/kvdescriptor/runtime/api"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/tracing"
)

// Config is the agent's configuration. Defaults returns the configuration
// of an agent given nothing; LoadConfig and ParseConfig read its YAML
// form (unknown fields refused, naming the field and its line); ParseArgs
// reads a command line (flags over a -config file). New checks it.
type Config struct {
	// Name names the agent (etcd prefixes, logs); default: the host name.
	Name string    `yaml:"name"`
	Log  LogConfig `yaml:"log"`
	// HTTP and GRPC are the API's two listeners, named for their
	// defaults' use (a browser and scripts on the loopback; kvctl on the
	// Unix socket): each serves the whole API. http.address "" or "off"
	// turns the first off; grpc.address "" is the Unix socket grpc.sock
	// in the state directory, "off" turns it off. With both off the
	// agent has no API, and no source "api".
	HTTP ListenerConfig `yaml:"http"`
	GRPC ListenerConfig `yaml:"grpc"`
	// Limits bound what a client of the API can hold.
	Limits  Limits        `yaml:"limits"`
	History HistoryConfig `yaml:"history"`
	// ResyncInterval runs a downstream resync periodically; 0: never.
	ResyncInterval time.Duration `yaml:"resync_interval"`
	// Drift is how the agent notices and handles its values changed or
	// deleted behind its back.
	Drift DriftConfig `yaml:"drift"`
	// StateDir holds what outlives a run: the record of what the agent
	// applied, the transaction numbers and the history (state.db), and
	// the API's source state; and the API's default socket (grpc.sock).
	StateDir string `yaml:"state_dir"`
	// LoadDeadline is how long the startup resync waits for every source
	// to load before it goes on with the values remembered for the ones
	// that have not.
	LoadDeadline time.Duration `yaml:"load_deadline"`
	// Transactions is the policy of every source's transactions.
	Transactions TxnPolicy        `yaml:"transactions"`
	Southbound   SouthboundConfig `yaml:"southbound"`
	Sources      SourcesConfig    `yaml:"sources"`
	// Tracing exports OpenTelemetry traces of the transactions; off by
	// default.
	Tracing TracingConfig `yaml:"tracing"`

	// LogOutput is where the agent logs (default os.Stderr); not part of
	// the YAML form.
	LogOutput io.Writer `yaml:"-"`
	// Version is the agent's version its API's AgentInfo says (default:
	// the main module's version in the build information); not part of
	// the YAML form.
	Version string `yaml:"-"`
	// TracerProvider, when set, traces the transactions with it in place
	// of an exporter to tracing.endpoint (a test's in-memory exporter, or
	// a program's own provider); not part of the YAML form.
	TracerProvider trace.TracerProvider `yaml:"-"`
}

// TracingConfig is the export of traces (runtime/tracing): a span per
// transaction, with its plan, southbound calls, read-backs and retries
// under it, continuing the trace of the API request that committed it
// (its W3C traceparent header).
type TracingConfig struct {
	// Endpoint is an OTLP/HTTP receiver (protobuf), http://HOST:PORT or
	// https://HOST:PORT, its path /v1/traces unless one is given; ""
	// (the default) turns tracing off.
	Endpoint string `yaml:"endpoint"`
	// SampleRatio is the share of the transactions that start a trace
	// of their own which are traced (default 1: all); a request that
	// carries a sampled trace context is always traced.
	SampleRatio float64 `yaml:"sample_ratio"`
}

// tracing returns the configuration as runtime/tracing's.
func (c *Config) tracing() tracing.Config {
	return tracing.Config{Endpoint: c.Tracing.Endpoint, SampleRatio: c.Tracing.SampleRatio, ServiceName: "kvdescriptor-agent", ServiceInstance: c.Name}
}

// LogConfig is the agent's logging.
type LogConfig struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

// ListenerConfig is a listener of the agent's API (runtime/api): each
// serves the whole API, gRPC, gRPC-Web, Connect and REST on one handler,
// with the metrics (GET /metrics) and the probes (/healthz, /readyz).
type ListenerConfig struct {
	// Address is "unix:PATH" (a Unix socket, its owner's only) or a TCP
	// address; "off" turns the listener off.
	Address string `yaml:"address"`
	// TokenFile holds the bearer token every call must carry (the probes
	// excepted); CertFile and KeyFile serve TLS. Beyond the loopback all
	// three are required.
	TokenFile string `yaml:"token_file"`
	CertFile  string `yaml:"cert_file"`
	KeyFile   string `yaml:"key_file"`
}

// Limits are the transport limits of the API's listeners (api.Limits);
// zero takes the default, sized for transactions of a million values.
type Limits struct {
	// ReadHeaderTimeout bounds the reading of a request's header
	// (default 10 s).
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	// ReadTimeout bounds the reading of a whole request, body included
	// (default 2 min: max_message_bytes at 5 MB/s).
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// IdleTimeout closes a kept-alive connection idle that long
	// (default 2 min).
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// MaxHeaderBytes bounds a request's headers (default 64 KiB).
	MaxHeaderBytes int `yaml:"max_header_bytes"`
	// MaxMessageBytes bounds a message, a request's or an answer's, on
	// every transport (default 512 MiB).
	MaxMessageBytes int64 `yaml:"max_message_bytes"`
	// MaxConcurrentStreams bounds the concurrent calls of one HTTP/2
	// connection (default 100).
	MaxConcurrentStreams int `yaml:"max_concurrent_streams"`
	// MaxConnections bounds the open connections of a listener (default
	// 256).
	MaxConnections int `yaml:"max_connections"`
}

// api returns the limits as runtime/api's.
func (l Limits) api() api.Limits {
	return api.Limits{
		ReadHeaderTimeout: l.ReadHeaderTimeout, ReadTimeout: l.ReadTimeout, IdleTimeout: l.IdleTimeout,
		MaxHeaderBytes: l.MaxHeaderBytes, MaxMessageBytes: l.MaxMessageBytes,
		MaxConcurrentStreams: l.MaxConcurrentStreams, MaxConnections: l.MaxConnections,
	}
}

// HistoryConfig bounds the history of transactions, kept in memory and
// in the state directory: after a restart (or a crash) the records of
// transactions before it are still there.
type HistoryConfig struct {
	// Records is the number of transactions kept (0: no history).
	Records int `yaml:"records"`
	// MaxAge drops the records older than it, counted from the last
	// transaction (0: no limit).
	MaxAge time.Duration `yaml:"max_age"`
}

// TxnPolicy is how the agent makes the transactions of its sources (the
// file, etcd, and the API's commits that give no options of their own), the startup resync included (retried, never reverted).
type TxnPolicy struct {
	// Revert undoes a source's update whose transaction fails, so that
	// the southbound ends as before it and the source's values stay as
	// they were; false (the default) is best-effort: what can be
	// applied is.
	Revert bool `yaml:"revert"`
	// Retry retries the failed operations of a transaction.
	Retry RetryConfig `yaml:"retry"`
}

// RetryConfig is the retry of failed operations.
type RetryConfig struct {
	// MaxAttempts is the number of retries (0: none; default 3).
	MaxAttempts int `yaml:"max_attempts"`
	// Period is the wait before the first retry (default 1 s).
	Period time.Duration `yaml:"period"`
	// Backoff doubles the wait at each retry (default true), up to
	// MaxPeriod (0: no bound; default 30 s).
	Backoff   bool          `yaml:"backoff"`
	MaxPeriod time.Duration `yaml:"max_period"`
}

// SouthboundConfig configures the southbound plugins that the reference
// agent links (runtime/agent/southbound reads it); an agent with plugins
// of its own may leave it empty.
type SouthboundConfig struct {
	// Memory replaces the kernel by an in-memory southbound (for a
	// machine where the agent cannot be root).
	Memory bool        `yaml:"memory"`
	Linux  LinuxConfig `yaml:"linux"`
	// VPP adds the VPP plugin when Socket (VPP's binary API socket,
	// usually /run/vpp/api.sock) is set; "": no VPP; "mock": govpp's mock
	// adapter in place of a VPP (the demo).
	VPP VPPConfig `yaml:"vpp"`
}

// LinuxConfig configures the Linux plugin.
type LinuxConfig struct {
	// Netns is the network namespace the plugin configures: a name under
	// /var/run/netns or a path; "": the agent's own.
	Netns string `yaml:"netns"`
	// NetnsAllow, when set (even empty), lists the only named namespaces
	// that values may name (Interface.namespace); others are INVALID. The
	// agent's own (the empty name, Netns) is always allowed. Unset: any
	// namespace under /var/run/netns.
	NetnsAllow []string `yaml:"netns_allow"`
	// RouteProtocol marks the routes the agent creates.
	RouteProtocol uint8 `yaml:"route_protocol"`
	// ClaimRouteProtocol makes every route with RouteProtocol the
	// agent's, recorded or not: those nothing wants are deleted (without
	// it they are OBTAINED and left alone).
	ClaimRouteProtocol bool `yaml:"claim_route_protocol"`
}

// VPPConfig configures the VPP plugin.
type VPPConfig struct {
	Socket string `yaml:"socket"`
	// PuntSocketDirs are the directories under which punt values may name
	// sockets (vpp.WithPuntSocketDirs); none: every punt socket is
	// refused.
	PuntSocketDirs []string `yaml:"punt_socket_dirs"`
}

// SourcesConfig configures the northbound sources.
type SourcesConfig struct {
	File FileConfig `yaml:"file"`
	Etcd EtcdConfig `yaml:"etcd"`
	// Priority orders the sources, highest first, for keys that several
	// set; default: file, etcd, api ("grpc", the API source's former
	// name, is read as "api").
	Priority []string `yaml:"priority"`
}

// FileConfig is the file source.
type FileConfig struct {
	Path string `yaml:"path"`
	// MaxSize is the largest file read, in bytes; 0: 16 MiB
	// (file.DefaultMaxSize). A larger file is reported, like a file that
	// does not parse, and not applied.
	MaxSize int64 `yaml:"max_size"`
}

// EtcdConfig is the etcd source.
type EtcdConfig struct {
	Endpoints []string `yaml:"endpoints"`
	// Prefix of the configuration; default /kvdescriptor/<name>/config/.
	Prefix string `yaml:"prefix"`
	// Status writes each value's status under /kvdescriptor/<name>/status/.
	Status bool `yaml:"status"`
}

// Defaults returns the configuration of an agent given nothing: its only
// source is then the API's (on 127.0.0.1:9191 and
// unix:<state_dir>/grpc.sock).
func Defaults() Config {
	var c Config
	c.Name, _ = os.Hostname()
	c.Log.Level, c.Log.Format = "info", "text"
	c.HTTP.Address = "127.0.0.1:9191"
	c.Limits = Limits{
		ReadHeaderTimeout: api.DefaultReadHeaderTimeout, ReadTimeout: api.DefaultReadTimeout, IdleTimeout: api.DefaultIdleTimeout,
		MaxHeaderBytes: api.DefaultMaxHeaderBytes, MaxMessageBytes: api.DefaultMaxMessageBytes,
		MaxConcurrentStreams: api.DefaultMaxConcurrentStreams, MaxConnections: api.DefaultMaxConnections,
	}
	c.History.Records = 10000
	c.StateDir = "/var/lib/kvdescriptor-agent"
	c.LoadDeadline = 30 * time.Second
	c.Transactions.Retry = RetryConfig{MaxAttempts: 3, Period: time.Second, Backoff: true, MaxPeriod: 30 * time.Second}
	c.Sources.Priority = []string{"file", "etcd", "api"}
	c.Drift.CheckInterval = DefaultDriftCheckInterval
	c.Tracing.SampleRatio = 1
	return c
}

// DefaultDriftCheckInterval is the default period of the periodic drift
// check: a pass over 100,000 values costs about 0.5 % of a core at it
// (BENCHMARKS.md, BenchmarkDriftCheck).
const DefaultDriftCheckInterval = 60 * time.Second

// DriftConfig is the agent's handling of drift: values it applied that
// the southbound changed or lost behind its back.
type DriftConfig struct {
	// CheckInterval is the period of the periodic drift check, which
	// reads back every value of the agent that its descriptor can
	// Retrieve, a slice at a time spread over the interval (for VPP,
	// which notifies no changes; the Linux watcher notices the kernel's
	// at once). Default 60s; 0 turns it off.
	CheckInterval time.Duration `yaml:"check_interval"`
	// Policies override the models' drift policies (option
	// drift_policy): the first rule that matches a value decides.
	Policies []DriftPolicyRule `yaml:"policies"`
}

// DriftPolicyRule sets the drift policy of the values whose key starts
// with Prefix and that Source intends (each optional; a rule with
// neither matches every value).
type DriftPolicyRule struct {
	Prefix string `yaml:"prefix"`
	Source string `yaml:"source"`
	// Policy is repair, report or adopt.
	Policy string `yaml:"policy"`
}

// LoadConfig reads the YAML file path over Defaults.
func LoadConfig(path string) (Config, error) {
	c, err := readConfigFile(path)
	if err != nil {
		return c, err
	}
	return c, c.Check()
}

// ParseConfig reads data, the YAML form of a configuration, over
// Defaults; name names it in errors.
func ParseConfig(name string, data []byte) (Config, error) {
	c := Defaults()
	if err := c.decodeYAML(name, data); err != nil {
		return c, err
	}
	return c, c.Check()
}

// decodeYAML decodes data over c. A field the configuration does not have
// is refused, named with its path and line.
func (c *Config) decodeYAML(name string, data []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if len(doc.Content) == 0 {
		return nil // empty
	}
	lines := map[int][]string{}
	if err := unknownFields(doc.Content[0], reflect.TypeOf(*c), "", lines); err != nil {
		return fmt.Errorf("%s:%w", name, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(c)
	var te *yaml.TypeError
	if errors.As(err, &te) {
		// "line N: cannot unmarshal ...": named with the field.
		var errs []error
		for _, msg := range te.Errors {
			var line int
			if _, serr := fmt.Sscanf(msg, "line %d:", &line); serr == nil && len(lines[line]) > 0 {
				_, rest, _ := strings.Cut(msg, ": ")
				msg = fmt.Sprintf("%d: %s: %s", line, strings.Join(lines[line], " or "), rest)
			}
			errs = append(errs, fmt.Errorf("%s:%s", name, msg))
		}
		return errors.Join(errs...)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// unknownFields returns an error naming the first key of n, a mapping
// decoded into a struct of type t, that t has no field for. It notes in
// lines the fields whose values are on each line.
func unknownFields(n *yaml.Node, t reflect.Type, path string, lines map[int][]string) error {
	if n.Kind != yaml.MappingNode || t.Kind() != reflect.Struct {
		return nil
	}
	fields := map[string]reflect.Type{}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		fields[tag] = f.Type
		names = append(names, tag)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		ft, ok := fields[k.Value]
		if !ok {
			slices.Sort(names)
			return fmt.Errorf("%d:%d: %s%s: unknown field (known: %s)", k.Line, k.Column, path, k.Value, strings.Join(names, ", "))
		}
		v := n.Content[i+1]
		if v.Kind != yaml.MappingNode {
			lines[v.Line] = append(lines[v.Line], path+k.Value)
		}
		if err := unknownFields(v, ft, path+k.Value+".", lines); err != nil {
			return err
		}
	}
	return nil
}

// Check says what is wrong with a configuration, naming the setting.
func (c *Config) Check() error {
	var errs []error
	if c.Name == "" || strings.ContainsAny(c.Name, "/ \t\n") {
		errs = append(errs, fmt.Errorf("name: %q is not an agent name (non-empty, no '/' or spaces)", c.Name))
	}
	if _, err := parseLevel(c.Log.Level); err != nil {
		errs = append(errs, err)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		errs = append(errs, fmt.Errorf("log format: %q is neither text nor json", c.Log.Format))
	}
	for _, l := range []struct {
		name, flags string
		ListenerConfig
	}{{"http", "-http-cert, -http-key, -token-file", c.HTTP}, {"grpc", "-grpc-cert, -grpc-key, -grpc-token-file", c.GRPC}} {
		a := l.Address
		if (l.CertFile == "") != (l.KeyFile == "") {
			errs = append(errs, fmt.Errorf("%s: cert_file and key_file go together", l.name))
		}
		if a == "" || a == "off" || strings.HasPrefix(a, "unix:") || strings.HasPrefix(a, "/") {
			continue
		}
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s address: %q: %w", l.name, a, err))
		} else if !isLoopback(host) && (l.TokenFile == "" || l.CertFile == "" || l.KeyFile == "") {
			errs = append(errs, fmt.Errorf("%s address: %q is not a loopback address: TLS and a token file (%s) are required", l.name, a, l.flags))
		}
	}
	for _, n := range []struct {
		name string
		v    int64
	}{
		{"limits: max_header_bytes", int64(c.Limits.MaxHeaderBytes)}, {"limits: max_message_bytes", c.Limits.MaxMessageBytes},
		{"limits: max_concurrent_streams", int64(c.Limits.MaxConcurrentStreams)}, {"limits: max_connections", int64(c.Limits.MaxConnections)},
	} {
		if n.v < 0 {
			errs = append(errs, fmt.Errorf("%s: %d is negative (0 for the default)", n.name, n.v))
		}
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"limits: read_header_timeout", c.Limits.ReadHeaderTimeout}, {"limits: read_timeout", c.Limits.ReadTimeout},
		{"limits: idle_timeout", c.Limits.IdleTimeout}, {"history: max_age", c.History.MaxAge},
		{"resync_interval", c.ResyncInterval}, {"transactions: retry: period", c.Transactions.Retry.Period},
		{"drift: check_interval", c.Drift.CheckInterval},
		{"transactions: retry: max_period", c.Transactions.Retry.MaxPeriod},
	} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("%s: %v is negative", d.name, d.d))
		}
	}
	for i, r := range c.Drift.Policies {
		if _, err := kv.ParseDriftPolicy(r.Policy); err != nil {
			errs = append(errs, fmt.Errorf("drift: policies[%d]: policy: %w", i, err))
		}
	}
	if c.History.Records < 0 {
		errs = append(errs, fmt.Errorf("history: %d records", c.History.Records))
	}
	if c.Transactions.Retry.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("transactions: retry: max_attempts: %d (0 for none, or more)", c.Transactions.Retry.MaxAttempts))
	}
	if c.StateDir == "" {
		errs = append(errs, errors.New("state dir: empty"))
	}
	for _, n := range c.Southbound.Linux.NetnsAllow {
		if r := kv.CheckPlainName(n); r != "" || n == "" {
			errs = append(errs, fmt.Errorf("netns allow: %q is not a network namespace name (a file name under /var/run/netns)", n))
		}
	}
	for _, p := range c.Sources.Priority {
		if p != "file" && p != "etcd" && p != "api" && p != "grpc" {
			errs = append(errs, fmt.Errorf("priority: unknown source %q (file, etcd, api)", p))
		}
	}
	if c.Sources.File.MaxSize < 0 {
		errs = append(errs, fmt.Errorf("file max size: %d bytes (0 for the default, or more)", c.Sources.File.MaxSize))
	}
	if err := c.tracing().Check(); err != nil {
		errs = append(errs, fmt.Errorf("tracing: %w", err))
	}
	if c.Sources.File.Path == "" && len(c.Sources.Etcd.Endpoints) == 0 && len(c.listeners()) == 0 {
		errs = append(errs, errors.New("sources: none configured (-file, -etcd, or the API, which -http off and -grpc off turn off)"))
	}
	return errors.Join(errs...)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, fmt.Errorf("log level: %q is not one of debug, info, warn, error", s)
	}
	return l, nil
}
