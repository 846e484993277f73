package vpp

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/core"
)

// staleStreamWait bounds how long a reconnect waits for the streams
// opened before it (see gate).
var staleStreamWait = time.Minute

// errStreamEnded is what a stream returns once a send on it failed.
var errStreamEnded = errors.New("stream ended: a send on it failed (connection lost?)")

// gate keeps govpp from reconnecting while a stream of the connection
// that was lost is still open. govpp (v0.13.0, the latest release)
// rewrites its table of message ids at each reconnect without the lock
// its readers take, and a stream looks that table up for each reply it
// returns: a dump whose replies wait in its stream while VPP restarts
// could crash the agent ("concurrent map read and map write"). So the
// adapter's Connect, which govpp calls just before it rewrites the
// table, first waits until every stream, call and channel opened before
// it has ended (they fail or time out once VPP is gone). Those opened
// while it waits cannot be answered before the table is complete (govpp
// sends nothing until then), so they are not waited for.
type gate struct {
	mu      sync.Mutex
	cond    *sync.Cond
	epoch   uint64         // the connections begun (Connect calls)
	open    map[uint64]int // streams open, by the epoch they began in
	waiting bool           // a Connect waits for streams of earlier epochs
	closed  bool           // the plugin is closing: waits end
	logger  *slog.Logger
}

func newGate(logger *slog.Logger) *gate {
	g := &gate{open: map[uint64]int{}, logger: logger}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// enter counts a stream opening; the function returned, called once or
// more, counts it ended.
func (g *gate) enter() func() {
	g.mu.Lock()
	e := g.epoch
	g.open[e]++
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			if g.open[e]--; g.open[e] == 0 {
				delete(g.open, e)
			}
			g.cond.Broadcast()
			g.mu.Unlock()
		})
	}
}

// stale counts the streams opened before the current epoch.
func (g *gate) stale() int {
	n := 0
	for e, c := range g.open {
		if e < g.epoch {
			n += c
		}
	}
	return n
}

// beginConnect starts an epoch and waits until the streams of the
// earlier ones have ended, the plugin closes, or staleStreamWait passed
// (a stream never closed: its replies are not read, and no longer in
// danger).
func (g *gate) beginConnect() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.epoch++
	if g.stale() == 0 || g.closed {
		return nil
	}
	expired := false
	t := time.AfterFunc(staleStreamWait, func() {
		g.mu.Lock()
		expired = true
		g.cond.Broadcast()
		g.mu.Unlock()
	})
	defer t.Stop()
	g.waiting = true
	defer func() { g.waiting = false }()
	for g.stale() > 0 && !g.closed && !expired {
		g.cond.Wait()
	}
	switch {
	case g.closed:
		return errors.New("vpp plugin: closing")
	case expired:
		g.logger.Error("vpp: reconnecting while streams of the lost connection are still open (not closed by their owner?)",
			"streams", g.stale(), "waited", staleStreamWait.String())
	}
	return nil
}

// held says whether a reconnect waits for streams to end.
func (g *gate) held() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting
}

// close ends the waits.
func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	g.cond.Broadcast()
	g.mu.Unlock()
}

// gatedAdapter is the adapter to VPP whose Connect waits at the gate.
type gatedAdapter struct {
	adapter.VppAPI
	g *gate
}

func (a gatedAdapter) Connect() error {
	if err := a.g.beginConnect(); err != nil {
		return err
	}
	return a.VppAPI.Connect()
}

// vppConn is the plugin's connection to VPP: govpp's, with its streams,
// calls and channels counted at the gate.
type vppConn struct {
	*core.Connection
	g *gate
}

func (c vppConn) NewStream(ctx context.Context, opts ...api.StreamOption) (api.Stream, error) {
	leave := c.g.enter()
	s, err := c.Connection.NewStream(ctx, opts...)
	if err != nil {
		leave()
		return nil, err
	}
	return &gatedStream{Stream: s, leave: leave}, nil
}

func (c vppConn) Invoke(ctx context.Context, req, reply api.Message) error {
	defer c.g.enter()()
	return c.Connection.Invoke(ctx, req, reply)
}

func (c vppConn) NewAPIChannel() (api.Channel, error) {
	leave := c.g.enter()
	ch, err := c.Connection.NewAPIChannel()
	if err != nil {
		leave()
		return nil, err
	}
	return gatedChannel{Channel: ch, leave: leave}, nil
}

// gatedStream ends at its Close, or at a failed send: govpp's generated
// dump calls do not close a stream whose send failed (v0.13.0), and a
// reconnect would wait for it. It returns no more replies then.
type gatedStream struct {
	api.Stream
	leave func()
	ended atomic.Bool
}

func (s *gatedStream) SendMsg(m api.Message) error {
	if s.ended.Load() {
		return errStreamEnded
	}
	err := s.Stream.SendMsg(m)
	if err != nil {
		s.ended.Store(true)
		s.leave()
	}
	return err
}

func (s *gatedStream) RecvMsg() (api.Message, error) {
	if s.ended.Load() {
		return nil, errStreamEnded
	}
	return s.Stream.RecvMsg()
}

func (s *gatedStream) Close() error {
	s.ended.Store(true)
	defer s.leave()
	return s.Stream.Close()
}

type gatedChannel struct {
	api.Channel
	leave func()
}

func (c gatedChannel) Close() {
	c.Channel.Close()
	c.leave()
}
