package etcd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd/etcdtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// schedulerSink applies updates to a scheduler as one transaction each; a
// resync deletes the keys it set before and no longer has.
func schedulerSink(s *scheduler.Scheduler) *recSink {
	sink := newRecSink()
	owned := map[string]bool{}
	sink.then = func(ctx context.Context, u nb.Update) error {
		txn := s.Txn(scheduler.Description(u.Description))
		next := map[string]bool{}
		if !u.Resync {
			next = maps.Clone(owned)
		}
		for _, c := range u.Changes {
			txn.Set(c.Key, c.Value)
			if c.Value != nil {
				next[c.Key] = true
			} else {
				delete(next, c.Key)
			}
		}
		if u.Resync {
			for k := range owned {
				if !next[k] {
					txn.Delete(k)
				}
			}
		}
		if _, err := txn.Commit(ctx); err != nil {
			return err
		}
		owned = next
		return nil
	}
	return sink
}

// intended returns the scheduler's intended values (not derived).
func intended(s *scheduler.Scheduler) map[string]string {
	out := map[string]string{}
	for _, st := range s.Statuses("") {
		if st.Intended && st.Base == "" {
			out[st.Key] = kvtest.Text(st.Value)
		}
	}
	return out
}

// statusDocs returns the status documents under the status prefix.
func statusDocs(t testing.TB, c *clientv3.Client) map[string]etcd.StatusDoc {
	t.Helper()
	resp, err := c.Get(context.Background(), "/kvdescriptor/agent/status/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]etcd.StatusDoc{}
	for _, kv := range resp.Kvs {
		var d etcd.StatusDoc
		if err := json.Unmarshal(kv.Value, &d); err != nil {
			t.Fatalf("status %s: %v", kv.Key, err)
		}
		out[strings.TrimPrefix(string(kv.Key), "/kvdescriptor/agent/status/")] = d
	}
	return out
}

func TestStatusWriteBack(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient()
	s, _ := models(t)
	put(t, c, "a/1", jsonValue("one"))
	put(t, c, "a/2", jsonValue("dep:b/missing"))
	// A status left by an earlier run, of a value that is gone.
	if _, err := c.Put(context.Background(), "/kvdescriptor/agent/status/a/old", `{"key":"a/old"}`); err != nil {
		t.Fatal(err)
	}
	src := newSource(t, c, s, etcd.WithStatusInterval(50*time.Millisecond),
		etcd.WithStatusOwner(func(string) string { return "etcd" }))
	runSource(t, src, schedulerSink(s))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.WriteStatus(ctx, s) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("WriteStatus: %v", err)
		}
	}()

	waitFor(t, "the statuses", func() bool {
		d := statusDocs(t, c)
		return len(d) == 2 && d["a/1"].State == "CONFIGURED" && d["a/2"].State == "PENDING"
	})
	d := statusDocs(t, c)
	if d["a/1"].Owner != "etcd" || d["a/1"].Key != "a/1" || d["a/1"].Descriptor != "a" {
		t.Fatalf("status of a/1: %+v", d["a/1"])
	}
	if len(d["a/2"].Unmet) != 1 || !strings.Contains(d["a/2"].Unmet[0], "b/missing") {
		t.Fatalf("status of a/2: %+v, want its unmet dependency", d["a/2"])
	}

	// The dependency arrives, a/1 goes: statuses follow.
	_, err := c.Txn(context.Background()).Then(
		clientv3.OpPut(prefix+"b/missing", jsonValue("here")),
		clientv3.OpDelete(prefix+"a/1"),
	).Commit()
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the statuses to follow", func() bool {
		d := statusDocs(t, c)
		_, has1 := d["a/1"]
		return !has1 && len(d) == 2 && d["a/2"].State == "CONFIGURED" && d["b/missing"].State == "CONFIGURED"
	})

	// Many changes of one key in a burst: written at most once per
	// interval, so far fewer writes than changes.
	for i := range 100 {
		put(t, c, "a/2", jsonValue(fmt.Sprint("v", i)))
	}
	waitFor(t, "the last value's status", func() bool {
		d := statusDocs(t, c)
		return d["a/2"].State == "CONFIGURED" && d["a/2"].Seq == s.Status("a/2").Seq
	})
	resp, err := c.Get(context.Background(), "/kvdescriptor/agent/status/a/2")
	if err != nil {
		t.Fatal(err)
	}
	if writes := resp.Kvs[0].Version; writes > 60 {
		t.Errorf("the status of a/2 was written %d times for 100 changes", writes)
	}

	// etcd stops: the scheduler does not wait for the status writes, and
	// the statuses are written once etcd is back.
	srv.Stop()
	start := time.Now()
	for i := range 200 {
		if _, err := s.Txn().Set(fmt.Sprintf("b/x%d", i), kvtest.Value("x")).Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("200 transactions took %v while etcd was down", d)
	}
	srv.Start()
	waitFor(t, "the statuses written after the outage", func() bool {
		d := statusDocs(t, c)
		return d["b/x0"].State == "CONFIGURED" && d["b/x199"].State == "CONFIGURED" && len(d) == 202
	}, func() string { return fmt.Sprintf("%d statuses: %v", len(statusDocs(t, c)), statusDocs(t, c)["b/x0"]) })
}

