package etcdtest

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestCluster starts a 3-member cluster, writes through every member,
// kills the leader with SIGKILL and sees another member elected and
// writes succeed, then restarts the old leader on its data and sees it
// serve the writes made without it; the metrics count the puts applied and
// the Put RPCs.
func TestCluster(t *testing.T) {
	c := StartCluster(t, 3)
	cl := c.Dial()
	defer cl.Close()
	put := func(k string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := cl.Put(ctx, k, "v"); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	for i := range 3 {
		put(fmt.Sprintf("before%d", i))
	}
	leader := c.Leader(30 * time.Second)
	if leader < 0 {
		t.Fatal("no leader")
	}
	// Every member applies every put (a follower maybe later); a Put RPC
	// is counted by the member the client sent it to.
	var rpcs, applied float64
	for i := range c.Size() {
		m, err := c.Metrics(i)
		if err != nil {
			t.Fatal(err)
		}
		applied = max(applied, m.Values["etcd_mvcc_put_total"])
		rpcs += m.GRPCHandled["Put"]
	}
	if applied < 3 || rpcs < 3 {
		t.Fatalf("metrics: %v puts applied, %v Put RPCs; want 3 of each", applied, rpcs)
	}
	c.Member(leader).Kill()
	next := c.Leader(60 * time.Second)
	if next < 0 || next == leader {
		t.Fatalf("after killing member %d, leader %d", leader, next)
	}
	put("after")
	c.Restart(leader)
	one := c.Member(leader).Dial()
	defer one.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := one.Get(ctx, "after")
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("the restarted member reads %v, %v", r, err)
	}
}
