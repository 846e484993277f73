package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/file"
)

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
		if o.GetState() == "RETRYING" && !wait {
			// To be retried (apply --retry): no failure yet.
			if c.output == "text" {
				fmt.Fprintln(c.stdout, c.paint("33", fmt.Sprintf("retrying %s: %s", o.GetKey(), o.GetError())))
			}
			continue
		}
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

// applyFlags are the flags of kvctl apply.
type applyFlags struct {
	path, description string
	plan, wait, prune bool
	confirmWithin     time.Duration
	// revert makes the transaction undo what it applied on its first
	// failure; retry retries the values that fail retriably, with
	// backoff.
	revert         bool
	retry          bool
	retryAttempts  int
	retryPeriod    time.Duration
	retryMaxPeriod time.Duration
}

func (c *cli) applyCmd() *cobra.Command {
	var f applyFlags
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
file is the whole state of the API's source (api): its values that the file
lacks are deleted.

With --revert the transaction is all or nothing: on its first failure
it undoes what it applied, in dependency order, and apply fails (exit
code 1) saying "reverted". Without it a transaction is best-effort: it
applies all it can. With --retry a value that fails with a retriable
error is RETRYING: the agent tries it again, --retry-attempts times at
most, after --retry-period, doubling up to --retry-max-period (any of
these flags implies --retry). Without --wait a RETRYING value is shown
and is no failure; with --wait apply waits while values retry and fails
unless they end CONFIGURED.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.apply(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.path, "file", "f", "", "the configuration file")
	fl.BoolVar(&f.plan, "plan", false, "show the plan only; change nothing")
	fl.BoolVar(&f.prune, "prune", false, "the file is the API source's whole state: delete its values the file lacks")
	fl.BoolVar(&f.wait, "wait", false, "wait for the values to settle (at most --timeout); fail unless CONFIGURED")
	fl.DurationVar(&f.confirmWithin, "confirm-within", 0, "roll the commit back unless confirmed (kvctl confirm SEQ) within this time, e.g. 30s or 5m")
	fl.StringVar(&f.description, "description", "", "the transaction's description")
	fl.BoolVar(&f.revert, "revert", false, "all or nothing: on the first failure undo what the transaction applied")
	fl.BoolVar(&f.retry, "retry", false, "retry the values that fail, with backoff (see --retry-attempts, --retry-period, --retry-max-period)")
	fl.IntVar(&f.retryAttempts, "retry-attempts", 5, "with --retry: the most retries of a failed value")
	fl.DurationVar(&f.retryPeriod, "retry-period", time.Second, "with --retry: the wait before the first retry, doubled for each next one")
	fl.DurationVar(&f.retryMaxPeriod, "retry-max-period", 30*time.Second, "with --retry: the longest wait between retries")
	return cmd
}

// checkApply checks the flags of apply.
func (c *cli) checkApply(cmd *cobra.Command, f *applyFlags) error {
	if f.path == "" {
		return usage("apply: -f FILE is required")
	}
	for _, name := range []string{"retry-attempts", "retry-period", "retry-max-period"} {
		if cmd.Flags().Changed(name) {
			f.retry = true
		}
	}
	if f.retry {
		switch {
		case f.retryAttempts < 1:
			return usage("--retry-attempts %d: want 1 or more", f.retryAttempts)
		case f.retryPeriod <= 0:
			return usage("--retry-period %s: want a positive duration", f.retryPeriod)
		case f.retryMaxPeriod < f.retryPeriod:
			return usage("--retry-max-period %s: want at least --retry-period (%s)", f.retryMaxPeriod, f.retryPeriod)
		}
	}
	return bounds(
		apilimits.Duration("--confirm-within", f.confirmWithin, apilimits.MaxConfirmWithin),
		apilimits.Length("--description", f.description, apilimits.MaxDescriptionLen),
		c.waitBound(f.wait),
		apilimits.Count("--retry-attempts", int64(f.retryAttempts), apilimits.MaxRetryAttempts),
		apilimits.Duration("--retry-period", f.retryPeriod, apilimits.MaxRetryPeriod),
		apilimits.Duration("--retry-max-period", f.retryMaxPeriod, apilimits.MaxRetryPeriod),
	)
}

