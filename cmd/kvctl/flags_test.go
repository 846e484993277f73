package main

import (
	"strings"
	"testing"
)

// TestFlags covers the flags that TestCommands does not: status
// --descriptor, apply --description, graph --txn and delete --wait, on an
// agent of its own.
func TestFlags(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t, dir)
	file := writeConfig(t, dir, "f.yaml", "linux/interface/f1: {name: f1, type: TYPE_BRIDGE}\n"+
		"linux/route/f1/10.5.0.0/16: {outgoingInterface: f1, dstNetwork: 10.5.0.0/16}\n")
	if out, code := a.kvctl(t, "apply", "-f", file, "--description", "flags test apply", "--wait"); code != 0 {
		t.Fatalf("apply: exit code %d\n%s", code, out)
	}
	out, _ := a.kvctl(t, "history")
	line, seq := historyLine(out, "flags test apply")
	if line == "" {
		t.Fatalf("history lacks the --description:\n%s", out)
	}

	out, code := a.kvctl(t, "status", "--descriptor", "linux.l3.v1.Route")
	if code != 0 || !strings.Contains(out, "linux/route/f1/10.5.0.0/16") || strings.Contains(out, "linux/interface/") {
		t.Errorf("status --descriptor linux.l3.v1.Route: exit code %d\n%s", code, out)
	}

	// The graph as of the apply has f1; as of the first transaction not.
	out, code = a.kvctl(t, "graph", "--txn", seq)
	if code != 0 || !strings.Contains(out, "digraph") || !strings.Contains(out, "linux/interface/f1") {
		t.Errorf("graph --txn %s: exit code %d\n%.400s", seq, code, out)
	}
	out, code = a.kvctl(t, "graph", "--txn", "1")
	if code != 0 || !strings.Contains(out, "digraph") || strings.Contains(out, "linux/interface/f1") {
		t.Errorf("graph --txn 1: exit code %d\n%.400s", code, out)
	}

	// The filters: by model, a key's neighbourhood, the bound on nodes.
	out, code = a.kvctl(t, "graph", "--model", "linux.l3.v1.Route")
	if code != 0 || !strings.Contains(out, "linux/route/f1/10.5.0.0/16") || strings.Contains(out, `"linux/interface/f1"`) {
		t.Errorf("graph --model linux.l3.v1.Route: exit code %d\n%.600s", code, out)
	}
	out, code = a.kvctl(t, "graph", "--around", "linux/route/f1/10.5.0.0/16", "--depth", "1")
	if code != 0 || !strings.Contains(out, "linux/route/f1/10.5.0.0/16") || !strings.Contains(out, "linux/interface/f1") {
		t.Errorf("graph --around: exit code %d\n%.600s", code, out)
	}
	out, code = a.kvctl(t, "graph", "--max-nodes", "1")
	if code == 0 || !strings.Contains(out, "max_nodes") || !strings.Contains(out, "filter.model") {
		t.Errorf("graph --max-nodes 1: exit code %d\n%.600s", code, out)
	}
	out, code = a.kvctl(t, "graph", "--depth", "2")
	if code != exitUsage || !strings.Contains(out, "--around") {
		t.Errorf("graph --depth without --around: exit code %d\n%.600s", code, out)
	}
	out, code = a.kvctl(t, "graph", "--state", "NOSUCH")
	if code == 0 || !strings.Contains(out, "filter.state") {
		t.Errorf("graph --state NOSUCH: exit code %d\n%.600s", code, out)
	}

	out, code = a.kvctl(t, "delete", "--wait", "linux/route/f1/10.5.0.0/16", "linux/interface/f1")
	if code != 0 || !strings.Contains(out, "DELETE linux/interface/f1 REMOVED") {
		t.Errorf("delete --wait: exit code %d\n%s", code, out)
	}
	if out, _ := a.kvctl(t, "status", "--owner", "api"); strings.Contains(out, "f1") {
		t.Errorf("after delete --wait:\n%s", out)
	}
}
