package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// stallHandler's Create blocks, ignoring its context, for keys ending in
// "block" until release is closed; waits for its context's end for keys
// ending in "honor"; fails for keys ending in "fail". Its Retrieve blocks
// until release when blockRetrieve is set.
type stallHandler struct {
	started       chan string
	release       chan struct{}
	honored       chan error
	creates       atomic.Int32
	blockRetrieve bool
}

func newStall(t *testing.T) (kv.Descriptor, *stallHandler) {
	t.Helper()
	h := &stallHandler{started: make(chan string, 16), release: make(chan struct{}), honored: make(chan error, 16)}
	d, err := kv.NewDescriptor(kv.Spec[string, *emptypb.Empty, struct{}]{Name: "stall", KeyPrefix: "stall/"}, h)
	if err != nil {
		t.Fatal(err)
	}
	return d, h
}

func (h *stallHandler) Create(ctx context.Context, key string, _ *emptypb.Empty) (struct{}, error) {
	h.creates.Add(1)
	switch {
	case strings.HasSuffix(key, "block"):
		h.started <- key
		<-h.release
	case strings.HasSuffix(key, "honor"):
		if _, ok := ctx.Deadline(); !ok {
			h.honored <- errors.New("no deadline")
			return struct{}{}, nil
		}
		<-ctx.Done()
		h.honored <- ctx.Err()
		return struct{}{}, ctx.Err()
	case strings.HasSuffix(key, "fail"):
		return struct{}{}, kv.NonRetriable(errors.New("refused"))
	}
	return struct{}{}, nil
}

func (h *stallHandler) Delete(context.Context, string, *emptypb.Empty, struct{}) error { return nil }

func (h *stallHandler) Retrieve(ctx context.Context, correlate []kv.Item[string, *emptypb.Empty, struct{}]) ([]kv.Item[string, *emptypb.Empty, struct{}], error) {
	if h.blockRetrieve {
		h.started <- "retrieve"
		<-h.release
	}
	return nil, nil
}

// stallScheduler returns a scheduler with the stall descriptor; the
// handler is released before the scheduler is closed.
func stallScheduler(t *testing.T, retrieve bool, opts ...scheduler.Option) (*scheduler.Scheduler, *stallHandler) {
	t.Helper()
	s := newScheduler(t, opts...)
	d, h := newStall(t)
	h.blockRetrieve = retrieve
	t.Cleanup(func() { close(h.release) })
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	return s, h
}

func keyErr(t *testing.T, err error, key string) scheduler.KeyError {
	t.Helper()
	var te *scheduler.TxnError
	if !errors.As(err, &te) {
		t.Fatalf("error %v, want a *TxnError", err)
	}
	for _, ke := range te.Errors {
		if ke.Key == key {
			return ke
		}
	}
	t.Fatalf("error %v names no error of %s", err, key)
	return scheduler.KeyError{}
}

func TestCallTimeoutGivesUpOnBlockedCall(t *testing.T) {
	t.Parallel()
	s, h := stallScheduler(t, false, scheduler.WithCallTimeout(30*time.Millisecond))
	r := <-s.Txn().Set("stall/block", &emptypb.Empty{}).CommitAsync(context.Background())
	ke := keyErr(t, r.Err, "stall/block")
	var cte *scheduler.CallTimeoutError
	if !errors.Is(ke, scheduler.ErrCallTimeout) || !errors.As(ke, &cte) || !kv.IsRetriable(ke.Err) {
		t.Fatalf("error %v, want a retriable *CallTimeoutError", ke)
	}
	for _, want := range []string{"CREATE of stall/block", "descriptor stall", "30ms"} {
		if !strings.Contains(ke.Error(), want) {
			t.Errorf("error %q does not name %q", ke, want)
		}
	}
	if ke.Op != scheduler.OpCreate || cte.Timeout != 30*time.Millisecond {
		t.Errorf("op %v, timeout %v: want CREATE and 30ms", ke.Op, cte.Timeout)
	}
	if st := s.Status("stall/block"); st.State != scheduler.FAILED {
		t.Errorf("stall/block is %v, want FAILED", st.State)
	}
	// The handler still blocks; the scheduler goes on. (On a host loaded
	// enough to hold this create past 30 ms, it is given up on too: a
	// timeout, not a wait for the blocked call.)
	if _, err := s.Txn().Set("stall/ok", &emptypb.Empty{}).Commit(context.Background()); err != nil && !errors.Is(err, scheduler.ErrCallTimeout) {
		t.Fatalf("commit while a given-up call still blocks: %v", err)
	}
	if rec, ok := s.Record(r.Seq); !ok || len(rec.Errors) != 1 {
		t.Errorf("record of the given-up transaction: %v %+v", ok, rec.Errors)
	}
	if n := h.creates.Load(); n != 2 {
		t.Errorf("%d creates, want 2", n)
	}
}

