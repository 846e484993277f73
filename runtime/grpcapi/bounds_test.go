package grpcapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
)

// TestBounds: every size, count and duration of a request beyond its
// bound (runtime/apilimits) is INVALID_ARGUMENT naming the field, and
// nothing is allocated for it (a Watch buffer of 1<<30 would be gigabytes).
func TestBounds(t *testing.T) {
	e := newEnv(t, kvtest.NewSB(), t.TempDir(), envOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	long := "iface/" + strings.Repeat("x", apilimits.MaxKeyLen)
	many := make([]string, apilimits.MaxCommitKeys+1)
	for i := range many {
		many[i] = fmt.Sprintf("iface/%d", i)
	}
	commit := func(req *apiv1.CommitRequest) func() error {
		return func() error { _, err := e.client.Commit(ctx, req); return err }
	}
	watch := func(req *apiv1.WatchRequest) func() error {
		return func() error {
			w, err := e.client.Watch(ctx, req)
			if err == nil {
				_, err = w.Recv()
			}
			return err
		}
	}
	for _, c := range []struct {
		field string
		call  func() error
	}{
		{"buffer", watch(&apiv1.WatchRequest{Buffer: 1 << 30})},
		{"buffer", watch(&apiv1.WatchRequest{Buffer: apilimits.MaxWatchBuffer + 1})},
		{"prefix", watch(&apiv1.WatchRequest{Prefix: long})},
		{"values, deletes", commit(&apiv1.CommitRequest{Deletes: many})},
		{"values, deletes", commit(&apiv1.CommitRequest{Deletes: many, PlanOnly: true})},
		{"values[0].key", commit(&apiv1.CommitRequest{Values: []*apiv1.Value{value(long, "a")}})},
		{"deletes[0]", commit(&apiv1.CommitRequest{Deletes: []string{long}})},
		{"description", commit(&apiv1.CommitRequest{Description: strings.Repeat("d", apilimits.MaxDescriptionLen+1)})},
		{"retry.max_attempts", commit(&apiv1.CommitRequest{Retry: &apiv1.RetryPolicy{MaxAttempts: apilimits.MaxRetryAttempts + 1}})},
		{"retry.period", commit(&apiv1.CommitRequest{Retry: &apiv1.RetryPolicy{Period: durationpb.New(apilimits.MaxRetryPeriod + time.Second)}})},
		{"retry.max_period", commit(&apiv1.CommitRequest{Retry: &apiv1.RetryPolicy{MaxPeriod: durationpb.New(1000 * time.Hour)}})},
		{"wait_timeout", commit(&apiv1.CommitRequest{Wait: true, WaitTimeout: durationpb.New(apilimits.MaxWaitTimeout + time.Second)})},
		{"confirm_within", commit(&apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a")}, ConfirmWithin: durationpb.New(apilimits.MaxConfirmWithin + time.Second)})},
		{"description", func() error {
			_, err := e.client.RollbackTo(ctx, &apiv1.RollbackToRequest{Seq: 1, Description: strings.Repeat("d", apilimits.MaxDescriptionLen+1)})
			return err
		}},
		{"key", func() error { _, err := e.client.Status(ctx, &apiv1.StatusRequest{Key: long}); return err }},
		{"prefix", func() error { _, err := e.client.Status(ctx, &apiv1.StatusRequest{Prefix: long}); return err }},
		{"descriptor", func() error { _, err := e.client.Status(ctx, &apiv1.StatusRequest{Descriptor_: long}); return err }},
		{"owner", func() error { _, err := e.client.Status(ctx, &apiv1.StatusRequest{Owner: long}); return err }},
		{"prefix", func() error {
			_, err := e.client.Dump(ctx, &apiv1.DumpRequest{View: apiv1.View_VIEW_INTENDED, Prefix: long})
			return err
		}},
		{"descriptor", func() error {
			_, err := e.client.Dump(ctx, &apiv1.DumpRequest{View: apiv1.View_VIEW_INTENDED, Descriptor_: long})
			return err
		}},
		{"key", func() error { _, err := e.client.Timeline(ctx, &apiv1.TimelineRequest{Key: long}); return err }},
	} {
		err := c.call()
		if status.Code(err) != codes.InvalidArgument || !strings.HasPrefix(status.Convert(err).Message(), c.field+": ") || !strings.Contains(err.Error(), "the bound") {
			t.Errorf("%s beyond its bound: %v, want INVALID_ARGUMENT naming it", c.field, err)
		}
	}
	// At the bounds, the requests are taken.
	if _, err := e.client.Commit(ctx, &apiv1.CommitRequest{
		Values:      []*apiv1.Value{value("iface/a", "a")},
		Retry:       &apiv1.RetryPolicy{MaxAttempts: apilimits.MaxRetryAttempts, Period: durationpb.New(apilimits.MaxRetryPeriod)},
		WaitTimeout: durationpb.New(apilimits.MaxWaitTimeout), Wait: true,
		Description: strings.Repeat("d", apilimits.MaxDescriptionLen),
	}); err != nil {
		t.Errorf("a commit at the bounds: %v", err)
	}
	w, err := e.client.Watch(ctx, &apiv1.WatchRequest{Buffer: apilimits.MaxWatchBuffer})
	if err != nil {
		t.Fatal(err)
	}
	// The header comes once the watch is registered: what is committed
	// after it is seen.
	if _, err := w.Header(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.Commit(ctx, &apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/b", "b")}}); err != nil {
		t.Fatal(err)
	}
	if m, err := w.Recv(); err != nil || m.GetStatus().GetKey() != "iface/b" {
		t.Errorf("a watch at the bound: %v %v", m, err)
	}
}
