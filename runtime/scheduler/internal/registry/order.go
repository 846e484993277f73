package registry

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// RetrieveOrder orders the descriptors that can Retrieve so that each comes
// after those named in its RetrieveDependencies (ties by name). A cycle is
// an error naming its members. Names of unregistered descriptors are
// ignored: they may be registered later.
func RetrieveOrder(ds []kv.Descriptor) ([]kv.Descriptor, error) {
	byName := map[string]kv.Descriptor{}
	for _, d := range ds {
		byName[d.Name()] = d
	}
	names := slices.Sorted(maps.Keys(byName))
	const (
		unvisited = iota
		visiting
		done
	)
	mark := map[string]int{}
	var order []kv.Descriptor
	var path []string
	var visit func(name string) error
	visit = func(name string) error {
		switch mark[name] {
		case done:
			return nil
		case visiting:
			i := slices.Index(path, name)
			return fmt.Errorf("RetrieveDependencies form a cycle: %s", strings.Join(append(slices.Clone(path[i:]), name), " -> "))
		}
		mark[name] = visiting
		path = append(path, name)
		deps := slices.Clone(byName[name].RetrieveDependencies())
		slices.Sort(deps)
		for _, dep := range deps {
			if _, ok := byName[dep]; ok {
				if err := visit(dep); err != nil {
					return err
				}
			}
		}
		path = path[:len(path)-1]
		mark[name] = done
		if d := byName[name]; d.CanRetrieve() {
			order = append(order, d)
		}
		return nil
	}
	for _, name := range names {
		if err := visit(name); err != nil {
			return nil, err
		}
	}
	return order, nil
}
