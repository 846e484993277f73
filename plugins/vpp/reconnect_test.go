package vpp

import (
	"context"
	"testing"
	"time"

	vppif "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/core"
)

// waitUntil polls cond until it holds, failing the test after a
// generous bound.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("still waiting after 30s: %s", what)
		}
	}
}

// A VPP that restarts while a dump's replies wait in its stream: govpp
// v0.13.0 rewrites its message map on the reconnect without the lock its
// readers take, and the stream reads that map for each reply it returns
// (a fatal "concurrent map read and map write", or a report of -race).
// The plugin's connection holds the reconnect until the streams opened
// before it are closed.
func TestRestartDuringDumpWaitsForOpenStreams(t *testing.T) {
	reconnected := make(chan struct{}, 1)
	p, f := newPlugin(t, WithReconnect(func() {
		select {
		case reconnected <- struct{}{}:
		default:
		}
	}))
	const n = 200
	f.Do(func(f *fakeVPP) {
		for i := range n {
			f.newIf("loop"+string(rune('a'+i%26))+string(rune('a'+i/26)), "Loopback", [6]byte{})
		}
	})
	ctx := context.Background()
	s, err := p.conn.NewStream(ctx, core.WithReplySize(2*n))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if err := s.SendMsg(&vppif.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SendMsg(&memclnt.ControlPing{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecvMsg(); err != nil {
		t.Fatal(err)
	}
	// The replies are on their way to the stream when VPP goes away (a
	// reply still being handed over arrives too: the fake drops those of
	// a connection only when the client connects again).
	waitUntil(t, "the fake's replies sent", func() bool { return len(f.replies) == 0 })

	before := f.Connects()
	f.Restart()
	waitUntil(t, "the client reconnecting (or waiting to)", func() bool {
		return f.Connects() > before || reconnectHeld(p)
	})
	var got int
	for {
		m, err := s.RecvMsg()
		if err != nil {
			t.Fatalf("after %d details: %v", got, err)
		}
		if _, ok := m.(*memclnt.ControlPingReply); ok {
			break
		}
		if _, ok := m.(*vppif.SwInterfaceDetails); !ok {
			t.Fatalf("reply %T", m)
		}
		got++
	}
	if got != n { // local0 was the first
		t.Errorf("%d details read after the restart, want %d", got, n)
	}
	if c := f.Connects(); c != before {
		t.Errorf("the client connected again (%d times) while a stream opened before the restart was open", c-before)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reconnected:
	case <-time.After(30 * time.Second):
		t.Fatal("no reconnect 30s after the stream was closed")
	}
	// The connection works again, streams and all.
	if _, err := vppif.NewServiceClient(p.conn).SwInterfaceDump(ctx, &vppif.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}); err != nil {
		t.Fatal(err)
	}
}

func reconnectHeld(p *Plugin) bool { return p.conn.g.held() }
