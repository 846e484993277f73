package agent

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// ParseArgs reads a command line into a Config: the defaults, then the
// YAML file that -config names, then the flags given (a flag given wins
// over the file). -h prints the flags to help and returns flag.ErrHelp.
func ParseArgs(args []string, help io.Writer) (Config, error) {
	c := Defaults()
	if help == nil {
		help = io.Discard
	}
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
	httpAddr := fs.String("http", c.HTTP.Address, `an API listener (the whole API, metrics, probes): host:port or unix:PATH ("" or "off" turns it off)`)
	tokenFile := fs.String("token-file", "", "file holding the bearer token of every call on the -http listener")
	httpCert := fs.String("http-cert", "", "TLS certificate file of the -http listener")
	httpKey := fs.String("http-key", "", "TLS key file of the -http listener")
	grpcAddr := fs.String("grpc", "", `the other API listener (the whole API too): unix:PATH or host:port ("": unix:<state-dir>/grpc.sock; "off" turns it off)`)
	grpcToken := fs.String("grpc-token-file", "", "file holding the bearer token of every call on the -grpc listener")
	grpcCert := fs.String("grpc-cert", "", "TLS certificate file of the -grpc listener")
	grpcKey := fs.String("grpc-key", "", "TLS key file of the -grpc listener")
	history := fs.Int("history", c.History.Records, "transactions kept in the history, in memory and in the state directory (0: none)")
	historyAge := fs.Duration("history-age", 0, "drop history records older than this (0: no limit)")
	resync := fs.Duration("resync", 0, "periodic downstream resync interval (0: never)")
	stateDir := fs.String("state-dir", c.StateDir, "directory of what outlives a run: what the agent applied, transaction numbers, history")
	deadline := fs.Duration("load-deadline", c.LoadDeadline, "how long the startup resync waits for every source to load")
	revert := fs.Bool("revert", c.Transactions.Revert, "revert a source's update whose transaction fails (default: best-effort)")
	retry := fs.Int("retry", c.Transactions.Retry.MaxAttempts, "retries of the failed operations of a source's transaction (0: none)")
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
	traceEndpoint := fs.String("trace-endpoint", "", `OTLP/HTTP receiver of the traces, http(s)://HOST:PORT[/PATH] (path default /v1/traces; "": no tracing)`)
	vppSocket := fs.String("vpp-socket", "", `VPP's binary API socket, e.g. /run/vpp/api.sock ("": no VPP plugin; "mock": govpp's mock adapter, no VPP)`)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *configFile != "" {
		var err error
		if c, err = readConfigFile(*configFile); err != nil {
			return c, err
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
	apply("http-cert", func() { c.HTTP.CertFile = *httpCert })
	apply("http-key", func() { c.HTTP.KeyFile = *httpKey })
	apply("grpc", func() { c.GRPC.Address = *grpcAddr })
	apply("grpc-token-file", func() { c.GRPC.TokenFile = *grpcToken })
	apply("grpc-cert", func() { c.GRPC.CertFile = *grpcCert })
	apply("grpc-key", func() { c.GRPC.KeyFile = *grpcKey })
	apply("history", func() { c.History.Records = *history })
	apply("history-age", func() { c.History.MaxAge = *historyAge })
	apply("resync", func() { c.ResyncInterval = *resync })
	apply("state-dir", func() { c.StateDir = *stateDir })
	apply("load-deadline", func() { c.LoadDeadline = *deadline })
	apply("revert", func() { c.Transactions.Revert = *revert })
	apply("retry", func() { c.Transactions.Retry.MaxAttempts = *retry })
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
	apply("trace-endpoint", func() { c.Tracing.Endpoint = *traceEndpoint })
	return c, c.Check()
}

// readConfigFile reads the YAML file path over Defaults, unchecked (flags
// may complete it).
func readConfigFile(path string) (Config, error) {
	c := Defaults()
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	return c, c.decodeYAML(path, data)
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
