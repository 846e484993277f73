package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
)

// The bounds of the live updates (GET events: server-sent events).
const (
	// DefaultMaxLiveStreams bounds the pages open live at once, per page
	// handler; one more gets 503 and the page says that live updates are
	// off.
	DefaultMaxLiveStreams = 32
	// DefaultLiveStreamLifetime bounds one stream's life: the page
	// closes it then and the browser opens a new one at once (so a page
	// open for days holds a stream for this long at most, and a stream
	// whose reader is gone ends by then at the latest).
	DefaultLiveStreamLifetime = 10 * time.Minute
	// liveKeepalive is the interval of the comment lines that keep a
	// quiet stream's proxies open and find a reader that is gone.
	liveKeepalive = 15 * time.Second
	// liveRetry is how long the browser waits before it opens a new
	// stream (EventSource's retry).
	liveRetry = 2 * time.Second
	// liveFeed is how often an open live stream feeds the plots' ring.
	liveFeed = 30 * time.Second
)

// funcWatcher is a service of this program that streams status changes
// to a function: *api.Service (WatchFunc).
type funcWatcher interface {
	WatchFunc(context.Context, *connect.Request[apiv1.WatchRequest], func(*apiv1.WatchResponse) error) error
}

// clientWatcher is a client of a remote agent
// (apiv1connect.AgentServiceClient): its Watch.
type clientWatcher interface {
	Watch(context.Context, *connect.Request[apiv1.WatchRequest]) (*connect.ServerStreamForClient[apiv1.WatchResponse], error)
}

// watchFunc streams the status changes of the service, the first message
// empty once the watch is registered; nil when the service cannot watch.
func watchFunc(svc Service) func(context.Context, *connect.Request[apiv1.WatchRequest], func(*apiv1.WatchResponse) error) error {
	switch w := svc.(type) {
	case funcWatcher:
		return w.WatchFunc
	case clientWatcher:
		return func(ctx context.Context, req *connect.Request[apiv1.WatchRequest], send func(*apiv1.WatchResponse) error) error {
			s, err := w.Watch(ctx, req)
			if err != nil {
				return err
			}
			defer s.Close()
			// The stream's headers come once the watch is
			// registered.
			s.ResponseHeader()
			if err := s.Err(); err != nil {
				return err
			}
			if err := send(&apiv1.WatchResponse{}); err != nil {
				return err
			}
			for s.Receive() {
				if err := send(s.Msg()); err != nil {
					return err
				}
			}
			return s.Err()
		}
	}
	return nil
}

// liveEvent is one status change as the page's script reads it (the data
// of an event "status").
type liveEvent struct {
	Key    string `json:"key"`
	State  string `json:"state"`
	Error  string `json:"error,omitempty"`
	LastOp string `json:"last_op,omitempty"`
	Seq    uint64 `json:"seq,omitempty"`
	Owner  string `json:"owner,omitempty"`
}

// liveStreams counts the open streams of a handler.
type liveStreams struct {
	open     atomic.Int64
	max      int64
	lifetime time.Duration
}