func revision(t testing.TB, c *clientv3.Client) int64 {
	t.Helper()
	resp, err := c.Get(context.Background(), "health")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// TestEndToEnd runs the source into a real scheduler through a restart of
// etcd and a compaction while disconnected; the scheduler's intended state
// and the southbound end equal to what etcd holds.
func TestEndToEnd(t *testing.T) {
	srv := etcdtest.Start(t)
	direct := srv.NewClient()
	px := newProxy(t, strings.TrimPrefix(srv.URL, "http://"))
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + px.addr()}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, sb := models(t)
	for i := range 20 {
		put(t, direct, fmt.Sprintf("a/%d", i), jsonValue(fmt.Sprint("v", i)))
	}
	sink := schedulerSink(s)
	// A long probe: the cut below is seen by the client's own watch
	// resumption, which finds the revision compacted.
	runSource(t, newSource(t, c, s, etcd.WithProbe(time.Hour)), sink)
	ms := nb.SchedulerModels(s)
	converged := func(what string) {
		t.Helper()
		want := etcdState(t, direct, ms)
		waitFor(t, what, func() bool { return maps.Equal(intended(s), want) })
		if got := sb.Values(); !maps.Equal(got, want) {
			t.Fatalf("%s: the southbound holds %v, etcd %v", what, got, want)
		}
	}
	converged("the initial load")

	_, err = direct.Txn(context.Background()).Then(
		clientv3.OpDelete(prefix+"a/0"), clientv3.OpPut(prefix+"b/1", jsonValue("b1")),
	).Commit()
	if err != nil {
		t.Fatal(err)
	}
	converged("a transaction")

	// Cut the connection, change and compact, reconnect.
	px.cut()
	for i := 1; i < 5; i++ {
		put(t, direct, fmt.Sprintf("a/%d", i), jsonValue("cut"))
	}
	if _, err := direct.Delete(context.Background(), prefix+"a/5"); err != nil {
		t.Fatal(err)
	}
	if _, err := direct.Compact(context.Background(), revision(t, direct)); err != nil {
		t.Fatal(err)
	}
	px.restore()
	converged("the resync after a compaction while disconnected")

	// Stop etcd, restart it on the same data and change it.
	srv.Stop()
	srv.Start()
	_, err = direct.Txn(context.Background()).Then(
		clientv3.OpDelete(prefix+"a/6"), clientv3.OpPut(prefix+"b/2", wireValue(t, "b2")),
	).Commit()
	if err != nil {
		t.Fatal(err)
	}
	converged("a restart of etcd")

	resyncs := 0
	updates, _, _ := sink.snapshot()
	for _, u := range updates {
		if u.Resync {
			resyncs++
		}
	}
	if resyncs < 2 {
		t.Errorf("%d resyncs, want the load and one after the compaction", resyncs)
	}
}

// proxy forwards TCP connections to an address; cut closes them and
// refuses new ones until restore.
type proxy struct {
	t      testing.TB
	l      net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]bool
	down   bool
	wg     sync.WaitGroup
}

func newProxy(t testing.TB, target string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, l: l, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		l.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) addr() string { return p.l.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			in.Close()
			continue
		}
		p.conns[in], p.conns[out] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *proxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}
