package vpp

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/core"

	vppabf "github.com/kvdescriptor/kvdescriptor/generated/vpp/abf/v1"
	vppacl "github.com/kvdescriptor/kvdescriptor/generated/vpp/acl/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppipsec "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipsec/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	vppwireguard "github.com/kvdescriptor/kvdescriptor/generated/vpp/wireguard/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// DefaultSocket is the default path of VPP's binary API socket.
const DefaultSocket = socketclient.DefaultSocketName

// InterfaceMeta is the metadata of a VPP interface.
type InterfaceMeta struct {
	// SwIfIndex is VPP's index of the interface.
	SwIfIndex uint32
}

// BridgeDomainMeta is the metadata of a bridge domain.
type BridgeDomainMeta struct {
	// ID is the bridge domain's bd_id, which VPP allocated.
	ID uint32
}

// Plugin holds the connection to VPP and the descriptors of the VPP
// models. Build it with New, register Descriptors with a scheduler, and
// Close it after the scheduler.
type Plugin struct {
	opts options
	conn vppConn // govpp's connection, its streams counted (conn.go)
	done chan struct{}
	wg   sync.WaitGroup

	iface   *kv.TypedDescriptor[vppinterfaces.InterfaceKey, *vppinterfaces.Interface, InterfaceMeta]
	addr    kv.Descriptor
	unnum   kv.Descriptor
	bd      *kv.TypedDescriptor[vppl2.BridgeDomainKey, *vppl2.BridgeDomain, BridgeDomainMeta]
	binding kv.Descriptor
	fib     kv.Descriptor
	vrf     kv.Descriptor
	route   kv.Descriptor
	arp     kv.Descriptor
	nat     []kv.Descriptor // NAT44 (nat44global.go, nat44interface.go, nat44pool.go, dnat.go)
	// more are the descriptors registered with add, after those above.
	more []kv.Descriptor

	acl        *kv.TypedDescriptor[vppacl.ACLKey, *vppacl.ACL, ACLMeta]
	aclIn      kv.Descriptor
	aclOut     kv.Descriptor
	macip      *kv.TypedDescriptor[vppacl.MACIPACLKey, *vppacl.MACIPACL, ACLMeta]
	macipIf    kv.Descriptor
	aclFound   labelIndexes // what the last Retrieve of IP ACLs found
	macipFound labelIndexes // and of MAC-IP ACLs
	abf        kv.Descriptor
	abfIf      kv.Descriptor
	l2l3       []kv.Descriptor // l2l3.go: cross-connects, proxy ARP, VRRP, TEIB, neighbour tables
	wgPeer     kv.Descriptor
	ipsecSA    kv.Descriptor

	// retrieved holds what the last Retrieve of interfaces and bridge
	// domains found, by label: the other descriptors' Retrieve runs before
	// the scheduler has adopted their metadata.
	retrievedMu sync.Mutex
	retrievedIf map[string]uint32
	retrievedBD map[string]uint32

	compatMu     sync.Mutex
	incompatible []string // see Incompatible
}

type options struct {
	socket         string
	adapter        adapter.VppAPI
	logger         *slog.Logger
	onReconnect    func()
	connectTimeout time.Duration
	retryInterval  time.Duration
	puntDirs       []string // see WithPuntSocketDirs
}

// Option configures a Plugin.
type Option func(*options)

// WithSocket sets the path of VPP's API socket (default DefaultSocket).
func WithSocket(path string) Option { return func(o *options) { o.socket = path } }

// WithAdapter sets the govpp adapter to VPP instead of the socket client
// (tests pass govpp's mock adapter); WithSocket is then ignored.
func WithAdapter(a adapter.VppAPI) Option { return func(o *options) { o.adapter = a } }

// WithLogger sets the logger of the connection's events (default
// slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithReconnect sets what runs when VPP is connected again after the
// connection was lost: VPP restarted and has lost its state, so the agent
// runs a downstream resync. It runs on the plugin's own goroutine.
func WithReconnect(f func()) Option { return func(o *options) { o.onReconnect = f } }

// WithConnectTimeout sets how long New waits for the first connection
// (default 10s); 0: New does not wait, and calls fail (retriably) until
// VPP is there.
func WithConnectTimeout(d time.Duration) Option { return func(o *options) { o.connectTimeout = d } }