// apply plans the file of f, shows the plan and, unless --plan, commits.
func (c *cli) apply(cmd *cobra.Command, f *applyFlags) error {
	if err := c.checkApply(cmd, f); err != nil {
		return err
	}
	data, err := readConfigFile(f.path)
	if err != nil {
		return err
	}
	if f.wait {
		c.grace = 10 * time.Second
	}
	return c.call(cmd, func(ctx context.Context, cl agentAPI) error {
		req, err := c.applyRequest(ctx, cl, f, data)
		if err != nil {
			return err
		}
		planResp, err := cl.Commit(ctx, req)
		if err != nil {
			return err
		}
		if f.plan && c.output != "text" {
			return c.structured(planResp)
		}
		if c.output == "text" {
			c.writePlan(planResp.GetPlanned(), planResp.GetOutcomes())
		}
		if f.plan {
			return nil
		}
		c.commitOptions(req, f)
		stop := c.progress(cmd, "applying")
		resp, err := cl.Commit(ctx, req)
		stop()
		if err != nil {
			return err
		}
		return c.writeCommit(resp, f.wait)
	})
}

// readConfigFile reads a configuration file, at most as large as the
// agent's file source reads (file.DefaultMaxSize).
func readConfigFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, failed("%v", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, file.DefaultMaxSize+1))
	if err != nil {
		return nil, failed("%v", err)
	}
	if len(data) > file.DefaultMaxSize {
		return nil, failed("%s: larger than %d bytes, the most the agent's file source reads", path, file.DefaultMaxSize)
	}
	return data, nil
}

// applyRequest parses the file of f (the values decoded with the agent's
// models) into the request of its plan.
func (c *cli) applyRequest(ctx context.Context, cl agentAPI, f *applyFlags, data []byte) (*apiv1.CommitRequest, error) {
	mresp, err := cl.Models(ctx, &apiv1.ModelsRequest{})
	if err != nil {
		return nil, err
	}
	var missing error
	changes, err := file.Parse(f.path, data, agentModels{models: mresp.GetModels(), types: c.types, missing: &missing})
	if err != nil {
		if missing != nil {
			return nil, failed("%v; %v", err, missing)
		}
		return nil, failed("%v", err)
	}
	req := &apiv1.CommitRequest{Description: "kvctl apply " + f.path, PlanOnly: true}
	if f.description != "" {
		req.Description = f.description
	}
	if f.prune {
		req.Resync = apiv1.ResyncKind_RESYNC_KIND_SOURCE
	}
	for _, ch := range changes {
		a, err := anypb.New(ch.Value)
		if err != nil {
			return nil, failed("%s: %v", ch.Key, err)
		}
		req.Values = append(req.Values, &apiv1.Value{Key: ch.Key, Value: &apiv1.Value_Any{Any: a}})
	}
	return req, nil
}

// commitOptions turns the plan request into the commit of f.
func (c *cli) commitOptions(req *apiv1.CommitRequest, f *applyFlags) {
	req.PlanOnly = false
	req.Wait = f.wait
	if f.wait {
		req.WaitTimeout = durationpb.New(c.timeout)
	}
	if f.confirmWithin > 0 {
		req.ConfirmWithin = durationpb.New(f.confirmWithin)
	}
	req.Revert = f.revert
	if f.retry {
		req.Retry = &apiv1.RetryPolicy{
			MaxAttempts: int32(f.retryAttempts),
			Period:      durationpb.New(f.retryPeriod),
			MaxPeriod:   durationpb.New(f.retryMaxPeriod),
			Backoff:     true,
		}
	}
}
