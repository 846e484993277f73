package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/durationpb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

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
			return c.call(cmd, func(ctx context.Context, cl agentAPI) error {
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
		Short: "Make the API source's state what it was after transaction seq, in a new transaction",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == 0 {
				return usage("rollback: --to SEQ is required")
			}
			return c.call(cmd, func(ctx context.Context, cl agentAPI) error {
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
		Short: "Delete values set through the API (the source api)",
		Args:  args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := bounds(apilimits.Count("keys", int64(len(a)), apilimits.MaxCommitKeys), c.waitBound(wait)); err != nil {
				return err
			}
			if wait {
				c.grace = 10 * time.Second
			}
			return c.call(cmd, func(ctx context.Context, cl agentAPI) error {
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
		Short: "Resync: the API source's state (default), or the southbound with --downstream",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.call(cmd, func(ctx context.Context, cl agentAPI) error {
				kind := apiv1.ResyncKind_RESYNC_KIND_DOWNSTREAM
				if !downstream {
					// A source resync with the source's current values.
					kind = apiv1.ResyncKind_RESYNC_KIND_SOURCE
					st, err := cl.Status(ctx, &apiv1.StatusRequest{Owner: nb.DefaultRemoteSource})
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

func (c *cli) logLevelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "log-level [debug|info|warn|error]",
		Short: "Show the agent's log level, or set it now (until the agent restarts)",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			req := &apiv1.SetLogLevelRequest{}
			if len(a) == 1 {
				req.Level = a[0]
			}
			return c.call(cmd, func(ctx context.Context, cl agentAPI) error {
				resp, err := cl.SetLogLevel(ctx, req)
				if err != nil {
					return err
				}
				if c.output != "text" {
					return c.structured(resp)
				}
				if req.Level == "" || resp.GetLevel() == resp.GetPrevious() {
					fmt.Fprintf(c.stdout, "log level: %s\n", resp.GetLevel())
				} else {
					fmt.Fprintf(c.stdout, "log level: %s (was %s)\n", resp.GetLevel(), resp.GetPrevious())
				}
				return nil
			})
		},
	}
}