// TestCommitWithoutDeadlineGetsItsResult: a Commit whose context has no
// deadline returns when its transaction has a result, its blocked call
// given up on, not when the handler returns (issue 28, defect 5).
func TestCommitWithoutDeadlineGetsItsResult(t *testing.T) {
	t.Parallel()
	s, h := stallScheduler(t, false, scheduler.WithCallTimeout(30*time.Millisecond))
	done := make(chan error, 1)
	go func() {
		_, err := s.Txn().Set("stall/block", &emptypb.Empty{}).Commit(context.Background())
		done <- err
	}()
	<-h.started
	// The handler blocks until the end of the test.
	select {
	case err := <-done:
		if !errors.Is(err, scheduler.ErrCallTimeout) {
			t.Fatalf("Commit = %v, want ErrCallTimeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Commit without a deadline still waits for its blocked handler after 10s")
	}
	// The next transaction runs, and its committer gets its result too.
	// (Its outcome is not checked: on a loaded host the read-back of
	// stall/block may be given up on as well, and the next transaction
	// then tries stall/block again; see TestCallTimeoutGivesUpOnBlockedCall.)
	next := make(chan struct{})
	go func() {
		_, _ = s.Txn().Set("stall/ok", &emptypb.Empty{}).Commit(context.Background())
		close(next)
	}()
	select {
	case <-next:
	case <-time.After(10 * time.Second):
		t.Fatal("the next Commit without a deadline did not return in 10s")
	}
}

func TestCallContextCarriesTheDeadline(t *testing.T) {
	t.Parallel()
	s, h := stallScheduler(t, false, scheduler.WithCallTimeout(time.Hour),
		scheduler.WithDescriptorCallTimeout("stall", 20*time.Millisecond))
	_, err := s.Txn().Set("stall/honor", &emptypb.Empty{}).Commit(context.Background())
	if got := <-h.honored; !errors.Is(got, context.DeadlineExceeded) {
		t.Errorf("the handler's context ended with %v, want DeadlineExceeded", got)
	}
	if ke := keyErr(t, err, "stall/honor"); !errors.Is(ke, scheduler.ErrCallTimeout) || !strings.Contains(ke.Error(), "20ms") {
		t.Errorf("error %v, want the descriptor's timeout 20ms", ke)
	}
}

func TestRetrieveTimeout(t *testing.T) {
	t.Parallel()
	s, h := stallScheduler(t, true, scheduler.WithCallTimeout(20*time.Millisecond))
	// A failed create is read back; the read-back blocks and is given up
	// on: the create's own error stands.
	_, err := s.Txn().Set("stall/fail", &emptypb.Empty{}).Commit(context.Background())
	if ke := keyErr(t, err, "stall/fail"); !strings.Contains(ke.Error(), "refused") {
		t.Errorf("error %v, want the create's", ke)
	}
	if st := s.Status("stall/fail"); st.State != scheduler.FAILED {
		t.Errorf("stall/fail is %v, want FAILED", st.State)
	}
	<-h.started
	// A refresh's Retrieve that blocks is an error of the resync.
	_, err = s.Txn(scheduler.DownstreamResync()).Commit(context.Background())
	ke := keyErr(t, err, "stall/")
	if !errors.Is(ke, scheduler.ErrCallTimeout) || ke.Op != scheduler.OpRetrieve || !strings.Contains(ke.Error(), "RETRIEVE by descriptor stall") {
		t.Errorf("resync error %v, want a RETRIEVE timeout", ke)
	}
}

func TestCommitContextBoundsTheWait(t *testing.T) {
	t.Parallel()
	s, h := stallScheduler(t, false, scheduler.WithCallTimeout(time.Hour))
	// The context ends once the transaction runs (its handler blocks),
	// however long it waited to start.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-h.started
		cancel()
	}()
	res, err := s.Txn().Set("stall/block", &emptypb.Empty{}).Commit(ctx)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "transaction #1") || res.Seq != 1 {
		t.Fatalf("Commit = %v (seq %d), want the context's end naming transaction #1", err, res.Seq)
	}
	h.release <- struct{}{}
	waitFor(t, func() bool { _, ok := s.Record(1); return ok })
	if st := s.Status("stall/block"); st.State != scheduler.CONFIGURED {
		t.Errorf("stall/block is %v: the transaction should have completed", st.State)
	}
}

