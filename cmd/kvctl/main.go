// Command kvctl is the command-line tool of a running kvdescriptor agent
// (examples/agent): it reads the agent's state and commits transactions
// over the agent's gRPC API (the AgentService of
// models/kvdescriptor/api/v1).
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
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"gopkg.in/yaml.v3"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
	"github.com/kvdescriptor/kvdescriptor/runtime/grpcapi"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/file"
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

// rpcError classifies an error of an RPC.
func rpcError(err error) error {
	if err == nil {
		return nil
	}
	switch status.Code(err) {
	case codes.Unavailable:
		return &exitError{code: exitUnreachable, err: fmt.Errorf("cannot reach the agent: %s", status.Convert(err).Message())}
	case codes.InvalidArgument:
		return &exitError{code: exitFailed, err: errors.New(status.Convert(err).Message())}
	}
	if s, ok := status.FromError(err); ok {
		return &exitError{code: exitFailed, err: fmt.Errorf("%s: %s", s.Code(), s.Message())}
	}
	return &exitError{code: exitFailed, err: err}
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
	if c.conn != nil {
		c.conn.Close()
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
	conn      *grpc.ClientConn
	client    apiv1.AgentServiceClient
	// ctx is the command's; types resolves the message types of values.
	ctx   context.Context
	types *types
}

const longHelp = `kvctl talks to a running kvdescriptor agent over its gRPC API.

The agent is reached at --server: unix:PATH (the agent's Unix socket, by
default grpc.sock in its state directory) or host:port; the environment
variable KVCTL_SERVER sets the default. --token-file names a file holding
the bearer token the agent requires, if any; --tls (or --tls-ca FILE)
connects with TLS, as an agent exposed beyond the machine requires.

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
		c.graphCmd(), c.applyCmd(), c.confirmCmd(), c.rollbackCmd(), c.deleteCmd(), c.resyncCmd(), c.watchCmd())
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

// dial connects to the agent (lazily: the first call reports an
// unreachable agent).
func (c *cli) dial() (apiv1.AgentServiceClient, error) {
	if c.client != nil {
		return c.client, nil
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	useTLS := c.tls || c.tlsCA != ""
	if useTLS {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.tlsCA != "" {
			pem, err := os.ReadFile(c.tlsCA)
			if err != nil {
				return nil, usage("--tls-ca: %v", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, usage("--tls-ca %s: no PEM certificate", c.tlsCA)
			}
		}
		opts[0] = grpc.WithTransportCredentials(credentials.NewTLS(cfg))
	}
	if c.tokenFile != "" {
		b, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return nil, usage("--token-file: %v", err)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return nil, usage("--token-file %s: empty (or white space only): it must hold the token", c.tokenFile)
		}
		opts = append(opts, grpc.WithPerRPCCredentials(grpcapi.TokenCredentials(token, !useTLS)))
	}
	target := c.server
	if strings.HasPrefix(target, "/") {
		target = "unix:" + target
	} else if !strings.HasPrefix(target, "unix:") && !strings.Contains(target, "://") {
		target = "passthrough:///" + target
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, usage("--server %q: %v", c.server, err)
	}
	c.conn = conn
	c.client = apiv1.NewAgentServiceClient(conn)
	return c.client, nil
}

// call runs f with a client and a context bounded by --timeout.
func (c *cli) call(cmd *cobra.Command, f func(ctx context.Context, cl apiv1.AgentServiceClient) error) error {
	cl, err := c.dial()
	if err != nil {
		return err
	}
	// A call that waits on the agent for at most --timeout gets a
	// little more, so that the agent's answer arrives.
	ctx, cancel := context.WithTimeout(cmd.Context(), c.timeout+c.grace)
	defer cancel()
	return rpcError(f(ctx, cl))
}

// schema asks the agent for the .proto files of its models (types calls
// it once, the first time kvctl lacks a type).
func (c *cli) schema() (*descriptorpb.FileDescriptorSet, error) {
	cl, err := c.dial()
	if err != nil {
		return nil, err
	}
	ctx := c.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := cl.Models(ctx, &apiv1.ModelsRequest{IncludeSchema: true})
	if err != nil {
		return nil, err
	}
	return resp.GetSchema(), nil
}

// structured writes m as JSON or YAML.
func (c *cli) structured(m proto.Message) error {
	b, err := protojson.MarshalOptions{UseProtoNames: true, Resolver: c.types}.Marshal(m)
	if err != nil {
		return failed("%v", err)
	}
	if c.output == "json" {
		// Indented by encoding/json: protojson's own spacing varies
		// from build to build on purpose, and scripts may diff it.
		var buf bytes.Buffer
		if err := json.Indent(&buf, b, "", "  "); err != nil {
			return failed("%v", err)
		}
		buf.WriteByte('\n')
		_, err = c.stdout.Write(buf.Bytes())
		return err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return failed("%v", err)
	}
	y, err := yaml.Marshal(v)
	if err != nil {
		return failed("%v", err)
	}
	_, err = c.stdout.Write(y)
	return err
}

func (c *cli) paint(colour, s string) string {
	if !c.color || s == "" {
		return s
	}
	return "\x1b[" + colour + "m" + s + "\x1b[0m"
}

func (c *cli) stateColour(state string) string {
	switch state {
	case "CONFIGURED":
		return c.paint("32", state)
	case "PENDING":
		return c.paint("33", state)
	case "FAILED", "INVALID", "RETRYING", "UNIMPLEMENTED":
		return c.paint("31", state)
	}
	return state
}

// newTable aligns columns separated by tabs (an empty last column leaves
// no trailing spaces).
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(&trimWriter{w: w}, 0, 4, 2, ' ', 0)
}

// trimWriter drops the spaces that end lines.
type trimWriter struct {
	w      io.Writer
	spaces int
}

func (t *trimWriter) Write(p []byte) (int, error) {
	var out []byte
	for _, b := range p {
		switch b {
		case ' ':
			t.spaces++
			continue
		case '\n':
			t.spaces = 0
		default:
			for ; t.spaces > 0; t.spaces-- {
				out = append(out, ' ')
			}
		}
		out = append(out, b)
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// valueText renders a value as one line of compact JSON.
func (c *cli) valueText(a *anypb.Any) string {
	if a == nil {
		return ""
	}
	m, err := anypb.UnmarshalNew(a, proto.UnmarshalOptions{Resolver: c.types})
	if err != nil {
		return "(" + a.GetTypeUrl() + ")"
	}
	b, err := protojson.MarshalOptions{Resolver: c.types}.Marshal(m)
	if err != nil {
		return "(" + a.GetTypeUrl() + ")"
	}
	var v any
	if json.Unmarshal(b, &v) == nil {
		if b2, err := json.Marshal(v); err == nil {
			return string(b2)
		}
	}
	return string(b)
}

// pendingDetail is the first unmet dependency of a why-pending chain.
func pendingDetail(lines []string) string {
	if len(lines) > 1 {
		return strings.TrimSpace(lines[1])
	}
	return "pending"
}

func (c *cli) statusCmd() *cobra.Command {
	var descriptor, owner string
	cmd := &cobra.Command{
		Use:   "status [key|prefix]",
		Short: "The status of values: every value, one key, or the keys under a prefix",
		Long: `status shows the state of values as a table (KEY STATE OWNER DETAIL); a
PENDING row says what it waits for, a failed one its error. An argument
ending in "/" is a prefix; another argument is a key, or a prefix when no
value has that key.`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return c.call(cmd, func(ctx context.Context, cl apiv1.AgentServiceClient) error {
				req := &apiv1.StatusRequest{Descriptor_: descriptor, Owner: owner}
				var resp *apiv1.StatusResponse
				var err error
				if len(a) == 1 && !strings.HasSuffix(a[0], "/") {
					req.Key = a[0]
					resp, err = cl.Status(ctx, req)
					if err == nil && len(resp.GetStatuses()) == 0 {
						req.Key, req.Prefix = "", a[0]
						resp, err = cl.Status(ctx, req)
					}
				} else {
					if len(a) == 1 {
						req.Prefix = a[0]
					}
					resp, err = cl.Status(ctx, req)
				}
				if err != nil {
					return err
				}
				if c.output != "text" {
					return c.structured(resp)
				}
				sts := resp.GetStatuses()
				sort.Slice(sts, func(i, j int) bool { return sts[i].GetKey() < sts[j].GetKey() })
				t := newTable(c.stdout)
				fmt.Fprintln(t, "KEY\tSTATE\tOWNER\tDETAIL")
				for _, s := range sts {
					detail := s.GetError()
					if s.GetState() == "PENDING" {
						detail = pendingDetail(s.GetWhyPending())
					}
					if detail == "" && s.GetOrigin() != "" && s.GetOrigin() != "FROM_NB" {
						detail = strings.ToLower(s.GetOrigin())
					}
					fmt.Fprintf(t, "%s\t%s\t%s\t%s\n", s.GetKey(), c.stateColour(s.GetState()), dash(s.GetOwner()), detail)
				}
				return t.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&descriptor, "descriptor", "", "only the values of this descriptor")
	cmd.Flags().StringVar(&owner, "owner", "", "only the values of this owner (source)")
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (c *cli) whyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "why <key>",
		Short: "Why a value is PENDING: its unmet dependencies, followed down to the missing roots",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return c.call(cmd, func(ctx context.Context, cl apiv1.AgentServiceClient) error {
				resp, err := cl.Status(ctx, &apiv1.StatusRequest{Key: a[0]})
				if err != nil {
					return err
				}
				if len(resp.GetStatuses()) == 0 {
					return failed("%s: no such value", a[0])
				}
				s := resp.GetStatuses()[0]
				if c.output != "text" {
					return c.structured(s)
				}
				if s.GetState() != "PENDING" {
					fmt.Fprintf(c.stdout, "%s is %s (not pending)\n", s.GetKey(), c.stateColour(s.GetState()))
					return nil
				}
				_, err = fmt.Fprint(c.stdout, strings.Join(s.GetWhyPending(), "\n")+"\n")
				return err
			})
		},
	}
}

func (c *cli) opLine(op *apiv1.Op) string {
	s := fmt.Sprintf("%s %s %s", op.GetKind(), op.GetKey(), op.GetState())
	if len(op.GetFlags()) > 0 {
		s += " [" + strings.Join(op.GetFlags(), ",") + "]"
	}
	if op.GetError() != "" {
		s += ": " + c.paint("31", op.GetError())
	}
	return s
}

func (c *cli) historyCmd() *cobra.Command {
	var seq uint64
	var since string
	cmd := &cobra.Command{
		Use:   "history",
		Short: "The scheduler's transaction history",
		Long: `history lists the transactions the agent ran: one line each, or with
--seq N the record of transaction N with its planned and executed
operations. --since takes an RFC 3339 time or a duration back from now
(e.g. 10m).`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := &apiv1.HistoryRequest{Seq: seq}
			if since != "" {
				t, err := parseSince(since)
				if err != nil {
					return usage("--since: %v", err)
				}
				req.Since = timestamppb.New(t)
			}
			return c.call(cmd, func(ctx context.Context, cl apiv1.AgentServiceClient) error {
				resp, err := cl.History(ctx, req)
				if err != nil {
					return err
				}
				if c.output != "text" {
					return c.structured(resp)
				}
				if seq != 0 {
					for _, r := range resp.GetRecords() {
						c.writeRecord(r)
					}
					return nil
				}
				t := newTable(c.stdout)
				fmt.Fprintln(t, "SEQ\tKIND\tSTART\tDURATION\tOPS\tERRORS\tDESCRIPTION")
				for _, r := range resp.GetRecords() {
					d := r.GetEnd().AsTime().Sub(r.GetStart().AsTime()).Round(time.Microsecond)
					desc := r.GetDescription()
					if r.GetReverted() {
						desc += " (reverted)"
					}
					fmt.Fprintf(t, "%d\t%s\t%s\t%s\t%d\t%d\t%s\n", r.GetSeq(), r.GetKind(), r.GetStart().AsTime().Format(time.RFC3339),
						d, len(r.GetExecuted()), len(r.GetErrors()), desc)
				}
				return t.Flush()
			})
		},
	}
	cmd.Flags().Uint64Var(&seq, "seq", 0, "the record of this transaction")
	cmd.Flags().StringVar(&since, "since", "", "only transactions since this time (RFC 3339) or duration ago")
	return cmd
}

func parseSince(s string) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	return time.Parse(time.RFC3339, s)
}

func (c *cli) writeRecord(r *apiv1.Record) {
	w := c.stdout
	fmt.Fprintf(w, "transaction %d (%s)", r.GetSeq(), r.GetKind())
	if r.GetDescription() != "" {
		fmt.Fprintf(w, ": %s", r.GetDescription())
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  start: %s  duration: %s\n", r.GetStart().AsTime().Format(time.RFC3339Nano),
		r.GetEnd().AsTime().Sub(r.GetStart().AsTime()).Round(time.Microsecond))
	if r.GetReverted() {
		fmt.Fprintln(w, "  reverted")
	}
	fmt.Fprintln(w, "  planned:")
	for _, op := range r.GetPlanned() {
		fmt.Fprintln(w, "    "+c.opLine(op))
	}
	fmt.Fprintln(w, "  executed:")
	for _, op := range r.GetExecuted() {
		fmt.Fprintln(w, "    "+c.opLine(op))
	}
	for _, e := range r.GetErrors() {
		fmt.Fprintln(w, "  error: "+c.paint("31", e))
	}
}

func (c *cli) timelineCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "timeline <key>",
		Short: "What happened to a key, transaction by transaction",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return c.call(cmd, func(ctx context.Context, cl apiv1.AgentServiceClient) error {
				resp, err := cl.Timeline(ctx, &apiv1.TimelineRequest{Key: a[0]})
				if err != nil {
					return err
				}
				if c.output != "text" {
					return c.structured(resp)
				}
				t := newTable(c.stdout)
				fmt.Fprintln(t, "SEQ\tTIME\tOP\tSTATE\tFLAGS\tVALUE")
				for _, e := range resp.GetEntries() {
					v := c.valueText(e.GetValue())
					if e.GetError() != "" {
						v = "error: " + e.GetError()
					}
					fmt.Fprintf(t, "%d\t%s\t%s\t%s\t%s\t%s\n", e.GetSeq(), e.GetTime().AsTime().Format(time.RFC3339Nano), e.GetOp(),
						c.stateColour(e.GetState()), dash(strings.Join(e.GetFlags(), ",")), v)
				}
				return t.Flush()
			})
		},
	}
}

func (c *cli) modelsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "models",
		Short: "The models the agent handles, with their key templates and fields",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.call(cmd, func(ctx context.Context, cl apiv1.AgentServiceClient) error {
				resp, err := cl.Models(ctx, &apiv1.ModelsRequest{})
				if err != nil {
					return err
				}
				if c.output != "text" {
					return c.structured(resp)
				}
				t := newTable(c.stdout)
				fmt.Fprintln(t, "DESCRIPTOR\tMESSAGE\tKEY TEMPLATE\tFIELDS")
				for _, m := range resp.GetModels() {
					var fs []string
					for _, f := range m.GetFields() {
						ty := f.GetType()
						if f.GetRepeated() {
							ty = "[]" + ty
						}
						fs = append(fs, f.GetName()+" "+ty)
					}
					fmt.Fprintf(t, "%s\t%s\t%s\t%s\n", m.GetDescriptor_(), m.GetMessage(), m.GetKeyTemplate(), strings.Join(fs, ", "))
				}
				return t.Flush()
			})
		},
	}
}

func (c *cli) dumpCmd() *cobra.Command {
	var view, model string
	cmd := &cobra.Command{
		Use:   "dump [prefix]",
		Short: "The values in one view: intended, the southbound's (sb) or the scheduler's (cached)",
		Long: `dump shows the values of one view as a table (KEY ORIGIN VALUE): the
intended values (--view intended, the default), what the southbound holds
(sb: the agent reads it now) or what the scheduler believes is applied
(cached). An argument keeps the keys that start with it (a key shows its
value and its derived values); --model keeps one descriptor's values. A
prefix that no key of --model can start with is an error (exit code 1).`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			var v apiv1.View
			switch view {
			case "intended":
				v = apiv1.View_VIEW_INTENDED
			case "sb":
				v = apiv1.View_VIEW_SOUTHBOUND
			case "cached":
				v = apiv1.View_VIEW_SCHEDULER
			default:
				return usage("--view %q: want intended, sb or cached", view)
			}
			return c.call(cmd, func(ctx context.Context, cl apiv1.AgentServiceClient) error {
				req := &apiv1.DumpRequest{View: v, Descriptor_: model}
				if len(a) == 1 {
					req.Prefix = a[0]
				}
				resp, err := cl.Dump(ctx, req)
				if err != nil {
					return err
				}
				if c.output != "text" {
					return c.structured(resp)
				}
				items := resp.GetItems()
				sort.Slice(items, func(i, j int) bool { return items[i].GetKey() < items[j].GetKey() })
				t := newTable(c.stdout)
				fmt.Fprintln(t, "KEY\tORIGIN\tVALUE")
				for _, it := range items {
					fmt.Fprintf(t, "%s\t%s\t%s\n", it.GetKey(), dash(it.GetOrigin()), c.valueText(it.GetValue()))
				}
				return t.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&view, "view", "intended", "intended, sb (the southbound) or cached (the scheduler's)")
	cmd.Flags().StringVar(&model, "model", "", "only the values of this descriptor")
	return cmd
}

func (c *cli) graphCmd() *cobra.Command {
	var seq uint64
	var format, out string
	cmd := &cobra.Command{
		Use:   "graph",
		Short: "The dependency graph, in DOT or SVG",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var f apiv1.GraphFormat
			switch format {
			case "dot":
				f = apiv1.GraphFormat_GRAPH_FORMAT_DOT
			case "svg":
				f = apiv1.GraphFormat_GRAPH_FORMAT_SVG
			default:
				return usage("--format %q: want dot or svg", format)
			}
			return c.call(cmd, func(ctx context.Context, cl apiv1.AgentServiceClient) error {
				resp, err := cl.Graph(ctx, &apiv1.GraphRequest{Seq: seq, Format: f})
				if err != nil {
					return err
				}
				if out != "" {
					if err := os.WriteFile(out, resp.GetData(), 0o644); err != nil {
						return failed("%v", err)
					}
					return nil
				}
				_, err = c.stdout.Write(resp.GetData())
				return err
			})
		},
	}
	cmd.Flags().Uint64Var(&seq, "txn", 0, "the graph as of this transaction (0: now)")
	cmd.Flags().StringVar(&format, "format", "dot", "dot or svg")
	cmd.Flags().StringVarP(&out, "out", "O", "", "write the graph to this file")
	return cmd
}

// agentModels resolves keys through the key prefixes of the agent's
// models, to the message types of types: those linked into kvctl, or
// the agent's schema.
type agentModels struct {
	models []*apiv1.Model
	types  *types
	// missing is the first message type that neither kvctl nor the
	// agent's schema has, with the reason.
	missing *error
}

func (m agentModels) MessageType(key string) (protoreflect.MessageType, bool) {
	var best *apiv1.Model
	for _, md := range m.models {
		p := md.GetKeyPrefix()
		if strings.HasPrefix(key, p) && (best == nil || len(p) > len(best.GetKeyPrefix())) {
			best = md
		}
	}
	if best == nil {
		return nil, false
	}
	mt, err := m.types.FindMessageByName(protoreflect.FullName(best.GetMessage()))
	if err != nil {
		if *m.missing == nil {
			if errors.Is(err, protoregistry.NotFound) {
				err = errors.New("neither kvctl nor the agent's schema describes it")
			}
			*m.missing = fmt.Errorf("the model %s has the message %s: %w", best.GetDescriptor_(), best.GetMessage(), err)
		}
		return nil, false
	}
	return mt, true
}

// changedFields names the top-level fields that differ between two values.
func (c *cli) changedFields(prev, next *anypb.Any) []string {
	opts := proto.UnmarshalOptions{Resolver: c.types}
	a, err1 := anypb.UnmarshalNew(prev, opts)
	b, err2 := anypb.UnmarshalNew(next, opts)
	if err1 != nil || err2 != nil || a.ProtoReflect().Descriptor() != b.ProtoReflect().Descriptor() {
		return nil
	}
	ra, rb := a.ProtoReflect(), b.ProtoReflect()
	var out []string
	fields := ra.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if ra.Has(fd) != rb.Has(fd) || !ra.Get(fd).Equal(rb.Get(fd)) {
			out = append(out, fmt.Sprintf("%s: %s -> %s", fd.JSONName(), c.fieldText(ra, fd), c.fieldText(rb, fd)))
		}
	}
	return out
}

func (c *cli) fieldText(m protoreflect.Message, fd protoreflect.FieldDescriptor) string {
	if !m.Has(fd) {
		return "(unset)"
	}
	v := m.Get(fd)
	switch {
	case fd.IsList():
		l := v.List()
		var parts []string
		for i := 0; i < l.Len(); i++ {
			parts = append(parts, fmt.Sprint(l.Get(i).Interface()))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case fd.Kind() == protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
	case fd.Kind() == protoreflect.StringKind:
		return fmt.Sprintf("%q", v.String())
	case fd.Message() != nil && !fd.IsMap():
		b, _ := protojson.MarshalOptions{Resolver: c.types}.Marshal(v.Message().Interface())
		return string(b)
	}
	return fmt.Sprint(v.Interface())
}

// writePlan writes planned operations like a diff, then a warning line
// per value of the file that would not take effect (another source sets
// the key and wins: the plan's outcomes say so).
func (c *cli) writePlan(ops []*apiv1.Op, outcomes []*apiv1.Outcome) {
	defer func() {
		for _, o := range outcomes {
			if o.GetWarning() != "" {
				fmt.Fprintln(c.stdout, c.paint("33", fmt.Sprintf("warning: %s: %s", o.GetKey(), o.GetWarning())))
			}
		}
	}()
	if len(ops) == 0 {
		fmt.Fprintln(c.stdout, "no changes")
		return
	}
	// A re-creation is planned as a delete and a create of one key: one
	// "!" line, with the fields that changed.
	recreated := map[string][2]*anypb.Any{}
	for _, op := range ops {
		if !slices.Contains(op.GetFlags(), "RECREATE") {
			continue
		}
		r := recreated[op.GetKey()]
		switch op.GetKind() {
		case "DELETE":
			r[0] = op.GetValue()
			if op.GetPrevValue() != nil {
				r[0] = op.GetPrevValue()
			}
		case "CREATE":
			r[1] = op.GetValue()
		}
		recreated[op.GetKey()] = r
	}
	shown := map[string]bool{}
	for _, op := range ops {
		if slices.Contains(op.GetFlags(), "NOOP") {
			continue
		}
		r, recreate := recreated[op.GetKey()]
		if recreate {
			if shown[op.GetKey()] {
				continue
			}
			shown[op.GetKey()] = true
		}
		var sign, colour string
		switch {
		case recreate:
			sign, colour = "!", "35"
		case op.GetKind() == "CREATE":
			sign, colour = "+", "32"
		case op.GetKind() == "UPDATE":
			sign, colour = "~", "33"
		case op.GetKind() == "DELETE":
			sign, colour = "-", "31"
		case op.GetState() == "PENDING":
			// Nothing to do yet: the value waits for its dependencies.
			sign, colour = "+", "33"
		default:
			sign, colour = " ", "0"
		}
		line := fmt.Sprintf("%s %s", sign, op.GetKey())
		var extra []string
		for _, f := range op.GetFlags() {
			if f != "RECREATE" && (f != "IS-PENDING" || op.GetState() != "PENDING") {
				extra = append(extra, f)
			}
		}
		if op.GetState() == "PENDING" && !recreate {
			line += " (pending)"
		}
		if len(extra) > 0 && !recreate {
			line += " [" + strings.Join(extra, ",") + "]"
		}
		fmt.Fprintln(c.stdout, c.paint(colour, line))
		var fields []string
		switch {
		case recreate && r[0] != nil && r[1] != nil:
			fields = c.changedFields(r[0], r[1])
		case op.GetKind() == "UPDATE" && op.GetPrevValue() != nil && op.GetValue() != nil:
			fields = c.changedFields(op.GetPrevValue(), op.GetValue())
		}
		for _, f := range fields {
			fmt.Fprintln(c.stdout, "    "+f)
		}
	}
}

// writeCommit writes the result of a commit.
func (c *cli) writeCommit(resp *apiv1.CommitResponse, wait bool) error {
	if c.output != "text" {
		if err := c.structured(resp); err != nil {
			return err
		}
	} else {
		if resp.GetSeq() == 0 {
			fmt.Fprintln(c.stdout, "nothing to do")
		} else {
			fmt.Fprintf(c.stdout, "transaction %d\n", resp.GetSeq())
		}
		for _, op := range resp.GetExecuted() {
			fmt.Fprintln(c.stdout, "  "+c.opLine(op))
		}
		if d := resp.GetConfirmDeadline(); d != nil {
			fmt.Fprintf(c.stdout, "awaiting confirmation until %s: kvctl confirm %d\n", d.AsTime().Format(time.RFC3339), resp.GetSeq())
		}
		if resp.GetReverted() {
			fmt.Fprintln(c.stdout, c.paint("31", "reverted"))
		}
	}
	var bad []string
	for _, o := range resp.GetOutcomes() {
		if o.GetError() != "" {
			bad = append(bad, fmt.Sprintf("%s: %s", o.GetKey(), o.GetError()))
		} else if wait && o.GetState() != "CONFIGURED" && o.GetState() != "REMOVED" && o.GetState() != "NONEXISTENT" && o.GetState() != "" {
			s := fmt.Sprintf("%s is %s", o.GetKey(), o.GetState())
			if len(o.GetWhyPending()) > 0 {
				s += " (" + pendingDetail(o.GetWhyPending()) + ")"
			}
			bad = append(bad, s)
		}
	}
	if resp.GetReverted() {
		bad = append(bad, "the transaction was reverted")
	}
	if len(bad) > 0 {
		return failed("%s", strings.Join(bad, "; "))
	}
	return nil
}

// progress prints a progress line on stderr while a long call runs (on a
// terminal only), until the returned function is called.
func (c *cli) progress(cmd *cobra.Command, what string) func() {
	if !isTerminal(cmd.ErrOrStderr()) {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		start := time.Now()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(cmd.ErrOrStderr(), "\r\x1b[K")
				return
			case <-tick.C:
				fmt.Fprintf(cmd.ErrOrStderr(), "\r%s... %s", what, time.Since(start).Round(time.Second))
			}
		}
	}()
	return func() { close(done); <-finished }
}

func (c *cli) applyCmd() *cobra.Command {
	var path, description string
	var plan, wait, prune bool
	var confirmWithin time.Duration
	cmd := &cobra.Command{
		Use:   "apply -f config.yaml",
		Short: "Apply a configuration file (key to value, YAML or JSON): show the plan, then commit",
		Long: `apply reads a configuration file (the format of the agent's file source:
a map of key to value) and shows the plan
like a diff: "+" create, "~" update with the changed fields, "-" delete,
"!" re-create; then a line "warning: KEY: ..." per value of the file that
would not take effect, because another source of higher priority sets
that key (the agent's file or etcd source, say). Then it commits, unless
--plan. With --wait it waits for the values to settle and fails (exit
code 1) unless they are CONFIGURED. With --confirm-within DURATION (any
positive duration: 2s, 90s, 5m) the commit is rolled back, by a
transaction of its own in the history, unless confirmed in time (kvctl
confirm SEQ); a confirmed commit that would change nothing is refused
(exit code 1), as there is no transaction to confirm. With --prune the
file is the whole state of the gRPC source: its values that the file
lacks are deleted.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return usage("apply: -f FILE is required")
			}
			if err := bounds(
				apilimits.Duration("--confirm-within", confirmWithin, apilimits.MaxConfirmWithin),
				apilimits.Length("--description", description, apilimits.MaxDescriptionLen),
				c.waitBound(wait),
			); err != nil {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return failed("%v", err)
			}
			if wait {
				c.grace = 10 * time.Second
			}
			return c.call(cmd, func(ctx context.Context, cl apiv1.AgentServiceClient) error {
				mresp, err := cl.Models(ctx, &apiv1.ModelsRequest{})
				if err != nil {
					return err
				}
				var missing error
				changes, err := file.Parse(path, data, agentModels{models: mresp.GetModels(), types: c.types, missing: &missing})
				if err != nil {
					if missing != nil {
						return failed("%v; %v", err, missing)
					}
					return failed("%v", err)
				}
				req := &apiv1.CommitRequest{Description: "kvctl apply " + path, PlanOnly: true}
				if description != "" {
					req.Description = description
				}
				if prune {
					req.Resync = apiv1.ResyncKind_RESYNC_KIND_SOURCE
				}
				for _, ch := range changes {
					a, err := anypb.New(ch.Value)
					if err != nil {
						return failed("%s: %v", ch.Key, err)
					}
					req.Values = append(req.Values, &apiv1.Value{Key: ch.Key, Value: &apiv1.Value_Any{Any: a}})
				}
				planResp, err := cl.Commit(ctx, req)
				if err != nil {
					return err
				}
				if plan {
					if c.output != "text" {
						return c.structured(planResp)
					}
					c.writePlan(planResp.GetPlanned(), planResp.GetOutcomes())
					return nil
				}
				if c.output == "text" {
					c.writePlan(planResp.GetPlanned(), planResp.GetOutcomes())
				}
				req.PlanOnly = false
				req.Wait = wait
				if wait {
					req.WaitTimeout = durationpb.New(c.timeout)
				}
				if confirmWithin > 0 {
					req.ConfirmWithin = durationpb.New(confirmWithin)
				}
				stop := c.progress(cmd, "applying")
				resp, err := cl.Commit(ctx, req)
				stop()
				if err != nil {
					return err
				}
				return c.writeCommit(resp, wait)
			})
		},
	}
	cmd.Flags().StringVarP(&path, "file", "f", "", "the configuration file")
	cmd.Flags().BoolVar(&plan, "plan", false, "show the plan only; change nothing")
	cmd.Flags().BoolVar(&prune, "prune", false, "the file is the gRPC source's whole state: delete its values the file lacks")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the values to settle (at most --timeout); fail unless CONFIGURED")
	cmd.Flags().DurationVar(&confirmWithin, "confirm-within", 0, "roll the commit back unless confirmed (kvctl confirm SEQ) within this time, e.g. 30s or 5m")
	cmd.Flags().StringVar(&description, "description", "", "the transaction's description")
	return cmd
}

