package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// readBack reads, after a failed call on n, what the southbound holds for
// n's key: the call may have applied in part (a link created and its MTU
// refused, a delete that removed the value and then failed), so nothing
// may be assumed. It calls the descriptor's Retrieve with n's key alone to
// correlate (expected is the value the call was about) and keeps only
// what it returns for that key. known is false when the descriptor cannot
// Retrieve or the Retrieve failed: the graph then keeps what it held, and
// when the Retrieve failed the value is of unknown outcome (markUnsure). A simulation never gets here: its calls do not fail.
func (r *unknowns) readBack(n *node, expected proto.Message) (found proto.Message, meta any, known bool) {
	if n.desc == nil || !n.desc.CanRetrieve() {
		return nil, nil, false
	}
	ctx, span := r.ctx, Span(nil)
	if t := r.s.opts.tracer; t != nil {
		ctx, span = t.Start(ctx, SpanReadBack, slog.String(AttrDescriptor, n.desc.Name()), slog.String(AttrKey, n.key))
	}
	found, meta, err := r.s.readKey(ctx, n, expected)
	if span != nil {
		span.End(err, slog.Bool(AttrFound, found != nil))
	}
	if err != nil {
		r.s.opts.logger.Warn("read-back after a failed call failed; what the call left is unknown until a read-back succeeds",
			"key", n.key, "descriptor", n.desc.Name(), "error", err)
		return nil, nil, false
	}
	return found, meta, true
}

// readKey calls n's Retrieve with n's key alone to correlate (expected:
// the version a call was about) and returns what it reports for that key
// (nil: nothing).
func (s *caller) readKey(ctx context.Context, n *node, expected proto.Message) (proto.Message, any, error) {
	correlate := []kv.Item[string, proto.Message, any]{{Key: n.key, Value: expected, Metadata: n.metadata, Origin: kv.OriginNB}}
	items, err := s.retrieveGuarded(ctx, n.desc, n.key, correlate)
	if err != nil {
		return nil, nil, err
	}
	for _, it := range items {
		if it.Key == n.key && it.Value != nil && it.Value.ProtoReflect().IsValid() {
			return it.Value, it.Metadata, nil
		}
	}
	return nil, nil, nil
}

// retrieveGuarded calls d's Retrieve (for key, or for a refresh when key
// is empty), timed for the observer and given up on at its deadline; a
// panic is an error naming the descriptor.
func (s *caller) retrieveGuarded(ctx context.Context, d kv.Descriptor, key string, correlate []kv.Item[string, proto.Message, any]) ([]kv.Item[string, proto.Message, any], error) {
	var items []kv.Item[string, proto.Message, any]
	ok, err := s.callOut(ctx, OpRetrieve, d, key, func(c *callCtx) (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("Retrieve of descriptor %s panicked: %v", d.Name(), p)
			}
		}()
		items, err = d.Retrieve(c, correlate)
		return err
	})
	if !ok {
		return nil, err
	}
	return items, err
}

// takeApplied records that the southbound holds value (nil: nothing) for
// n, as a read-back found it; n is mut'ed.
func (r *unknowns) takeApplied(n *node, value proto.Message, meta any) {
	r.known(n.key)
	n.applied, n.metadata = value, meta
	if value == nil {
		n.metadata = nil
		r.g.setDeps(n, n.deps, nil)
	} else {
		r.g.setDeps(n, n.deps, r.depsOfValue(n, value))
	}
	r.g.setExisting(n.key, value != nil && !n.removing)
	r.syncMetadata(n)
}

// readBackPartners reads back, after a failed Delete of n found gone, the
// applied values on a dependency cycle of two with it (each needs the
// other directly: a veth pair's ends), which a southbound holding the
// cycle as one object removed with n. One found gone is gone (one being
// removed is not deleted again); one not read is of unknown outcome (one
// being removed by a transaction that goes on is deleted next).
func (r *unknowns) readBackPartners(n *node, prev proto.Message) {
	direct := func(d kv.Dependency, key string) bool { return !d.IsAnyOf() && d.Key == key }
	mine := r.depsOfValue(n, prev)
	for _, k := range r.g.dependentsOf(n.key) {
		p := r.g.node(k)
		if p == nil || p == n || p.applied == nil || !r.canReadBack(p) ||
			!slices.ContainsFunc(p.adeps(), func(d kv.Dependency) bool { return direct(d, n.key) }) ||
			!slices.ContainsFunc(mine, func(d kv.Dependency) bool { return direct(d, p.key) }) {
			continue
		}
		found, _, err := r.s.readKey(r.ctx, p, p.applied)
		switch was := p.applied; {
		case err != nil && p.removing && !(r.opts.revert && !r.reverting):
			r.markUnsure(p, was, err)
		case err != nil || found == nil:
			r.mut(p)
			r.takeApplied(p, nil, nil)
			if err != nil {
				p.lastErr = r.markUnsure(p, was, fmt.Errorf("%s: read back after %s's delete failed: %w", p.key, n.key, err))
			}
		}
	}
}
