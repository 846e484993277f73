package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// kvctlCall is one row of the conformance table of kvctl: a command line
// against the built agent, the exit code it must end with, and what its
// error must say: the class of the API's answer (its code, as gRPC names
// it, for a refusal other than INVALID_ARGUMENT) and the argument named,
// as runtime/api's conformance test requires of every transport.
type kvctlCall struct {
	name  string
	args  []string
	token string // "": none; "good" or "wrong"
	exit  int
	// want are the texts the output must hold (the argument named: "key: ").
	want []string
}

// TestConformanceKvctl runs the conformance idea of runtime/api
// (conformance_test.go) through kvctl against the built agent binary:
// good calls exit 0; an unknown key or descriptor, a transaction that has
// not run, a key of no model, an argument beyond its bound, a missing or
// wrong token: the exit code of its class (1: the agent refused; 2: kvctl
// refused the flag itself, before any call; 3: no agent), and the error
// naming the argument as the API does.
func TestConformanceKvctl(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := writeConfig(t, dir, "token", "conformance-token\n")
	wrong := writeConfig(t, dir, "wrong", "not-the-token\n")
	cfg := writeConfig(t, dir, "cfg.yaml", config)
	state := filepath.Join(dir, "state")
	a := launchAgent(t, &agentProc{server: "unix:" + filepath.Join(state, "grpc.sock"), flags: []string{"--token-file", tok}},
		"-memory", "-file", cfg, "-state-dir", state, "-http", "", "-grpc", "unix:"+filepath.Join(state, "grpc.sock"), "-grpc-token-file", tok)
	long := strings.Repeat("k", 2000)
	table := []kvctlCall{
		{name: "status", args: []string{"status"}, token: "good", want: []string{"linux/interface/veth2"}},
		{name: "status of a key", args: []string{"status", "linux/interface/veth2"}, token: "good", want: []string{"CONFIGURED"}},
		{name: "models", args: []string{"models"}, token: "good", want: []string{"linux/interface/"}},
		{name: "history", args: []string{"history"}, token: "good"},
		{name: "dump", args: []string{"dump", "linux/interface/"}, token: "good", want: []string{"veth2"}},
		{name: "graph", args: []string{"graph"}, token: "good", want: []string{"digraph"}},
		{name: "log level", args: []string{"log-level"}, token: "good", want: []string{"log level: info"}},
		{name: "no token", args: []string{"status"}, exit: 1, want: []string{"Unauthenticated: authorization: "}},
		{name: "wrong token", args: []string{"delete", "linux/interface/veth2"}, token: "wrong", exit: 1, want: []string{"Unauthenticated: authorization: "}},
		{name: "status: unknown key", args: []string{"status", "linux/interface/none"}, token: "good", exit: 1, want: []string{"NotFound: key: "}},
		{name: "status: key of no model", args: []string{"status", "nope/none"}, token: "good", exit: 1, want: []string{"NotFound: key: "}},
		{name: "status: key beyond its bound", args: []string{"status", long}, token: "good", exit: 1, want: []string{"key: "}},
		{name: "status: unknown descriptor", args: []string{"status", "--descriptor", "nope"}, token: "good", exit: 1, want: []string{"NotFound: descriptor: "}},
		{name: "dump: unknown descriptor", args: []string{"dump", "--model", "nope"}, token: "good", exit: 1, want: []string{"descriptor: "}},
		{name: "timeline: unknown key", args: []string{"timeline", "linux/interface/none"}, token: "good", exit: 1, want: []string{"NotFound: key: "}},
		{name: "history: transaction not run", args: []string{"history", "--seq", "99999"}, token: "good", exit: 1, want: []string{"NotFound: seq: "}},
		{name: "graph: transaction not run", args: []string{"graph", "--txn", "99999"}, token: "good", exit: 1, want: []string{"NotFound: seq: "}},
		{name: "rollback: transaction not run", args: []string{"rollback", "--to", "99999"}, token: "good", exit: 1, want: []string{"NotFound: seq: "}},
		{name: "confirm: nothing awaits", args: []string{"confirm", "99999"}, token: "good", exit: 1, want: []string{"NotFound: seq: "}},
		{name: "delete: key of no model", args: []string{"delete", "nope/x"}, token: "good", exit: 1, want: []string{"deletes[0]: "}},
		{name: "log level: none", args: []string{"log-level", "loud"}, token: "good", exit: 1, want: []string{"level: "}},
		{name: "watch: buffer beyond its bound", args: []string{"watch", "--buffer", "100000"}, token: "good", exit: 2, want: []string{"buffer"}},
		{name: "apply: retry beyond its bound", args: []string{"apply", "-f", cfg, "--retry-attempts", "5000"}, token: "good", exit: 2, want: []string{"retry-attempts"}},
		{name: "apply: confirm_within beyond its bound", args: []string{"apply", "-f", cfg, "--confirm-within", "48h"}, token: "good", exit: 2, want: []string{"confirm-within"}},
		{name: "no agent", args: []string{"--server", "unix:" + filepath.Join(dir, "none.sock"), "status"}, token: "good", exit: 3, want: []string{"cannot reach the agent"}},
	}
	for _, c := range table {
		args := []string{"--server", a.server}
		switch c.token {
		case "good":
			args = append(args, "--token-file", tok)
		case "wrong":
			args = append(args, "--token-file", wrong)
		}
		out, code := kvctl(t, append(args, c.args...)...)
		if code != c.exit {
			t.Errorf("%s: kvctl %s: exit code %d, want %d\n%s", c.name, strings.Join(c.args, " "), code, c.exit, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: kvctl %s: the output lacks %q\n%s", c.name, strings.Join(c.args, " "), w, out)
			}
		}
	}
}
