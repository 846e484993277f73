package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// Config is the agent's configuration: an optional YAML file, then flags
// (a flag given on the command line wins over the file).
type Config struct {
	// Name names the agent (etcd prefixes, logs); default: the host name.
	Name string `yaml:"name"`
	Log  struct {
		Level  string `yaml:"level"`  // debug, info, warn, error
		Format string `yaml:"format"` // text or json
	} `yaml:"log"`
	HTTP struct {
		// Address to listen on; "" turns the API off. Loopback by default.
		Address string `yaml:"address"`
		// TokenFile holds the bearer token of mutating requests; required
		// when Address is not a loopback address.
		TokenFile string `yaml:"token_file"`
	} `yaml:"http"`
	GRPC struct {
		// Address of the gRPC API: "unix:PATH" (a Unix socket) or a TCP
		// address; "" is the Unix socket grpc.sock in the state
		// directory; "off" turns the API off.
		Address string `yaml:"address"`
		// TokenFile holds the bearer token every call must carry; CertFile
		// and KeyFile serve TLS. Beyond loopback all three are required.
		TokenFile string `yaml:"token_file"`
		CertFile  string `yaml:"cert_file"`
		KeyFile   string `yaml:"key_file"`
	} `yaml:"grpc"`
	History struct {
		Records int           `yaml:"records"`
		MaxAge  time.Duration `yaml:"max_age"`
	} `yaml:"history"`
	// ResyncInterval runs a downstream resync periodically; 0: never.
	ResyncInterval time.Duration `yaml:"resync_interval"`
	// StateDir holds the record of what the agent applied (state.db).
	StateDir string `yaml:"state_dir"`
	// LoadDeadline is how long the startup resync waits for every source
	// to load before it goes on with the values remembered for the ones
	// that have not.
	LoadDeadline time.Duration `yaml:"load_deadline"`
	Southbound   struct {
		// Memory replaces the kernel by an in-memory southbound (for a
		// machine where the agent cannot be root).
		Memory bool `yaml:"memory"`
		Linux  struct {
			// Netns is the network namespace the plugin configures: a
			// name under /var/run/netns or a path; "": the agent's own.
			Netns string `yaml:"netns"`
			// NetnsAllow, when set (even empty), lists the only named
			// namespaces that values may name (Interface.namespace);
			// others are INVALID. The agent's own (the empty name, Netns)
			// is always allowed. Unset: any namespace under /var/run/netns.
			NetnsAllow []string `yaml:"netns_allow"`
			// RouteProtocol marks the routes the agent creates.
			RouteProtocol uint8 `yaml:"route_protocol"`
			// ClaimRouteProtocol makes every route with RouteProtocol
			// the agent's, recorded or not: those nothing wants are
			// deleted (without it they are OBTAINED and left alone).
			ClaimRouteProtocol bool `yaml:"claim_route_protocol"`
		} `yaml:"linux"`
		// VPP adds the VPP plugin when Socket (VPP's binary API socket,
		// usually /run/vpp/api.sock) is set; "": no VPP; "mock": govpp's
		// mock adapter in place of a VPP (the demo).
		VPP struct {
			Socket string `yaml:"socket"`
		} `yaml:"vpp"`
	} `yaml:"southbound"`
	Sources struct {
		File struct {
			Path string `yaml:"path"`
			// MaxSize is the largest file read, in bytes; 0: 16 MiB
			// (file.DefaultMaxSize). A larger file is reported, like a
			// file that does not parse, and not applied.
			MaxSize int64 `yaml:"max_size"`
		} `yaml:"file"`
		Etcd struct {
			Endpoints []string `yaml:"endpoints"`
			// Prefix of the configuration; default /kvdescriptor/<name>/config/.
			Prefix string `yaml:"prefix"`
			// Status writes each value's status under
			// /kvdescriptor/<name>/status/.
			Status bool `yaml:"status"`
		} `yaml:"etcd"`
		// Priority orders the sources, highest first, for keys that
		// several set; default: file, etcd.
		Priority []string `yaml:"priority"`
	} `yaml:"sources"`
}

