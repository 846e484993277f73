package graph

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

func existingKeys(g *Graph) []string {
	var out []string
	g.Existing.Ascend(func(k string) bool { out = append(out, k); return true })
	return out
}

func anyOfDep(prefix string) []kv.Dependency {
	return []kv.Dependency{{Label: "any", AnyOf: kv.AnyOf{Prefixes: []string{prefix}}}}
}

// The index of existing keys leaves out the key spaces that no AnyOf
// prefix reaches, takes a space's keys in when one does (linked, or only
// looked up), and a rollback puts the space back out.
func TestExistingSkipsUnreachedKeySpaces(t *testing.T) {
	g := NewGraph()
	g.KeySpaces = []string{"route/", "iface/"}
	for _, k := range []string{"route/a", "route/b", "iface/x", "iface/x/addr/1", "other/z"} {
		g.AddNode(&Node{NodeFields: NodeFields{Key: k, Applied: wrapperspb.String(k)}})
	}
	dep := &Node{NodeFields: NodeFields{Key: "route/c"}}
	g.AddNode(dep)
	g.SetDeps(dep, anyOfDep("iface/x/addr/"), nil)
	if got, want := existingKeys(g), []string{"iface/x", "iface/x/addr/1", "other/z"}; !slices.Equal(got, want) {
		t.Fatalf("index after an AnyOf under iface/: %v, want %v", got, want)
	}
	g.SetExisting("route/d", true) // a skipped space: not indexed
	if slices.Contains(existingKeys(g), "route/d") {
		t.Fatal("route/d indexed though no AnyOf prefix reaches route/")
	}

	g.Begin()
	// Looked up before any dependency under route/ is linked: found.
	if got := g.AnyOfSatisfied(&kv.AnyOf{Prefixes: []string{"route/"}}, nil); got != "route/a" {
		t.Fatalf("AnyOf route/ satisfied by %q, want route/a", got)
	}
	g.SetExisting("route/d", true)
	if got, want := existingKeys(g), []string{"iface/x", "iface/x/addr/1", "other/z", "route/a", "route/b", "route/d"}; !slices.Equal(got, want) {
		t.Fatalf("index after an AnyOf under route/: %v, want %v", got, want)
	}
	g.Rollback()
	if got, want := existingKeys(g), []string{"iface/x", "iface/x/addr/1", "other/z"}; !slices.Equal(got, want) {
		t.Fatalf("index after the rollback: %v, want %v", got, want)
	}
	g.SetExisting("route/e", true)
	if slices.Contains(existingKeys(g), "route/e") {
		t.Fatal("route/ indexed again after the rollback")
	}
	if got := g.AnyOfSatisfied(&kv.AnyOf{Prefixes: []string{"route/b"}}, nil); got != "route/b" {
		t.Fatalf("AnyOf route/b satisfied by %q, want route/b", got)
	}
}