// WithRetryInterval sets the pause between connection attempts (default
// 1s).
func WithRetryInterval(d time.Duration) Option { return func(o *options) { o.retryInterval = d } }

// WithPuntSocketDirs lets punt values (vpp.punt.v1.ToHost, Exception)
// name sockets under these directories, absolute paths (each also as its
// symbolic links resolve): VPP sends punted packets to the socket_path a
// value names, so a path elsewhere, or one that is not absolute and clean,
// is INVALID, the error naming the field socket_path. Default: none, every
// path is refused.
func WithPuntSocketDirs(dirs ...string) Option {
	return func(o *options) { o.puntDirs = append([]string(nil), dirs...) }
}

// New connects to VPP and builds the plugin's descriptors.
func New(opts ...Option) (*Plugin, error) {
	o := options{socket: DefaultSocket, logger: slog.Default(), connectTimeout: 10 * time.Second, retryInterval: time.Second}
	for _, f := range opts {
		f(&o)
	}
	if o.logger == nil {
		return nil, errors.New("vpp plugin: logger is nil")
	}
	if o.retryInterval <= 0 {
		return nil, fmt.Errorf("vpp plugin: retry interval %s: must be positive", o.retryInterval)
	}
	for _, d := range o.puntDirs {
		if !filepath.IsAbs(d) || filepath.Clean(d) != d {
			return nil, fmt.Errorf("vpp plugin: punt socket directory %q: not an absolute path in its shortest form", d)
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			return nil, fmt.Errorf("vpp plugin: punt socket directory %q: %w", d, err)
		}
		if real != d { // paths name the one, their links lead to the other
			o.puntDirs = append(o.puntDirs, real)
		}
	}
	if o.adapter == nil {
		o.adapter = socketclient.NewVppClient(o.socket)
	}
	g := newGate(o.logger)
	c, events, err := core.AsyncConnect(gatedAdapter{VppAPI: o.adapter, g: g}, math.MaxInt32, o.retryInterval)
	if err != nil {
		return nil, fmt.Errorf("vpp plugin: connect to %s: %w", o.socket, err)
	}
	conn := vppConn{Connection: c, g: g}
	p := &Plugin{opts: o, conn: conn, done: make(chan struct{}), retrievedIf: map[string]uint32{}, retrievedBD: map[string]uint32{}}
	if err := p.buildDescriptors(); err != nil {
		conn.Disconnect()
		return nil, fmt.Errorf("vpp plugin: %w", err)
	}
	first := make(chan error, 1)
	p.wg.Add(1)
	go p.watch(events, first)
	if o.connectTimeout > 0 {
		select {
		case err = <-first:
		case <-time.After(o.connectTimeout):
			err = fmt.Errorf("no connection to VPP at %s within %s", o.socket, o.connectTimeout)
		}
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("vpp plugin: %w", err)
		}
	}
	return p, nil
}

// watch follows the connection's events: the first connection (or its
// failure) goes to first; a connection after a loss runs onReconnect.
func (p *Plugin) watch(events <-chan core.ConnectionEvent, first chan<- error) {
	defer p.wg.Done()
	connected, lost := false, false
	for {
		select {
		case <-p.done:
			return
		case ev := <-events:
			switch ev.State {
			case core.Connected:
				p.opts.logger.Info("vpp: connected")
				p.reportCompatibility()
				if !connected {
					connected = true
					report(first, nil)
				} else if lost && p.opts.onReconnect != nil {
					p.opts.onReconnect()
				}
				lost = false
			case core.Disconnected, core.NotResponding:
				p.opts.logger.Warn("vpp: connection lost", "state", ev.State.String(), "error", ev.Error)
				lost = true
			case core.Failed:
				p.opts.logger.Error("vpp: connecting failed", "error", ev.Error)
				if !connected {
					report(first, fmt.Errorf("connect to VPP: %w", ev.Error))
				}
			}
		}
	}
}