// defaults returns the configuration of an agent given nothing.
func defaults() Config {
	var c Config
	c.Name, _ = os.Hostname()
	c.Log.Level, c.Log.Format = "info", "text"
	c.HTTP.Address = "127.0.0.1:9191"
	c.History.Records = 10000
	c.StateDir = "/var/lib/kvdescriptor-agent"
	c.LoadDeadline = 30 * time.Second
	c.Sources.Priority = []string{"file", "etcd", "grpc"}
	return c
}

// parseConfig reads the command line (and the config file it names) into
// a Config.
// -h prints the flags to help and returns flag.ErrHelp.
func parseConfig(args []string, help io.Writer) (Config, error) {
	c := defaults()
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(help)
	fs.Usage = func() {
		fmt.Fprintln(help, "Usage: agent [flags]  (flags override the -config file)")
		fs.PrintDefaults()
	}
	configFile := fs.String("config", "", "YAML configuration file (flags override it)")
	name := fs.String("name", c.Name, "agent name")
	logLevel := fs.String("log-level", c.Log.Level, "log level: debug, info, warn, error")
	logFormat := fs.String("log-format", c.Log.Format, "log format: text or json")
	httpAddr := fs.String("http", c.HTTP.Address, `HTTP API address ("" turns it off)`)
	tokenFile := fs.String("token-file", "", "file holding the bearer token of mutating HTTP requests")
	grpcAddr := fs.String("grpc", "", `gRPC API address: unix:PATH or host:port ("": unix:<state-dir>/grpc.sock; "off": no gRPC API)`)
	grpcToken := fs.String("grpc-token-file", "", "file holding the bearer token of every gRPC call")
	grpcCert := fs.String("grpc-cert", "", "TLS certificate file of the gRPC API")
	grpcKey := fs.String("grpc-key", "", "TLS key file of the gRPC API")
	history := fs.Int("history", c.History.Records, "transactions kept in the history (0: none)")
	historyAge := fs.Duration("history-age", 0, "drop history records older than this (0: no limit)")
	resync := fs.Duration("resync", 0, "periodic downstream resync interval (0: never)")
	stateDir := fs.String("state-dir", c.StateDir, "directory of the record of what the agent applied")
	deadline := fs.Duration("load-deadline", c.LoadDeadline, "how long the startup resync waits for every source to load")
	file := fs.String("file", "", "configuration file source (YAML or JSON: key to value)")
	fileMaxSize := fs.Int64("file-max-size", 0, "largest configuration file read, in bytes (0: 16 MiB); a larger one is reported, not applied")
	etcd := fs.String("etcd", "", "etcd endpoints, comma-separated (the etcd source)")
	etcdPrefix := fs.String("etcd-prefix", "", "etcd prefix of the configuration (default /kvdescriptor/<name>/config/)")
	etcdStatus := fs.Bool("etcd-status", false, "write each value's status back to etcd")
	priority := fs.String("priority", strings.Join(c.Sources.Priority, ","), "sources, highest priority first")
	netns := fs.String("netns", "", "network namespace to configure (name or path; default: the agent's own)")
	netnsAllow := fs.String("netns-allow", "", `the only network namespaces values may name, comma-separated ("": none but the -netns one; default: any under /var/run/netns); others are INVALID`)
	memory := fs.Bool("memory", false, "an in-memory southbound instead of the kernel")
	claimRoutes := fs.Bool("claim-route-protocol", false, "every route with the agent's route protocol is the agent's: at start (and each full resync) those no source wants are deleted, even if the record of the state dir lacks them; without it they are OBTAINED and left alone (use only when no other program or agent uses the number)")
	vppSocket := fs.String("vpp-socket", "", `VPP's binary API socket, e.g. /run/vpp/api.sock ("": no VPP plugin; "mock": govpp's mock adapter, no VPP)`)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *configFile != "" {
		data, err := os.ReadFile(*configFile)
		if err != nil {
			return c, err
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			return c, fmt.Errorf("%s: %w", *configFile, err)
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	apply := func(flagName string, fn func()) {
		if set[flagName] {
			fn()
		}
	}
	apply("name", func() { c.Name = *name })
	apply("log-level", func() { c.Log.Level = *logLevel })
	apply("log-format", func() { c.Log.Format = *logFormat })
	apply("http", func() { c.HTTP.Address = *httpAddr })
	apply("token-file", func() { c.HTTP.TokenFile = *tokenFile })
	apply("grpc", func() { c.GRPC.Address = *grpcAddr })
	apply("grpc-token-file", func() { c.GRPC.TokenFile = *grpcToken })
	apply("grpc-cert", func() { c.GRPC.CertFile = *grpcCert })
	apply("grpc-key", func() { c.GRPC.KeyFile = *grpcKey })
	apply("history", func() { c.History.Records = *history })
	apply("history-age", func() { c.History.MaxAge = *historyAge })
	apply("resync", func() { c.ResyncInterval = *resync })
	apply("state-dir", func() { c.StateDir = *stateDir })
	apply("load-deadline", func() { c.LoadDeadline = *deadline })
	apply("file", func() { c.Sources.File.Path = *file })
	apply("file-max-size", func() { c.Sources.File.MaxSize = *fileMaxSize })
	apply("etcd", func() { c.Sources.Etcd.Endpoints = splitList(*etcd) })
	apply("etcd-prefix", func() { c.Sources.Etcd.Prefix = *etcdPrefix })
	apply("etcd-status", func() { c.Sources.Etcd.Status = *etcdStatus })
	apply("priority", func() { c.Sources.Priority = splitList(*priority) })
	apply("netns", func() { c.Southbound.Linux.Netns = *netns })
	apply("netns-allow", func() { c.Southbound.Linux.NetnsAllow = append([]string{}, splitList(*netnsAllow)...) })
	apply("memory", func() { c.Southbound.Memory = *memory })
	apply("claim-route-protocol", func() { c.Southbound.Linux.ClaimRouteProtocol = *claimRoutes })
	apply("vpp-socket", func() { c.Southbound.VPP.Socket = *vppSocket })
	return c, c.check()
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// check says what is wrong with a configuration, naming the setting.
func (c *Config) check() error {
	var errs []error
	if c.Name == "" || strings.ContainsAny(c.Name, "/ \t\n") {
		errs = append(errs, fmt.Errorf("name: %q is not an agent name (non-empty, no '/' or spaces)", c.Name))
	}
	if _, err := logLevel(c.Log.Level); err != nil {
		errs = append(errs, err)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		errs = append(errs, fmt.Errorf("log format: %q is neither text nor json", c.Log.Format))
	}
	if c.HTTP.Address != "" {
		host, _, err := net.SplitHostPort(c.HTTP.Address)
		if err != nil {
			errs = append(errs, fmt.Errorf("http address: %q: %w", c.HTTP.Address, err))
		} else if !isLoopback(host) && c.HTTP.TokenFile == "" {
			errs = append(errs, fmt.Errorf("http address: %q is not a loopback address: a token file (-token-file) is required", c.HTTP.Address))
		}
	}
	if a := c.GRPC.Address; a != "" && a != "off" && !strings.HasPrefix(a, "unix:") {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			errs = append(errs, fmt.Errorf("grpc address: %q: %w", a, err))
		} else if !isLoopback(host) && (c.GRPC.TokenFile == "" || c.GRPC.CertFile == "" || c.GRPC.KeyFile == "") {
			errs = append(errs, fmt.Errorf("grpc address: %q is not a loopback address: TLS (-grpc-cert, -grpc-key) and a token file (-grpc-token-file) are required", a))
		}
	}
	if (c.GRPC.CertFile == "") != (c.GRPC.KeyFile == "") {
		errs = append(errs, errors.New("grpc: -grpc-cert and -grpc-key go together"))
	}
	if c.History.Records < 0 {
		errs = append(errs, fmt.Errorf("history: %d records", c.History.Records))
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
		if p != "file" && p != "etcd" && p != "grpc" {
			errs = append(errs, fmt.Errorf("priority: unknown source %q (file, etcd, grpc)", p))
		}
	}
	if c.Sources.File.MaxSize < 0 {
		errs = append(errs, fmt.Errorf("file max size: %d bytes (0 for the default, or more)", c.Sources.File.MaxSize))
	}
	if c.Sources.File.Path == "" && len(c.Sources.Etcd.Endpoints) == 0 {
		errs = append(errs, errors.New("sources: none configured (-file or -etcd)"))
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

func logLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, fmt.Errorf("log level: %q is not one of debug, info, warn, error", s)
	}
	return l, nil
}
