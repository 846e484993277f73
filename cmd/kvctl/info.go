package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
)

func (c *cli) infoCmd() *cobra.Command {
	var withConfig bool
	cmd := &cobra.Command{
		Use:     "info",
		Aliases: []string{"version"},
		Short:   "Show kvctl's version and the agent's (name, version, start time, descriptors; --config: its configuration without secrets)",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.call(cmd, func(ctx context.Context, cl agentAPI) error {
				info, err := cl.AgentInfo(ctx, &apiv1.AgentInfoRequest{})
				if err != nil {
					return err
				}
				if c.output != "text" {
					return c.structured(info)
				}
				fmt.Fprintf(c.stdout, "kvctl: %s\nagent: %s\n", kvctlVersion(), agentVersion(info, nil))
				if withConfig {
					fmt.Fprintf(c.stdout, "config:\n%s", info.GetConfig())
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&withConfig, "config", false, "also print the agent's configuration (secrets removed by the agent)")
	return cmd
}