// reportCompatibility checks the connected VPP's messages (see
// Incompatible) and logs those it lacks by name.
func (p *Plugin) reportCompatibility() {
	missing, err := p.checkCompatibility()
	if err != nil {
		p.opts.logger.Warn("vpp: checking the binary API's messages", "error", err)
		return
	}
	p.compatMu.Lock()
	p.incompatible = missing
	p.compatMu.Unlock()
	if len(missing) > 0 {
		p.opts.logger.Warn("vpp: the connected VPP does not know messages the plugin uses; the calls that need them will fail",
			"built_for", "VPP "+VPPVersion, "messages", missing)
	}
}

// report sends the outcome of the first connection to New, unless it has
// one already (or gave up waiting).
func report(first chan<- error, err error) {
	select {
	case first <- err:
	default:
	}
}

func (p *Plugin) buildDescriptors() (err error) {
	if p.iface, err = vppinterfaces.NewInterfaceDescriptor[InterfaceMeta](&interfaces{p: p}); err != nil {
		return err
	}
	if p.addr, err = vppinterfaces.NewInterfaceIpAddressesDescriptor[struct{}](&addresses{p: p}); err != nil {
		return err
	}
	if p.unnum, err = vppinterfaces.NewInterfaceUnnumberedDescriptor[struct{}](&unnumbered{p: p}); err != nil {
		return err
	}
	if p.bd, err = vppl2.NewBridgeDomainDescriptor[BridgeDomainMeta](&bridgeDomains{p: p}); err != nil {
		return err
	}
	if p.binding, err = vppl2.NewBridgeDomainInterfacesDescriptor[struct{}](&bindings{p: p}); err != nil {
		return err
	}
	if p.fib, err = vppl2.NewFIBEntryDescriptor[struct{}](&fibEntries{p: p}); err != nil {
		return err
	}
	if p.vrf, err = vppl3.NewVrfTableDescriptor[struct{}](&vrfTables{p: p}); err != nil {
		return err
	}
	if p.route, err = vppl3.NewRouteDescriptor[struct{}](&routes{p: p}); err != nil {
		return err
	}
	if p.nat, err = p.buildNAT(); err != nil {
		return err
	}
	if err := p.add(vppinterfaces.NewInterfaceBondMembersDescriptor[struct{}](&bondMembers{p: p})); err != nil {
		return err
	}
	if err := p.add(vppinterfaces.NewInterfaceDhcpClientDescriptor[struct{}](&dhcpClients{p: p})); err != nil {
		return err
	}
	if err := p.add(vppinterfaces.NewInterfaceIp6NdDescriptor[struct{}](&ip6nd{p: p})); err != nil {
		return err
	}
	if err := p.add(vppinterfaces.NewInterfaceIp6NdPrefixesDescriptor[struct{}](&ip6ndPrefixes{p: p})); err != nil {
		return err
	}
	if err := p.add(vppinterfaces.NewLinkUpDescriptor[struct{}](&linkUps{p: p})); err != nil {
		return err
	}
	if p.acl, err = vppacl.NewACLDescriptor[ACLMeta](&ipACLs{p: p}); err != nil {
		return err
	}
	if p.aclIn, err = vppacl.NewACLIngressDescriptor[struct{}](&ingressBindings{p: p}); err != nil {
		return err
	}
	if p.aclOut, err = vppacl.NewACLEgressDescriptor[struct{}](&egressBindings{p: p}); err != nil {
		return err
	}
	if p.macip, err = vppacl.NewMACIPACLDescriptor[ACLMeta](&macipACLs{p: p}); err != nil {
		return err
	}
	if p.macipIf, err = vppacl.NewMACIPACLInterfacesDescriptor[struct{}](&macipBindings{p: p}); err != nil {
		return err
	}
	if p.abf, err = vppabf.NewABFDescriptor[struct{}](&abfPolicies{p: p}); err != nil {
		return err
	}
	if p.abfIf, err = vppabf.NewABFInterfacesDescriptor[struct{}](&abfAttachments{p: p}); err != nil {
		return err
	}
	if p.l2l3, err = p.buildL2L3(); err != nil {
		return err
	}
	if p.wgPeer, err = vppwireguard.NewPeerDescriptor[WireguardPeerMeta](&wireguardPeers{p: p}); err != nil {
		return err
	}
	if p.ipsecSA, err = vppipsec.NewSecurityAssociationDescriptor[struct{}](&securityAssociations{p: p}); err != nil {
		return err
	}
	for _, err := range []error{
		p.add(vppipsec.NewSecurityPolicyDatabaseDescriptor[struct{}](&securityPolicyDatabases{p: p})),
		p.add(vppipsec.NewSecurityPolicyDatabaseInterfacesDescriptor[struct{}](&spdBindings{p: p})),
		p.add(vppipsec.NewSecurityPolicyDescriptor[struct{}](&securityPolicies{p: p})),
		p.add(vppipsec.NewTunnelProtectionDescriptor[struct{}](&tunnelProtections{p: p})),
	} {
		if err != nil {
			return err
		}
	}
	p.arp, err = vppl3.NewARPEntryDescriptor[struct{}](&arpEntries{p: p})
	return err
}

