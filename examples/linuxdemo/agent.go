package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netns"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/agent"
	"github.com/kvdescriptor/kvdescriptor/runtime/agent/southbound"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// asAgent hands the namespace, configured by the demo, to an agent
// (runtime/agent with the Linux plugin of runtime/agent/southbound) whose
// configuration file holds the same values: its startup resync finds them
// all in the kernel and makes no call. It returns the startup's record.
func asAgent(w io.Writer, ns netns.NsHandle) (rec scheduler.Record, err error) {
	dir, err := os.MkdirTemp("", "linuxdemo-agent-")
	if err != nil {
		return rec, err
	}
	defer os.RemoveAll(dir)
	var b strings.Builder
	for _, v := range []proto.Message{veth0Addressed, veth1, br0, tap0, route} {
		var key string
		if r, ok := v.(*linuxinterfaces.Interface); ok {
			key = linuxinterfaces.InterfaceKeyFor(r)
		} else {
			key = routeKey
		}
		js, err := protojson.Marshal(v)
		if err != nil {
			return rec, err
		}
		fmt.Fprintf(&b, "%s: %s\n", key, js)
	}
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		return rec, err
	}
	cfg := agent.Defaults()
	cfg.Name, cfg.StateDir, cfg.Sources.File.Path = "linuxdemo", filepath.Join(dir, "state"), file
	cfg.HTTP.Address, cfg.GRPC.Address = "", "off"
	cfg.Log.Level, cfg.LogOutput = "warn", w
	// The demo's namespace has no name: the agent opens it by a path.
	cfg.Southbound.Linux.Netns = fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), int(ns))
	a, err := agent.New(cfg, southbound.Linux())
	if err != nil {
		return rec, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if rerr := <-done; err == nil {
			err = rerr
		}
	}()
	select {
	case <-a.Started():
	case err := <-done:
		done <- err
		return rec, fmt.Errorf("the agent stopped: %w", err)
	case <-time.After(time.Minute):
		return rec, errors.New("the agent did not start within a minute")
	}
	h := a.Scheduler().History()
	if len(h) == 0 {
		return rec, errors.New("the agent has no startup resync in its history")
	}
	return h[0], nil
}
