// Package southbound is the southbound of the reference agent as
// agent.Plugins: the Linux kernel (or an in-memory stand-in for its
// models) and VPP, configured by the agent's Config.Southbound. An agent
// of other models does not need it.
package southbound

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/vishvananda/netns"

	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/plugins/vpp"
	"github.com/kvdescriptor/kvdescriptor/runtime/agent"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// Plugins returns the plugins of the reference agent's southbound: Linux
// and VPP.
func Plugins() []agent.Plugin { return []agent.Plugin{Linux(), VPP()} }

// Linux returns the plugin of the Linux models: the kernel, in the
// namespace southbound.linux.netns, with its watcher of interfaces made by
// other programs (OBTAINED values); with southbound.memory, an in-memory
// southbound instead, for a machine where the agent cannot be root.
func Linux() agent.Plugin { return &linuxPlugin{} }

type linuxPlugin struct {
	p  *linux.Plugin
	ns *netns.NsHandle
	// checkDrift is the agent's Env.CheckDrift.
	checkDrift func(ctx context.Context, descriptors ...string) error
}

func (*linuxPlugin) Name() string { return "linux" }

func (l *linuxPlugin) Start(env agent.Env) ([]kv.Descriptor, error) {
	sb := env.Config.Southbound
	l.checkDrift = env.CheckDrift
	if sb.Memory {
		env.Logger.Info("southbound: in memory (no kernel)")
		return newMemory().descriptors()
	}
	opts := []linux.Option{linux.WithLogger(env.Logger)}
	if name := sb.Linux.Netns; name != "" {
		h, err := openNetns(name)
		if err != nil {
			return nil, fmt.Errorf("netns %s: %w", name, err)
		}
		l.ns = &h
		opts = append(opts, linux.WithNamespace(h))
	}
	if allow := sb.Linux.NetnsAllow; allow != nil {
		opts = append(opts, linux.WithAllowedNamespaces(allow...))
	}
	if p := sb.Linux.RouteProtocol; p != 0 {
		opts = append(opts, linux.WithRouteProtocol(p))
	}
	if sb.Linux.ClaimRouteProtocol {
		opts = append(opts, linux.WithClaimedRouteProtocol(true))
	}
	p, err := linux.New(opts...)
	if err != nil {
		return nil, err
	}
	l.p = p
	allowed := "(any)"
	if allow := sb.Linux.NetnsAllow; allow != nil {
		allowed = "[" + strings.Join(allow, ",") + "]"
	}
	netnsName := sb.Linux.Netns
	if netnsName == "" {
		netnsName = "(the agent's own)"
	}
	env.Logger.Info("southbound: the Linux kernel", "netns", netnsName, "netns_allow", allowed)
	return p.Descriptors(), nil
}

// Watch reports the interfaces that other programs make, change and
// remove (the kernel only), and has the agent's own values that the
// kernel's events touched checked for drift.
func (l *linuxPlugin) Watch(ctx context.Context, notify func(context.Context, ...scheduler.Notification) error) error {
	if l.p == nil {
		return nil
	}
	return l.p.Watch(ctx, func(ctx context.Context, changes []linux.Change) error {
		ns := make([]scheduler.Notification, 0, len(changes))
		var recheck []string
		for _, c := range changes {
			if c.Key == "" {
				recheck = append(recheck, c.Recheck...)
				continue
			}
			ns = append(ns, scheduler.Notification{Key: c.Key, Value: c.Value, Metadata: c.Metadata})
		}
		if len(ns) > 0 {
			if err := notify(ctx, ns...); err != nil {
				return err
			}
		}
		if len(recheck) > 0 && l.checkDrift != nil {
			return l.checkDrift(ctx, recheck...)
		}
		return nil
	})
}

func (l *linuxPlugin) Close() error {
	if l.p != nil {
		l.p.Close()
	}
	if l.ns != nil {
		l.ns.Close()
	}
	return nil
}

// openNetns opens a network namespace by name (under /var/run/netns) or
// path.
func openNetns(name string) (netns.NsHandle, error) {
	if strings.Contains(name, "/") {
		return netns.GetFromPath(name)
	}
	return netns.GetFromName(name)
}

// VPP returns the plugin of the VPP models when southbound.vpp.socket is
// set (none otherwise; "mock": govpp's mock adapter, which accepts every
// request, in place of a VPP), punt values limited to sockets under
// southbound.vpp.punt_socket_dirs. A VPP that comes back after the connection
// was lost has restarted and lost its state: the plugin asks the agent for
// a downstream resync, which restores it.
func VPP() agent.Plugin { return &vppPlugin{} }

type vppPlugin struct{ p *vpp.Plugin }

func (*vppPlugin) Name() string { return "vpp" }

func (v *vppPlugin) Start(env agent.Env) ([]kv.Descriptor, error) {
	sock := env.Config.Southbound.VPP.Socket
	if sock == "" {
		return nil, nil
	}
	opts := []vpp.Option{vpp.WithSocket(sock), vpp.WithLogger(env.Logger), vpp.WithReconnect(func() { env.Resync("VPP reconnected") })}
	if sock == mockVPPSocket {
		opts = append(opts, vpp.WithAdapter(newMockVPP()))
	}
	if dirs := env.Config.Southbound.VPP.PuntSocketDirs; len(dirs) > 0 {
		opts = append(opts, vpp.WithPuntSocketDirs(dirs...))
	}
	p, err := vpp.New(opts...)
	if err != nil {
		return nil, err
	}
	v.p = p
	if sock == mockVPPSocket {
		env.Logger.Info("southbound: no VPP: the VPP plugin over govpp's mock adapter, which accepts every request")
	} else {
		env.Logger.Info("southbound: VPP", "socket", sock)
	}
	return p.Descriptors(), nil
}

// Watch reports the links of VPP's interfaces that come up or go down
// (vpp.interfaces.v1.LinkUp), read every linkPoll.
func (v *vppPlugin) Watch(ctx context.Context, notify func(context.Context, ...scheduler.Notification) error) error {
	if v.p == nil {
		return nil
	}
	return v.p.WatchLinks(ctx, linkPoll, func(ctx context.Context, changes []vpp.LinkChange) error {
		ns := make([]scheduler.Notification, len(changes))
		for i, c := range changes {
			ns[i] = scheduler.Notification{Key: c.Key}
			if c.Value != nil {
				ns[i].Value = c.Value
			}
		}
		return notify(ctx, ns...)
	})
}

// linkPoll is how often the VPP plugin reads its interfaces' links.
const linkPoll = time.Second

func (v *vppPlugin) Close() error {
	if v.p != nil {
		v.p.Close()
	}
	return nil
}
