package scheduler

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

type rawPanicObserver struct{}

func (rawPanicObserver) TxnDone(*Record)                             {}
func (rawPanicObserver) OpDone(string, OpKind, time.Duration, error) { panic("boom in OpDone") }

type okHandler struct{}

func (okHandler) Create(context.Context, string, *emptypb.Empty) (struct{}, error) {
	return struct{}{}, nil
}
func (okHandler) Delete(context.Context, string, *emptypb.Empty, struct{}) error { return nil }

// A panic while a job holds the graph (here an observer left unguarded,
// called during the plan's execution) fails the job with an error naming
// it, releases the graph and the busy flag, and leaves the scheduler
// usable.
func TestJobPanicIsRecovered(t *testing.T) {
	s, err := New(WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	d, err := kv.NewDescriptor(kv.Spec[string, *emptypb.Empty, struct{}]{Name: "x", KeyPrefix: "x/"}, okHandler{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	s.opts.observer = rawPanicObserver{}
	for _, async := range []bool{false, true} {
		var err error
		if async {
			err = (<-s.Txn().Set("x/b", &emptypb.Empty{}).CommitAsync(context.Background())).Err
		} else {
			_, err = s.Txn().Set("x/a", &emptypb.Empty{}).Commit(context.Background())
		}
		if err == nil || !strings.Contains(err.Error(), "panicked: boom in OpDone") || !strings.Contains(err.Error(), "transaction #") {
			t.Fatalf("async %v: %v, want the job's panic", async, err)
		}
		if s.locked || s.g.Open {
			t.Fatalf("graph still locked (%v) or journal open (%v)", s.locked, s.g.Open)
		}
	}
	s.opts.observer = nil
	if _, err := s.Txn().Set("x/a", &emptypb.Empty{}).Commit(context.Background()); err != nil {
		t.Fatalf("commit after the panics: %v", err)
	}
	if st := s.Status("x/a"); st.State != CONFIGURED {
		t.Errorf("x/a is %v", st.State)
	}
}
