// Command demo is `make demo`: it runs the reference agent (examples/agent)
// as a person would, against a fresh network namespace, and narrates what
// happens. As root it:
//
//  1. creates a network namespace and writes an example configuration
//     file: a veth pair, a bridge with a member and an address, and a
//     route whose gateway is not reachable yet (PENDING);
//  2. starts the agent on that file and waits until it is ready;
//  3. prints the statuses, with why the route waits;
//  4. edits the file (veth0 gets an address in the gateway's network):
//     the agent applies just that difference, and the route is created;
//     then adds a veth pair, which a VPP af_packet interface (VPP: govpp's
//     mock adapter, no VPP needed) was waiting for;
//  5. prints the transaction log, the statuses and the kernel's state
//     (ip -n NS ...), and where the agent's API serves the graph;
//  6. stops the agent (nothing is torn down) and removes the namespace.
//
// Without root it says why and runs the agent on its in-memory
// southbound instead. -keep leaves the agent running for a person to
// explore the API, until Ctrl-C.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	agent := flag.String("agent", "", "the agent binary (make demo builds it)")
	keep := flag.Bool("keep", false, "keep the agent running after the demo, until Ctrl-C")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, *agent, os.Geteuid() == 0, *keep); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

// The demo's configuration, before and after the edit. veth0's address
// comes with the edit: the route's gateway, 10.10.0.254, is reachable
// through it only then.
const (
	configBefore = `# The demo's intended configuration: key -> value (protojson of the key's model).
linux/interface/veth0:
  name: veth0
  type: TYPE_VETH
  vethPeer: veth1
  enabled: true
linux/interface/veth1:
  name: veth1
  type: TYPE_VETH
  vethPeer: veth0
  enabled: true
  ipAddresses: ["10.10.0.2/24"]
linux/interface/br0:
  name: br0
  type: TYPE_BRIDGE
  enabled: true
  ipAddresses: ["192.168.50.1/24"]
linux/interface/tap0:
  name: tap0
  type: TYPE_TAP
  enabled: true
  master: br0
linux/route/veth0/10.20.0.0/16:
  outgoingInterface: veth0
  dstNetwork: 10.20.0.0/16
  gwAddr: 10.10.0.254
vpp/interface/host-veth2:
  name: host-veth2
  type: TYPE_AF_PACKET
  hostIfName: veth2
  enabled: true
`
	veth0Before = `linux/interface/veth0:
  name: veth0
  type: TYPE_VETH
  vethPeer: veth1
  enabled: true
`
	veth0After = `linux/interface/veth0:
  name: veth0
  type: TYPE_VETH
  vethPeer: veth1
  enabled: true
  ipAddresses: ["10.10.0.1/24"]
`
	routeKey = "linux/route/veth0/10.20.0.0/16"
	// vethPair is the second edit: the veth that the VPP af_packet
	// interface binds to.
	vethPair = `linux/interface/veth2:
  name: veth2
  type: TYPE_VETH
  vethPeer: veth3
  enabled: true
linux/interface/veth3:
  name: veth3
  type: TYPE_VETH
  vethPeer: veth2
  enabled: true
`
	afPacketKey = "vpp/interface/host-veth2"
)

