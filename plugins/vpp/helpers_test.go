package vpp

import (
	"context"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func TestMain(m *testing.M) {
	// A restarted VPP is noticed at the next probe, within ~20ms: the
	// fake's socket then refuses writes (fakeVPP.SendMsg), which the probe
	// reports at once. A probe's reply may be late on a loaded machine:
	// the reply timeout is generous, or govpp takes three late replies in
	// a row for a VPP gone and reconnects while a test runs
	// (TestSlowVPPStaysConnected).
	core.HealthCheckProbeInterval = 20 * time.Millisecond
	core.HealthCheckReplyTimeout = 5 * time.Second
	core.SetLogLevel(logrus.ErrorLevel)
	os.Exit(m.Run())
}

// testWriter sends log output to t.Log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// newPlugin returns a plugin connected to a fake VPP.
func newPlugin(t testing.TB, opts ...Option) (*Plugin, *fakeVPP) {
	t.Helper()
	f := newFakeVPP(t)
	p, err := New(append([]Option{WithAdapter(f), WithLogger(testLogger(t)), WithRetryInterval(20 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, f
}

// expectRequests checks the requests the fake received since the last
// check.
func expectRequests(t testing.TB, f *fakeVPP, want ...api.Message) {
	t.Helper()
	if diff := cmp.Diff(want, f.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// env is a scheduler with the plugin's descriptors over a fake VPP.
type env struct {
	t   testing.TB
	ctx context.Context
	p   *Plugin
	f   *fakeVPP
	s   *scheduler.Scheduler
}

func newEnv(t testing.TB, opts ...Option) *env {
	t.Helper()
	return newEnvWith(t, nil, opts...)
}

// newEnvWith is newEnv with options of the scheduler too.
func newEnvWith(t testing.TB, sopts []scheduler.Option, opts ...Option) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background()}
	s, err := scheduler.New(append([]scheduler.Option{scheduler.WithLogger(testLogger(t))}, sopts...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.s = s
	e.p, e.f = newPlugin(t, opts...)
	t.Cleanup(func() {
		if err := s.Close(e.ctx); err != nil {
			t.Errorf("closing the scheduler: %v", err)
		}
	})
	if err := s.Register(e.p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	return e
}

// expect checks the state of keys.
func (e *env) expect(state scheduler.State, keys ...string) {
	e.t.Helper()
	for _, k := range keys {
		if st := e.s.Status(k); st.State != state {
			e.t.Errorf("%s: %s (last error: %v), want %s", k, st.State, st.LastErr, state)
		}
	}
}

// eventually waits up to 30s for key to reach state (a bound for a
// loaded machine, under -race; it returns as soon as the state is there).
func (e *env) eventually(state scheduler.State, key string) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if e.s.Status(key).State == state {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := e.s.Status(key)
	e.t.Fatalf("%s: %s after 30s (last error: %v), want %s", key, st.State, st.LastErr, state)
}

// protoCmp compares items: protobuf values as such, netip and MAC keys
// by their value.
var protoCmp = cmp.Options{protocmp.Transform(), cmpopts.EquateComparable(netip.Prefix{}, netip.Addr{})}
