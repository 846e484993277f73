package scheduler_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// panicky is a descriptor whose schema functions panic on values whose
// text names them ("panic:Validate", "panic:Dependencies", ...), and whose
// handler records the calls it gets.
type panicky struct {
	mu    sync.Mutex
	calls []string
}

func panicOn(fn string, v *wrapperspb.StringValue) {
	if strings.Contains(v.GetValue(), "panic:"+fn) {
		panic(fn + " exploded")
	}
}

func (p *panicky) Create(_ context.Context, key string, v *wrapperspb.StringValue) (struct{}, error) {
	p.record("create " + key + " = " + v.GetValue())
	return struct{}{}, nil
}

func (p *panicky) Update(_ context.Context, key string, _, v *wrapperspb.StringValue, _ struct{}) (struct{}, error) {
	p.record("update " + key + " = " + v.GetValue())
	return struct{}{}, nil
}

func (p *panicky) Delete(_ context.Context, key string, _ *wrapperspb.StringValue, _ struct{}) error {
	p.record("delete " + key)
	return nil
}

func (p *panicky) record(c string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, c)
}

func (p *panicky) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls
	p.calls = nil
	return c
}

func newPanicky(t *testing.T) (*scheduler.Scheduler, *panicky) {
	t.Helper()
	h := &panicky{}
	d, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, struct{}]{
		Name:        "panicky",
		KeyTemplate: "p/{name}",
		Validate: func(_ string, v *wrapperspb.StringValue) error {
			panicOn("Validate", v)
			return nil
		},
		Dependencies: func(_ string, v *wrapperspb.StringValue) []kv.Dependency {
			panicOn("Dependencies", v)
			return nil
		},
		Derived: func(_ string, v *wrapperspb.StringValue) []kv.Derived {
			panicOn("Derived", v)
			return nil
		},
		Equivalent: func(_ string, a, b *wrapperspb.StringValue) bool {
			panicOn("Equivalent", b)
			return proto.Equal(a, b)
		},
		Label: func(key string) string {
			if strings.HasSuffix(key, "/label-panics") {
				panic("Label exploded")
			}
			return strings.TrimPrefix(key, "p/")
		},
	}, h)
	if err != nil {
		t.Fatal(err)
	}
	s := newScheduler(t)
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	return s, h
}

// TestSpecPanicsAreErrorsOfTheirKey: a panic in a function of a
// descriptor's spec becomes an error of its key (a *PanicError naming the
// function), the value gets no call, and the scheduler stays usable.
func TestSpecPanicsAreErrorsOfTheirKey(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		fn    string
		setup string // applied first, when the panic needs an applied value
		value string
		state scheduler.State
	}{
		{name: "validate", fn: "Validate", value: "panic:Validate", state: scheduler.INVALID},
		{name: "dependencies", fn: "Dependencies", value: "panic:Dependencies", state: scheduler.INVALID},
		{name: "equivalent", fn: "Equivalent", setup: "v1", value: "v2 panic:Equivalent", state: scheduler.FAILED},
		{name: "derived", fn: "Derived", value: "panic:Derived", state: scheduler.CONFIGURED},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, h := newPanicky(t)
			key := "p/" + tc.name
			if tc.setup != "" {
				if _, err := s.Txn().Set(key, wrapperspb.String(tc.setup)).Commit(ctx); err != nil {
					t.Fatal(err)
				}
				h.take()
			}
			_, err := s.Txn().Set(key, wrapperspb.String(tc.value)).Commit(ctx)
			var pe *scheduler.PanicError
			if !errors.As(err, &pe) || !errors.Is(err, scheduler.ErrPanicked) {
				t.Fatalf("Commit: %v, want a *PanicError", err)
			}
			if pe.Func != tc.fn || pe.Key != key || pe.Descriptor != "panicky" {
				t.Errorf("PanicError %+v, want func %s, key %s, descriptor panicky", pe, tc.fn, key)
			}
			if !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), tc.fn) {
				t.Errorf("error %q names neither the key nor the function", err)
			}
			st := s.Status(key)
			if st.State != tc.state {
				t.Errorf("state %v, want %v (%v)", st.State, tc.state, st.LastErr)
			}
			calls := h.take()
			switch tc.state {
			case scheduler.CONFIGURED:
				// Derived panics after the create: the value is there, what
				// it derives is unknown and left as it was.
				if len(calls) != 1 || !strings.HasPrefix(calls[0], "create ") {
					t.Errorf("calls %q, want the create alone", calls)
				}
			default:
				if len(calls) != 0 {
					t.Errorf("calls %q, want none", calls)
				}
			}
			// Usable afterwards: a good value of the same key goes through.
			if _, err := s.Txn().Set(key, wrapperspb.String("good")).Commit(ctx); err != nil {
				t.Fatalf("a good value after the panic: %v", err)
			}
			if st := s.Status(key); st.State != scheduler.CONFIGURED {
				t.Errorf("after a good value: state %v, want CONFIGURED (%v)", st.State, st.LastErr)
			}
		})
	}
}

