//go:build linux

package linux

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	linuxnftables "github.com/kvdescriptor/kvdescriptor/generated/linux/nftables/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// DefaultRouteProtocol is the protocol number (rtm_protocol) that marks the
// routes the plugin creates: Retrieve reports only routes that carry it.
// It is not one of the numbers in iproute2's rt_protos list.
const DefaultRouteProtocol = 0xd4

// InterfaceMeta is the metadata of an interface: where it lives in the
// kernel. Route, neighbour, address and bridge-membership handlers find
// their interface through it, by label.
type InterfaceMeta struct {
	// Index is the interface index (ifindex) in Namespace.
	Index int
	// Namespace is the network namespace: by name, or an absolute path
	// (/proc/PID/ns/net for one named by PID); "" is the plugin's.
	Namespace string
	// HostName is the name in the kernel.
	HostName string
}

// Plugin holds the descriptors of the Linux models and the namespaces
// they work in. Build it with New, register Descriptors with a scheduler,
// and Close it when the scheduler is closed.
type Plugin struct {
	opts options
	ns   *namespaces

	iface     *kv.TypedDescriptor[linuxinterfaces.InterfaceKey, *linuxinterfaces.Interface, InterfaceMeta]
	addr      kv.Descriptor
	master    kv.Descriptor
	route     kv.Descriptor
	neighbour kv.Descriptor
	rule      kv.Descriptor
	nftTable  *kv.TypedDescriptor[linuxnftables.TableKey, *linuxnftables.Table, NftMeta]
	nftChain  *kv.TypedDescriptor[linuxnftables.ChainKey, *linuxnftables.Chain, NftMeta]
	nftRule   kv.Descriptor
	nftFound  nftRetrieved

	// owned holds the host names of the interfaces the plugin created (or
	// is creating, or found by Retrieve) in its own namespace, for the
	// watcher: they are never reported as obtained.
	// disowned holds, for a name no longer owned, the ownSeq of that
	// change: a watcher's scan that began before it treats the link as
	// the plugin's still (a failed create's link it listed, deleted
	// since, is not another program's).
	ownedMu  sync.Mutex
	owned    map[string]bool
	disowned map[string]uint64
	ownSeq   uint64

	// retrieved holds where the interfaces' last Retrieve found each
	// interface, by label: the other descriptors' Retrieve runs before the
	// scheduler has adopted the interfaces (and their metadata).
	retrievedMu sync.Mutex
	retrieved   map[string]InterfaceMeta
}

type options struct {
	// ns is the plugin's namespace; -1: the caller's, read by New.
	ns netns.NsHandle
	// routeProtocol marks the plugin's routes.
	routeProtocol int
	// claimRoutes: every route with routeProtocol is the plugin's, not
	// only those the scheduler expects (WithClaimedRouteProtocol).
	claimRoutes bool
	// debounce is how long the watcher waits for more events before it
	// reads the kernel's state and notifies.
	debounce time.Duration
	logger   *slog.Logger
	// allowed, when not nil, lists the only named namespaces values may
	// name (WithAllowedNamespaces).
	allowed map[string]bool
	// dirs are the directories under which values may name namespaces by
	// path (WithNamespaceDirs).
	dirs []string
	// nftSubscribe, when set, replaces the watcher's nftables
	// subscription (tests: a kernel without nftables).
	nftSubscribe func(ns netns.NsHandle, keep func(syscall.NetlinkMessage) bool, done <-chan struct{}, onErr func(error)) (<-chan struct{}, error)
	// nftList, when set, sees every listing of a chain's rules and may
	// change it (tests: a listing that fails or misses rules).
	nftList func([]*nftables.Rule, error) ([]*nftables.Rule, error)
	// nftEvent, when set, is told of every nftables event the watcher
	// receives that names a table, and whether it touched the nftables
	// descriptors (tests).
	nftEvent func(family nftables.TableFamily, table string, touched bool)
	// linkAdded, when set, runs in Create after the link was added and
	// before it is configured; scanListed, in the watcher's scan after
	// the links were listed and before they are judged (tests: a scan
	// that races with a create).
	linkAdded  func(host string)
	scanListed func()
}

func defaultOptions() options {
	return options{
		ns:            netns.None(),
		routeProtocol: DefaultRouteProtocol,
		debounce:      50 * time.Millisecond,
		logger:        slog.Default(),
	}
}

