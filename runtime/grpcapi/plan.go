package grpcapi

import (
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// planOutcomes returns the outcomes of a plan only (res nil: the plan has
// nothing to do): for each key the update names and each key the plan
// touches, the state the plan leads to, the source that would own the
// key, and a warning where the gRPC source sets a key whose value another
// source's would override.
func (srv *Server) planOutcomes(res *scheduler.Result, u nb.Update) []*apiv1.Outcome {
	src := srv.cfg.Source
	after := next(srv.mux.Desired(src), u)
	// The last planned operation of each key says where the plan leaves
	// it (a re-creation is a delete, then a create).
	planned := map[string]scheduler.Op{}
	if res != nil {
		for _, op := range res.Planned {
			planned[op.Key] = op
		}
	}
	keys := map[string]struct{}{}
	for _, c := range u.Changes {
		keys[c.Key] = struct{}{}
	}
	for k := range planned {
		keys[k] = struct{}{}
	}
	var out []*apiv1.Outcome
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		o := &apiv1.Outcome{Key: k}
		op, ok := planned[k]
		if ok {
			o.State = op.State.String()
			o.Error = errText(op.Err)
		} else {
			st := srv.s.Status(k)
			o.State = st.State.String()
			o.Error = errText(st.LastErr)
			if st.State == scheduler.PENDING {
				if why, ok := srv.s.WhyPending(k); ok {
					o.WhyPending = whyLines(why)
				}
			}
		}
		o.Owner, o.Warning = srv.ownerAfter(k, after[k], ok)
		out = append(out, o)
	}
	return out
}

// ownerAfter returns the source that would own key once the gRPC source
// intends v (nil: nothing) for it, and a warning when v would not take
// effect; planned says whether the plan changes the key.
func (srv *Server) ownerAfter(key string, v proto.Message, planned bool) (owner, warning string) {
	src := srv.cfg.Source
	owner, overridden := srv.mux.Owner(key)
	if v == nil {
		// The gRPC source leaves the key to the others, the highest
		// priority first.
		if owner != src {
			return owner, ""
		}
		if len(overridden) > 0 {
			return overridden[0], ""
		}
		return "", ""
	}
	loses := func() (string, string) {
		return owner, fmt.Sprintf("source %s sets this key too, with a higher priority: the %s source's value would not take effect", owner, src)
	}
	switch {
	case owner == "" || owner == src:
		return src, ""
	case slices.Contains(overridden, src):
		// The gRPC source sets the key already, and loses.
		return loses()
	case planned:
		// A key new to the gRPC source that another source sets: the
		// plan changes it only when the gRPC source's value wins.
		return src, ""
	case proto.Equal(v, srv.s.Status(key).Value):
		// The same value as the other source's: whichever wins, the
		// intended value stays as it is, so no warning.
		return owner, ""
	}
	return loses()
}