// events serves the live updates of the values under ?prefix= as
// server-sent events: "ready" once the watch is registered, "status" for
// each change (JSON: key, state, error, last_op, seq, owner), "lost" when
// the agent dropped updates for a slow reader (re-read the page), "end"
// when the stream's lifetime is over (the browser opens a new one).
func (h *handler) events(w http.ResponseWriter, rq *request) {
	q, err := args(rq.r, "prefix")
	if err != nil {
		h.errorPage(w, err, rq.authed)
		return
	}
	if h.watch == nil {
		h.errorPage(w, &pageError{code: http.StatusNotImplemented,
			msg: "live updates: the page's service cannot stream (it has neither WatchFunc nor a client's Watch)"}, rq.authed)
		return
	}
	if n := h.live.open.Add(1); n > h.live.max {
		h.live.open.Add(-1)
		w.Header().Set("Retry-After", "60")
		h.errorPage(w, &pageError{code: http.StatusServiceUnavailable,
			msg: fmt.Sprintf("live updates: %d pages are open live, the most this agent serves (ui.Options.MaxLiveStreams); reload later", h.live.max)}, rq.authed)
		return
	}
	defer h.live.open.Add(-1)
	ctx, cancel := context.WithTimeout(rq.r.Context(), h.live.lifetime)
	defer cancel()
	rc := http.NewResponseController(w)
	// The server's read timeout must not end the stream before its
	// lifetime does (its request was read long ago).
	_ = rc.SetReadDeadline(time.Now().Add(h.live.lifetime + time.Minute))
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Accel-Buffering", "no")

	// The watch runs on its own goroutine: it sends into a bounded
	// channel, and this one writes to the browser, with the keepalive.
	msgs := make(chan *apiv1.WatchResponse, 256)
	var dropped atomic.Uint64
	done := make(chan error, 1)
	go func() {
		done <- h.watch(ctx, call(rq, &apiv1.WatchRequest{Prefix: q["prefix"]}), func(m *apiv1.WatchResponse) error {
			select {
			case msgs <- m:
			default:
				dropped.Add(1)
			}
			return nil
		})
	}()
	write := func(event, data string) error {
		var b strings.Builder
		if event != "" {
			b.WriteString("event: " + event + "\n")
		}
		for _, line := range strings.Split(data, "\n") {
			b.WriteString("data: " + line + "\n")
		}
		b.WriteString("\n")
		if _, err := w.Write([]byte(b.String())); err != nil {
			return err
		}
		return rc.Flush()
	}
	started := false
	start := func() error {
		if started {
			return nil
		}
		started = true
		w.WriteHeader(http.StatusOK)
		_, err := fmt.Fprintf(w, "retry: %d\n\n", liveRetry.Milliseconds())
		return err
	}
	keep := time.NewTicker(liveKeepalive)
	defer keep.Stop()
	// While a page is open live, the plots' ring is fed.
	feed := time.NewTicker(liveFeed)
	defer feed.Stop()
	var lost uint64
	for {
		select {
		case err := <-done:
			// The watch ended: the lifetime, the browser gone, the
			// agent closing, or its refusal.
			if !started {
				if err == nil {
					err = errors.New("live updates: the watch ended")
				}
				var ce *connect.Error
				if errors.As(err, &ce) && ce.Code() == connect.CodeUnauthenticated {
					h.errorPage(w, &pageError{code: http.StatusUnauthorized, msg: ce.Message()}, rq.authed)
					return
				}
				h.errorPage(w, err, rq.authed)
				return
			}
			if ctx.Err() != nil && rq.r.Context().Err() == nil {
				_ = write("end", "lifetime")
			} else if err != nil {
				_ = write("end", err.Error())
			}
			return
		case <-feed.C:
			if err := h.feed(rq.r.Context(), rq.calls, h.now()); err != nil {
				h.logger.Debug("ui: feeding the plots", "err", err)
			}
		case <-keep.C:
			if !started {
				continue
			}
			if _, err := w.Write([]byte(": keepalive\n\n")); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		case m := <-msgs:
			if err := start(); err != nil {
				return
			}
			var werr error
			switch {
			case m.GetStatus() != nil:
				st := m.GetStatus()
				b, _ := json.Marshal(liveEvent{Key: st.GetKey(), State: st.GetState(), Error: st.GetError(),
					LastOp: st.GetLastOp(), Seq: st.GetSeq(), Owner: st.GetOwner()})
				werr = write("status", string(b))
			case m.GetLostUpdates() > 0:
				werr = write("lost", fmt.Sprint(m.GetLostUpdates()))
			default:
				werr = write("ready", "")
			}
			if werr != nil {
				return
			}
			if d := dropped.Load(); d > lost {
				if write("lost", fmt.Sprint(d-lost)) != nil {
					return
				}
				lost = d
			}
		}
	}
}