func (o *options) validate() error {
	if o.routeProtocol <= unix.RTPROT_STATIC || o.routeProtocol > 255 {
		return fmt.Errorf("route protocol %d: must be above %d (static) and at most 255", o.routeProtocol, unix.RTPROT_STATIC)
	}
	if o.debounce <= 0 {
		return fmt.Errorf("watcher debounce %s: must be positive", o.debounce)
	}
	if o.logger == nil {
		return errors.New("logger is nil")
	}
	for _, d := range o.dirs {
		if !filepath.IsAbs(d) || filepath.Clean(d) != d {
			return fmt.Errorf("network namespace directory %q: not an absolute path in its shortest form", d)
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			return fmt.Errorf("network namespace directory %q: %w", d, err)
		}
		if real != d { // paths name the one, their links lead to the other
			o.dirs = append(o.dirs, real)
		}
	}
	for name := range o.allowed {
		if r := kv.CheckPlainName(name); r != "" || name == "" {
			return fmt.Errorf("allowed network namespace %q: not a namespace name (a file name under %s)", name, NetnsDir)
		}
	}
	return nil
}

// Option configures a Plugin.
type Option func(*options)

// WithNamespace sets the plugin's network namespace: where values with an
// empty namespace live, and what Watch watches. The plugin keeps a
// duplicate of the handle; the caller still owns ns. Default: the network
// namespace of the thread that calls New.
func WithNamespace(ns netns.NsHandle) Option { return func(o *options) { o.ns = ns } }

// WithRouteProtocol sets the protocol number that marks the plugin's
// routes (default DefaultRouteProtocol). The number alone does not make a
// route the plugin's: Retrieve reports as its own (FROM_NB) only the
// routes the scheduler asks about (applied, intended or remembered: an
// agent's record), and the others with the number as another program's
// (FROM_SB: OBTAINED, never deleted), so two agents in one namespace with
// the same number leave each other's routes alone. Different numbers
// still tell them apart in `ip route` (and keep a value one intends from
// being adopted by the other).
func WithRouteProtocol(p uint8) Option { return func(o *options) { o.routeProtocol = int(p) } }

// WithClaimedRouteProtocol, when claim is true, makes every route with the
// plugin's protocol number its own: Retrieve reports them all as FROM_NB,
// so a full resync deletes (as STALE) those nothing intends, even if no
// record of the agent names them (a namespace cleaned of the routes of an
// earlier agent whose record is lost). Only for a protocol number that no
// other program in the namespace uses. Default false.
func WithClaimedRouteProtocol(claim bool) Option { return func(o *options) { o.claimRoutes = claim } }

// WithDebounce sets how long the watcher collects events before it acts
// on them (default 50ms).
func WithDebounce(d time.Duration) Option { return func(o *options) { o.debounce = d } }

// WithLogger sets the logger of the watcher's messages (default
// slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithAllowedNamespaces limits the network namespaces that values may name
// (Interface.namespace) to these names: a value naming another is INVALID
// (the error names the field namespace), and the plugin never opens it.
// The plugin's own namespace (the empty name) is always allowed; with no
// names, it is the only one. Without this option every named namespace
// (a file under NetnsDir) may be configured, and every process's
// (Interface.namespace_pid); with it, no process's is (a PID names no
// namespace the operator vetted).
func WithAllowedNamespaces(names ...string) Option {
	return func(o *options) {
		o.allowed = make(map[string]bool, len(names))
		for _, n := range names {
			o.allowed[n] = true
		}
	}
}

// WithNamespaceDirs lets values name network namespaces by path
// (Interface.namespace_path) under these directories, absolute paths
// (each also as its symbolic links resolve): a path elsewhere, or one that
// is not absolute and clean, is INVALID, the error naming the field
// namespace_path. Default: none, every path is refused. The allow-list of
// WithAllowedNamespaces does not apply to paths.
func WithNamespaceDirs(dirs ...string) Option {
	return func(o *options) { o.dirs = append([]string(nil), dirs...) }
}

// New builds the plugin and its descriptors.
func New(opts ...Option) (*Plugin, error) {
	o := defaultOptions()
	for _, f := range opts {
		f(&o)
	}
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("linux plugin: %w", err)
	}
	var def netns.NsHandle
	var err error
	if o.ns.IsOpen() {
		var fd int
		fd, err = unix.Dup(int(o.ns))
		def = netns.NsHandle(fd)
	} else {
		def, err = netns.Get()
	}
	if err != nil {
		return nil, fmt.Errorf("linux plugin: the plugin's network namespace: %w", err)
	}
	p := &Plugin{opts: o, ns: newNamespaces(def, o.allowed, o.dirs), owned: map[string]bool{}, disowned: map[string]uint64{}}
	if err := p.buildDescriptors(); err != nil {
		p.ns.close()
		return nil, fmt.Errorf("linux plugin: %w", err)
	}
	return p, nil
}