func run(ctx context.Context, w io.Writer, agent string, root, keep bool) (err error) {
	if agent == "" {
		return errors.New("-agent: the agent binary is needed (make demo builds it)")
	}
	dir, err := os.MkdirTemp("", "kvdescriptor-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	step := func(format string, args ...any) { fmt.Fprintf(w, "\n=== "+format+" ===\n", args...) }

	args := []string{"-name", "demo", "-state-dir", filepath.Join(dir, "state"), "-load-deadline", "10s"}
	ns := ""
	if root {
		ns = fmt.Sprintf("kvd-demo-%d", os.Getpid())
		step("1. A fresh network namespace, %s: nothing outside it is touched", ns)
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			return fmt.Errorf("ip netns add %s: %v: %s", ns, err, out)
		}
		defer func() {
			if out, derr := exec.Command("ip", "netns", "del", ns).CombinedOutput(); derr != nil && err == nil {
				err = fmt.Errorf("ip netns del %s: %v: %s", ns, derr, out)
			}
			fmt.Fprintf(w, "\nnetwork namespace %s removed\n", ns)
		}()
		args = append(args, "-netns", ns)
	} else {
		step("1. Not root: the agent runs on its in-memory southbound instead of the kernel")
		fmt.Fprintln(w, "(creating a network namespace and configuring it needs root; run `sudo make demo` for the kernel)")
		args = append(args, "-memory")
	}

	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(configBefore), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(w, "configuration file %s:\n%s", cfgPath, indent(configBefore))

	addr, err := freeAddr()
	if err != nil {
		return err
	}
	args = append(args, "-file", cfgPath, "-http", addr, "-vpp-socket", "mock")
	step("2. The agent: %s %s", agent, strings.Join(args, " "))
	logPath := filepath.Join(dir, "agent.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(agent, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case werr := <-exited:
			fmt.Fprintf(w, "\nthe agent stopped (%v); nothing was torn down by it\n", exitText(werr))
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			if err == nil {
				err = errors.New("the agent did not stop within 30 s of SIGTERM")
			}
		}
		if err != nil {
			if b, rerr := os.ReadFile(logPath); rerr == nil {
				fmt.Fprintf(w, "\nthe agent's log:\n%s", indent(string(b)))
			}
		}
	}()
	api := &client{base: "http://" + addr}
	if err := api.waitReady(ctx, exited, 30*time.Second); err != nil {
		return err
	}
	fmt.Fprintf(w, "ready: %s/readyz\n", api.base)
	printAPI(w, api.base, keep)
	if err := api.waitState(ctx, routeKey, "PENDING", 10*time.Second); err != nil {
		return err
	}

	if err := api.waitState(ctx, afPacketKey, "PENDING", 10*time.Second); err != nil {
		return err
	}

	step("3. The statuses: the route waits for its gateway, the VPP af_packet interface for its Linux veth")
	if err := api.printStatus(w, "linux/"); err != nil {
		return err
	}
	fmt.Fprintln(w, "No VPP runs on this machine: the VPP plugin works over govpp's mock adapter (-vpp-socket mock),")
	fmt.Fprintln(w, "which accepts every request. The af_packet interface names a Linux veth that does not exist yet:")
	if err := api.printStatus(w, "vpp/"); err != nil {
		return err
	}

	step("4. The file is edited: veth0 gets 10.10.0.1/24; only that difference is applied, and the route with it")
	edited := strings.Replace(configBefore, veth0Before, veth0After, 1)
	if err := writeInSteps(cfgPath, edited); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s now says:\n%s", cfgPath, indent(veth0After))
	if err := api.waitState(ctx, routeKey, "CONFIGURED", 15*time.Second); err != nil {
		return err
	}

	step("4b. The file is edited again: the veth pair veth2-veth3 is added, and the af_packet interface bound to veth2 is created after it")
	edited += vethPair
	if err := writeInSteps(cfgPath, edited); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s now adds:\n%s", cfgPath, indent(vethPair))
	if err := api.waitState(ctx, afPacketKey, "CONFIGURED", 15*time.Second); err != nil {
		return err
	}
	if err := api.printStatus(w, "vpp/"); err != nil {
		return err
	}

	step("5. The transaction log")
	fmt.Fprintln(w, "(every word of the log is explained in docs/legend.md)")
	if err := api.printHistory(w); err != nil {
		return err
	}
	step("6. The statuses now")
	if err := api.printStatus(w, "linux/"); err != nil {
		return err
	}
	if root {
		step("7. The kernel's state, as ip sees it")
		for _, c := range [][]string{{"-br", "link"}, {"-br", "addr"}, {"route", "show", "table", "all", "proto", "212"}} {
			out, err := exec.Command("ip", append([]string{"-n", ns}, c...)...).CombinedOutput()
			fmt.Fprintf(w, "$ ip -n %s %s\n%s", ns, strings.Join(c, " "), out)
			if err != nil {
				return fmt.Errorf("ip %s: %v", strings.Join(c, " "), err)
			}
		}
	}
	if keep {
		step("The agent's API, still answering")
		printAPI(w, api.base, keep)
		fmt.Fprintf(w, "\nthe agent keeps running (its log: %s); Ctrl-C ends the demo\n", logPath)
		select {
		case <-ctx.Done():
		case err := <-exited:
			return fmt.Errorf("the agent exited: %v", exitText(err))
		}
	}
	return nil
}

