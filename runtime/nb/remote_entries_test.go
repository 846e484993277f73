package nb_test

import (
	"context"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/boltstore"
)

// texts returns the source api's state in the Mux, as texts.
func texts(e *remoteEnv) map[string]string {
	out := map[string]string{}
	for k, v := range e.mux.Desired("api") {
		out[k] = kvtest.Text(v)
	}
	return out
}

// TestRemoteOldRecordUpgraded: an agent upgraded in place over a store
// that holds the single record of before keeps its state (values, and the
// states RollbackTo returns to); its first save writes the entries and
// removes the record, and the next start reads the entries.
func TestRemoteOldRecordUpgraded(t *testing.T) {
	sb, dir := kvtest.NewSB(), t.TempDir()
	// iface/a = a1 after transaction 1; a2 and b after 2.
	rec := `{"current":[{"key":"iface/a","type":"google.protobuf.StringValue","data":"CgJhMg=="},{"key":"iface/b","type":"google.protobuf.StringValue","data":"CgFi"}],` +
		`"states":[{"seq":1,"set":[{"key":"iface/a","type":"google.protobuf.StringValue","data":"CgJhMQ=="}]},` +
		`{"seq":2,"set":[{"key":"iface/a","type":"google.protobuf.StringValue","data":"CgJhMg=="},{"key":"iface/b","type":"google.protobuf.StringValue","data":"CgFi"}]}],"floor":1}`
	e := newRemoteEnvAfter(t, sb, dir, func(s *boltstore.Store) {
		if err := s.SaveSource("api", []byte(rec)); err != nil {
			t.Fatal(err)
		}
	}, 2)
	want := map[string]string{"iface/a": "a2", "iface/b": "b"}
	if got := sb.Values(); !maps.Equal(got, want) {
		t.Fatalf("southbound %v, want %v", got, want)
	}
	if b, err := e.store.LoadSource("api"); b != nil || err != nil {
		t.Fatalf("the record of before stayed after the first save: %s %v", b, err)
	}
	ents := entries(t, e.store)
	if !strings.Contains(ents["h"], `"format":2`) || ents["c\x00iface/a"] == "" || ents["c\x00iface/b"] == "" {
		t.Fatalf("the entries after the first save: %q", ents)
	}
	e.commit(t, sets("iface/c", "c"), 0)
	last := e.s.History()
	e.stop()

	e = newRemoteEnvAfter(t, sb, dir, nil, last[len(last)-1].Seq)
	want["iface/c"] = "c"
	if got := texts(e); !maps.Equal(got, want) {
		t.Fatalf("after a restart over the entries: %v, want %v", got, want)
	}
	// The state after transaction 1, of the record of before, is kept.
	if _, _, err := e.remote.RollbackTo(context.Background(), 1, "back to 1"); err != nil {
		t.Fatal(err)
	}
	if got := sb.Values(); !maps.Equal(got, map[string]string{"iface/a": "a1"}) {
		t.Fatalf("after the rollback to 1: %v", got)
	}
}

