package scheduler_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newScheduler returns a scheduler closed when the test ends.
func newScheduler(t *testing.T, opts ...scheduler.Option) *scheduler.Scheduler {
	t.Helper()
	s, err := scheduler.New(append([]scheduler.Option{scheduler.WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return s
}

func harness(t *testing.T, sb *kvtest.SB, c kvtest.Config) *kv.TypedDescriptor[string, *wrapperspb.StringValue, kvtest.Meta] {
	t.Helper()
	d, err := sb.Descriptor(c)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRegisterErrors(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	tests := []struct {
		name     string
		existing []kvtest.Config
		add      []kvtest.Config
		want     string // substring of the error; "" for success
	}{
		{
			name:     "duplicate name",
			existing: []kvtest.Config{{Name: "iface", KeyTemplate: "iface/{name}"}},
			add:      []kvtest.Config{{Name: "iface", KeyTemplate: "other/{name}"}},
			want:     "register iface: a descriptor with this name is already registered",
		},
		{
			name: "name twice in one call",
			add:  []kvtest.Config{{Name: "x", KeyPrefix: "x/"}, {Name: "x", KeyPrefix: "y/"}},
			want: "register x: the name is given twice",
		},
		{
			name:     "overlapping templates",
			existing: []kvtest.Config{{Name: "route", KeyTemplate: "route/{vrf:uint}/{dst:ipprefix}"}},
			add:      []kvtest.Config{{Name: "other", KeyTemplate: "route/{name}/{x}/{y}"}},
			want:     `overlaps the template "route/{vrf:uint}/{dst:ipprefix}" of descriptor route: both match "route/0/a/0"`,
		},
		{
			name:     "nested prefixes without templates",
			existing: []kvtest.Config{{Name: "bd", KeyPrefix: "bd/"}},
			add:      []kvtest.Config{{Name: "bdif", KeyPrefix: "bd/if/"}},
			want:     "without key templates on both the key spaces cannot be told apart",
		},
		{
			name: "retrieve dependency not registered",
			add:  []kvtest.Config{{Name: "route", KeyPrefix: "route/", RetrieveDependencies: []string{"nosuch"}}},
			want: `register route: RetrieveDependencies names descriptor "nosuch", which is not registered (register it first, or in the same call)`,
		},
		{
			name:     "retrieve dependency registered before",
			existing: []kvtest.Config{{Name: "iface", KeyPrefix: "iface/"}},
			add:      []kvtest.Config{{Name: "route", KeyPrefix: "route/", RetrieveDependencies: []string{"iface"}}},
		},
		{
			name: "retrieve dependency registered with it",
			add:  []kvtest.Config{{Name: "route", KeyPrefix: "route/", RetrieveDependencies: []string{"iface"}}, {Name: "iface", KeyPrefix: "iface/"}},
		},
		{
			name:     "nested templates that cannot overlap",
			existing: []kvtest.Config{{Name: "bd", KeyTemplate: "vpp/bd/{name}"}},
			add:      []kvtest.Config{{Name: "bdif", KeyTemplate: "vpp/bd/{name}/interface/{iface}"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newScheduler(t)
			for _, c := range tc.existing {
				if err := s.Register(harness(t, sb, c)); err != nil {
					t.Fatal(err)
				}
			}
			var ds []kv.Descriptor
			for _, c := range tc.add {
				ds = append(ds, harness(t, sb, c))
			}
			before := s.Descriptors()
			err := s.Register(ds...)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Register: %v", err)
				}
				return
			}
			var re *scheduler.RegistrationError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Register error = %v, want a RegistrationError containing %q", err, tc.want)
			}
			if diff := cmp.Diff(before, s.Descriptors()); diff != "" {
				t.Errorf("a failed Register changed the descriptors (-before +after):\n%s", diff)
			}
		})
	}
	t.Run("nil descriptor", func(t *testing.T) {
		t.Parallel()
		if err := newScheduler(t).Register(nil); err == nil {
			t.Fatal("Register(nil) succeeded")
		}
	})
}

func TestKeysMapToTheirDescriptor(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := newScheduler(t)
	if err := s.Register(
		harness(t, sb, kvtest.Config{Name: "bd", KeyTemplate: "vpp/bd/{name}"}),
		harness(t, sb, kvtest.Config{Name: "bdif", KeyTemplate: "vpp/bd/{name}/interface/{iface}"}),
		harness(t, sb, kvtest.Config{Name: "route", KeyTemplate: "vpp/route/vrf/{vrf:uint}/dst/{dst:ipprefix}/gw/{gw:ip}"}),
	); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"vpp/bd/b1":                "bd",
		"vpp/bd/b%2F1":             "bd",
		"vpp/bd/b1/interface/eth0": "bdif",
		"vpp/route/vrf/0/dst/10.0.0.0/24/gw/10.0.0.1": "route",
		"vpp/route/vrf/x/dst/10.0.0.0/24/gw/10.0.0.1": "",
		"vpp/bd/":   "",
		"vpp/other": "",
	} {
		d, ok := s.DescriptorForKey(key)
		got := ""
		if ok {
			got = d.Name()
		}
		if got != want {
			t.Errorf("DescriptorForKey(%q) = %q, want %q", key, got, want)
		}
	}
}

// blockingHandler blocks Create until released, to hold the worker.
type blockingHandler struct {
	started chan string
	release chan struct{}
}

func (h *blockingHandler) Create(_ context.Context, key string, _ *emptypb.Empty) (struct{}, error) {
	h.started <- key
	<-h.release
	return struct{}{}, nil
}

func (h *blockingHandler) Delete(context.Context, string, *emptypb.Empty, struct{}) error { return nil }

func blocking(t *testing.T) (kv.Descriptor, *blockingHandler) {
	h := &blockingHandler{started: make(chan string, 16), release: make(chan struct{})}
	d, err := kv.NewDescriptor(kv.Spec[string, *emptypb.Empty, struct{}]{Name: "block", KeyPrefix: "block/"}, h)
	if err != nil {
		t.Fatal(err)
	}
	return d, h
}

func TestCloseDrainsOrRejects(t *testing.T) {
	t.Parallel()
	t.Run("drains queued work", func(t *testing.T) {
		t.Parallel()
		s, err := scheduler.New(scheduler.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		d, h := blocking(t)
		if err := s.Register(d); err != nil {
			t.Fatal(err)
		}
		first := s.Txn().Set("block/1", &emptypb.Empty{}).CommitAsync(context.Background())
		<-h.started
		second := s.Txn().Set("block/2", &emptypb.Empty{}).CommitAsync(context.Background())
		closed := make(chan error, 1)
		go func() { closed <- s.Close(context.Background()) }()
		// Close has begun: new work is refused at once.
		canceled, cancel := context.WithCancel(context.Background())
		cancel() // the probe must not wait in the queue behind the blocked worker
		waitFor(t, func() bool {
			_, err := s.Txn().Set("block/3", &emptypb.Empty{}).Commit(canceled)
			return errors.Is(err, scheduler.ErrClosed)
		})
		close(h.release)
		if err := <-closed; err != nil {
			t.Fatalf("Close: %v", err)
		}
		for i, ch := range []<-chan *scheduler.Result{first, second} {
			if r := <-ch; r.Err != nil {
				t.Errorf("queued transaction %d: %v, want it drained and applied", i+1, r.Err)
			}
		}
	})
	t.Run("rejects what is queued when ctx ends", func(t *testing.T) {
		t.Parallel()
		s, err := scheduler.New(scheduler.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		d, h := blocking(t)
		if err := s.Register(d); err != nil {
			t.Fatal(err)
		}
		first := s.Txn().Set("block/1", &emptypb.Empty{}).CommitAsync(context.Background())
		<-h.started
		second := s.Txn().Set("block/2", &emptypb.Empty{}).CommitAsync(context.Background())
		// The handler stays blocked until Close has returned, and Close's
		// context has ended already: it ends while the first transaction
		// runs and the second waits, whatever the load.
		defer close(h.release)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err = s.Close(ctx)
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "1 queued jobs rejected") ||
			!strings.Contains(err.Error(), "CREATE of block/1 by descriptor block, running for") {
			t.Fatalf("Close = %v, want 1 rejected job, the call in flight and the context's end", err)
		}
		if r := <-second; !errors.Is(r.Err, scheduler.ErrClosed) {
			t.Errorf("queued transaction: %v, want ErrClosed", r.Err)
		}
		// The call in flight was given up on: the transaction ends with it
		// failed, and makes no further call.
		if r := <-first; !errors.Is(r.Err, scheduler.ErrClosed) || r.Seq != 1 {
			t.Errorf("running transaction: %v, want transaction #1 with its call given up on (ErrClosed)", r.Err)
		}
	})
}

func TestCommitContextEndsWhileQueued(t *testing.T) {
	t.Parallel()
	s := newScheduler(t)
	d, h := blocking(t)
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	running := s.Txn().Set("block/1", &emptypb.Empty{}).CommitAsync(context.Background())
	<-h.started
	ctx, cancel := context.WithCancel(context.Background())
	queued := s.Txn().Set("block/2", &emptypb.Empty{}).CommitAsync(ctx)
	cancel()
	close(h.release)
	<-running
	if r := <-queued; !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("queued transaction whose context ended: %v, want context.Canceled", r.Err)
	}
	if st := s.Status("block/2"); st.State != scheduler.NONEXISTENT {
		t.Errorf("block/2 is %s, want NONEXISTENT: a dropped transaction changes nothing", st.State)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWatch(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := newScheduler(t)
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"}),
		harness(t, sb, kvtest.Config{Name: "route", KeyTemplate: "route/{name}"})); err != nil {
		t.Fatal(err)
	}
	w := s.Watch(scheduler.KeyPrefix("route/"), 16)
	defer w.Close()
	ctx := context.Background()
	if _, err := s.Txn().Set("route/r1", kvtest.Value("dep:iface/eth0")).Set("iface/eth0", kvtest.Value("up")).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn().Delete("route/r1").Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 2 {
		st := <-w.C
		got = append(got, st.Key+" "+st.State.String())
	}
	if diff := cmp.Diff([]string{"route/r1 CONFIGURED", "route/r1 REMOVED"}, got); diff != "" {
		t.Errorf("watched statuses (-want +got):\n%s", diff)
	}
	select {
	case st := <-w.C:
		t.Errorf("unexpected update %s %s (iface/ keys are not watched)", st.Key, st.State)
	default:
	}
}

func TestSlowWatcherNeverBlocks(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := newScheduler(t)
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
		t.Fatal(err)
	}
	w := s.Watch(nil, 1) // never read
	defer w.Close()
	for i := range 5 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = s.Txn().Set("iface/eth0", kvtest.Value("mtu="+string(rune('0'+i)))).Commit(context.Background())
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("a full watcher blocked the scheduler")
		}
	}
	if got := w.Dropped(); got != 4 {
		t.Errorf("Dropped() = %d, want 4 (1 buffered of 5 updates)", got)
	}
}