func TestCloseGivesUpOnCallInFlight(t *testing.T) {
	t.Parallel()
	s, h := stallScheduler(t, false, scheduler.WithCallTimeout(time.Hour))
	first := s.Txn().Set("stall/block", &emptypb.Empty{}).CommitAsync(context.Background())
	<-h.started
	queued := s.Txn().Set("stall/ok", &emptypb.Empty{}).CommitAsync(context.Background())
	// Close's context ends while the handler blocks, whatever the load.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Close(ctx)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "CREATE of stall/block by descriptor stall, running for") ||
		!strings.Contains(err.Error(), "1 queued jobs rejected") {
		t.Fatalf("Close = %v, want the call in flight named", err)
	}
	if r := <-queued; !errors.Is(r.Err, scheduler.ErrClosed) {
		t.Errorf("queued: %v, want ErrClosed", r.Err)
	}
	if r := <-first; !errors.Is(r.Err, scheduler.ErrClosed) {
		t.Errorf("running: %v, want its call given up on (ErrClosed)", r.Err)
	}
	if _, err := s.Txn().Set("stall/x", &emptypb.Empty{}).Commit(context.Background()); !errors.Is(err, scheduler.ErrClosed) {
		t.Errorf("commit after Close: %v", err)
	}
}

type panickyObserver struct{ txns atomic.Int32 }

func (o *panickyObserver) TxnDone(*scheduler.Record) { o.txns.Add(1); panic("TxnDone") }
func (o *panickyObserver) OpDone(string, scheduler.OpKind, time.Duration, error) {
	panic("OpDone")
}

func TestObserverPanicsAreRecovered(t *testing.T) {
	t.Parallel()
	o := &panickyObserver{}
	s, _ := stallScheduler(t, false, scheduler.WithObserver(o))
	for _, key := range []string{"stall/a", "stall/b"} {
		if _, err := s.Txn().Set(key, &emptypb.Empty{}).Commit(context.Background()); err != nil {
			t.Fatalf("commit %s: %v", key, err)
		}
		if st := s.Status(key); st.State != scheduler.CONFIGURED {
			t.Errorf("%s is %v", key, st.State)
		}
	}
	if n := o.txns.Load(); n != 2 {
		t.Errorf("TxnDone called %d times, want 2", n)
	}
}

func TestWatcherSelectorPanicIsRecovered(t *testing.T) {
	t.Parallel()
	s, _ := stallScheduler(t, false)
	bad := s.Watch(func(string) bool { panic("selector") }, 4)
	defer bad.Close()
	good := s.Watch(nil, 4)
	defer good.Close()
	if _, err := s.Txn().Set("stall/a", &emptypb.Empty{}).Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := <-good.C; st.Key != "stall/a" {
		t.Errorf("good watcher got %s", st.Key)
	}
	if len(bad.C) != 0 {
		t.Errorf("the panicking selector's watcher got an update")
	}
}

