package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// states lists every state the scheduler names, in order.
var states = func() []scheduler.State {
	var out []scheduler.State
	for i := 0; i <= 255; i++ {
		s := scheduler.State(i)
		if p, ok := scheduler.ParseState(s.String()); ok && p == s {
			out = append(out, s)
		}
	}
	return out
}()

// Attach registers, with the Metrics' registerer, a collector that reads
// src's queue length and values per state at each scrape. A Metrics
// serves one source: attaching a second fails with ErrAttached until
// Detach.
func (m *Metrics) Attach(src Source) error {
	if src == nil {
		return fmt.Errorf("metrics: attach: nil source")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.attached != nil {
		return ErrAttached
	}
	c := &sourceCollector{src: src, queue: m.queueDesc, values: m.valuesDesc}
	if err := m.reg.Register(c); err != nil {
		return fmt.Errorf("metrics: attach: %w", err)
	}
	m.attached = c
	return nil
}

// Detach unregisters the collector that Attach registered, so that the
// registry no longer reads the source (a closed scheduler, say). It
// reports whether a source was attached.
func (m *Metrics) Detach() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.attached == nil {
		return false
	}
	m.reg.Unregister(m.attached)
	m.attached = nil
	return true
}

// sourceCollector reads the scrape-time figures of a source.
type sourceCollector struct {
	src           Source
	queue, values *prometheus.Desc
}

func (c *sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.queue
	ch <- c.values
}

func (c *sourceCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(c.src.QueueLen()))
	counts := c.src.StateCounts()
	for _, s := range states {
		ch <- prometheus.MustNewConstMetric(c.values, prometheus.GaugeValue, float64(counts[s]), s.String())
	}
}
