package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/agent"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// The configuration file of the agent step, and its edit.
const (
	agentConfig = `linux/interface/veth1: {name: veth1, type: TYPE_VETH, vethPeer: veth2, enabled: true, ipAddresses: ["10.0.0.1/24"]}
linux/interface/veth2: {name: veth2, type: TYPE_VETH, vethPeer: veth1, enabled: true}
linux/route/veth1/10.20.0.0/16: {outgoingInterface: veth1, dstNetwork: 10.20.0.0/16, gwAddr: 10.0.0.254}
`
	agentConfigEdited = `linux/interface/veth1: {name: veth1, type: TYPE_VETH, vethPeer: veth2, enabled: true, mtu: 9000, ipAddresses: ["10.0.0.1/24"]}
linux/interface/veth2: {name: veth2, type: TYPE_VETH, vethPeer: veth1, enabled: true}
linux/route/veth1/10.20.0.0/16: {outgoingInterface: veth1, dstNetwork: 10.20.0.0/16, gwAddr: 10.0.0.254}
`
)

// asAgent runs the same descriptors, over a new device, as an agent
// (runtime/agent): a configuration file is its source, applied by its
// startup resync, and an edit of the file is one transaction with the
// difference. The agent keeps its state in a directory of its own; it
// serves no API here (examples/agent is the whole agent).
func asAgent(w io.Writer) (err error) {
	dir, err := os.MkdirTemp("", "quickstart-agent-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte(agentConfig), 0o600); err != nil {
		return err
	}
	dev := newDevice(w)
	cfg := agent.Defaults()
	cfg.Name, cfg.StateDir, cfg.Sources.File.Path = "quickstart", filepath.Join(dir, "state"), file
	cfg.HTTP.Address, cfg.GRPC.Address = "", "off"
	cfg.Log.Level, cfg.LogOutput = "warn", w
	plugin := agent.PluginFunc("quickstart", func(agent.Env) ([]kv.Descriptor, error) { return descriptors(dev) })
	a, err := agent.New(cfg, plugin)
	if err != nil {
		return err
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
		return fmt.Errorf("the agent stopped: %w", err)
	case <-time.After(time.Minute):
		return errors.New("the agent did not start within a minute")
	}
	fmt.Fprintln(w, "the agent applied config.yaml; config.yaml edited: veth1 mtu 9000")
	if err := os.WriteFile(file, []byte(agentConfigEdited), 0o600); err != nil {
		return err
	}
	s := a.Scheduler()
	for end := time.Now().Add(time.Minute); len(s.History()) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			return errors.New("the edit of config.yaml was not applied within a minute")
		}
	}
	for _, rec := range s.History() {
		fmt.Fprintf(w, "agent transaction #%d (%s): %d operations\n", rec.Seq, rec.Kind, len(rec.Executed))
	}
	return nil
}
