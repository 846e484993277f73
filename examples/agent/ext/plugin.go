package ext

import (
	"strings"

	"github.com/kvdescriptor/kvdescriptor/runtime/agent"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// Plugin returns the registered extensions as one agent.Plugin: their
// descriptors, built with the agent's logger and southbound settings.
func Plugin() agent.Plugin {
	return agent.PluginFunc("extensions", func(env agent.Env) ([]kv.Descriptor, error) {
		sb := env.Config.Southbound
		descs, err := Descriptors(Env{Logger: env.Logger, Memory: sb.Memory, AllowedNetns: sb.Linux.NetnsAllow})
		if err != nil {
			return nil, err
		}
		if names := Names(); len(names) > 0 {
			env.Logger.Info("extensions", "names", strings.Join(names, ","), "descriptors", len(descs))
		}
		return descs, nil
	})
}