func (p *Plugin) buildDescriptors() (err error) {
	if p.iface, err = linuxinterfaces.NewInterfaceDescriptor[InterfaceMeta](&interfaces{p: p}); err != nil {
		return err
	}
	// The derived models' Retrieve runs after the interfaces' (which tells
	// where each interface is): their generated specs say so.
	if p.addr, err = linuxinterfaces.NewInterfaceIpAddressesDescriptor[struct{}](&addresses{p: p}); err != nil {
		return err
	}
	if p.master, err = linuxinterfaces.NewInterfaceMasterDescriptor[struct{}](&masters{p: p}); err != nil {
		return err
	}
	if p.route, err = linuxl3.NewRouteDescriptor[struct{}](&routes{p: p}); err != nil {
		return err
	}
	if p.neighbour, err = linuxl3.NewNeighbourDescriptor[struct{}](&neighbours{p: p}); err != nil {
		return err
	}
	if p.rule, err = linuxl3.NewRuleDescriptor[struct{}](&rules{p: p}); err != nil {
		return err
	}
	if p.nftTable, err = linuxnftables.NewTableDescriptor[NftMeta](&nftTables{p: p}); err != nil {
		return err
	}
	if p.nftChain, err = linuxnftables.NewChainDescriptor[NftMeta](&nftChains{p: p}); err != nil {
		return err
	}
	p.nftRule, err = linuxnftables.NewRuleDescriptor[struct{}](&nftRules{p: p})
	return err
}

// Descriptors returns the plugin's descriptors, to register with a
// scheduler: interfaces, their addresses and bridge memberships, routes,
// neighbours, policy routing rules, and nftables tables, chains and
// rules.
func (p *Plugin) Descriptors() []kv.Descriptor {
	return []kv.Descriptor{p.iface, p.addr, p.master, p.route, p.neighbour, p.rule, p.nftTable, p.nftChain, p.nftRule}
}

// Interfaces returns the interfaces' metadata by label.
func (p *Plugin) Interfaces() kv.MetadataMap[InterfaceMeta] { return p.iface.Metadata() }

// RouteProtocol returns the protocol number that marks the plugin's routes.
func (p *Plugin) RouteProtocol() int { return p.opts.routeProtocol }

// Close releases the namespace handles. Close the scheduler first.
func (p *Plugin) Close() error {
	p.ns.close()
	return nil
}

// link returns the namespace and index of the interface with the given
// label: from the metadata map (interfaces we created, and obtained ones
// with the metadata the watcher gave them), else from the interfaces' last
// Retrieve, else a link of that name in the plugin's namespace.
func (p *Plugin) link(label string) (*namespace, InterfaceMeta, error) {
	m, ok := p.Interfaces().Get(label)
	if !ok {
		p.retrievedMu.Lock()
		m, ok = p.retrieved[label]
		p.retrievedMu.Unlock()
	}
	if !ok {
		n, err := p.ns.get("")
		if err != nil {
			return nil, m, err
		}
		l, err := n.h.LinkByName(label)
		if err != nil {
			return nil, m, fmt.Errorf("interface %s: no index known and no link of that name: %w", label, notFound(err))
		}
		return n, InterfaceMeta{Index: l.Attrs().Index, HostName: label}, nil
	}
	n, err := p.ns.get(m.Namespace)
	return n, m, err
}

func (p *Plugin) own(namespace, host string, own bool) {
	if namespace != "" {
		return
	}
	p.ownedMu.Lock()
	defer p.ownedMu.Unlock()
	p.ownSeq++
	if own {
		p.owned[host] = true
		delete(p.disowned, host)
	} else if p.owned[host] {
		delete(p.owned, host)
		p.disowned[host] = p.ownSeq
	}
}

// ownMark marks the start of a scan, for ownedSince; the names disowned
// before the previous mark are forgotten.
func (p *Plugin) ownMark(prev uint64) uint64 {
	p.ownedMu.Lock()
	defer p.ownedMu.Unlock()
	for host, seq := range p.disowned {
		if seq <= prev {
			delete(p.disowned, host)
		}
	}
	return p.ownSeq
}

// ownedSince says whether host is the plugin's, or was at some time
// since mark (ownMark).
func (p *Plugin) ownedSince(host string, mark uint64) bool {
	p.ownedMu.Lock()
	defer p.ownedMu.Unlock()
	return p.owned[host] || p.disowned[host] > mark
}