func TestSetTypedNilAndWrongType(t *testing.T) {
	t.Parallel()
	s, h := stallScheduler(t, false)
	_, err := s.Txn().Set("stall/a", (*emptypb.Empty)(nil)).Commit(context.Background())
	if err == nil || !strings.Contains(err.Error(), "stall/a") || h.creates.Load() != 0 {
		t.Fatalf("typed nil: %v with %d creates, want an error naming the key and no create", err, h.creates.Load())
	}
	_, err = s.Txn().Set("stall/b", wrapperspb.String("x")).Commit(context.Background())
	ke := keyErr(t, err, "stall/b")
	if !errors.Is(ke, kv.ErrWrongType) || !strings.Contains(ke.Error(), "google.protobuf.StringValue") ||
		!strings.Contains(ke.Error(), "google.protobuf.Empty") {
		t.Errorf("wrong type in Set: %v, want ErrWrongType naming both types", ke)
	}
	if st := s.Status("stall/b"); st.State != scheduler.INVALID || h.creates.Load() != 0 {
		t.Errorf("stall/b is %v after %d creates, want INVALID and none", st.State, h.creates.Load())
	}
	for _, v := range []proto.Message{wrapperspb.String("x"), (*emptypb.Empty)(nil)} {
		_, err = s.Notify(context.Background(), scheduler.Notification{Key: "stall/c", Value: v})
		ke = keyErr(t, err, "stall/c")
		if !errors.Is(ke, kv.ErrWrongType) {
			t.Errorf("notification of %T: %v, want ErrWrongType", v, ke)
		}
	}
	if !strings.Contains(keyErr(t, func() error {
		_, err := s.Notify(context.Background(), scheduler.Notification{Key: "stall/c", Value: wrapperspb.String("x")})
		return err
	}(), "stall/c").Error(), "descriptor stall takes google.protobuf.Empty, got google.protobuf.StringValue") {
		t.Errorf("the notification's error does not name the types")
	}
	if st := s.Status("stall/c"); st.State != scheduler.NONEXISTENT {
		t.Errorf("stall/c is %v, want nothing recorded", st.State)
	}
}

func TestCommitAndWaitNamesTheFailedOperation(t *testing.T) {
	t.Parallel()
	s, _ := stallScheduler(t, false)
	_, err := s.Txn().Set("stall/fail", &emptypb.Empty{}).CommitAndWait(context.Background())
	if ke := keyErr(t, err, "stall/fail"); ke.Op != scheduler.OpCreate || !strings.Contains(ke.Error(), "stall/fail: CREATE:") {
		t.Errorf("error %v (op %v), want it to name CREATE", ke, ke.Op)
	}
}

func TestCommitReportsUnimplementedKeys(t *testing.T) {
	t.Parallel()
	s, h := stallScheduler(t, false)
	_, err := s.Txn().Set("nobody/x", &emptypb.Empty{}).Set("stall/a", &emptypb.Empty{}).Commit(context.Background())
	if ke := keyErr(t, err, "nobody/x"); !errors.Is(ke, scheduler.ErrUnimplemented) {
		t.Errorf("error %v, want ErrUnimplemented", ke)
	}
	if st := s.Status("nobody/x"); st.State != scheduler.UNIMPLEMENTED {
		t.Errorf("nobody/x is %v, want it kept UNIMPLEMENTED", st.State)
	}
	if h.creates.Load() != 1 {
		t.Errorf("%d creates, want the handled key created", h.creates.Load())
	}
}

// TestCommitAndWaitContextEndsWhileRunning: when the context ends while
// the transaction runs, CommitAndWait returns the context's error, not
// outcomes read before the transaction ended.
func TestCommitAndWaitContextEndsWhileRunning(t *testing.T) {
	t.Parallel()
	s, h := stallScheduler(t, false, scheduler.WithCallTimeout(time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-h.started
		cancel()
	}()
	res, err := s.Txn().Set("stall/block", &emptypb.Empty{}).CommitAndWait(ctx)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "transaction #1") {
		t.Fatalf("CommitAndWait = %v (outcomes %+v), want the context's end naming transaction #1", err, res.Outcomes)
	}
	h.release <- struct{}{}
	waitFor(t, func() bool { _, ok := s.Record(1); return ok })
}
