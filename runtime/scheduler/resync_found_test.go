package scheduler_test

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// echoRetriever holds what it was given to create, and its Retrieve
// reports it back with its (empty) metadata: a southbound in line.
type echoRetriever struct {
	held map[string]*wrapperspb.StringValue
}

func (e *echoRetriever) Create(_ context.Context, key string, v *wrapperspb.StringValue) (struct{}, error) {
	e.held[key] = proto.Clone(v).(*wrapperspb.StringValue)
	return struct{}{}, nil
}

func (e *echoRetriever) Delete(_ context.Context, key string, _ *wrapperspb.StringValue, _ struct{}) error {
	delete(e.held, key)
	return nil
}

func (e *echoRetriever) Retrieve(context.Context, []kv.Item[string, *wrapperspb.StringValue, struct{}]) ([]kv.Item[string, *wrapperspb.StringValue, struct{}], error) {
	var out []kv.Item[string, *wrapperspb.StringValue, struct{}]
	for k, v := range e.held {
		out = append(out, kv.Item[string, *wrapperspb.StringValue, struct{}]{Key: k, Value: v, Origin: kv.OriginNB})
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
	s := newScheduler(t)
	h := &echoRetriever{held: map[string]*wrapperspb.StringValue{}}
	d, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, struct{}]{Name: "x", KeyTemplate: "x/{name}"}, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
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
