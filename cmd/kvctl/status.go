package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
)

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
			return c.call(cmd, func(ctx context.Context, cl agentAPI) error {
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

func (c *cli) whyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "why <key>",
		Short: "Why a value is PENDING: its unmet dependencies, followed down to the missing roots",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return c.call(cmd, func(ctx context.Context, cl agentAPI) error {
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
func (w *watcher) lost(cmd *cobra.Command, cl agentAPI, prefix string, m *apiv1.WatchResponse) error {
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
