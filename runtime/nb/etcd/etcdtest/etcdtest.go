// Package etcdtest starts real etcd server processes for tests: Debian's
// etcd-server (make tools installs it), on localhost ports of its own and a
// temporary data directory, stopped and started again on the same data like
// a server in production. Without the etcd binary a test fails (the
// repository's convention: make test installs every tool first).
package etcdtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Server is a real etcd server process (Debian's etcd-server, which make
// tools installs), on localhost ports of its own and a temporary data
// directory. It can be stopped and started again on the same data.
type Server struct {
	t   testing.TB
	bin string
	// Dir is the data directory.
	Dir string
	// URL is the client URL.
	URL  string
	peer string
	// name and cluster are the member's name and --initial-cluster
	// (a single-member cluster when empty).
	name    string
	cluster string
	mu      sync.Mutex
	cmd     *exec.Cmd
	out     *bytes.Buffer
	exited  chan struct{}
}

// Binary returns the etcd server's path, or fails the test: make test
// installs every tool first (make tools), so a skip would only hide a
// broken set-up (the convention of the repository's other tool tests).
func Binary(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("etcd"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/etcd"); err == nil {
		return "/usr/bin/etcd"
	}
	t.Fatalf("the etcd server is needed by this test and is not in PATH nor /usr/bin/etcd; make tools installs it (Debian package etcd-server)")
	return ""
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts an etcd server and stops it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		t:    t,
		bin:  Binary(t),
		Dir:  filepath.Join(t.TempDir(), "etcd"),
		URL:  fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
		peer: fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
	}
	t.Cleanup(s.Stop)
	s.Start()
	return s
}

// Start starts the process (again) and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	s.spawn()
	s.waitReady()
}

// spawn starts the process.
func (s *Server) spawn() {
	s.t.Helper()
	s.mu.Lock()
	name, cluster := s.name, s.cluster
	if name == "" {
		name, cluster = "test", "test="+s.peer
	}
	cmd := exec.Command(s.bin,
		"--name", name,
		"--data-dir", s.Dir,
		"--listen-client-urls", s.URL,
		"--advertise-client-urls", s.URL,
		"--listen-peer-urls", s.peer,
		"--initial-advertise-peer-urls", s.peer,
		"--initial-cluster", cluster,
		"--initial-cluster-token", "etcdtest",
		"--logger", "zap",
		"--log-level", "error",
	)
	s.out = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		s.t.Fatalf("start etcd: %v", err)
	}
	s.cmd = cmd
	exited := make(chan struct{})
	s.exited = exited
	go func() { _ = cmd.Wait(); close(exited) }()
	s.mu.Unlock()
}

// waitReady waits until the server answers a linearizable read (in a
// cluster: until it has a leader).
func (s *Server) waitReady() {
	s.t.Helper()
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	c := s.Dial()
	defer c.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Get(ctx, "health")
		cancel()
		if err == nil {
			return
		}
		select {
		case <-exited:
			s.t.Fatalf("etcd exited at start: %s", s.Output())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("etcd did not answer in 60s: %v\n%s", err, s.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Output is what the server printed.
func (s *Server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// Stop stops the process (SIGTERM, then SIGKILL after 10s) and waits for it.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Kill kills the process with SIGKILL (a crash: no clean shutdown) and
// waits for it to exit.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Running says whether the process was started and not stopped or killed.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// NewClient returns a client of the server, closed when the test ends
// (after the sources that use it, started later, have stopped).
func (s *Server) NewClient() *clientv3.Client {
	s.t.Helper()
	c := s.Dial()
	s.t.Cleanup(func() { c.Close() })
	return c
}

// Dial returns a new client of the server; the caller closes it.
func (s *Server) Dial() *clientv3.Client {
	s.t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{s.URL},
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}
