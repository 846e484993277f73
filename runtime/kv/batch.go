package kv

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
)

// BatchKind is the kind of the operations of a batch: a batch holds
// operations of one kind only.
type BatchKind uint8

// The batch kinds.
const (
	BatchCreate BatchKind = iota + 1
	BatchUpdate
	BatchDelete
)

func (k BatchKind) String() string {
	switch k {
	case BatchCreate:
		return "CREATE"
	case BatchUpdate:
		return "UPDATE"
	case BatchDelete:
		return "DELETE"
	}
	return fmt.Sprintf("BatchKind(%d)", uint8(k))
}

// BatchOp is one operation of a batch, with its outcome. The scheduler
// fills in the inputs; the handler sets Err, and Metadata for creates and
// updates.
type BatchOp[K any, V proto.Message, M any] struct {
	Key K
	// Value is the value to create (BatchCreate), the new value
	// (BatchUpdate) or the value to delete (BatchDelete).
	Value V
	// OldValue is the value updated from (BatchUpdate only).
	OldValue V
	// OldMetadata is the value's metadata (BatchUpdate and BatchDelete).
	OldMetadata M
	// Metadata is set by the handler: the metadata of the value created or
	// updated to, as Create and Update return it.
	Metadata M
	// Err is set by the handler: the operation's error, nil when it was
	// applied. For a delete, ErrNotFound counts as success, as for Delete.
	Err error
}

// Batcher is the optional capability of applying many operations of one
// kind in one call: what a southbound with a bulk path gains from (many
// netlink messages per system call, a stream of binary-API requests
// before their replies).
//
// The scheduler groups operations of a plan that are independent of each
// other (no dependency or derivation between any two of them) into batches
// of bounded size, in an order that respects every dependency, so Batch may
// apply them in any order or at once. Each operation succeeds or fails on
// its own: a value that fails in a batch is treated exactly as if its own
// Create, Update or Delete had failed with that error (its retries, its
// revert, its read-back). A batch the handler cannot start at all sets the
// same error on every operation. A panic fails every operation of the
// batch.
//
// Batch is called within the descriptor's call timeout (one deadline for
// the whole batch, see the scheduler's WithCallTimeout): size batches with
// it in mind, or ask for smaller ones (scheduler.WithBatchSize).
type Batcher[K any, V proto.Message, M any] interface {
	Batch(ctx context.Context, kind BatchKind, ops []BatchOp[K, V, M])
}

// Concurrent is the optional capability of a handler whose calls for
// independent values may run at the same time: a southbound whose calls
// wait (a remote API, a process on the other end of a socket). The
// scheduler then runs up to ConcurrentCalls() calls of independent values
// of the descriptor at once, when they are not sent in a batch; by default
// (without it, or with a value below 2) calls are made one at a time.
type Concurrent interface {
	ConcurrentCalls() int
}

// CanBatch reports whether the handler applies batches (Batcher).
func (d *TypedDescriptor[K, V, M]) CanBatch() bool { return d.batcher != nil }

// ConcurrentCalls returns the number of calls of independent values that
// may run at once: 1 unless the handler is Concurrent.
func (d *TypedDescriptor[K, V, M]) ConcurrentCalls() int {
	if d.concurrent == nil {
		return 1
	}
	return max(1, d.concurrent.ConcurrentCalls())
}

// Batch gives the handler the operations with typed keys and values, and
// sets each one's outcome. An operation whose key does not parse or whose
// value is of another type fails alone without reaching the handler; a
// handler without the capability fails them all.
func (d *TypedDescriptor[K, V, M]) Batch(ctx context.Context, kind BatchKind, ops []BatchOp[string, proto.Message, any]) {
	if d.batcher == nil {
		err := NonRetriable(fmt.Errorf("descriptor %s has no Batch", d.spec.Name))
		for i := range ops {
			ops[i].Err = err
		}
		return
	}
	// The typed operations come from a pool: a batch is a hot path, and
	// a handler given up on at its deadline keeps its buffer until it
	// returns.
	buf := d.batchBufs.Get().(*[]BatchOp[K, V, M])
	typed := (*buf)[:0]
	if cap(typed) < len(ops) {
		typed = make([]BatchOp[K, V, M], 0, len(ops)) // not grown step by step
	}
	defer func() {
		clear(typed)
		if cap(typed) <= 4096 {
			*buf = typed[:0]
			d.batchBufs.Put(buf)
		}
	}()
	// at maps typed operations back to ops when some were left out.
	var at []int
	for i := range ops {
		op := &ops[i]
		t, err := d.typedOp(ctx, kind, op)
		if err != nil {
			op.Err = err
			if at == nil {
				at = make([]int, 0, len(ops))
				for j := range i {
					at = append(at, j)
				}
			}
			continue
		}
		if at != nil {
			at = append(at, i)
		}
		typed = append(typed, t)
	}
	if len(typed) > 0 {
		d.batcher.Batch(ctx, kind, typed)
	}
	for i := range typed {
		op := &ops[i]
		if at != nil {
			op = &ops[at[i]]
		}
		t := &typed[i]
		op.Err = t.Err
		switch {
		case kind == BatchDelete && errors.Is(t.Err, ErrNotFound):
			op.Err = nil
		case t.Err == nil && kind != BatchDelete && !d.noMeta:
			op.Metadata = t.Metadata
		}
	}
}

// typedOp converts one erased operation of a batch.
func (d *TypedDescriptor[K, V, M]) typedOp(ctx context.Context, kind BatchKind, op *BatchOp[string, proto.Message, any]) (BatchOp[K, V, M], error) {
	var t BatchOp[K, V, M]
	k, err := d.handlerKey(ctx, op.Key)
	if err != nil {
		return t, err
	}
	t.Key = k
	v, ok := d.typed(op.Value)
	if !ok {
		return t, d.wrongType(op.Key, op.Value)
	}
	t.Value = v
	switch kind {
	case BatchUpdate:
		old, ok := d.typed(op.OldValue)
		if !ok {
			return t, d.wrongType(op.Key, op.OldValue)
		}
		t.OldValue = old
		t.OldMetadata = d.meta(op.OldMetadata)
	case BatchDelete:
		t.OldMetadata = d.meta(op.OldMetadata)
	case BatchCreate:
	default:
		return t, NonRetriable(fmt.Errorf("%s: batch of unknown kind %v", op.Key, kind))
	}
	return t, nil
}
