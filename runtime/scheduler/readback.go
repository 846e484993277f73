package scheduler

import (
	"context"
	"fmt"
	"log/slog"

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

// readBackPartners reads back, after a failed Delete of n whose read-back
// found n gone, the values on a dependency cycle of two with it: each
// applied value whose applied version needs n directly and which the
// version of n the Delete removed (prev) needs directly (a veth pair's
// other end). A southbound may hold such a cycle as one object, which
// goes with either member (deleting one end of a veth pair deletes the
// pair), so the failed Delete may have removed them too: each is read
// back with its key alone, and one found gone is gone (the graph holds
// nothing of it; one being removed is not deleted again). One whose
// read-back fails is of unknown outcome (markUnsure).
func (r *unknowns) readBackPartners(n *node, prev proto.Message) {
	if prev == nil || n.desc == nil {
		return
	}
	mine := r.depsOfValue(n, prev)
	for _, k := range r.g.dependentsOf(n.key) {
		p := r.g.node(k)
		if p == nil || p == n || p.applied == nil || !r.canReadBack(p) ||
			!needsDirectly(p.adeps(), n.key) || !needsDirectly(mine, p.key) {
			continue
		}
		found, _, err := r.s.readKey(r.ctx, p, p.applied)
		if err != nil && p.removing && !(r.opts.revert && !r.reverting) {
			// Being removed, by a transaction that goes on after the
			// failure: its Delete comes next, which tells (a delete of
			// what is gone succeeds); until it succeeds it is of
			// unknown outcome.
			r.markUnsure(p, p.applied, err)
			continue
		}
		if err != nil {
			// Of unknown outcome, as after a failed call whose
			// read-back failed: the graph holds nothing of it (nothing
			// is created on it) until a read-back tells.
			prevP := p.applied
			r.mut(p)
			r.takeApplied(p, nil, nil)
			p.lastErr = r.markUnsure(p, prevP, fmt.Errorf("%s: read back after %s's delete failed: %w", p.key, n.key, err))
			continue
		}
		if found != nil {
			continue
		}
		r.s.opts.logger.Info("a failed delete removed a value on a dependency cycle with the value it deleted",
			"key", p.key, "deleted", n.key)
		r.mut(p)
		r.takeApplied(p, nil, nil)
	}
}

// needsDirectly reports whether deps name key as a plain dependency.
func needsDirectly(deps []kv.Dependency, key string) bool {
	for i := range deps {
		if !deps[i].IsAnyOf() && deps[i].Key == key {
			return true
		}
	}
	return false
}
