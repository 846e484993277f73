package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
)

func (c *cli) modelsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "models",
		Short: "The models the agent handles, with their key templates and fields",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.call(cmd, func(ctx context.Context, cl agentAPI) error {
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
			return c.call(cmd, func(ctx context.Context, cl agentAPI) error {
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
	var filter graphFilterFlags
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
			if err := filter.check(); err != nil {
				return err
			}
			return c.call(cmd, func(ctx context.Context, cl agentAPI) error {
				resp, err := cl.Graph(ctx, &apiv1.GraphRequest{Seq: seq, Format: f, Filter: filter.message()})
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
	filter.register(cmd)
	return cmd
}

// graphFilterFlags are graph's filters, as the API's GraphFilter has them
// (the agent checks them again and names the field it refuses).
type graphFilterFlags struct {
	model, state, around string
	depth, maxNodes      uint32
}

func (g *graphFilterFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&g.model, "model", "", "only the values of this descriptor (as kvctl models lists it)")
	fl.StringVar(&g.state, "state", "", "only the values in this state (PENDING, FAILED, ...)")
	fl.StringVar(&g.around, "around", "", "only this key's neighbourhood: its dependencies, dependents, bases and derived values")
	fl.Uint32Var(&g.depth, "depth", 0, "how many edges away from --around (1 to 100; 0: 1)")
	fl.Uint32Var(&g.maxNodes, "max-nodes", 1000, "refuse a graph with more nodes than this once filtered, naming the filters that narrow it (0: no bound)")
}

func (g *graphFilterFlags) check() error {
	if g.depth > 100 {
		return usage("--depth %d: want 1 to 100", g.depth)
	}
	if g.depth != 0 && g.around == "" {
		return usage("--depth: only with --around")
	}
	return nil
}

// message is the filter to send, nil when it keeps the whole graph.
func (g *graphFilterFlags) message() *apiv1.GraphFilter {
	if *g == (graphFilterFlags{}) {
		return nil
	}
	return &apiv1.GraphFilter{Model: g.model, State: g.state, Key: g.around, Depth: g.depth, MaxNodes: g.maxNodes}
}