// panicHandler panics in Create.
type panicHandler struct{}

func (panicHandler) Create(context.Context, string, *emptypb.Empty) (struct{}, error) {
	panic("boom")
}
func (panicHandler) Delete(context.Context, string, *emptypb.Empty, struct{}) error { return nil }

func TestHandlerPanicFailsTheValueNotTheScheduler(t *testing.T) {
	t.Parallel()
	s := newScheduler(t)
	d, err := kv.NewDescriptor(kv.Spec[string, *emptypb.Empty, struct{}]{Name: "panic", KeyPrefix: "panic/"}, panicHandler{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	_, err = s.Txn(scheduler.Retry(scheduler.RetryPolicy{MaxAttempts: 3, Period: time.Millisecond})).
		Set("panic/x", &emptypb.Empty{}).Commit(context.Background())
	if err == nil || !strings.Contains(err.Error(), "handler of panic panicked: boom") {
		t.Fatalf("Commit = %v, want the panic as the error", err)
	}
	if st := s.Status("panic/x"); st.State != scheduler.FAILED {
		t.Errorf("state %s, want FAILED (a panic is not retriable)", st.State)
	}
}

func TestWrongValueTypeIsInvalid(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := newScheduler(t)
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
		t.Fatal(err)
	}
	_, err := s.Txn().Set("iface/eth0", &emptypb.Empty{}).Commit(context.Background())
	var te *scheduler.TxnError
	if !errors.As(err, &te) || len(te.Errors) != 1 || te.Errors[0].Key != "iface/eth0" || !errors.Is(err, kv.ErrWrongType) {
		t.Fatalf("Commit = %v, want a TxnError naming iface/eth0 with the wrong type", err)
	}
	st := s.Status("iface/eth0")
	if st.State != scheduler.INVALID || !errors.Is(st.LastErr, kv.ErrInvalidValue) || !errors.Is(st.LastErr, kv.ErrWrongType) {
		t.Fatalf("status %s %v, want INVALID with an invalid-value error", st.State, st.LastErr)
	}
	if !strings.Contains(st.LastErr.Error(), "google.protobuf.Empty") || !strings.Contains(st.LastErr.Error(), "google.protobuf.StringValue") {
		t.Errorf("error %q should name the given and the expected type", st.LastErr)
	}
	if len(sb.Calls()) != 0 {
		t.Errorf("calls %v, want none for an invalid value", sb.Calls())
	}
}

// ifMeta is metadata with a secondary index.
type ifMeta struct {
	Index int
	VRF   string
}

type metaHandler struct {
	mu   sync.Mutex
	next int
}

func (h *metaHandler) Create(_ context.Context, _ string, v *wrapperspb.StringValue) (ifMeta, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next++
	return ifMeta{Index: h.next, VRF: v.GetValue()}, nil
}

func (h *metaHandler) Update(_ context.Context, _ string, _, v *wrapperspb.StringValue, old ifMeta) (ifMeta, error) {
	return ifMeta{Index: old.Index, VRF: v.GetValue()}, nil
}

func (h *metaHandler) Delete(context.Context, string, *wrapperspb.StringValue, ifMeta) error {
	return nil
}

func TestMetadataMapKeptInSync(t *testing.T) {
	t.Parallel()
	s := newScheduler(t)
	d, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, ifMeta]{
		Name: "iface", KeyTemplate: "iface/{name}", WithMetadata: true,
		MetadataIndexes: map[string]func(ifMeta) []string{"vrf": func(m ifMeta) []string { return []string{m.VRF} }},
	}, &metaHandler{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	commit := func(txn *scheduler.Txn) {
		t.Helper()
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	commit(s.Txn().Set("iface/a", wrapperspb.String("red")).Set("iface/b", wrapperspb.String("red")).Set("iface/c", wrapperspb.String("blue")))
	md := d.Metadata()
	if m, ok := md.Get("b"); !ok || m.Index != 2 {
		t.Errorf("metadata of b = %+v, %v; want index 2", m, ok)
	}
	if diff := cmp.Diff([]string{"a", "b"}, md.Lookup("vrf", "red")); diff != "" {
		t.Errorf("Lookup(vrf, red) (-want +got):\n%s", diff)
	}
	commit(s.Txn().Set("iface/b", wrapperspb.String("blue")).Delete("iface/a"))
	if diff := cmp.Diff([]string{"b", "c"}, md.Lookup("vrf", "blue")); diff != "" {
		t.Errorf("after update and delete, Lookup(vrf, blue) (-want +got):\n%s", diff)
	}
	if got := md.Lookup("vrf", "red"); len(got) != 0 {
		t.Errorf("Lookup(vrf, red) = %v, want none", got)
	}
	if m, _ := md.Get("b"); m.Index != 2 {
		t.Errorf("Update kept index %d, want 2 (the old metadata reaches Update)", m.Index)
	}
	if st := s.Status("iface/b"); st.Metadata.(ifMeta).VRF != "blue" {
		t.Errorf("Status.Metadata = %+v", st.Metadata)
	}
}

// TestTransactionLogUnquoted: under slog's TextHandler (what a program gets
// from slog's defaults), the record of a transaction executed as planned,
// one per transaction, has no text the handler must quote.
func TestTransactionLogUnquoted(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	s := newScheduler(t, scheduler.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	if err := s.Register(harness(t, kvtest.NewSB(), kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn().Set("iface/eth0", kvtest.Value("up")).Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, " level=INFO msg=executed-as-planned seq=1 operations=1 took=") || strings.Contains(last, `"`) {
		t.Errorf("the record after execution is %q, want msg=executed-as-planned unquoted", last)
	}
}

func TestTransactionLog(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		var buf bytes.Buffer
		sb := kvtest.NewSB()
		s := newScheduler(t, scheduler.WithLogger(slog.New(scheduler.NewLogHandler(&buf, slog.LevelInfo))), scheduler.WithTxnLog(on))
		if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Txn(scheduler.Description("first")).Set("iface/eth0", kvtest.Value("up")).Set("iface/eth1", kvtest.Value("dep:iface/eth9")).Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := buf.String()
		if !on {
			if got != "" {
				t.Errorf("log with WithTxnLog(false):\n%s", got)
			}
			continue
		}
		for _, want := range []string{
			"INFO plan #1 (NB transaction: first): seq=1\n  1. CREATE iface/eth0\n  2. NONE iface/eth1 [IS-PENDING]\n",
			"INFO executed-as-planned seq=1 operations=2 took=",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("log lacks %q:\n%s", want, got)
			}
		}
	}
}

func TestTxnBuilderErrors(t *testing.T) {
	t.Parallel()
	s := newScheduler(t)
	if _, err := s.Txn().Set("", kvtest.Value("x")).Commit(context.Background()); err == nil || !strings.Contains(err.Error(), "empty key") {
		t.Errorf("Set with an empty key: %v", err)
	}
	if _, err := s.Notify(context.Background(), scheduler.Notification{}); err == nil {
		t.Error("a notification with an empty key succeeded")
	}
}

func TestNotifyOurOwnValue(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := newScheduler(t)
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Txn().Set("iface/eth0", kvtest.Value("mtu=1500")).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Someone changes it behind our back and the SB tells us: we restore it.
	sb.Put("iface/eth0", "mtu=9000")
	if _, err := s.Notify(ctx, scheduler.Notification{Key: "iface/eth0", Value: kvtest.Value("mtu=9000")}); err != nil {
		t.Fatal(err)
	}
	if v, _ := sb.Get("iface/eth0"); v != "mtu=1500" {
		t.Errorf("SB holds %q, want the intended mtu=1500 restored", v)
	}
	// It vanishes: we create it again.
	sb.Remove("iface/eth0")
	if _, err := s.Notify(ctx, scheduler.Notification{Key: "iface/eth0"}); err != nil {
		t.Fatal(err)
	}
	if v, ok := sb.Get("iface/eth0"); !ok || v != "mtu=1500" {
		t.Errorf("SB holds %q, %v; want it re-created", v, ok)
	}
	if st := s.Status("iface/eth0"); st.State != scheduler.CONFIGURED || st.Origin != kv.OriginNB {
		t.Errorf("status %s %s, want CONFIGURED FROM_NB", st.State, st.Origin)
	}
}

func TestDryRunTakesNoNumber(t *testing.T) {
	t.Parallel()
	sb := kvtest.NewSB()
	s := newScheduler(t)
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dry, err := s.Txn(scheduler.DryRun()).Set("iface/eth0", kvtest.Value("up")).Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	real, err := s.Txn().Set("iface/eth0", kvtest.Value("up")).Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if dry.Seq != 0 || !dry.DryRun || len(dry.Planned) != 1 || len(dry.Executed) != 0 {
		t.Errorf("dry run: seq %d, dry %v, %d planned, %d executed; want 0, true, 1, 0", dry.Seq, dry.DryRun, len(dry.Planned), len(dry.Executed))
	}
	if real.Seq != 1 {
		t.Errorf("first executed transaction has seq %d, want 1", real.Seq)
	}
}

// recreateHandler records the metadata its Delete receives.
type recreateHandler struct {
	next    int
	deletes []int
}

func (h *recreateHandler) Create(context.Context, string, *wrapperspb.StringValue) (int, error) {
	h.next++
	return h.next, nil
}

func (h *recreateHandler) Delete(_ context.Context, _ string, _ *wrapperspb.StringValue, m int) error {
	h.deletes = append(h.deletes, m)
	return nil
}

func TestDeleteGetsTheCurrentMetadata(t *testing.T) {
	t.Parallel()
	s := newScheduler(t)
	h := &recreateHandler{}
	d, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, int]{Name: "r", KeyPrefix: "r/", WithMetadata: true}, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, v := range []string{"a", "b", "c"} { // no Update: each change re-creates
		if _, err := s.Txn().Set("r/x", wrapperspb.String(v)).Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Txn().Delete("r/x").Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1, 2, 3}, h.deletes); diff != "" {
		t.Errorf("metadata given to Delete (-want +got):\n%s", diff)
	}
	if got := d.Metadata().Len(); got != 0 {
		t.Errorf("metadata map holds %d entries after the delete", got)
	}
}

func TestTransactionLogCapsLongLists(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	sb := kvtest.NewSB()
	s := newScheduler(t, scheduler.WithLogger(slog.New(scheduler.NewLogHandler(&buf, slog.LevelInfo))))
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
		t.Fatal(err)
	}
	txn := s.Txn()
	for i := range 1005 {
		txn.Set(fmt.Sprintf("iface/eth%04d", i), kvtest.Value("up"))
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{"1000. CREATE iface/eth0999\n  ... and 5 more (the debug level lists them all, with values)", "executed-as-planned seq=1 operations=1005 took="} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q", want)
		}
	}
	if strings.Contains(got, "iface/eth1000") {
		t.Error("the log lists operations past the cap")
	}
}
