package scheduler

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// Southbound reads what the southbound holds for a descriptor through its
// Retrieve, correlated as a resync correlates (the values of ours the
// scheduler knows: applied, else intended), and returns it as Retrieve
// reported it; nothing changes. It runs on the worker between
// transactions, so that Retrieve never runs beside a transaction's calls,
// guarded and bounded by the call timeout like every call out. It waits
// for the transactions queued before it; ctx bounds the wait.
func (s *Scheduler) Southbound(ctx context.Context, descriptor string) ([]kv.Item[string, proto.Message, any], error) {
	if ctx == nil {
		return nil, errNilContext("southbound")
	}
	d, ok := s.view.state.Load().descs[descriptor]
	if !ok {
		return nil, fmt.Errorf("scheduler: no descriptor %q", descriptor)
	}
	if !d.CanRetrieve() {
		return nil, fmt.Errorf("scheduler: descriptor %s cannot Retrieve", descriptor)
	}
	var items []kv.Item[string, proto.Message, any]
	var err error
	j := &job{kind: DownstreamResyncTxn, ctx: ctx, done: make(chan *Result, 1)}
	j.read = func() {
		var correlate []kv.Item[string, proto.Message, any]
		for key, n := range s.g.all() {
			if it, ok := expectedItem(key, n, true); ok && n.desc == d {
				correlate = append(correlate, it)
			}
		}
		items, err = s.retrieveGuarded(ctx, d, "", correlate)
	}
	if err := s.enqueue(j); err != nil {
		return nil, err
	}
	select {
	case r := <-j.done:
		if r.Err != nil {
			return nil, r.Err
		}
		return items, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
