package etcd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd/etcdtest"
)

// TestFleetSummaryAndAlive checks what WriteStatus keeps for the fleet:
// the summary follows the values' states and the last transaction; at
// rest nothing is written (etcd's revision stays); the presence key lives
// on a lease while the writer runs and is gone as soon as it stops.
func TestFleetSummaryAndAlive(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient()
	s, _ := models(t)
	put(t, c, "a/1", jsonValue("one"))
	put(t, c, "a/2", jsonValue("dep:b/missing"))
	src := newSource(t, c, s, etcd.WithStatusInterval(50*time.Millisecond), etcd.WithAliveTTL(3*time.Second))
	runSource(t, src, schedulerSink(s))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.WriteStatus(ctx, s) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("WriteStatus: %v", err)
			}
		}
	}
	defer stop()

	summary := func() (etcd.FleetSummary, int64) {
		resp, err := c.Get(context.Background(), src.SummaryKey())
		if err != nil || len(resp.Kvs) == 0 {
			return etcd.FleetSummary{}, 0
		}
		var d etcd.FleetSummary
		if err := json.Unmarshal(resp.Kvs[0].Value, &d); err != nil {
			t.Fatalf("summary: %v", err)
		}
		return d, resp.Kvs[0].Version
	}
	show := func() string { d, _ := summary(); return fmt.Sprintf("%+v", d) }
	waitFor(t, "the summary", func() bool {
		d, _ := summary()
		return d.Agent == "agent" && d.States["CONFIGURED"] == 1 && d.States["PENDING"] == 1 && len(d.States) == 2
	}, show)
	put(t, c, "b/missing", jsonValue("here"))
	want := s.Status("b/missing").Seq
	waitFor(t, "the summary after a transaction", func() bool {
		want = s.Status("b/missing").Seq
		d, _ := summary()
		return d.States["CONFIGURED"] == 3 && len(d.States) == 1 && d.LastSeq == want && !d.LastChange.IsZero()
	}, show)

	// At rest: no writes at all, whatever the number of intervals.
	rev := revision(t, c)
	time.Sleep(20 * 50 * time.Millisecond)
	if r := revision(t, c); r != rev {
		t.Errorf("etcd's revision went from %d to %d while the agent was at rest", rev, r)
	}

	resp, err := c.Get(context.Background(), src.AliveKey())
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 {
		t.Fatalf("the presence key %s: %v %v, want it on a lease", src.AliveKey(), resp, err)
	}
	ttl, err := c.TimeToLive(context.Background(), clientv3.LeaseID(resp.Kvs[0].Lease))
	if err != nil || ttl.TTL <= 0 || ttl.GrantedTTL != 3 {
		t.Errorf("the presence lease: %+v %v, want a live lease of 3s", ttl, err)
	}
	stop()
	resp, err = c.Get(context.Background(), src.AliveKey())
	if err != nil || len(resp.Kvs) != 0 {
		t.Errorf("the presence key after the writer stopped: %v %v, want none", resp.Kvs, err)
	}
}
