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
// (it read twice a second before); a status of another value of the
// agent has it read again and keep waiting; the value's CONFIGURED ends
// the wait at once.
func TestAwaitWaveWatches(t *testing.T) {
	srv := etcdtest.Start(t)
	cl := srv.Dial()
	defer cl.Close()
	kv := &countingKV{KV: cl.KV}
	cl.KV = kv
	c := &cli{timeout: 10 * time.Second}
	src := etcd.New(nil, nil, etcd.WithAgent("h1"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	status := func(key, state string) {
		t.Helper()
		doc, err := json.Marshal(etcd.StatusDoc{State: state})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Put(ctx, src.StatusPrefix()+key, string(doc)); err != nil {
			t.Fatal(err)
		}
	}
	pending := []pendingValue{{agent: "h1", key: "linux/interface/lo1"}, {agent: "h1", key: "linux/interface/lo2"}}
	done := make(chan error, 1)
	go func() { done <- c.awaitWave(ctx, cl, pending, time.Minute) }()
	waitUntil(t, "the gate's first read", func() bool { return kv.txns.Load() >= 1 })

	// A quiet time: nothing changes, nothing is read.
	time.Sleep(1500 * time.Millisecond)
	if n := kv.txns.Load(); n != 1 {
		t.Errorf("%d reads in 1.5s with no status change, want 1", n)
	}
	status("linux/interface/lo1", "CONFIGURED")
	waitUntil(t, "a read after lo1's status", func() bool { return kv.txns.Load() >= 2 })
	select {
	case err := <-done:
		t.Fatalf("the gate ended with lo2 not reported: %v", err)
	default:
	}
	status("linux/interface/lo2", "CONFIGURED")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the gate: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the gate did not end 30s after every value was CONFIGURED")
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
