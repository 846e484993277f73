// Command agent is the reference network agent built on kvdescriptor's
// agent package (runtime/agent). It keeps the Linux kernel (a network
// namespace of it), and VPP when given its socket, in sync with the
// configuration of its northbound sources — a watched file, etcd, the API,
// each key owned by the source that set it — and serves its API
// (runtime/api: gRPC, gRPC-Web, Connect and REST on each listener).
//
// On start it runs a startup resync, so that only what differs is
// applied; it remembers, in its state directory, what it applied, its
// transaction numbers and its history, so that after a restart a value of
// ours that nothing wants any more is removed while what it never created
// is never touched, and the history of before the restart still answers.
// On SIGINT or SIGTERM it finishes the transaction in flight and exits
// without tearing anything down: a restart does not flap the data plane.
//
//	agent -file config.yaml [-netns NAME] [-http 127.0.0.1:9191] [-state-dir DIR]
//	agent -config agent.yaml
//
// `agent -h` lists every flag; README.md describes the configuration file
// and the API. Extensions (package ext) linked by extensions.go add
// models of their own, e.g. examples/extension.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kvdescriptor/kvdescriptor/examples/agent/ext"
	"github.com/kvdescriptor/kvdescriptor/runtime/agent"
	"github.com/kvdescriptor/kvdescriptor/runtime/agent/southbound"
)

// version is the agent's version its API's AgentInfo says, set at build
// time (go build -ldflags "-X main.version=v1.2.3"); empty: the main
// module's version in the build information.
var version string

func main() {
	cfg, err := agent.ParseArgs(os.Args[1:], os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "agent: %v\n(agent -h lists the flags)\n", err)
		os.Exit(2)
	}
	cfg.Version = version
	a, err := agent.New(cfg, append(southbound.Plugins(), ext.Plugin())...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "agent: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := a.Run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "agent: %v\n", err)
		os.Exit(1)
	}
}
