package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/agent/redact"
)

// reportFlags are the flags of kvctl report.
type reportFlags struct {
	out, config string
}

func (c *cli) reportCmd() *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "report -o FILE",
		Short: "Write a support bundle (tar.gz): version, configuration without secrets, status, history, graph, metrics, readiness",
		Long: `report writes a support bundle, a tar.gz archive of one directory
kvctl-report/ with one file per part:

  version.txt     kvctl's version and the agent's (AgentInfo)
  config.yaml     the agent's configuration, secrets removed (AgentInfo,
                  or the file --config names)
  status.json     the status of every value (Status)
  history.json    the transaction history (History)
  models.json     the models (Models)
  graph.dot       the dependency graph (Graph)
  metrics.txt     the Prometheus metrics (GET /metrics at --server)
  readiness.json  readiness and each source's state (Readiness)
  errors.txt      the parts that failed, each with its error ("none")

A part that fails is named in errors.txt and the others are written: the
archive is written whatever fails (exit code 1 only when it cannot be).
The configuration is the one the agent serves (AgentInfo, redacted by
the agent), or, with --config, that file (the agent's YAML or JSON file,
on this machine), redacted by the same rule: the
value of every field whose name contains token, passw, secret, key,
credential, private or auth is REDACTED, whatever it is (token_file,
key_file and an etcd password alike), the passwords of URLs are, comments
are dropped, and no file it names is ever read. "-o -" writes the
archive to the standard output.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.report(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "output", "o", "", `the archive to write (tar.gz; "-": the standard output)`)
	fl.StringVar(&f.config, "config", "", "the agent's configuration file, to include without its secrets instead of the configuration the agent serves")
	return cmd
}

// bundle is the parts of a report, and the errors of those that failed.
type bundle struct {
	names []string
	data  map[string][]byte
	errs  []string
}

// add returns the function that adds the part name, or its error:
// b.add(name)(data, err).
func (b *bundle) add(name string) func(data []byte, err error) {
	return func(data []byte, err error) {
		if err != nil {
			b.errs = append(b.errs, fmt.Sprintf("%s: %v", name, err))
			return
		}
		b.names = append(b.names, name)
		b.data[name] = data
	}
}

func (c *cli) report(cmd *cobra.Command, f *reportFlags) error {
	if f.out == "" {
		return usage("report: -o FILE is required")
	}
	b := &bundle{data: map[string][]byte{}}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	info, infoErr := c.agentInfo(ctx, cl)
	b.add("version.txt")(versionText(info, infoErr), nil)
	b.add("config.yaml")(c.reportConfig(f.config, info, infoErr))
	b.add("status.json")(c.reportCall(ctx, func(ctx context.Context) (proto.Message, error) {
		return cl.Status(ctx, &apiv1.StatusRequest{})
	}))
	b.add("history.json")(c.reportCall(ctx, func(ctx context.Context) (proto.Message, error) {
		return cl.History(ctx, &apiv1.HistoryRequest{})
	}))
	b.add("models.json")(c.reportCall(ctx, func(ctx context.Context) (proto.Message, error) {
		return cl.Models(ctx, &apiv1.ModelsRequest{})
	}))
	b.add("graph.dot")(c.reportGraph(ctx, cl))
	b.add("metrics.txt")(scrubbed(c.httpGet(ctx, "/metrics")))
	b.add("readiness.json")(c.reportCall(ctx, func(ctx context.Context) (proto.Message, error) {
		return cl.Readiness(ctx, &apiv1.ReadinessRequest{})
	}))
	if err := c.writeBundle(cmd, f.out, b); err != nil {
		return err
	}
	if len(b.errs) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "kvctl report: %d of %d parts failed (errors.txt):\n  %s\n",
			len(b.errs), len(b.errs)+len(b.names), strings.Join(b.errs, "\n  "))
	}
	return nil
}

// agentInfo asks the agent for its AgentInfo, bounded by --timeout.
func (c *cli) agentInfo(ctx context.Context, cl agentAPI) (*apiv1.AgentInfoResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	info, err := cl.AgentInfo(ctx, &apiv1.AgentInfoRequest{})
	if err != nil {
		return nil, rpcError(err)
	}
	return info, nil
}

// reportConfig returns the agent's configuration without secrets: the
// file --config names, redacted here, when given; else the one the agent
// serves (AgentInfo, redacted by the agent by the same rule, and again
// here).
func (c *cli) reportConfig(path string, info *apiv1.AgentInfoResponse, infoErr error) ([]byte, error) {
	if path == "" {
		if infoErr != nil {
			return nil, fmt.Errorf("not included: the agent's AgentInfo failed (%w), and no --config FILE", infoErr)
		}
		if info.GetConfig() == "" {
			return nil, fmt.Errorf("not included: the agent serves no configuration, and no --config FILE")
		}
		out, err := redact.Config([]byte(info.GetConfig()))
		if err != nil {
			return nil, fmt.Errorf("the agent's configuration: %w", err)
		}
		return out, nil
	}
	data, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	out, err := redact.Config(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// reportCall makes one call of the agent, bounded by --timeout, and
// returns its answer as JSON with the passwords of URLs removed.
func (c *cli) reportCall(ctx context.Context, call func(ctx context.Context) (proto.Message, error)) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	m, err := call(ctx)
	if err != nil {
		return nil, rpcError(err)
	}
	b, err := c.jsonText(m)
	return redact.Text(b), err
}

func (c *cli) reportGraph(ctx context.Context, cl agentAPI) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := cl.Graph(ctx, &apiv1.GraphRequest{Format: apiv1.GraphFormat_GRAPH_FORMAT_DOT})
	if err != nil {
		return nil, rpcError(err)
	}
	return redact.Text(resp.GetData()), nil
}

// scrubbed removes the passwords of URLs from a part.
func scrubbed(b []byte, err error) ([]byte, error) { return redact.Text(b), err }

// kvctlVersion is kvctl's version, from its build information.
func kvctlVersion() string {
	var b strings.Builder
	if bi, ok := debug.ReadBuildInfo(); ok {
		fmt.Fprintf(&b, "%s %s", bi.Main.Path, bi.Main.Version)
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision", "vcs.time", "vcs.modified":
				fmt.Fprintf(&b, " %s=%s", s.Key, s.Value)
			}
		}
		fmt.Fprintf(&b, " (%s)", bi.GoVersion)
	} else {
		b.WriteString("unknown (no build information)")
	}
	return b.String()
}

// agentVersion is the agent's version line of its AgentInfo.
func agentVersion(info *apiv1.AgentInfoResponse, err error) string {
	if err != nil {
		return "unknown (AgentInfo: " + err.Error() + ")"
	}
	v := info.GetVersion()
	if v == "" {
		v = "unknown"
	}
	started := "unknown"
	if t := info.GetStartTime(); t != nil {
		started = t.AsTime().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s (%s), name %q, started %s, %d descriptors", v, info.GetGoVersion(), info.GetName(), started, info.GetDescriptors())
}

// versionText is kvctl's version and the agent's.
func versionText(info *apiv1.AgentInfoResponse, err error) []byte {
	return []byte("kvctl: " + kvctlVersion() + "\nagent: " + agentVersion(info, err) + "\n")
}

// writeBundle writes the parts of b and errors.txt as a tar.gz archive
// to out, or to the standard output for "-". A file is written beside
// out and renamed, so that out is never half written.
func (c *cli) writeBundle(cmd *cobra.Command, out string, b *bundle) error {
	var buf bytes.Buffer
	if err := archive(&buf, b); err != nil {
		return failed("report: %v", err)
	}
	if out == "-" {
		_, err := cmd.OutOrStdout().Write(buf.Bytes())
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return failed("report: %v", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return failed("report: %v", err)
	}
	if err := tmp.Close(); err != nil {
		return failed("report: %v", err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return failed("report: %v", err)
	}
	if c.output == "text" {
		fmt.Fprintf(c.stdout, "wrote %s: %d parts, %d failed\n", out, len(b.names), len(b.errs))
	}
	return nil
}

// archive writes the parts of b, then errors.txt, as a tar.gz stream.
func archive(w io.Writer, b *bundle) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	errs := "none\n"
	if len(b.errs) > 0 {
		errs = strings.Join(b.errs, "\n") + "\n"
	}
	now := time.Now()
	put := func(name string, data []byte) error {
		h := &tar.Header{Name: "kvctl-report/" + name, Mode: 0o644, Size: int64(len(data)), ModTime: now, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, n := range b.names {
		if err := put(n, b.data[n]); err != nil {
			return err
		}
	}
	if err := put("errors.txt", []byte(errs)); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}
