package scheduler_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// echoRetriever holds what it was given to create, and its Retrieve
// reports it back with its (empty) metadata: a southbound in line. The
// keys in foreign it reports as created by others.
type echoRetriever struct {
	held    map[string]*wrapperspb.StringValue
	foreign map[string]bool
	// correlated are the keys of the last Retrieve's correlate argument.
	correlated []string
}

func (e *echoRetriever) Create(_ context.Context, key string, v *wrapperspb.StringValue) (struct{}, error) {
	e.held[key] = proto.Clone(v).(*wrapperspb.StringValue)
	return struct{}{}, nil
}

func (e *echoRetriever) Delete(_ context.Context, key string, _ *wrapperspb.StringValue, _ struct{}) error {
	delete(e.held, key)
	return nil
}

func (e *echoRetriever) Retrieve(_ context.Context, correlate []kv.Item[string, *wrapperspb.StringValue, struct{}]) ([]kv.Item[string, *wrapperspb.StringValue, struct{}], error) {
	e.correlated = e.correlated[:0]
	for _, it := range correlate {
		e.correlated = append(e.correlated, it.Key)
	}
	var out []kv.Item[string, *wrapperspb.StringValue, struct{}]
	for k, v := range e.held {
		origin := kv.OriginNB
		if e.foreign[k] {
			origin = kv.OriginSB
		}
		out = append(out, kv.Item[string, *wrapperspb.StringValue, struct{}]{Key: k, Value: v, Origin: origin})
	}
	return out, nil
}

// A Retrieve that reports the values as they were applied, each with the
// metadata of a descriptor that has none (struct{}), changes nothing: the
// values keep the transaction that last changed them and their nil
// metadata (what Create's struct{}{} became), and no operation is
// recorded.
func TestResyncOfValuesInLineChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := echoScheduler(t)
	keys := []string{"x/a", "x/b", "x/c"}
	txn := s.Txn()
	for _, k := range keys {
		txn.Set(k, wrapperspb.String(k))
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	before := map[string]scheduler.Status{}
	for _, k := range keys {
		before[k] = s.Status(k)
	}
	res, err := s.Txn(scheduler.DownstreamResync()).Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Executed) != 0 {
		t.Errorf("the resync recorded %d operations, want none: %v", len(res.Executed), res.Executed)
	}
	for _, k := range keys {
		st := s.Status(k)
		if st.State != scheduler.CONFIGURED || st.Seq != before[k].Seq || st.Metadata != nil {
			t.Errorf("%s after the resync: %v, seq %d, metadata %#v; want CONFIGURED, seq %d, no metadata",
				k, st.State, st.Seq, st.Metadata, before[k].Seq)
		}
	}
}

