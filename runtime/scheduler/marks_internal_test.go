package scheduler

import (
	"context"
	"math"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
)

// TestTxn32WrapClearsMarks: nodes keep 32-bit marks of the last
// transaction that recorded an operation on them. When the marks wrap
// around (transaction 2^32-1), every node's marks are cleared, so that a
// mark left 2^32-1 transactions ago never passes for the current
// transaction's: here the no-op of value "a" is still recorded.
func TestTxn32WrapClearsMarks(t *testing.T) {
	if graph.Txn32(1) == 0 || graph.Txn32(math.MaxUint32-1) != math.MaxUint32 || graph.Txn32(math.MaxUint32) != 1 {
		t.Fatalf("txn32: %d %d %d", graph.Txn32(1), graph.Txn32(math.MaxUint32-1), graph.Txn32(math.MaxUint32))
	}
	ctx := context.Background()
	s, err := New(WithTxnLog(false))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	sb := kvtest.NewSB()
	d, err := sb.Descriptor(kvtest.Config{Name: "x", KeyTemplate: "x/{name}"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	v := wrapperspb.String("1")
	first, err := s.Txn().Set("x/a", v).Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if mark := s.g.Node("x/a").OpSeq; mark != graph.Txn32(first.Seq) {
		t.Fatalf("x/a's mark is %d, want txn32(%d) = %d", mark, first.Seq, graph.Txn32(first.Seq))
	}
	s.seq = math.MaxUint32 - 1
	if res, err := s.Txn().Set("x/b", v).Commit(ctx); err != nil || graph.Txn32(res.Seq) != 1 {
		t.Fatalf("the transaction at the wrap: %v, txn32 %d", err, graph.Txn32(res.Seq))
	}
	s.seq = first.Seq + math.MaxUint32 - 1 // the next one has x/a's old mark
	res, err := s.Txn().Set("x/a", v).Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if graph.Txn32(res.Seq) != graph.Txn32(first.Seq) {
		t.Fatalf("transaction %d has mark %d, want x/a's %d", res.Seq, graph.Txn32(res.Seq), graph.Txn32(first.Seq))
	}
	if len(res.Planned) != 1 || res.Planned[0].Key != "x/a" || res.Planned[0].Flags&FlagNoop == 0 {
		t.Errorf("setting x/a to its value again after the wrap planned %v, want one NOOP", res.Planned)
	}
	if got := sb.Calls(); len(got) != 2 {
		t.Errorf("southbound calls %v, want the two creates", got)
	}
}
