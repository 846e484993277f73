package scheduler_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestRetrieveDropsKeysKvNeverBuilds: a Retrieve that returns a key which
// matches its descriptor's template by shape but not in key form (an
// escape EscapeSegment never writes, a control character, a number with a
// leading zero, an EUI-64 where a MAC address belongs) has the item
// dropped and logged, not adopted: the key is outside every key space.
func TestRetrieveDropsKeysKvNeverBuilds(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	s := newScheduler(t, scheduler.WithLogger(slog.New(scheduler.NewLogHandler(&log, slog.LevelInfo))))
	type item = kv.Item[string, *wrapperspb.StringValue, struct{}]
	descriptors := []struct {
		template string
		good     string
		bad      []string
	}{
		{
			template: "x/{name}",
			good:     "x/a%2Fb",
			bad:      []string{"x/a%zz", "x/%", "x/eth0%4", "x/a%2fb", "x/a\x00b", "x/eth0\n", "x/\x7f"},
		},
		{
			template: "m/{addr:mac}",
			good:     "m/02:00:00:00:00:0a",
			bad:      []string{"m/02:00:00:00:00:0a:00:01", "m/02:00:00:00:0a"},
		},
		{
			template: "u/{id:uint}/{gw:ip}",
			good:     "u/7/10.0.0.1",
			bad:      []string{"u/007/10.0.0.1", "u/7/10.0.0.01", "u/7/fe80:0::1"},
		},
	}
	var all []kv.Descriptor
	for i, d := range descriptors {
		h := &badRetriever{}
		for _, key := range append([]string{d.good}, d.bad...) {
			h.items = append(h.items, item{Key: key, Value: wrapperspb.String(key)})
		}
		desc, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, struct{}]{Name: fmt.Sprint("d", i), KeyTemplate: d.template}, h)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, desc)
	}
	if err := s.Register(all...); err != nil {
		t.Fatal(err)
	}
	res, err := s.Txn(scheduler.DownstreamResync()).Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, d := range descriptors {
		want = append(want, "NONE "+d.good+" [OBTAINED]")
	}
	got := scheduler.FormatOps(res.Executed)
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("executed lacks %q:\n%s", w, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != len(want) {
		t.Errorf("executed %d operations, want %d (the good keys only):\n%s", n, len(want), got)
	}
	for i, d := range descriptors {
		if st := s.Status(d.good); st.State != scheduler.OBTAINED {
			t.Errorf("%q is %v, want OBTAINED", d.good, st.State)
		}
		for j, key := range d.bad {
			if st := s.Status(key); st.State != scheduler.NONEXISTENT {
				t.Errorf("%q was adopted: %v", key, st.State)
			}
			// The log names the descriptor, the item and the key.
			line := fmt.Sprintf("descriptor=d%d item=%d key=", i, j+1)
			if !strings.Contains(log.String(), line) {
				t.Errorf("log lacks %q for %q:\n%s", line, key, log.String())
			}
		}
	}
	if n := strings.Count(log.String(), "reason=the key is outside the descriptor's key space"); n != 12 {
		t.Errorf("%d items dropped as outside the key space, want 12:\n%s", n, log.String())
	}
}