// printAPI prints the addresses of the agent's API (REST paths). The demo prints
// them as soon as the agent is ready, while it runs; without -keep it stops
// the agent at its end, and says so, with the way to keep it.
func printAPI(w io.Writer, base string, keep bool) {
	if keep {
		fmt.Fprintln(w, "The agent's API answers at (REST; gRPC and kvctl on the same address):")
	} else {
		fmt.Fprintln(w, "While the demo runs, the agent's API answers at (the demo stops the agent at its end;")
		fmt.Fprintln(w, "`make demo DEMO_ARGS=-keep` keeps it running to explore these):")
	}
	for _, p := range []string{"/v1/graph?format=GRAPH_FORMAT_SVG", "/scheduler/graph?format=dot", "/v1/history", "/v1/status?key=" + routeKey, "/v1/models", "/metrics"} {
		fmt.Fprintf(w, "  %s%s\n", base, p)
	}
}

// writeInSteps writes data as an editor that truncates and then writes
// does: the agent must never act on the half-written file.
func writeInSteps(path, data string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	half := len(data) / 2
	if _, err := f.WriteString(data[:half]); err != nil {
		f.Close()
		return err
	}
	time.Sleep(20 * time.Millisecond)
	if _, err := f.WriteString(data[half:]); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") + "\n"
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// client reads the agent's API over REST.
type client struct{ base string }

func (c *client) get(path string) (int, []byte, error) {
	resp, err := http.Get(c.base + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// getJSON reads path's JSON answer into v.
func (c *client) getJSON(path string, v any) error {
	code, b, err := c.get(path)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: %d: %s", path, code, b)
	}
	return json.Unmarshal(b, v)
}

// printStatus prints the statuses under prefix, one line each: key,
// state, owner, and why it is pending or its error.
func (c *client) printStatus(w io.Writer, prefix string) error {
	var r struct {
		Statuses []struct {
			Key, State, Owner, Error string
			WhyPending               []string
		}
	}
	path := "/v1/status?prefix=" + prefix
	if err := c.getJSON(path, &r); err != nil {
		return err
	}
	var b strings.Builder
	for _, st := range r.Statuses {
		fmt.Fprintf(&b, "%s %s owner=%s", st.Key, st.State, st.Owner)
		if len(st.WhyPending) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(st.WhyPending, "; "))
		} else if st.Error != "" {
			fmt.Fprintf(&b, " (%s)", st.Error)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(w, "$ curl '%s%s'   (as a table)\n%s", c.base, path, indent(b.String()))
	return nil
}

// printHistory prints the transactions, one line each.
func (c *client) printHistory(w io.Writer) error {
	var r struct {
		Records []struct {
			Seq, Kind, Description string
			Executed               []struct{ Kind, Key, State string }
		}
	}
	path := "/v1/history"
	if err := c.getJSON(path, &r); err != nil {
		return err
	}
	var b strings.Builder
	for _, rec := range r.Records {
		fmt.Fprintf(&b, "#%s %s: %s\n", rec.Seq, rec.Kind, rec.Description)
		for _, op := range rec.Executed {
			fmt.Fprintf(&b, "    %s %s %s\n", op.Kind, op.Key, op.State)
		}
	}
	fmt.Fprintf(w, "$ curl '%s%s'   (as a list)\n%s", c.base, path, indent(b.String()))
	return nil
}

func (c *client) waitReady(ctx context.Context, exited <-chan error, limit time.Duration) error {
	end := time.Now().Add(limit)
	for {
		if code, _, err := c.get("/readyz"); err == nil && code == http.StatusOK {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("the agent exited: %v", exitText(err))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(end) {
			return fmt.Errorf("the agent was not ready within %v", limit)
		}
	}
}

// waitState waits until key's state, as the API reports it, is state.
func (c *client) waitState(ctx context.Context, key, state string, limit time.Duration) error {
	end := time.Now().Add(limit)
	last := ""
	for {
		code, b, err := c.get("/v1/status?key=" + key)
		if err == nil && code == http.StatusOK {
			last = string(b)
			if strings.Contains(last, `"`+state+`"`) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(end) {
			return fmt.Errorf("%s is not %s after %v: %s", key, state, limit, last)
		}
	}
}