func parseSeq(s string) (uint64, error) {
	var n uint64
	if _, err := fmt.Sscan(s, &n); err != nil || n == 0 {
		return 0, usage("%q is not a transaction sequence number", s)
	}
	return n, nil
}

func (c *cli) confirmCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "confirm <seq>",
		Short: "Confirm a commit awaiting confirmation",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			seq, err := parseSeq(a[0])
			if err != nil {
				return err
			}
			return c.call(cmd, func(ctx context.Context, cl apiv1.AgentServiceClient) error {
				if _, err := cl.Confirm(ctx, &apiv1.ConfirmRequest{Seq: seq}); err != nil {
					return err
				}
				if c.output == "text" {
					fmt.Fprintf(c.stdout, "transaction %d confirmed\n", seq)
					return nil
				}
				return c.structured(&apiv1.ConfirmRequest{Seq: seq})
			})
		},
	}
}

func (c *cli) rollbackCmd() *cobra.Command {
	var to uint64
	cmd := &cobra.Command{
		Use:   "rollback --to <seq>",
		Short: "Make the gRPC source's state what it was after transaction seq, in a new transaction",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == 0 {
				return usage("rollback: --to SEQ is required")
			}
			return c.call(cmd, func(ctx context.Context, cl apiv1.AgentServiceClient) error {
				resp, err := cl.RollbackTo(ctx, &apiv1.RollbackToRequest{Seq: to, Description: fmt.Sprintf("kvctl rollback --to %d", to)})
				if err != nil {
					return err
				}
				return c.writeCommit(resp.GetResult(), false)
			})
		},
	}
	cmd.Flags().Uint64Var(&to, "to", 0, "the transaction to go back to")
	return cmd
}

