//go:build linux

package linux

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
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
	// opened (WithAllowedNamespaces); no PID is allowed then.
	allowed map[string]bool
	// dirs are the directories whose files may be named by path
	// (WithNamespaceDirs), each with its symbolic links resolved.
	dirs []string
}

func newNamespaces(def netns.NsHandle, allowed map[string]bool, dirs []string) *namespaces {
	return &namespaces{def: def, byName: map[string]*namespace{}, allowed: allowed, dirs: dirs}
}

// nsKey is where an interface lives, as the plugin keys its namespaces
// (and InterfaceMeta.Namespace says): "" for the plugin's own, a name, or
// an absolute path (/proc/PID/ns/net for a namespace named by PID). A
// name never holds '/', so the three never meet.
func nsKey(v *iface) string {
	switch v.GetNamespaceKind() {
	case linuxinterfaces.Interface_NAMESPACE_KIND_PID:
		return fmt.Sprintf("/proc/%d/ns/net", v.GetNamespacePid())
	case linuxinterfaces.Interface_NAMESPACE_KIND_PATH:
		return v.GetNamespacePath()
	}
	return v.GetNamespace()
}

// pidPath matches the network namespace file of a process.
var pidPath = regexp.MustCompile(`^/proc/[1-9][0-9]*/ns/net$`)

// checkPath says why the plugin refuses a namespace named by a path: a
// process's (/proc/PID/ns/net) while the plugin is limited to names, or
// a path that is not absolute and clean, or not under an allowed
// directory once its symbolic links are resolved.
func (s *namespaces) checkPath(p string) error {
	if pidPath.MatchString(p) {
		if s.allowed != nil {
			return fmt.Errorf("%w: %s: a namespace by PID, while the plugin may configure only %s", errNamespace, p, s.allowedList())
		}
		return nil
	}
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("%w: %q is not an absolute path in its shortest form", errNamespace, p)
	}
	if len(s.dirs) == 0 {
		return fmt.Errorf("%w: %s: the plugin allows no directory of network namespaces (WithNamespaceDirs)", errNamespace, p)
	}
	under := func(p string) bool {
		return slices.ContainsFunc(s.dirs, func(d string) bool { return within(d, p) })
	}
	if !under(p) {
		return fmt.Errorf("%w: %s is not under a directory the plugin allows (%s)", errNamespace, p, strings.Join(s.dirs, ", "))
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if _, lerr := os.Lstat(p); lerr == nil {
			return fmt.Errorf("%w: %s leads to no file (%v)", errNamespace, p, err)
		}
		return nil // missing: opening it fails later, and says so
	}
	if !under(real) {
		return fmt.Errorf("%w: %s leads to %s, not under a directory the plugin allows (%s)", errNamespace, p, real, strings.Join(s.dirs, ", "))
	}
	return nil
}

// within reports whether p is a file under (not at) dir.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..")
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
	if strings.HasPrefix(name, "/") {
		return s.checkPath(name)
	}
	if r := kv.CheckPlainName(name); r != "" {
		return fmt.Errorf("%w: %s (a network namespace is a file name under %s)", errNamespace, r, NetnsDir)
	}
	if s.allowed != nil && !s.allowed[name] {
		return fmt.Errorf("%w: %q is not among the namespaces the plugin may configure (%s)", errNamespace, name, s.allowedList())
	}
	return nil
}

// validate adds to errs the refusal of v's namespace by the plugin's
// options, naming the field that names it. A name that is not a plain
// name is left to the schema, which makes the value INVALID naming
// namespace already (and check refuses to open it all the same).
func (s *namespaces) validate(v *iface, errs *kv.InvalidValueError) *kv.InvalidValueError {
	field := map[linuxinterfaces.Interface_NamespaceKind]string{
		linuxinterfaces.Interface_NAMESPACE_KIND_PID:  "namespace_pid",
		linuxinterfaces.Interface_NAMESPACE_KIND_PATH: "namespace_path",
	}[v.GetNamespaceKind()]
	if nsKey(v) == "" || field == "namespace_pid" && v.GetNamespacePid() == 0 || field == "" && kv.CheckPlainName(v.GetNamespace()) != "" {
		return errs // the schema says what is wrong
	}
	check := s.check
	if field == "namespace_path" {
		check = s.checkPath // not a name, even without a leading '/'
	}
	if err := check(nsKey(v)); err != nil {
		errs = errs.Add(cmp.Or(field, "namespace"), "%s", strings.TrimPrefix(err.Error(), errNamespace.Error()+": "))
	}
	return errs
}

// validateName adds to errs the refusal of a namespace name by the
// allow-list, naming the field namespace; a name that is not a plain
// name is left to the schema.
func (s *namespaces) validateName(name string, errs *kv.InvalidValueError) *kv.InvalidValueError {
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
	if strings.HasPrefix(name, "/") {
		return name, nil // checkPath vetted it
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
		// (or at the path, or the process's: nsenter --net=PATH)
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
