package kv_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// batchHandler batches: it fails the values "bad", reports "gone" deletes
// as not found, and gives each created value its position as metadata.
type batchHandler struct {
	*baseHandler
	got [][]string
}

func (h *batchHandler) Batch(_ context.Context, kind kv.BatchKind, ops []kv.BatchOp[string, value, *ifaceMeta]) {
	var keys []string
	for i := range ops {
		op := &ops[i]
		keys = append(keys, kind.String()+" "+op.Key+"="+op.Value.GetValue())
		switch {
		case op.Value.GetValue() == "bad":
			op.Err = errors.New("refused")
		case op.Value.GetValue() == "gone":
			op.Err = kv.ErrNotFound
		case kind == kv.BatchUpdate && op.OldMetadata == nil:
			op.Err = errors.New("no old metadata")
		default:
			op.Metadata = &ifaceMeta{Index: uint32(i + 1)}
		}
	}
	h.got = append(h.got, keys)
}

func (h *batchHandler) ConcurrentCalls() int { return 4 }

// TestBatch: the typed operations reach the handler, each outcome comes
// back to its own operation, and operations that cannot be typed fail
// alone without reaching it (a value of the wrong type here).
func TestBatch(t *testing.T) {
	t.Parallel()
	h := &batchHandler{baseHandler: &baseHandler{}}
	d, err := kv.NewDescriptor(spec{Name: "iface", KeyTemplate: ifaceTemplate, WithMetadata: true}, kv.Handler[string, value, *ifaceMeta](h))
	if err != nil {
		t.Fatal(err)
	}
	if !d.CanBatch() || d.ConcurrentCalls() != 4 {
		t.Fatalf("CanBatch %v, ConcurrentCalls %d; want true, 4", d.CanBatch(), d.ConcurrentCalls())
	}
	ops := []kv.BatchOp[string, proto.Message, any]{
		{Key: "linux/interface/a", Value: str("ok")},
		{Key: "linux/interface/d", Value: str("bad")},
		{Key: "linux/interface/e", Value: &emptypb.Empty{}}, // wrong type
		{Key: "linux/interface/f", Value: str("ok")},
	}
	d.Batch(context.Background(), kv.BatchCreate, ops)
	if want := "CREATE linux/interface/a=ok CREATE linux/interface/d=bad CREATE linux/interface/f=ok"; len(h.got) != 1 || strings.Join(h.got[0], " ") != want {
		t.Fatalf("handler got %q; want %q", h.got, want)
	}
	if m, _ := ops[0].Metadata.(*ifaceMeta); ops[0].Err != nil || m == nil || m.Index != 1 {
		t.Errorf("op a: %v %v; want applied with metadata 1", ops[0].Err, ops[0].Metadata)
	}
	if ops[1].Err == nil || ops[1].Err.Error() != "refused" || ops[1].Metadata != nil {
		t.Errorf("op d: %v %v; want refused, no metadata", ops[1].Err, ops[1].Metadata)
	}
	if !errors.Is(ops[2].Err, kv.ErrWrongType) {
		t.Errorf("op e: %v; want ErrWrongType", ops[2].Err)
	}
	if m, _ := ops[3].Metadata.(*ifaceMeta); ops[3].Err != nil || m == nil || m.Index != 3 {
		t.Errorf("op f: %v %v; want applied with metadata 3 (third in the handler's batch)", ops[3].Err, ops[3].Metadata)
	}

	// Deletes: ErrNotFound counts as success, as for Delete; no metadata.
	del := []kv.BatchOp[string, proto.Message, any]{
		{Key: "linux/interface/a", Value: str("gone"), OldMetadata: &ifaceMeta{Index: 1}},
		{Key: "linux/interface/d", Value: str("bad")},
	}
	d.Batch(context.Background(), kv.BatchDelete, del)
	if del[0].Err != nil || del[0].Metadata != nil || del[1].Err == nil {
		t.Errorf("deletes: %v %v %v; want not-found as success, refused", del[0].Err, del[0].Metadata, del[1].Err)
	}
	// Updates carry the old value and metadata.
	up := []kv.BatchOp[string, proto.Message, any]{
		{Key: "linux/interface/a", Value: str("ok"), OldValue: str("old"), OldMetadata: &ifaceMeta{Index: 9}},
		{Key: "linux/interface/f", Value: str("ok"), OldValue: &emptypb.Empty{}},
	}
	d.Batch(context.Background(), kv.BatchUpdate, up)
	if up[0].Err != nil || !errors.Is(up[1].Err, kv.ErrWrongType) {
		t.Errorf("updates: %v %v; want applied, ErrWrongType for the old value", up[0].Err, up[1].Err)
	}
}

// TestBatchWithout: a handler without Batch fails a batch whole, and is
// not concurrent.
func TestBatchWithout(t *testing.T) {
	t.Parallel()
	d, err := kv.NewDescriptor(spec{Name: "iface", KeyTemplate: ifaceTemplate}, kv.Handler[string, value, *ifaceMeta](&baseHandler{}))
	if err != nil {
		t.Fatal(err)
	}
	ops := []kv.BatchOp[string, proto.Message, any]{{Key: "linux/interface/a", Value: str("ok")}}
	d.Batch(context.Background(), kv.BatchCreate, ops)
	if d.CanBatch() || d.ConcurrentCalls() != 1 || ops[0].Err == nil {
		t.Errorf("CanBatch %v, ConcurrentCalls %d, err %v; want false, 1, an error", d.CanBatch(), d.ConcurrentCalls(), ops[0].Err)
	}
}

// wrongBatch has a Batch of another signature.
type wrongBatch struct{ *baseHandler }

func (wrongBatch) Batch(context.Context, []kv.BatchOp[string, value, *ifaceMeta]) {}

func TestNewDescriptorRefusesMistypedBatch(t *testing.T) {
	t.Parallel()
	_, err := kv.NewDescriptor(spec{Name: "iface", KeyTemplate: ifaceTemplate}, kv.Handler[string, value, *ifaceMeta](wrongBatch{&baseHandler{}}))
	if err == nil || !strings.Contains(err.Error(), "method Batch") {
		t.Fatalf("NewDescriptor = %v; want an error naming the method Batch", err)
	}
}
