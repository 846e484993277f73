package agent

import (
	"context"
	"log/slog"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// A Plugin contributes descriptors to an agent: the item types it handles
// and their southbound. Run starts each plugin, in order, before the
// scheduler runs its first transaction, and registers the descriptors of
// all of them. A plugin may also be a Watcher (of changes made by others,
// reported as notifications) and an io.Closer (closed when Run returns,
// after the scheduler, in the reverse order).
type Plugin interface {
	// Name names the plugin in logs and errors.
	Name() string
	// Start builds the plugin's descriptors.
	Start(env Env) ([]kv.Descriptor, error)
}

// Env is what an agent gives its plugins.
type Env struct {
	// Config is the agent's configuration (a copy).
	Config Config
	// Logger is the agent's logger.
	Logger *slog.Logger
	// Resync queues a downstream resync, described by why: for a
	// southbound that came back after losing its state. It does not wait.
	Resync func(why string)
	// CheckDrift reads back the agent's own values of the descriptors
	// named and handles what changed behind its back by their drift
	// policies (scheduler.CheckDrift): for a watcher that sees events of
	// the agent's own values. Usable once the watchers have started.
	CheckDrift func(ctx context.Context, descriptors ...string) error
}

// A Watcher reports changes of the southbound made by others. The agent
// calls Watch once its startup resync has run (before, a value of its own
// that an earlier run left would be taken for another program's), with
// notify delivering notifications to the scheduler, and cancels ctx when
// it stops. An error ends the watch and is logged.
type Watcher interface {
	Watch(ctx context.Context, notify func(context.Context, ...scheduler.Notification) error) error
}

// Descriptors returns a Plugin named name that contributes ds.
func Descriptors(name string, ds ...kv.Descriptor) Plugin {
	return PluginFunc(name, func(Env) ([]kv.Descriptor, error) { return ds, nil })
}

// PluginFunc returns a Plugin named name whose Start is start.
func PluginFunc(name string, start func(Env) ([]kv.Descriptor, error)) Plugin {
	return funcPlugin{name, start}
}

type funcPlugin struct {
	name  string
	start func(Env) ([]kv.Descriptor, error)
}

func (p funcPlugin) Name() string                           { return p.name }
func (p funcPlugin) Start(env Env) ([]kv.Descriptor, error) { return p.start(env) }