// TestRemoteIncrementalRestart: after commits written a few entries at a
// time (sets, deletes, a confirmed commit confirmed, states dropped
// beyond the bound), a restart restores exactly the source's state and
// the states kept; with a commit awaiting confirmation at the stop, the
// state before it.
func TestRemoteIncrementalRestart(t *testing.T) {
	sb, dir := kvtest.NewSB(), t.TempDir()
	e := newRemoteEnv(t, sb, dir, nil)
	e.remote.Close()
	var err error
	if e.remote, err = nb.NewRemote(e.mux, nb.SchedulerModels(e.s), nb.RemoteConfig{Logger: quiet, StatesKept: 3}); err != nil {
		t.Fatal(err)
	}
	e.commit(t, sets("iface/a", "a1", "iface/b", "b1", "iface/c", "c1"), 0)
	e.commit(t, sets("iface/b", "", "iface/d", "d1"), 0)
	res, _ := e.commit(t, sets("iface/a", "a2", "iface/e", "e1"), time.Hour)
	if err := e.remote.Confirm(res.Seq); err != nil {
		t.Fatal(err)
	}
	r4, _ := e.commit(t, sets("iface/c", "", "iface/f", "f1"), 0)
	r5, _ := e.commit(t, sets("iface/d", "d2"), 0)
	want := map[string]string{"iface/a": "a2", "iface/d": "d2", "iface/e": "e1", "iface/f": "f1"}
	if got := texts(e); !maps.Equal(got, want) {
		t.Fatalf("before the restart: %v, want %v", got, want)
	}
	// Awaiting confirmation at the stop.
	pend, _ := e.commit(t, sets("iface/a", "", "iface/g", "g1", "iface/d", "d3"), time.Hour)
	e.stop()

	restart := func() {
		t.Helper()
		last := e.s.History()
		e = newRemoteEnvAfter(t, sb, dir, nil, last[len(last)-1].Seq)
		e.remote.Close()
		if e.remote, err = nb.NewRemote(e.mux, nb.SchedulerModels(e.s), nb.RemoteConfig{Logger: quiet, StatesKept: 3}); err != nil {
			t.Fatal(err)
		}
	}
	restart()
	if got := texts(e); !maps.Equal(got, want) {
		t.Fatalf("after the restart (commit %d awaited confirmation): %v, want %v", pend.Seq, got, want)
	}
	if got := sb.Values(); !maps.Equal(got, want) {
		t.Fatalf("southbound after the restart: %v, want %v", got, want)
	}
	if _, _, ok := e.remote.Pending(); ok {
		t.Fatal("a commit awaits confirmation after the restart")
	}
	if strings.Contains(entries(t, e.store)["h"], "pending") {
		t.Fatalf("the header after the rollback: %q", entries(t, e.store)["h"])
	}
	// The states kept (3): those after r5, the commit rolled back and
	// the rollback; not the one after r4.
	ctx := context.Background()
	if _, _, err := e.remote.RollbackTo(ctx, r4.Seq, ""); err == nil {
		t.Fatalf("a rollback to %d, beyond the 3 states kept, worked", r4.Seq)
	}
	if _, _, err := e.remote.RollbackTo(ctx, pend.Seq, "back to the commit rolled back"); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"iface/d": "d3", "iface/e": "e1", "iface/f": "f1", "iface/g": "g1"}
	if got := sb.Values(); !maps.Equal(got, want) {
		t.Fatalf("after the rollback to %d: %v, want %v", pend.Seq, got, want)
	}
	e.stop()
	restart()
	if got := texts(e); !maps.Equal(got, want) {
		t.Fatalf("after a second restart: %v, want %v", got, want)
	}
	if _, _, err := e.remote.RollbackTo(ctx, r5.Seq, ""); err == nil {
		t.Fatalf("a rollback to %d, beyond the 3 states kept, worked", r5.Seq)
	}
}

// TestRemoteCrashBetweenCommits: the file as a crash leaves it after a
// commit returned (copied while the agent runs, never closed) holds the
// commit: an agent started over it, on a southbound that lost everything,
// applies the source's state as it was.
func TestRemoteCrashBetweenCommits(t *testing.T) {
	e := newRemoteEnv(t, kvtest.NewSB(), t.TempDir(), nil)
	e.commit(t, sets("iface/a", "a1", "iface/b", "b1"), 0)
	e.commit(t, sets("iface/b", "", "iface/c", "c1"), 0)
	e.commit(t, sets("iface/a", "a2"), 0)
	crashed := t.TempDir()
	copyFile(t, e.store.Path(), filepath.Join(crashed, "state.db"))
	e.commit(t, sets("iface/d", "d1"), 0)

	sb := kvtest.NewSB()
	c := newRemoteEnv(t, sb, crashed, nil)
	want := map[string]string{"iface/a": "a2", "iface/c": "c1"}
	if got := sb.Values(); !maps.Equal(got, want) {
		t.Fatalf("after the crash: %v, want %v", got, want)
	}
	if got := texts(c); !maps.Equal(got, want) {
		t.Fatalf("the source's state after the crash: %v, want %v", got, want)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRemoteRecordAfterEntries: a single record written over entries (an
// agent of before ran on the file after this one, then this one again)
// is the newer state: it replaces the entries.
func TestRemoteRecordAfterEntries(t *testing.T) {
	sb, dir := kvtest.NewSB(), t.TempDir()
	e := newRemoteEnv(t, sb, dir, nil)
	e.commit(t, sets("iface/a", "a1", "iface/z", "z1"), 0)
	e.stop()
	rec := `{"current":[{"key":"iface/b","type":"google.protobuf.StringValue","data":"CgFi"}]}`
	e = newRemoteEnv(t, sb, dir, func(s *boltstore.Store) {
		if err := s.SaveSource("api", []byte(rec)); err != nil {
			t.Fatal(err)
		}
	})
	want := map[string]string{"iface/b": "b"}
	if got := texts(e); !maps.Equal(got, want) {
		t.Fatalf("the source's state: %v, want %v", got, want)
	}
	if got := sb.Values(); !maps.Equal(got, want) {
		t.Fatalf("southbound %v, want %v", got, want)
	}
	if ents := entries(t, e.store); ents["c\x00iface/a"] != "" || ents["c\x00iface/b"] == "" {
		t.Fatalf("the entries: %q", ents)
	}
}
