package etcdtest

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Cluster is an etcd cluster of real server processes on loopback, each
// member with its own ports and data directory.
type Cluster struct {
	t       testing.TB
	members []*Server
}

// StartCluster starts an n-member etcd cluster, waits until every member
// answers (a leader is elected), and stops it when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	c := &Cluster{t: t}
	var peers []string
	for i := range n {
		s := &Server{
			t:    t,
			bin:  bin,
			Dir:  filepath.Join(dir, fmt.Sprintf("m%d", i)),
			URL:  fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
			peer: fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
			name: fmt.Sprintf("m%d", i),
		}
		peers = append(peers, s.name+"="+s.peer)
		c.members = append(c.members, s)
	}
	for _, s := range c.members {
		s.cluster = strings.Join(peers, ",")
		t.Cleanup(s.Stop)
		s.spawn()
	}
	for _, s := range c.members {
		s.waitReady()
	}
	return c
}

// Size is the number of members.
func (c *Cluster) Size() int { return len(c.members) }

// Member returns member i.
func (c *Cluster) Member(i int) *Server { return c.members[i] }

// Restart starts member i again on its data (after Kill or Stop) and waits
// until it answers.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	c.members[i].Start()
}

// Endpoints are the members' client URLs.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, s := range c.members {
		eps = append(eps, s.URL)
	}
	return eps
}

// Dial returns a client of every member; the caller closes it.
func (c *Cluster) Dial() *clientv3.Client {
	c.t.Helper()
	cl, err := clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints(),
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return cl
}

// Leader returns the index of the member that a running member reports as
// the leader (the maintenance Status API), or -1 if none answers with a
// leader within timeout.
func (c *Cluster) Leader(timeout time.Duration) int {
	c.t.Helper()
	cl := c.Dial()
	defer cl.Close()
	deadline := time.Now().Add(timeout)
	for {
		ids := map[uint64]int{}
		var leader uint64
		for i, s := range c.members {
			if !s.Running() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := cl.Status(ctx, s.URL)
			cancel()
			if err != nil {
				continue
			}
			ids[st.Header.MemberId] = i
			if st.Leader != 0 {
				leader = st.Leader
			}
		}
		if i, ok := ids[leader]; ok && leader != 0 {
			return i
		}
		if time.Now().After(deadline) {
			return -1
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Metrics are the samples of an etcd member's /metrics: Values by metric
// name (the sum over the label sets), GRPCHandled the RPCs completed
// (grpc_server_handled_total) by method, all codes.
type Metrics struct {
	Values      map[string]float64
	GRPCHandled map[string]float64
	// GRPCReceived counts the messages received by method
	// (grpc_server_msg_received_total): for the Watch stream, its
	// creates, cancels and progress requests.
	GRPCReceived map[string]float64
}

// Metrics scrapes member i's /metrics (on its client URL). The counters of
// interest on etcd 3.4: etcd_mvcc_put_total, etcd_mvcc_txn_total,
// etcd_mvcc_delete_total, etcd_mvcc_range_total (requests applied by this
// member), etcd_debugging_mvcc_watcher_total and
// etcd_debugging_mvcc_watch_stream_total (watches on this member),
// etcd_server_proposals_committed_total.
func (c *Cluster) Metrics(i int) (Metrics, error) {
	return c.members[i].Metrics()
}

// Metrics scrapes the server's /metrics (on its client URL).
func (s *Server) Metrics() (Metrics, error) {
	m := Metrics{Values: map[string]float64{}, GRPCHandled: map[string]float64{}, GRPCReceived: map[string]float64{}}
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(s.URL + "/metrics")
	if err != nil {
		return m, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return m, fmt.Errorf("GET %s/metrics: %s", s.URL, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		series := line[:sp]
		name, labels, _ := strings.Cut(series, "{")
		m.Values[name] += v
		if name == "grpc_server_handled_total" {
			m.GRPCHandled[label(labels, "grpc_method")] += v
		}
		if name == "grpc_server_msg_received_total" {
			m.GRPCReceived[label(labels, "grpc_method")] += v
		}
	}
	return m, sc.Err()
}

// label returns the value of name in a Prometheus label set (`a="x",b="y"}`).
func label(labels, name string) string {
	for _, kv := range strings.Split(strings.TrimSuffix(labels, "}"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}
