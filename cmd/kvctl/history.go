package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
)

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
			return c.call(cmd, func(ctx context.Context, cl agentAPI) error {
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
			return c.call(cmd, func(ctx context.Context, cl agentAPI) error {
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
