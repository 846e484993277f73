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

// readKey reads n's key alone (expected: the version a call was about).
func (s *caller) readKey(ctx context.Context, n *node, expected proto.Message) (proto.Message, any, error) {
	found, err := s.readAsked(ctx, n.desc, n.key, []kv.Item[string, proto.Message, any]{{Key: n.key, Value: expected, Metadata: n.metadata, Origin: kv.OriginNB}})
	return found[n.key].value, found[n.key].meta, err
}

// sbRead is what a read found for a key (value nil: nothing).
type sbRead struct {
	value proto.Message
	meta  any
}

// readAsked calls d's Retrieve with asked to correlate (key: the one key
// of a read-back, else "") and returns what it reports for each key asked,
// the first valid item of each (a zero sbRead: nothing); nil when the
// Retrieve failed. Read-backs and drift checks correlate the same way.
func (s *caller) readAsked(ctx context.Context, d kv.Descriptor, key string, asked []kv.Item[string, proto.Message, any]) (map[string]sbRead, error) {
	items, err := s.retrieveGuarded(ctx, d, key, asked)
	if err != nil {
		return nil, err
	}
	out := make(map[string]sbRead, len(asked))
	for _, it := range asked {
		out[it.Key] = sbRead{}
	}
	for _, it := range items {
		if f, ok := out[it.Key]; ok && f.value == nil && it.Value != nil && it.Value.ProtoReflect().IsValid() {
			out[it.Key] = sbRead{it.Value, it.Metadata}
		}
	}
	return out, nil
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
