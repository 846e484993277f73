//go:build linux

package linux

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
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

// NetnsDir is the directory of the named network namespaces (where `ip
// netns add NAME` binds one): a namespace name is a file name in it.
const NetnsDir = "/var/run/netns"

// namespaces caches a handle per namespace name; "" is the plugin's own.
type namespaces struct {
	mu     sync.Mutex
	def    netns.NsHandle
	byName map[string]*namespace
	// allowed, when not nil, holds the only names besides "" that may be
	// opened (WithAllowedNamespaces).
	allowed map[string]bool
}

func newNamespaces(def netns.NsHandle, allowed map[string]bool) *namespaces {
	return &namespaces{def: def, byName: map[string]*namespace{}, allowed: allowed}
}

// errNamespace marks a namespace name that the plugin refuses.
var errNamespace = errors.New("network namespace refused")

// check says why the plugin refuses to touch the named namespace: a name
// that is not a plain name (a path, "..") or not allowed. "" (the
// plugin's own) is always allowed.
func (s *namespaces) check(name string) error {
	if name == "" {
		return nil
	}
	if r := kv.CheckPlainName(name); r != "" {
		return fmt.Errorf("%w: %s (a network namespace is a file name under %s)", errNamespace, r, NetnsDir)
	}
	if s.allowed != nil && !s.allowed[name] {
		return fmt.Errorf("%w: %q is not among the namespaces the plugin may configure (%s)", errNamespace, name, s.allowedList())
	}
	return nil
}

// validate adds to errs the namespace's refusal by the allow-list, naming
// the field namespace. A name that is not a plain name is left to the
// schema, which makes the value INVALID naming namespace already (and
// check refuses to open it all the same).
func (s *namespaces) validate(name string, errs *kv.InvalidValueError) *kv.InvalidValueError {
	if kv.CheckPlainName(name) != "" {
		return errs
	}
	if err := s.check(name); err != nil {
		errs = errs.Add("namespace", "%s", strings.TrimPrefix(err.Error(), errNamespace.Error()+": "))
	}
	return errs
}

// allowedList is the allow-list for messages, sorted.
func (s *namespaces) allowedList() string {
	names := make([]string, 0, len(s.allowed))
	for n := range s.allowed {
		names = append(names, fmt.Sprintf("%q", n))
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "only the plugin's own"
	}
	return "the plugin's own and " + strings.Join(names, ", ")
}

// path returns the file of a named namespace: under NetnsDir, and only
// there, whatever the name (which check vets first, so that a name that
// validation should have rejected still never leaves the directory).
func (s *namespaces) path(name string) (string, error) {
	if err := s.check(name); err != nil {
		return "", err
	}
	p := filepath.Join(NetnsDir, name)
	if filepath.Dir(p) != NetnsDir {
		return "", fmt.Errorf("%w: %q resolves to %s, outside %s", errNamespace, name, p, NetnsDir)
	}
	return p, nil
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
		path, err := s.path(name)
		if err != nil {
			return nil, err
		}
		// ip netns exec NAME ...: the namespace bound at /var/run/netns/NAME
		if ns, err = netns.GetFromPath(path); err != nil {
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
