package fleet

import (
	"io"
	"net"
	"sync"
	"testing"
)

// proxy forwards TCP connections from a loopback port to one target (an
// etcd member's client port). Cut partitions what goes through it: every
// connection is dropped and a new one is closed as soon as accepted (with
// a reset), until Heal.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startProxy listens on a free loopback port and forwards to target; it
// stops when the test ends.
func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// URL is the proxy's address as an etcd endpoint.
func (p *proxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			reset(c)
			continue
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

// reset closes c with a TCP reset, as a refused or dropped connection.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// track records c, or refuses it (false) when the proxy is cut.
func (p *proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

func (p *proxy) forward(in net.Conn) {
	defer p.wg.Done()
	out, err := net.Dial("tcp", p.target[len("http://"):])
	if err != nil {
		reset(in)
		return
	}
	if !p.track(in, out) {
		reset(in)
		reset(out)
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	reset(in)
	reset(out)
	<-done
	p.untrack(in, out)
}

// Cut drops every connection and refuses new ones until Heal.
func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		reset(c)
	}
	clear(p.conns)
}

// Heal forwards new connections again.
func (p *proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

func (p *proxy) close() {
	p.Cut()
	_ = p.ln.Close()
	p.wg.Wait()
}
