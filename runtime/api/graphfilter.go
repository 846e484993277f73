package api

import (
	"fmt"
	"slices"
	"strings"

	"connectrpc.com/connect"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// MaxGraphDepth bounds the depth of a key's neighbourhood in a graph
// filter.
const MaxGraphDepth = 100

// checkGraphFilter validates a graph filter before the graph is read.
func (svc *Service) checkGraphFilter(f *apiv1.GraphFilter) error {
	if f == nil {
		return nil
	}
	if err := bounded(keyLen("filter.model", f.GetModel()), keyLen("filter.state", f.GetState()), keyLen("filter.key", f.GetKey())); err != nil {
		return err
	}
	if m := f.GetModel(); m != "" {
		if names := svc.s.Descriptors(); !slices.Contains(names, m) {
			return invalid("filter.model", "%q is not a model of this agent (%s)", m, strings.Join(names, ", "))
		}
	}
	if s := f.GetState(); s != "" {
		if _, ok := scheduler.ParseState(s); !ok {
			return invalid("filter.state", "%q is not a state (%s)", s, strings.Join(stateList(), ", "))
		}
	}
	if f.GetDepth() > MaxGraphDepth {
		return invalid("filter.depth", "%d is beyond %d", f.GetDepth(), MaxGraphDepth)
	}
	if f.GetDepth() > 0 && f.GetKey() == "" {
		return invalid("filter.depth", "is the depth of a key's neighbourhood: give filter.key too")
	}
	return nil
}

// stateList names the states.
func stateList() []string {
	var out []string
	for i := range 256 {
		s := scheduler.State(i)
		if p, ok := scheduler.ParseState(s.String()); ok && p == s {
			out = append(out, s.String())
		}
	}
	return out
}

// filterGraph keeps the part of snap that passes the filter (checked by
// checkGraphFilter): the nodes that pass every filter given and the edges
// between them. A key that the graph lacks is NOT_FOUND naming
// filter.key; more nodes than max_nodes is FAILED_PRECONDITION naming
// max_nodes and the filters that narrow the graph.
func filterGraph(snap *scheduler.GraphSnapshot, f *apiv1.GraphFilter) (*scheduler.GraphSnapshot, error) {
	if f == nil {
		return snap, nil
	}
	keep := func(n *scheduler.GraphNode) bool {
		if f.GetModel() != "" && n.Descriptor != f.GetModel() {
			return false
		}
		if f.GetState() != "" && (n.Placeholder || n.State.String() != f.GetState()) {
			return false
		}
		return true
	}
	var near map[string]bool
	if key := f.GetKey(); key != "" {
		if _, ok := slices.BinarySearchFunc(snap.Nodes, key, func(n scheduler.GraphNode, k string) int { return strings.Compare(n.Key, k) }); !ok {
			return nil, notFound("filter.key", "%q is not in the graph", key)
		}
		depth := int(max(f.GetDepth(), 1))
		adj := map[string][]string{}
		for _, e := range snap.Edges {
			adj[e.From] = append(adj[e.From], e.To)
			adj[e.To] = append(adj[e.To], e.From)
		}
		near = map[string]bool{key: true}
		frontier := []string{key}
		for d := 0; d < depth && len(frontier) > 0; d++ {
			var next []string
			for _, k := range frontier {
				for _, o := range adj[k] {
					if !near[o] {
						near[o] = true
						next = append(next, o)
					}
				}
			}
			frontier = next
		}
	}
	out := &scheduler.GraphSnapshot{Seq: snap.Seq, Time: snap.Time}
	kept := map[string]bool{}
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		if (near == nil || near[n.Key]) && (n.Key == f.GetKey() || keep(n)) {
			out.Nodes = append(out.Nodes, *n)
			kept[n.Key] = true
		}
	}
	if m := f.GetMaxNodes(); m > 0 && len(out.Nodes) > int(m) {
		return nil, argErr(connect.CodeFailedPrecondition, "max_nodes",
			"the graph has %d nodes%s, more than %d: filter it by model (filter.model), by state (filter.state) or to a key's neighbourhood (filter.key, filter.depth)",
			len(out.Nodes), filtered(f), m)
	}
	for _, e := range snap.Edges {
		if kept[e.From] && kept[e.To] {
			out.Edges = append(out.Edges, e)
		}
	}
	for _, k := range snap.Touched {
		if kept[k] {
			out.Touched = append(out.Touched, k)
		}
	}
	return out, nil
}

// filtered says which filters a graph passed, for a message.
func filtered(f *apiv1.GraphFilter) string {
	var parts []string
	if f.GetModel() != "" {
		parts = append(parts, "model "+f.GetModel())
	}
	if f.GetState() != "" {
		parts = append(parts, "state "+f.GetState())
	}
	if f.GetKey() != "" {
		parts = append(parts, fmt.Sprintf("within %d of %s", max(f.GetDepth(), 1), f.GetKey()))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