func (c *cli) deleteCmd() *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:   "delete <key>...",
		Short: "Delete values set over gRPC",
		Args:  args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := bounds(apilimits.Count("keys", int64(len(a)), apilimits.MaxCommitKeys), c.waitBound(wait)); err != nil {
				return err
			}
			if wait {
				c.grace = 10 * time.Second
			}
			return c.call(cmd, func(ctx context.Context, cl apiv1.AgentServiceClient) error {
				req := &apiv1.CommitRequest{Deletes: a, Description: "kvctl delete", Wait: wait}
				if wait {
					req.WaitTimeout = durationpb.New(c.timeout)
				}
				resp, err := cl.Commit(ctx, req)
				if err != nil {
					return err
				}
				return c.writeCommit(resp, false)
			})
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the deletion to settle")
	return cmd
}

func (c *cli) resyncCmd() *cobra.Command {
	var downstream bool
	cmd := &cobra.Command{
		Use:   "resync",
		Short: "Resync: the gRPC source's state (default), or the southbound with --downstream",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.call(cmd, func(ctx context.Context, cl apiv1.AgentServiceClient) error {
				kind := apiv1.ResyncKind_RESYNC_KIND_DOWNSTREAM
				if !downstream {
					// A source resync with the source's current values.
					kind = apiv1.ResyncKind_RESYNC_KIND_SOURCE
					st, err := cl.Status(ctx, &apiv1.StatusRequest{Owner: grpcapi.DefaultSource})
					if err != nil {
						return err
					}
					req := &apiv1.CommitRequest{Resync: kind, Description: "kvctl resync"}
					for _, s := range st.GetStatuses() {
						if s.GetIntended() && s.GetValue() != nil {
							req.Values = append(req.Values, &apiv1.Value{Key: s.GetKey(), Value: &apiv1.Value_Any{Any: s.GetValue()}})
						}
					}
					resp, err := cl.Commit(ctx, req)
					if err != nil {
						return err
					}
					return c.writeCommit(resp, false)
				}
				stop := c.progress(cmd, "resyncing")
				resp, err := cl.Commit(ctx, &apiv1.CommitRequest{Resync: kind, Description: "kvctl resync --downstream"})
				stop()
				if err != nil {
					return err
				}
				return c.writeCommit(resp, false)
			})
		},
	}
	cmd.Flags().BoolVar(&downstream, "downstream", false, "a downstream resync: compare the southbound with the scheduler's view and repair it")
	return cmd
}