// A resync pairs what Retrieve found with the graph's values through the
// nodes the refresh saw: values missing, found with other contents, found
// and not known (ours or not), and, for a full resync, values that the
// new intent adds or drops after the refresh, are each decided as by a
// lookup of each key.
func TestResyncPairsTheViewWithTheGraph(t *testing.T) {
	t.Parallel()
	type change func(h *echoRetriever)
	tests := []struct {
		name string
		sb   change // behind the scheduler's back, after x/a, x/b, x/c were created
		opts []scheduler.TxnOption
		set  []string // the values of a full resync
		want map[string]scheduler.State
		held []string // what the southbound holds after the resync
		ops  []string // the operations that called it
	}{{
		name: "missing",
		sb:   func(h *echoRetriever) { delete(h.held, "x/b") },
		opts: []scheduler.TxnOption{scheduler.DownstreamResync()},
		want: map[string]scheduler.State{"x/a": scheduler.CONFIGURED, "x/b": scheduler.CONFIGURED, "x/c": scheduler.CONFIGURED},
		held: []string{"x/a", "x/b", "x/c"},
		ops:  []string{"CREATE x/b"},
	}, {
		name: "other contents",
		sb:   func(h *echoRetriever) { h.held["x/c"] = wrapperspb.String("changed") },
		opts: []scheduler.TxnOption{scheduler.DownstreamResync()},
		want: map[string]scheduler.State{"x/a": scheduler.CONFIGURED, "x/b": scheduler.CONFIGURED, "x/c": scheduler.CONFIGURED},
		held: []string{"x/a", "x/b", "x/c"},
		ops:  []string{"DELETE x/c", "CREATE x/c"},
	}, {
		name: "foreign and stale",
		sb: func(h *echoRetriever) {
			h.held["x/obtained"], h.foreign["x/obtained"] = wrapperspb.String("x/obtained"), true
			h.held["x/stale"] = wrapperspb.String("x/stale")
		},
		opts: []scheduler.TxnOption{scheduler.DownstreamResync()},
		want: map[string]scheduler.State{"x/a": scheduler.CONFIGURED, "x/obtained": scheduler.OBTAINED, "x/stale": scheduler.NONEXISTENT},
		held: []string{"x/a", "x/b", "x/c", "x/obtained"},
		ops:  []string{"DELETE x/stale"},
	}, {
		name: "full resync: added, found, dropped",
		sb: func(h *echoRetriever) {
			h.held["x/d"] = wrapperspb.String("x/d")
			delete(h.held, "x/a")
		},
		opts: []scheduler.TxnOption{scheduler.FullResync()},
		set:  []string{"x/a", "x/b", "x/d", "x/e"},
		want: map[string]scheduler.State{"x/a": scheduler.CONFIGURED, "x/c": scheduler.NONEXISTENT, "x/d": scheduler.CONFIGURED, "x/e": scheduler.CONFIGURED},
		held: []string{"x/a", "x/b", "x/d", "x/e"},
		ops:  []string{"CREATE x/a", "CREATE x/e", "DELETE x/c"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, h := echoScheduler(t)
			txn := s.Txn()
			for _, k := range []string{"x/a", "x/b", "x/c"} {
				txn.Set(k, wrapperspb.String(k))
			}
			if _, err := txn.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			tt.sb(h)
			txn = s.Txn(tt.opts...)
			for _, k := range tt.set {
				txn.Set(k, wrapperspb.String(k))
			}
			res, err := txn.Commit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ops []string
			for _, op := range res.Executed {
				if op.Called {
					ops = append(ops, op.Kind.String()+" "+op.Key)
				}
			}
			slices.Sort(ops)
			want := slices.Sorted(slices.Values(tt.ops))
			if diff := cmp.Diff(want, ops); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			for k, st := range tt.want {
				if got := s.Status(k).State; got != st {
					t.Errorf("%s: %v, want %v", k, got, st)
				}
			}
			if diff := cmp.Diff(tt.held, slices.Sorted(maps.Keys(h.held))); diff != "" {
				t.Errorf("southbound (-want +got):\n%s", diff)
			}
		})
	}
}

// Each descriptor's Retrieve is given its own values to correlate, all of
// them, however the graph interleaves the descriptors' values.
func TestRetrieveCorrelatesItsOwnValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newScheduler(t)
	names := []string{"p", "q", "r"}
	hs := map[string]*echoRetriever{}
	for _, name := range names {
		h := &echoRetriever{held: map[string]*wrapperspb.StringValue{}, foreign: map[string]bool{}}
		d, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, struct{}]{Name: name, KeyTemplate: name + "/{name}"}, h)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Register(d); err != nil {
			t.Fatal(err)
		}
		hs[name] = h
	}
	// Most values are q's, as most are routes in a large southbound.
	want := map[string][]string{}
	txn := s.Txn()
	for i := range 300 {
		name := "q"
		switch {
		case i%37 == 0:
			name = "p"
		case i%53 == 0:
			name = "r"
		}
		k := fmt.Sprintf("%s/%03d", name, i)
		want[name] = append(want[name], k)
		txn.Set(k, wrapperspb.String(k))
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn(scheduler.DownstreamResync()).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		got := slices.Sorted(slices.Values(hs[name].correlated))
		if diff := cmp.Diff(want[name], got); diff != "" {
			t.Errorf("%s's correlate argument (-want +got):\n%s", name, diff)
		}
	}
}

// echoScheduler returns a scheduler with one descriptor, "x", over an
// echoRetriever (metadata of no data: struct{}).
func echoScheduler(t *testing.T) (*scheduler.Scheduler, *echoRetriever) {
	t.Helper()
	s := newScheduler(t)
	h := &echoRetriever{held: map[string]*wrapperspb.StringValue{}, foreign: map[string]bool{}}
	d, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, struct{}]{Name: "x", KeyTemplate: "x/{name}"}, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	return s, h
}
