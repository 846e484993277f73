package main

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd/etcdtest"
)

// countingKV counts the transactions (the rollout gate's reads) of a
// client.
type countingKV struct {
	clientv3.KV
	txns atomic.Int32
}

func (k *countingKV) Txn(ctx context.Context) clientv3.Txn {
	k.txns.Add(1)
	return k.KV.Txn(ctx)
}

// TestAwaitWaveWatches: the rollout gate reads the statuses when they
// change, not on a clock: while no status changes it reads nothing more
// (it read twice a second before); a change of one agent's statuses has
// that agent's read again, not every agent's; the last value's CONFIGURED
// ends the wait.
func TestAwaitWaveWatches(t *testing.T) {
	srv := etcdtest.Start(t)
	cl := srv.Dial()
	defer cl.Close()
	kv := &countingKV{KV: cl.KV}
	cl.KV = kv
	c := &cli{timeout: 10 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	status := func(agent, key, state string) {
		t.Helper()
		doc, err := json.Marshal(etcd.StatusDoc{State: state})
		if err != nil {
			t.Fatal(err)
		}
		src := etcd.New(nil, nil, etcd.WithAgent(agent))
		if _, err := cl.Put(ctx, src.StatusPrefix()+key, string(doc)); err != nil {
			t.Fatal(err)
		}
	}
	pending := []pendingValue{{agent: "h1", key: "linux/interface/lo1"}, {agent: "h1", key: "linux/interface/lo2"}, {agent: "h2", key: "linux/interface/lo3"}}
	done := make(chan error, 1)
	go func() { done <- c.awaitWave(ctx, cl, pending, time.Minute) }()
	waitUntil(t, "the gate's first read (one per agent)", func() bool { return kv.txns.Load() >= 2 })

	// A quiet time: nothing changes, nothing is read.
	time.Sleep(1500 * time.Millisecond)
	if n := kv.txns.Load(); n != 2 {
		t.Errorf("%d reads in 1.5s with no status change, want 2", n)
	}
	status("h1", "linux/interface/lo1", "CONFIGURED")
	waitUntil(t, "a read after lo1's status", func() bool { return kv.txns.Load() >= 3 })
	select {
	case err := <-done:
		t.Fatalf("the gate ended with lo2 and lo3 not reported: %v", err)
	default:
	}
	status("h1", "linux/interface/lo2", "CONFIGURED")
	status("h2", "linux/interface/lo3", "CONFIGURED")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the gate: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the gate did not end 30s after every value was CONFIGURED")
	}
	// 2 + 1 (h1) + at most 2 (h1, h2; or both in one round): reading every
	// agent at each change would take 2 + 2 + 2 at least.
	if n := kv.txns.Load(); n > 5 {
		t.Errorf("%d reads in all, want at most 5: a change has only its agent read", n)
	}
}

// waitUntil waits for cond, failing the test after 30s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("%s: not after 30s", what)
		}
	}
}