func (c *cli) watchCmd() *cobra.Command {
	var buffer int32
	cmd := &cobra.Command{
		Use:   "watch [prefix]",
		Short: "Stream status changes of the keys under prefix, until interrupted",
		Long: `watch streams the status changes of the keys under prefix (every key
without one) as rows KEY STATE OWNER DETAIL, until interrupted.

The agent never waits for a slow reader: it holds at most --buffer updates
for kvctl and drops the others. When the stream says updates were lost,
watch prints a line saying how many, then re-reads the current status of
every key under the prefix and prints it (a key it showed before that no
longer exists shows as NONEXISTENT); updates that the re-read showed
already (of its transaction or an earlier one) are then skipped. So the
last row of each key is always its current state.
With -o json or yaml, the stream's messages are printed as they come, and
the re-read follows a lost_updates message as status messages.`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := bounds(apilimits.Count("--buffer", int64(buffer), apilimits.MaxWatchBuffer)); err != nil {
				return err
			}
			cl, err := c.dial()
			if err != nil {
				return err
			}
			req := &apiv1.WatchRequest{Buffer: buffer}
			if len(a) == 1 {
				req.Prefix = a[0]
			}
			ctx := cmd.Context()
			stream, err := cl.Watch(ctx, req)
			if err != nil {
				return rpcError(err)
			}
			w := &watcher{c: c, t: newTable(c.stdout), shown: map[string]bool{}, reread: map[string]uint64{}}
			if c.output == "text" {
				fmt.Fprintln(w.t, "KEY\tSTATE\tOWNER\tDETAIL")
				w.t.Flush()
			}
			for {
				m, err := stream.Recv()
				if err != nil {
					if ctx.Err() != nil || err == io.EOF {
						return nil
					}
					return rpcError(err)
				}
				if n := m.GetLostUpdates(); n > 0 {
					if err := w.lost(cmd, cl, req.GetPrefix(), m); err != nil {
						return err
					}
				} else if s := m.GetStatus(); s != nil {
					if err := w.status(m, false); err != nil {
						return err
					}
				}
			}
		},
	}
	cmd.Flags().Int32Var(&buffer, "buffer", 0, "updates the agent holds for kvctl before it drops them (0: the agent's default, 256); watch re-reads after a loss")
	return cmd
}

