package fleet

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd/etcdtest"
)

// BenchmarkEtcdAgentTxn measures what a 3-member etcd cluster on loopback
// sustains of the fleet's write pattern, without agents: transactions of
// 100 puts of a value the size of a status document (about 150 bytes)
// under one agent prefix each, from 16 concurrent writers (the
// controller's changes and the agents' status batches are both of this
// shape). It reports transactions and puts per second; the 10,000-agent
// model in docs/fleet.md starts from it.
//
//	go test -run '^$' -bench BenchmarkEtcdAgentTxn -benchtime 2000x ./test/fleet/
func BenchmarkEtcdAgentTxn(b *testing.B) {
	c := etcdtest.StartCluster(b, 3)
	cl := c.Dial()
	defer cl.Close()
	value := `{"key":"linux/interface/if123","descriptor":"linux-interface","state":"CONFIGURED","owner":"etcd","lastOp":"CREATE","seq":123456,"x":"` +
		strings.Repeat("v", 30) + `"}`
	const writers, perTxn = 16, 100
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				ops := make([]clientv3.Op, perTxn)
				for k := range ops {
					ops[k] = clientv3.OpPut(fmt.Sprintf("/kvdescriptor/a%d-%d/status/linux/interface/if%d", w, i, k), value)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := cl.Txn(ctx).Then(ops...).Commit()
				cancel()
				if err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	b.StopTimer()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/took.Seconds(), "txn/s")
	b.ReportMetric(float64(b.N*perTxn)/took.Seconds(), "puts/s")
	b.ReportMetric(float64(len(value)), "value-bytes")
	if m, err := c.Metrics(c.Leader(time.Minute)); err == nil {
		b.ReportMetric(m.Values["etcd_mvcc_db_total_size_in_bytes"]/float64(b.N*perTxn), "db-bytes/put")
	}
}
