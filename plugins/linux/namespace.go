//go:build linux

package linux

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// namespace is one network namespace with a netlink handle bound to it.
type namespace struct {
	name string
	ns   netns.NsHandle
	h    *netlink.Handle

	batchMu sync.Mutex
	batch   *batchSocket // opened on first use
}

// batchSocket returns the namespace's batch socket, opening it on first
// use.
func (n *namespace) batchSocket() (*batchSocket, error) {
	n.batchMu.Lock()
	defer n.batchMu.Unlock()
	if n.batch == nil {
		s, err := openBatchSocket(n.ns, batchRcvbuf)
		if err != nil {
			return nil, fmt.Errorf("network namespace %q: %w", n.name, err)
		}
		n.batch = s
	}
	return n.batch, nil
}

// namespaces caches a handle per namespace name; "" is the plugin's own.
type namespaces struct {
	mu     sync.Mutex
	def    netns.NsHandle
	byName map[string]*namespace
}

func newNamespaces(def netns.NsHandle) *namespaces {
	return &namespaces{def: def, byName: map[string]*namespace{}}
}

// get returns the namespace of the given name, opening it on first use.
func (s *namespaces) get(name string) (*namespace, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.byName[name]; n != nil {
		return n, nil
	}
	if s.byName == nil {
		return nil, errors.New("linux plugin: closed")
	}
	ns := s.def
	if name != "" {
		var err error
		// ip netns exec NAME ...: the namespace bound at /var/run/netns/NAME
		if ns, err = netns.GetFromName(name); err != nil {
			return nil, fmt.Errorf("network namespace %q: %w", name, err)
		}
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		if name != "" {
			ns.Close()
		}
		return nil, fmt.Errorf("netlink handle in network namespace %q: %w", name, err)
	}
	n := &namespace{name: name, ns: ns, h: h}
	s.byName[name] = n
	return n, nil
}

func (s *namespaces) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, n := range s.byName {
		n.h.Close()
		n.batchMu.Lock()
		if n.batch != nil {
			n.batch.Close()
		}
		n.batchMu.Unlock()
		if name != "" {
			n.ns.Close()
		}
	}
	s.byName = nil
	s.def.Close()
}

// inNamespace runs f on a locked OS thread switched to ns, and switches
// the thread back before unlocking it. Only calls that the kernel scopes
// to the calling thread's namespace need it (TAP creation is an ioctl on
// /dev/net/tun). When the thread cannot be switched back it stays locked,
// so the Go runtime retires it with its goroutine.
func inNamespace(ns netns.NsHandle, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("the thread's network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering a network namespace: %w", err)
			return
		}
		ferr := f()
		if err := netns.Set(orig); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("restoring the thread's network namespace: %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}
