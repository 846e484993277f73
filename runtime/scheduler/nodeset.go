package scheduler

import "github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/ptrset"

type stringSet map[string]struct{}

// nodeSet is a set of nodes: the dependents of a key. Pointers compare
// and hash cheaper than keys, and a node is unlinked before it leaves the
// graph (settle), so a set never holds a node that is gone.
type nodeSet = ptrset.Set[node]
