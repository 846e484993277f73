package nb_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/boltstore"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// remoteEnv is an agent's northbound in a test: a scheduler over the
// in-memory southbound, a Mux over a bbolt store with a file source (of
// higher priority) and the remote source.
type remoteEnv struct {
	sb     *kvtest.SB
	s      *scheduler.Scheduler
	mux    *nb.Mux
	file   nb.Sink
	store  *boltstore.Store
	remote *nb.Remote
	stop   func()
}

func newRemoteEnv(t testing.TB, sb *kvtest.SB, dir string, before func(*boltstore.Store)) *remoteEnv {
	t.Helper()
	return newRemoteEnvAfter(t, sb, dir, before, 0)
}

// newRemoteEnvAfter is newRemoteEnv whose scheduler numbers its
// transactions after seqAfter (a restarted agent's).
func newRemoteEnvAfter(t testing.TB, sb *kvtest.SB, dir string, before func(*boltstore.Store), seqAfter uint64) *remoteEnv {
	t.Helper()
	e := &remoteEnv{sb: sb}
	var err error
	if e.s, err = scheduler.New(scheduler.WithLogger(quiet), scheduler.WithSeqAfter(seqAfter)); err != nil {
		t.Fatal(err)
	}
	d, err := sb.Descriptor(kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.s.Register(d); err != nil {
		t.Fatal(err)
	}
	if e.store, err = boltstore.Open(filepath.Join(dir, "state.db")); err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(e.store)
	}
	e.mux = nb.NewMux(e.s, nb.WithMuxLogger(quiet), nb.WithLoadDeadline(0), nb.WithStore(e.store), nb.WithPriorityOrder("file", "api"), nb.WithSources("api"))
	e.file = e.mux.Sink("file")
	if err := e.file.Apply(context.Background(), nb.Update{Resync: true}); err != nil {
		t.Fatal(err)
	}
	if e.remote, err = nb.NewRemote(e.mux, nb.SchedulerModels(e.s), nb.RemoteConfig{Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	stopped := false
	e.stop = func() {
		if stopped {
			return
		}
		stopped = true
		e.remote.Close()
		e.mux.Close()
		_ = e.s.Close(context.Background())
		e.store.Close()
	}
	t.Cleanup(e.stop)
	return e
}

func sets(kvs ...string) nb.Update {
	var u nb.Update
	for i := 0; i < len(kvs); i += 2 {
		c := nb.Change{Key: kvs[i]}
		if kvs[i+1] != "" {
			c.Value = kvtest.Value(kvs[i+1])
		}
		u.Changes = append(u.Changes, c)
	}
	return u
}

func (e *remoteEnv) commit(t *testing.T, u nb.Update, within time.Duration) (*scheduler.Result, time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, deadline, err := e.remote.Commit(ctx, u, within)
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return res, deadline
}

func (e *remoteEnv) want(t *testing.T, key, text string) {
	t.Helper()
	got, ok := e.sb.Get(key)
	if text == "" && ok {
		t.Fatalf("%s = %q in the southbound, want none", key, got)
	}
	if text != "" && got != text {
		t.Fatalf("%s = %q (present %v) in the southbound, want %q", key, got, ok, text)
	}
}

func TestRemoteConfirmedCommit(t *testing.T) {
	e := newRemoteEnv(t, kvtest.NewSB(), t.TempDir(), nil)
	e.commit(t, sets("iface/a", "a1"), 0)

	// Confirmed in time (an hour's window: a loaded machine must not
	// make the confirm miss it): it stays.
	res, deadline := e.commit(t, sets("iface/a", "a2", "iface/b", "b"), time.Hour)
	if deadline.IsZero() || res.Seq == 0 {
		t.Fatalf("no deadline: %v %v", res, deadline)
	}
	if seq, _, ok := e.remote.Pending(); !ok || seq != res.Seq {
		t.Fatalf("pending %d %v, want %d", seq, ok, res.Seq)
	}
	// Another commit waits for the confirmation.
	if _, _, err := e.remote.Commit(context.Background(), sets("iface/c", "c"), 0); !errors.Is(err, nb.ErrAwaitingConfirmation) {
		t.Fatalf("commit while one awaits confirmation: %v", err)
	}
	if err := e.remote.Confirm(res.Seq); err != nil {
		t.Fatal(err)
	}
	e.commit(t, sets("iface/x", "x"), 0)
	e.want(t, "iface/a", "a2")
	e.want(t, "iface/b", "b")

	// Not confirmed: rolled back, in a transaction that says so.
	res, _ = e.commit(t, nb.Update{Changes: []nb.Change{{Key: "iface/a", Value: kvtest.Value("a3")}, {Key: "iface/b"}}}, 200*time.Millisecond)
	// The rollback's record says why (waited for: the southbound
	// changes during the transaction, its record comes at its end).
	want := fmt.Sprintf("rollback of commit %d: not confirmed within 200ms", res.Seq)
	waitFor(t, func() bool {
		h := e.s.History()
		return strings.Contains(h[len(h)-1].Description, want)
	})
	e.want(t, "iface/a", "a2")
	e.want(t, "iface/b", "b")
	if err := e.remote.Confirm(res.Seq); !errors.Is(err, nb.ErrNotAwaiting) || !strings.HasPrefix(err.Error(), "seq:") {
		t.Fatalf("confirm after the rollback: %v", err)
	}

	// Cancelled: rolled back at once.
	res, _ = e.commit(t, sets("iface/d", "d"), time.Hour)
	e.want(t, "iface/d", "d")
	c, err := e.remote.Cancel(context.Background(), res.Seq)
	if err != nil || c.Seq <= res.Seq {
		t.Fatalf("cancel: %v %v", c, err)
	}
	e.want(t, "iface/d", "")
}

// The state of the remote source and its pending confirmation live in the
// Mux's store: a restart rolls the commit back and keeps the rest.
func TestRemoteConfirmedCommitAcrossRestart(t *testing.T) {
	sb, dir := kvtest.NewSB(), t.TempDir()
	e := newRemoteEnv(t, sb, dir, nil)
	e.commit(t, sets("iface/a", "a1"), 0)
	res, _ := e.commit(t, sets("iface/a", "a2", "iface/b", "b"), time.Hour)
	e.want(t, "iface/b", "b")
	e.stop()

	e = newRemoteEnv(t, sb, dir, nil)
	e.want(t, "iface/a", "a1")
	e.want(t, "iface/b", "")
	h := e.s.History()
	if want := fmt.Sprintf("source api: rollback of commit %d, which awaited confirmation when the agent stopped", res.Seq); len(h) == 0 || !strings.Contains(h[0].Description, want) {
		t.Fatalf("startup %+v, want it to say %q", h, want)
	}
	if _, _, ok := e.remote.Pending(); ok {
		t.Fatal("a commit still awaits confirmation after the restart")
	}
	e.commit(t, sets("iface/c", "c"), 0)
	e.want(t, "iface/a", "a1")
	e.want(t, "iface/c", "c")
}

// A record written ahead of a confirmed commit that never finished (no
// seq: the agent died during it) makes the next start roll it back.
func TestRemoteInFlightConfirmedCommitRolledBack(t *testing.T) {
	sb, dir := kvtest.NewSB(), t.TempDir()
	rec := `{"current":[{"key":"iface/a","type":"google.protobuf.StringValue","data":"CgJhMg=="},{"key":"iface/b","type":"google.protobuf.StringValue","data":"CgFi"}],` +
		`"pending":{"seq":0,"deadline":"2030-01-01T00:00:00Z","previous":[{"key":"iface/a","type":"google.protobuf.StringValue","data":"CgJhMQ=="}]}}`
	e := newRemoteEnv(t, sb, dir, func(s *boltstore.Store) {
		if err := s.SaveSource("api", []byte(rec)); err != nil {
			t.Fatal(err)
		}
	})
	if got := sb.Values(); len(got) != 1 || got["iface/a"] != "a1" {
		t.Fatalf("southbound %v, want iface/a = a1 only", got)
	}
	h := e.s.History()
	if len(h) == 0 || !strings.Contains(h[0].Description, "rollback of a confirmed commit that was in flight when the agent stopped") {
		t.Fatalf("history %+v", h)
	}
	ents := entries(t, e.store)
	if ents["h"] == "" || strings.Contains(ents["h"], "pending") || ents["c\x00iface/b"] != "" || ents["c\x00iface/a"] == "" {
		t.Fatalf("the entries after the start: %q", ents)
	}
	if b, err := e.store.LoadSource("api"); b != nil || err != nil {
		t.Fatalf("the record of before stayed: %s %v", b, err)
	}
}

// A confirmed commit that would make no transaction is refused, and
// changes nothing, the record included.
func TestRemoteNothingToConfirm(t *testing.T) {
	e := newRemoteEnv(t, kvtest.NewSB(), t.TempDir(), nil)
	if err := e.file.Apply(context.Background(), sets("iface/f", "from-file")); err != nil {
		t.Fatal(err)
	}
	e.commit(t, sets("iface/a", "a1"), 0)
	before := entries(t, e.store)
	n := len(e.s.History())
	for name, u := range map[string]nb.Update{
		"same value":        sets("iface/a", "a1"),
		"overridden":        sets("iface/f", "from-api"),
		"delete of nothing": {Changes: []nb.Change{{Key: "iface/none"}}},
	} {
		_, _, err := e.remote.Commit(context.Background(), u, time.Hour)
		if !errors.Is(err, nb.ErrNothingToConfirm) || !strings.HasPrefix(err.Error(), "confirm_within: ") {
			t.Errorf("%s: %v, want ErrNothingToConfirm naming confirm_within", name, err)
		}
	}
	if after := entries(t, e.store); !maps.Equal(after, before) {
		t.Errorf("the entries changed:\n%q\nwere\n%q", after, before)
	}
	if len(e.s.History()) != n {
		t.Errorf("the refused commits made transactions: %+v", e.s.History()[n:])
	}
	if _, overridden := e.mux.Owner("iface/f"); overridden != nil {
		t.Errorf("iface/f: the remote source's value stayed (overridden %v)", overridden)
	}
}

func TestRemoteRollbackTo(t *testing.T) {
	e := newRemoteEnv(t, kvtest.NewSB(), t.TempDir(), nil)
	r1, _ := e.commit(t, sets("iface/a", "a1"), 0)
	e.commit(t, sets("iface/a", "a2", "iface/b", "b"), 0)
	// A transaction of another source in between is not undone.
	if err := e.file.Apply(context.Background(), sets("iface/f", "f")); err != nil {
		t.Fatal(err)
	}
	res, keys, err := e.remote.RollbackTo(context.Background(), r1.Seq, "back")
	if err != nil || res == nil || len(keys) != 1 {
		t.Fatalf("rollback: %v %v %v", res, keys, err)
	}
	e.want(t, "iface/a", "a1")
	e.want(t, "iface/b", "")
	e.want(t, "iface/f", "f")
	if _, _, err := e.remote.RollbackTo(context.Background(), 1000, ""); !errors.Is(err, nb.ErrUnknownTransaction) || !strings.HasPrefix(err.Error(), "seq:") {
		t.Fatalf("rollback to a transaction not run: %v", err)
	}
	// Back to before the source's first transaction: nothing.
	if _, _, err := e.remote.RollbackTo(context.Background(), r1.Seq-1, ""); err != nil {
		t.Fatal(err)
	}
	e.want(t, "iface/a", "")
}

// TestRemoteRollbackToAcrossRestart: the states RollbackTo returns to are
// kept in the store: after a restart (the scheduler's numbers going on),
// a rollback to a transaction of the run before restores the source's
// state after it; a state older than those kept is refused, naming seq.
func TestRemoteRollbackToAcrossRestart(t *testing.T) {
	sb, dir := kvtest.NewSB(), t.TempDir()
	e := newRemoteEnv(t, sb, dir, nil)
	r1, _ := e.commit(t, sets("iface/a", "a1", "iface/b", "b1"), 0)
	r2, _ := e.commit(t, sets("iface/a", "a2", "iface/b", ""), 0)
	r3, _ := e.commit(t, sets("iface/c", "c3"), 0)
	e.stop()

	e = newRemoteEnvAfter(t, sb, dir, nil, r3.Seq)
	e.want(t, "iface/a", "a2")
	e.want(t, "iface/c", "c3")
	ctx := context.Background()
	if _, keys, err := e.remote.RollbackTo(ctx, r1.Seq, "back to r1"); err != nil || len(keys) != 2 {
		t.Fatalf("rollback to %d after the restart: %v %v", r1.Seq, keys, err)
	}
	e.want(t, "iface/a", "a1")
	e.want(t, "iface/b", "b1")
	e.want(t, "iface/c", "")
	if _, _, err := e.remote.RollbackTo(ctx, r2.Seq, "back to r2"); err != nil {
		t.Fatal(err)
	}
	e.want(t, "iface/a", "a2")
	e.want(t, "iface/b", "")
	e.want(t, "iface/c", "")
	last := e.s.History()
	e.stop()

	// Kept: 2 states; the oldest ones are dropped, in the record too.
	e = newRemoteEnvAfter(t, sb, dir, nil, last[len(last)-1].Seq)
	e.remote.Close()
	r, err := nb.NewRemote(e.mux, nb.SchedulerModels(e.s), nb.RemoteConfig{Logger: quiet, StatesKept: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, _, err := r.RollbackTo(ctx, r1.Seq, ""); !errors.Is(err, nb.ErrUnknownTransaction) || !strings.HasPrefix(err.Error(), "seq:") {
		t.Fatalf("rollback beyond the states kept: %v", err)
	}
}

// TestImportRemoteState: a state imported into the store before the
// Remote starts is its state (applied by its initial load, owned by it);
// an import over a recorded state is refused and changes nothing.
func TestImportRemoteState(t *testing.T) {
	dir := t.TempDir()
	sb := kvtest.NewSB()
	e := newRemoteEnv(t, sb, dir, func(st *boltstore.Store) {
		if err := nb.ImportRemoteState(st, "", map[string]proto.Message{"iface/a": kvtest.Value("imported")}); err != nil {
			t.Fatal(err)
		}
	})
	e.want(t, "iface/a", "imported")
	if owner, _ := e.mux.Owner("iface/a"); owner != "api" {
		t.Errorf("iface/a owned by %q, want api", owner)
	}
	e.commit(t, sets("iface/b", "b"), 0)
	e.stop()

	e = newRemoteEnv(t, sb, dir, func(st *boltstore.Store) {
		err := nb.ImportRemoteState(st, "api", map[string]proto.Message{"iface/a": kvtest.Value("again")})
		if err == nil || !strings.Contains(err.Error(), "recorded state already") {
			t.Errorf("an import over a recorded state: %v", err)
		}
	})
	e.want(t, "iface/a", "imported")
	e.want(t, "iface/b", "b")
}

// entries returns the entries of the api source in st.
func entries(t testing.TB, st *boltstore.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	if err := st.ReadSourceEntries("api", func(k, v []byte) error {
		out[string(k)] = string(v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