// watcher prints a watch stream.
type watcher struct {
	c *cli
	t *tabwriter.Writer
	// shown are the keys printed; reread the seq of each key's status
	// as the last re-read found it.
	shown  map[string]bool
	reread map[string]uint64
}

// status prints one status update, unless the last re-read showed it or
// a later one (fresh: it comes from the re-read).
func (w *watcher) status(m *apiv1.WatchResponse, fresh bool) error {
	s := m.GetStatus()
	if seq, ok := w.reread[s.GetKey()]; ok && !fresh && s.GetSeq() <= seq {
		return nil
	}
	w.shown[s.GetKey()] = true
	if w.c.output != "text" {
		return w.c.structured(m)
	}
	detail := s.GetError()
	if s.GetState() == "PENDING" {
		detail = pendingDetail(s.GetWhyPending())
	}
	fmt.Fprintf(w.t, "%s\t%s\t%s\t%s\n", s.GetKey(), w.c.stateColour(s.GetState()), dash(s.GetOwner()), detail)
	return w.t.Flush()
}

// lost reports lost updates and re-reads the statuses under prefix.
func (w *watcher) lost(cmd *cobra.Command, cl apiv1.AgentServiceClient, prefix string, m *apiv1.WatchResponse) error {
	if w.c.output != "text" {
		if err := w.c.structured(m); err != nil {
			return err
		}
	} else {
		what := "updates"
		if m.GetLostUpdates() == 1 {
			what = "update"
		}
		fmt.Fprintln(w.t, w.c.paint("31", fmt.Sprintf("-- %d %s lost; the current state, re-read: --", m.GetLostUpdates(), what)))
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), w.c.timeout)
	defer cancel()
	resp, err := cl.Status(ctx, &apiv1.StatusRequest{Prefix: prefix})
	if err != nil {
		return rpcError(err)
	}
	sts := resp.GetStatuses()
	sort.Slice(sts, func(i, j int) bool { return sts[i].GetKey() < sts[j].GetKey() })
	present := map[string]bool{}
	for _, s := range sts {
		present[s.GetKey()] = true
	}
	// A key shown before and gone now was removed meanwhile.
	for _, k := range slices.Sorted(maps.Keys(w.shown)) {
		if !present[k] {
			sts = append(sts, &apiv1.ValueStatus{Key: k, State: "NONEXISTENT"})
		}
	}
	w.reread = map[string]uint64{}
	for _, s := range sts {
		w.reread[s.GetKey()] = s.GetSeq()
		if err := w.status(&apiv1.WatchResponse{Event: &apiv1.WatchResponse_Status{Status: s}}, true); err != nil {
			return err
		}
	}
	if w.c.output == "text" {
		fmt.Fprintln(w.t, w.c.paint("31", "-- end of the re-read --"))
	}
	return w.t.Flush()
}