// add registers a descriptor built in a file of its own (more).
func (p *Plugin) add(d kv.Descriptor, err error) error {
	if err != nil {
		return err
	}
	p.more = append(p.more, d)
	return nil
}

// Descriptors returns the plugin's descriptors, to register with a
// scheduler.
func (p *Plugin) Descriptors() []kv.Descriptor {
	return slices.Concat([]kv.Descriptor{p.iface, p.addr, p.unnum, p.bd, p.binding, p.fib, p.vrf, p.route, p.arp,
		p.acl, p.aclIn, p.aclOut, p.macip, p.macipIf, p.abf, p.abfIf, p.wgPeer, p.ipsecSA}, p.nat, p.l2l3, p.more)
}

// Interfaces returns the interfaces' metadata by label.
func (p *Plugin) Interfaces() kv.MetadataMap[InterfaceMeta] { return p.iface.Metadata() }

// BridgeDomains returns the bridge domains' metadata by label.
func (p *Plugin) BridgeDomains() kv.MetadataMap[BridgeDomainMeta] { return p.bd.Metadata() }

// ACLs returns the IP ACLs' metadata by label.
func (p *Plugin) ACLs() kv.MetadataMap[ACLMeta] { return p.acl.Metadata() }

// MACIPACLs returns the MAC-IP ACLs' metadata by label.
func (p *Plugin) MACIPACLs() kv.MetadataMap[ACLMeta] { return p.macip.Metadata() }

// Close disconnects from VPP. Close the scheduler first.
func (p *Plugin) Close() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	close(p.done)
	p.wg.Wait()
	p.conn.g.close()
	p.conn.Disconnect()
	return nil
}

// swIfIndex returns the sw_if_index of the interface with the given label:
// from the metadata map, else from the interfaces' last Retrieve.
func (p *Plugin) swIfIndex(label string) (uint32, error) {
	if m, ok := p.Interfaces().Get(label); ok {
		return m.SwIfIndex, nil
	}
	p.retrievedMu.Lock()
	defer p.retrievedMu.Unlock()
	if i, ok := p.retrievedIf[label]; ok {
		return i, nil
	}
	return 0, fmt.Errorf("interface %s: no sw_if_index known: %w", label, kv.ErrNotFound)
}

// bdID returns the bd_id of the bridge domain with the given label.
func (p *Plugin) bdID(label string) (uint32, error) {
	if m, ok := p.BridgeDomains().Get(label); ok {
		return m.ID, nil
	}
	p.retrievedMu.Lock()
	defer p.retrievedMu.Unlock()
	if i, ok := p.retrievedBD[label]; ok {
		return i, nil
	}
	return 0, fmt.Errorf("bridge domain %s: no bd_id known: %w", label, kv.ErrNotFound)
}

// interfaceNames returns the labels of the interfaces by sw_if_index.
func (p *Plugin) interfaceNames() map[uint32]string {
	out := map[uint32]string{}
	p.retrievedMu.Lock()
	for l, i := range p.retrievedIf {
		out[i] = l
	}
	p.retrievedMu.Unlock()
	m := p.Interfaces()
	for _, l := range m.Labels() {
		if meta, ok := m.Get(l); ok {
			out[meta.SwIfIndex] = l
		}
	}
	return out
}

// setRetrieved replaces what the last Retrieve of interfaces (bd false) or
// bridge domains (bd true) found.
func (p *Plugin) setRetrieved(bd bool, found map[string]uint32) {
	p.retrievedMu.Lock()
	defer p.retrievedMu.Unlock()
	if bd {
		p.retrievedBD = found
	} else {
		p.retrievedIf = found
	}
}
