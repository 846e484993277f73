package vpp

import (
	"context"
	"errors"
	"strings"
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
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := h.Create(context.Background(), vppinterfaces.InterfaceKey{Name: "lo1"}, &vppinterfaces.Interface{Name: "lo1"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing 5s after VPP came: %v", err)
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
