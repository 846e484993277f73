package scheduler_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestReadsDoNotWaitForATransaction: while a transaction's handler is
// blocked, every read returns at once and shows the state as the last
// finished transaction left it; the running transaction's values appear,
// all together, when it ends.
func TestReadsDoNotWaitForATransaction(t *testing.T) {
	s, h := stallScheduler(t, false)
	ctx := context.Background()
	if _, err := s.Txn().Set("stall/a", &emptypb.Empty{}).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	before := s.Status("stall/a")
	if before.State != scheduler.CONFIGURED {
		t.Fatalf("stall/a: %v, want CONFIGURED", before.State)
	}

	// stall/b is created first (keys in order) and succeeds; stall/c/block
	// then blocks the transaction.
	done := make(chan *scheduler.Result, 1)
	go func() {
		res, _ := s.Txn().Set("stall/b", &emptypb.Empty{}).Set("stall/c/block", &emptypb.Empty{}).Delete("stall/a").Commit(ctx)
		done <- res
	}()
	select {
	case <-h.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not called")
	}

	reads := map[string]func(){
		"Status": func() {
			if st := s.Status("stall/a"); st.State != scheduler.CONFIGURED || st.Seq != before.Seq {
				t.Errorf("Status(stall/a) during the transaction: %v seq %d, want CONFIGURED seq %d (the last finished state)", st.State, st.Seq, before.Seq)
			}
			if st := s.Status("stall/b"); st.State != scheduler.NONEXISTENT {
				t.Errorf("Status(stall/b) during the transaction: %v, want NONEXISTENT: the transaction creating it has not ended", st.State)
			}
		},
		"Statuses": func() {
			if sts := s.Statuses("stall/"); len(sts) != 1 || sts[0].Key != "stall/a" {
				t.Errorf("Statuses during the transaction: %v, want stall/a only", sts)
			}
		},
		"StateCounts": func() {
			if c := s.StateCounts(); c[scheduler.CONFIGURED] != 1 {
				t.Errorf("StateCounts during the transaction: %v", c)
			}
		},
		"History": func() {
			if hs := s.History(); len(hs) != 1 || hs[0].Seq != before.Seq {
				t.Errorf("History during the transaction: %d records, want the first commit's only", len(hs))
			}
		},
		"Record":      func() { s.Record(before.Seq) },
		"Timeline":    func() { s.Timeline("stall/a") },
		"WhyPending":  func() { s.WhyPending("stall/a") },
		"Descriptors": func() { s.Descriptors() },
		"GraphSnapshot": func() {
			snap, err := s.GraphSnapshot(0)
			if err != nil {
				t.Errorf("GraphSnapshot(0): %v", err)
				return
			}
			if snap.Seq != before.Seq || len(snap.Nodes) != 1 {
				t.Errorf("GraphSnapshot(0) during the transaction: seq %d with %d nodes, want seq %d with stall/a", snap.Seq, len(snap.Nodes), before.Seq)
			}
		},
	}
	for name, read := range reads {
		ok := make(chan struct{})
		go func() { read(); close(ok) }()
		select {
		case <-ok:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s waited for the running transaction", name)
		}
	}

	h.release <- struct{}{}
	res := <-done
	if res == nil || res.Err != nil {
		t.Fatalf("the transaction: %+v", res)
	}
	for key, want := range map[string]scheduler.State{"stall/a": scheduler.NONEXISTENT, "stall/b": scheduler.CONFIGURED, "stall/c/block": scheduler.CONFIGURED} {
		if st := s.Status(key); st.State != want || (want != scheduler.NONEXISTENT && st.Seq != res.Seq) {
			t.Errorf("after the transaction, %s: %v seq %d, want %v seq %d", key, st.State, st.Seq, want, res.Seq)
		}
	}
	if snap, err := s.GraphSnapshot(0); err != nil || snap.Seq != res.Seq {
		t.Errorf("GraphSnapshot(0) after the transaction: %v, %v", snap, err)
	}
	if _, ok := s.Record(res.Seq); !ok {
		t.Errorf("no record of transaction %d once it ended", res.Seq)
	}
}

// TestReadsSeeWholeTransactions: each transaction sets several values to
// one generation; readers reading all of them at once (Statuses, a graph
// snapshot) while transactions run see one generation only, never a mix,
// and never a generation going back.
func TestReadsSeeWholeTransactions(t *testing.T) {
	s, _ := harnessScheduler(t, "gen")
	ctx := context.Background()
	// Many keys, deleted every seventh transaction: the worker adds and
	// removes keys in the view's shards while readers scan them.
	var keys []string
	for i := range 48 {
		keys = append(keys, fmt.Sprintf("gen/%c%d", 'a'+i%26, i))
	}
	const txns = 300
	stop := make(chan struct{})
	errs := make(chan string, 16)
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := -1
			for {
				select {
				case <-stop:
					return
				default:
				}
				gens := map[string]bool{}
				if r%2 == 0 {
					for _, st := range s.Statuses("gen/") {
						gens[kvtest.Text(st.Value)] = true
					}
				} else {
					snap, err := s.GraphSnapshot(0)
					if err != nil {
						errs <- err.Error()
						return
					}
					for _, n := range snap.Nodes {
						gens[kvtest.Text(n.Value)] = true
					}
				}
				if len(gens) > 1 {
					errs <- fmt.Sprintf("a read saw generations %v at once", slices.Sorted(maps.Keys(gens)))
					return
				}
				for g := range gens {
					n, _ := strconv.Atoi(strings.TrimPrefix(g, "v"))
					if n < last {
						errs <- fmt.Sprintf("generation %d after %d", n, last)
						return
					}
					last = n
				}
			}
		}()
	}
	for i := range txns {
		txn := s.Txn()
		for _, k := range keys {
			if i%7 == 6 {
				txn.Delete(k) // whole deletions too
			} else {
				txn.Set(k, kvtest.Value(fmt.Sprintf("v%d", i)))
			}
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if st := s.Status(keys[0]); kvtest.Text(st.Value) != fmt.Sprintf("v%d", txns-1) {
		t.Errorf("%s: %v after the last transaction", keys[0], kvtest.Text(st.Value))
	}
}

// TestStatusIntended: Status.Intended tells an intended value from one
// that only exists in the southbound (Value is the applied one then).
func TestStatusIntended(t *testing.T) {
	t.Parallel()
	s, sb := harnessScheduler(t, "x")
	ctx := context.Background()
	sb.Put("x/found", "theirs")
	if _, err := s.Txn(scheduler.DownstreamResync()).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn().Set("x/ours", kvtest.Value("mine")).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key      string
		state    scheduler.State
		intended bool
		value    string
	}{
		{"x/found", scheduler.OBTAINED, false, "theirs"},
		{"x/ours", scheduler.CONFIGURED, true, "mine"},
		{"x/none", scheduler.NONEXISTENT, false, ""},
	} {
		st := s.Status(c.key)
		got := ""
		if st.Value != nil {
			got = kvtest.Text(st.Value)
		}
		if st.State != c.state || st.Intended != c.intended || got != c.value {
			t.Errorf("%s: %v intended=%v value %q, want %v intended=%v value %q", c.key, st.State, st.Intended, got, c.state, c.intended, c.value)
		}
	}
}
