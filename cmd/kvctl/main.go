// Command kvctl is the command-line tool of a running kvdescriptor agent
// (examples/agent): it reads the agent's state and commits transactions
// over the agent's API (the AgentService of
// models/kvdescriptor/api/v1); every call goes through agentAPI
// (transport.go). kvctl report writes a support bundle (report.go), and
// kvctl etcd reads and writes agents' configuration in etcd, checked as
// the agent checks it (etcd.go, etcdcmds.go, etcdmodels.go).
//
// kvctl reads and writes the values of any model the agent serves: the
// message types it is built with come first; a type it lacks is taken
// from the agent's schema (the .proto files of its models, which Models
// sends on request), read once per run and only when needed.
//
// Exit codes: 0 success; 1 the operation failed (a commit error, a value
// not CONFIGURED with --wait, a bad configuration file, a request the
// agent refuses); 2 bad usage; 3 the agent cannot be reached.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	_ "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/abf/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/acl/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
)

// The exit codes.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitUnreachable = 3
)

const defaultServer = "unix:/var/lib/kvdescriptor-agent/grpc.sock"

// exitError carries the exit code of an error found while running a
// command; an error without one comes from cobra (bad usage).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func (e *exitError) Unwrap() error { return e.err }

func failed(format string, args ...any) error {
	return &exitError{code: exitFailed, err: fmt.Errorf(format, args...)}
}

func usage(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// bounds refuses, as bad usage, a flag beyond the agent's bound
// (runtime/apilimits): the agent would refuse the request.
func bounds(errs ...error) error {
	if err := apilimits.First(errs...); err != nil {
		return usage("%v (the agent refuses more)", err)
	}
	return nil
}

// waitBound checks --timeout, which bounds the agent's wait of a command
// with --wait.
func (c *cli) waitBound(wait bool) error {
	if !wait {
		return nil
	}
	return apilimits.Duration("--timeout (with --wait)", c.timeout, apilimits.MaxWaitTimeout)
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs kvctl with args and returns its exit code.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c := &cli{stdout: stdout}
	c.types = &types{fetch: c.schema}
	root := c.root()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if c.httpClient != nil {
		c.httpClient.CloseIdleConnections()
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "kvctl: %v\n", err)
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.code == exitUsage {
			fmt.Fprintln(stderr, "(kvctl --help lists the commands and flags)")
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "(kvctl --help lists the commands and flags)")
	return exitUsage
}

type cli struct {
	stdout    io.Writer
	server    string
	tokenFile string
	tls       bool
	tlsCA     string
	output    string
	timeout   time.Duration
	color     bool
	grace     time.Duration
	// httpClient and base reach the agent's listener (dial).
	httpClient *http.Client
	base       string
	client     agentAPI
	// ctx is the command's; types resolves the message types of values.
	ctx   context.Context
	types *types
}

const longHelp = `kvctl talks to a running kvdescriptor agent over its API (gRPC, with a
connect-go client; report reads the metrics on the same listener), and
writes agents' configuration in etcd (kvctl etcd).

The agent is reached at --server: unix:PATH (the agent's Unix socket, by
default grpc.sock in its state directory) or host:port; the environment
variable KVCTL_SERVER sets the default. --token-file names a file holding
the bearer token the agent requires, if any; --tls (or --tls-ca FILE)
connects with TLS, as an agent exposed beyond the machine requires.
The environment variable TRACEPARENT (a W3C trace context) is sent with
every request: an agent that traces makes the transactions kvctl commits
children of that span.

Exit codes:
  0  success
  1  the operation failed (e.g. a commit error, a value not CONFIGURED
     with --wait, a bad configuration file, a confirmed commit with
     nothing to confirm, a request the agent refuses as invalid)
  2  bad usage (unknown command or flag, wrong arguments)
  3  the agent cannot be reached (or its connection was lost)`

func (c *cli) root() *cobra.Command {
	server := os.Getenv("KVCTL_SERVER")
	if server == "" {
		server = defaultServer
	}
	root := &cobra.Command{
		Use:           "kvctl",
		Short:         "Inspect and configure a running kvdescriptor agent",
		Long:          longHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			switch c.output {
			case "text", "json", "yaml":
			default:
				return usage("-o %q: want text, json or yaml", c.output)
			}
			c.color = isTerminal(c.stdout)
			c.ctx = cmd.Context()
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage("%v", err) })
	pf := root.PersistentFlags()
	pf.StringVar(&c.server, "server", server, "agent address: unix:PATH or host:port (env KVCTL_SERVER)")
	pf.StringVar(&c.tokenFile, "token-file", "", "file holding the agent's bearer token")
	pf.BoolVar(&c.tls, "tls", false, "connect with TLS (the system's roots, or --tls-ca)")
	pf.StringVar(&c.tlsCA, "tls-ca", "", "PEM file of the CA that signed the agent's certificate (implies --tls)")
	pf.StringVarP(&c.output, "output", "o", "text", "output format: text, json or yaml")
	pf.DurationVar(&c.timeout, "timeout", 30*time.Second, "time limit of each call (watch runs until interrupted)")
	root.AddCommand(c.statusCmd(), c.whyCmd(), c.historyCmd(), c.timelineCmd(), c.modelsCmd(), c.dumpCmd(),
		c.graphCmd(), c.applyCmd(), c.confirmCmd(), c.rollbackCmd(), c.deleteCmd(), c.resyncCmd(), c.watchCmd(),
		c.logLevelCmd(), c.reportCmd(), c.infoCmd(), c.etcdCmd(), c.fleetCmd())
	return root
}

// args wraps a cobra argument check so that its error is bad usage.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usage("%s: %v", cmd.Name(), err)
		}
		return nil
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