// TestLabelPanicOnRead: a Label that panics while a reader builds a status
// gives the key as label; reads and commits go on.
func TestLabelPanicOnRead(t *testing.T) {
	ctx := context.Background()
	s, _ := newPanicky(t)
	key := "p/label-panics"
	if _, err := s.Txn().Set(key, wrapperspb.String("x")).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if st := s.Status(key); st.State != scheduler.CONFIGURED {
		t.Errorf("state %v, want CONFIGURED", st.State)
	}
	if got := s.Statuses("p/"); len(got) != 1 {
		t.Errorf("Statuses: %d, want 1", len(got))
	}
	if _, err := s.Txn().Delete(key).Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestInvalidDerivedValue: a derived value that fails validation is an
// error of the commit, like an invalid value set directly, and its error
// survives in a graph snapshot rebuilt from the history.
func TestInvalidDerivedValue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := harnessScheduler(t, "iface", "addr")
	res, err := s.Txn().Set("iface/e0", kvtest.Value("derive:addr/e0[invalid:mask]")).Commit(ctx)
	var txnErr *scheduler.TxnError
	if !errors.As(err, &txnErr) || len(txnErr.Errors) != 1 || txnErr.Errors[0].Key != "addr/e0" ||
		!strings.Contains(err.Error(), "mask") {
		t.Fatalf("Commit: %v, want an error of addr/e0 naming the field mask", err)
	}
	// Another transaction, so that the snapshot is rebuilt from the history.
	if _, err := s.Txn().Set("iface/e1", kvtest.Value("up")).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	snap, err := s.GraphSnapshot(res.Seq)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range snap.Nodes {
		if n.Key == "addr/e0" {
			if n.State != scheduler.INVALID || n.Err == nil || !strings.Contains(n.Err.Error(), "mask") {
				t.Errorf("snapshot as of #%d: addr/e0 %v, error %v; want INVALID naming mask", res.Seq, n.State, n.Err)
			}
			return
		}
	}
	t.Errorf("snapshot as of #%d has no addr/e0: %+v", res.Seq, snap.Nodes)
}

// TestLogKeysCannotForgeLines: a key with a newline (an unknown key is
// accepted as UNIMPLEMENTED) is quoted in the transaction log instead of
// starting a line of its own.
func TestLogKeysCannotForgeLines(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	s, err := scheduler.New(scheduler.WithLogger(slog.New(scheduler.NewLogHandler(&log, slog.LevelInfo))))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	_, _ = s.Txn().Set("x/a\nERROR forged", kvtest.Value("v")).Commit(context.Background())
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.HasPrefix(line, "ERROR forged") {
			t.Fatalf("a key started a log line of its own:\n%s", log.String())
		}
	}
	if !strings.Contains(log.String(), `"x/a\nERROR forged"`) {
		t.Errorf("the key is not quoted in the log:\n%s", log.String())
	}
}

// TestNotifyUnhandledKey: a notification for a key no descriptor handles
// is an error of the key, not an OBTAINED value nothing could ever touch;
// setting the key afterwards leaves it UNIMPLEMENTED, with no call.
func TestNotifyUnhandledKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newScheduler(t)
	_, err := s.Notify(ctx, scheduler.Notification{Key: "nobody/x", Value: kvtest.Value("v")})
	if !errors.Is(err, scheduler.ErrUnimplemented) {
		t.Fatalf("Notify: %v, want ErrUnimplemented", err)
	}
	if st := s.Status("nobody/x"); st.State != scheduler.NONEXISTENT {
		t.Errorf("state %v, want NONEXISTENT", st.State)
	}
	_, _ = s.Txn().Set("nobody/x", kvtest.Value("w")).Commit(ctx)
	if st := s.Status("nobody/x"); st.State != scheduler.UNIMPLEMENTED {
		t.Errorf("after Set: state %v, want UNIMPLEMENTED", st.State)
	}
	if _, err := s.Txn().Delete("nobody/x").Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
