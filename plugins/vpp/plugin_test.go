package vpp

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.fd.io/govpp/adapter/mock"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
)

func TestNewWithoutVPP(t *testing.T) {
	t.Parallel()
	a := mock.NewVppAdapter()
	a.MockConnectError(errors.New("connection refused"))
	start := time.Now()
	_, err := New(WithAdapter(a), WithSocket("/run/nowhere.sock"), WithConnectTimeout(200*time.Millisecond), WithRetryInterval(20*time.Millisecond), WithLogger(testLogger(t)))
	if err == nil || !strings.Contains(err.Error(), "/run/nowhere.sock") {
		t.Errorf("New without VPP: %v, want an error naming the socket", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("New gave up after %s, want about its 200ms", d)
	}
}

func TestNewDoesNotWait(t *testing.T) {
	t.Parallel()
	f := newFakeVPP(t)
	f.Refuse(errors.New("connection refused"))
	p, err := New(WithAdapter(f), WithConnectTimeout(0), WithRetryInterval(20*time.Millisecond), WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	h := &interfaces{p: p}
	// No VPP yet: the call fails, retriably.
	if _, err := h.Create(context.Background(), vppinterfaces.InterfaceKey{Name: "lo1"}, &vppinterfaces.Interface{Name: "lo1"}); err == nil {
		t.Fatal("a call without VPP succeeded")
	}
	f.Refuse(nil)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := h.Create(context.Background(), vppinterfaces.InterfaceKey{Name: "lo1"}, &vppinterfaces.Interface{Name: "lo1"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing 30s after VPP came: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	if _, err := New(WithLogger(nil)); err == nil {
		t.Error("a nil logger is accepted")
	}
	if _, err := New(WithRetryInterval(0)); err == nil {
		t.Error("a zero retry interval is accepted")
	}
}

// TestSlowVPPStaysConnected: a VPP whose every reply comes 100 ms late
// (a loaded machine, under -race) is slow, not gone: the plugin keeps its
// connection. The tests' health check once gave a probe 20 ms: three late
// replies in a row made govpp report VPP not responding and reconnect
// while a test's calls ran (a data race inside govpp, and calls failing
// "not connected to VPP").
func TestSlowVPPStaysConnected(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	f := newFakeVPP(t)
	p, err := New(WithAdapter(f), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), WithRetryInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	f.SetLag(100 * time.Millisecond)
	start := f.Pings()
	for deadline := time.Now().Add(30 * time.Second); f.Pings() < start+10; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the fake answered %d health check probes in 30s, want 10", f.Pings()-start)
		}
	}
	if strings.Contains(logs.String(), "connection lost") {
		t.Errorf("the plugin lost a VPP that answered 100ms late:\n%s", logs.String())
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
