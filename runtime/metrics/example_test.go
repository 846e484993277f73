package metrics_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/metrics"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// Example exposes a scheduler's metrics over HTTP for Prometheus to
// scrape. A program would serve the handler with
// http.ListenAndServe(addr, mux); the example scrapes it once through a
// test server.
func Example() {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		log.Fatal(err)
	}
	s, err := scheduler.New(scheduler.WithObserver(m), scheduler.WithTxnLog(false))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(context.Background())
	if err := m.Attach(s); err != nil {
		log.Fatal(err)
	}

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))

	// Something to measure: an in-memory southbound and one transaction.
	sb := kvtest.NewSB()
	iface, err := sb.Descriptor(kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Register(iface); err != nil {
		log.Fatal(err)
	}
	if _, err := s.Txn().Set("iface/eth0", kvtest.Value("mtu=9000")).Commit(context.Background()); err != nil {
		log.Fatal(err)
	}

	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		line := lines.Text()
		if strings.HasPrefix(line, "kvdescriptor_") && !strings.HasSuffix(line, " 0") &&
			!strings.Contains(line, "_bucket") && !strings.Contains(line, "_sum") {
			fmt.Println(line)
		}
	}
	// Output:
	// kvdescriptor_scheduler_operation_duration_seconds_count{descriptor="iface",op="create"} 1
	// kvdescriptor_scheduler_operations_total{descriptor="iface",op="create",result="ok"} 1
	// kvdescriptor_scheduler_transaction_duration_seconds_count{kind="nb"} 1
	// kvdescriptor_scheduler_transactions_total{kind="nb",outcome="ok"} 1
	// kvdescriptor_scheduler_values{state="CONFIGURED"} 1
}
