//go:build linux

package linux

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
)

// Change is one interface of the plugin's namespace that the plugin did
// not create, as Watch reports it: present (Value set) or gone (Value
// nil). The key's label is the interface's kernel name. A Change with no
// Key and Recheck set reports instead that the plugin's own values may
// have changed behind its back.
type Change struct {
	Key string
	// Value is a *linuxinterfaces.Interface, or nil when the interface is
	// gone.
	Value    proto.Message
	Metadata InterfaceMeta
	// Recheck names the plugin's descriptors whose own values the
	// kernel's events may have changed (links: interfaces and their
	// masters; addresses; routes; neighbours; policy routing rules;
	// nftables tables, chains and rules), for a drift check
	// (scheduler.CheckDrift) of those descriptors: each is read back and
	// compared with what the scheduler applied. Events that the plugin's
	// own calls cause are reported too; a check of them finds nothing.
	Recheck []string
}

// Watch subscribes to the link, address, route, neighbour and policy
// routing rule events of the plugin's namespace, and to its nftables
// events, and reports, through notify, the interfaces there that the
// plugin did not create: each becomes an OBTAINED value (with its
// addresses derived) when notify hands it to the scheduler, so intended
// values may depend on it. Events only trigger a read: after a quiet
// period (WithDebounce) the watcher lists the links and their addresses
// and reports what differs from its last report, so bursts coalesce and
// stale events change nothing. The first report lists the interfaces
// present when Watch starts, and has every descriptor of the plugin
// rechecked: what changed before the subscriptions opened is checked
// too. An interface reported before that becomes the plugin's (created
// or retrieved by it) is dropped from the watch silently, never reported
// gone: it is still there. After each quiet
// period that followed events, Watch also reports, in a Change with
// Recheck, which of the plugin's descriptors the events touched, so that
// a change of the plugin's own values (an ip link del, an ip route del,
// an ip rule del, a new MTU, an nft delete table, a chain's policy set by
// hand) is checked for drift within a second. An nftables event of a
// table of the plugin's (one it created, or was asked about by a
// Retrieve) touches the three nftables descriptors; events of other
// tables (another program's, as firewalld's) are ignored, and so is the
// end of a batch; an event that names no table, or cannot be read, or
// is lost to an overrun of the nftables or rule socket touches them, since
// the check reads everything back anyway. Only the plugin's namespace is watched: values
// in other namespaces are checked by the periodic drift check or a
// resync.
//
// Watch blocks until ctx ends (returning nil) or a kernel subscription
// fails. The link, address, route, neighbour and rule subscriptions must
// open (rtnetlink has them all), else Watch returns the error; the
// nftables one may not (a kernel without nf_tables, or without the
// module loadable in the namespace): Watch then logs a warning and
// watches the rest, for its first duty is to report other programs'
// interfaces, which values depend on, and nftables values cannot be
// applied on such a kernel anyway. A subscription that fails later ends
// Watch with its error, whichever it is.
func (p *Plugin) Watch(ctx context.Context, notify func(context.Context, []Change) error) error {
	n, err := p.ns.get("")
	if err != nil {
		return err
	}
	links := make(chan netlink.LinkUpdate, 256)
	addrs := make(chan netlink.AddrUpdate, 256)
	routes := make(chan netlink.RouteUpdate, 256)
	neighs := make(chan netlink.NeighUpdate, 256)
	done := make(chan struct{})
	subErr := make(chan error, 1)
	// onErr(what) takes the error of a subscription (the first one ends
	// Watch), naming it: what is its command.
	onErr := func(what string) func(error) {
		return func(err error) {
			select {
			case subErr <- kernelErr(err, "%s", what):
			default:
			}
		}
	}
	// ended is the error of a subscription whose channel closed: its own
	// error, sent before it closed the channel, else that it ended.
	ended := func(what string) error {
		select {
		case err := <-subErr:
			return err
		default:
			return fmt.Errorf("%s: the subscription ended", what)
		}
	}
	// stop ends the subscriptions opened so far: each closes its channel
	// once its socket is closed; until then it may still be sending.
	var drains []func()
	stop := func() {
		close(done)
		for _, d := range drains {
			d()
		}
	}
	ns := n.ns
	// ip monitor link address
	if err := netlink.LinkSubscribeWithOptions(links, done, netlink.LinkSubscribeOptions{Namespace: &ns, ErrorCallback: onErr("ip monitor link"), ListExisting: true}); err != nil {
		stop()
		return kernelErr(err, "ip monitor link")
	}
	drains = append(drains, func() { drain(links) })
	if err := netlink.AddrSubscribeWithOptions(addrs, done, netlink.AddrSubscribeOptions{Namespace: &ns, ErrorCallback: onErr("ip monitor address")}); err != nil {
		stop()
		return kernelErr(err, "ip monitor address")
	}
	drains = append(drains, func() { drain(addrs) })
	if err := netlink.RouteSubscribeWithOptions(routes, done, netlink.RouteSubscribeOptions{Namespace: &ns, ErrorCallback: onErr("ip monitor route")}); err != nil {
		stop()
		return kernelErr(err, "ip monitor route")
	}
	drains = append(drains, func() { drain(routes) })
	if err := netlink.NeighSubscribeWithOptions(neighs, done, netlink.NeighSubscribeOptions{Namespace: &ns, ErrorCallback: onErr("ip monitor neigh")}); err != nil {
		stop()
		return kernelErr(err, "ip monitor neigh")
	}
	drains = append(drains, func() { drain(neighs) })
	// ip monitor rule (the netlink library has no subscription of its own
	// for rules: the groups are joined on a socket like the others')
	ipRules, err := subscribeGroups(ns, unix.NETLINK_ROUTE, []uint{unix.RTNLGRP_IPV4_RULE, unix.RTNLGRP_IPV6_RULE}, nil, done, onErr("ip monitor rule"))
	if err != nil {
		stop()
		return kernelErr(err, "ip monitor rule")
	}
	drains = append(drains, func() { drain(ipRules) })
	// nft monitor
	subscribeNft := subscribeNftables
	if p.opts.nftSubscribe != nil {
		subscribeNft = p.opts.nftSubscribe
	}
	nft, err := subscribeNft(ns, p.nftEventMatters, done, onErr("nft monitor"))
	if err != nil {
		// nft stays nil: its case never fires.
		p.opts.logger.Warn("linux plugin: watcher: nft monitor: no nftables events, nftables drift is found by the periodic drift check or a resync only",
			"err", kernelErr(err, "nft monitor"))
	} else {
		drains = append(drains, func() { drain(nft) })
	}
	defer stop()

	// A handle of its own: the scheduler's handlers use the plugin's.
	h, err := netlink.NewHandleAt(n.ns)
	if err != nil {
		return kernelErr(err, "netlink handle for the watcher")
	}
	defer h.Close()
	w := &watch{p: p, n: &namespace{ns: n.ns, h: h}, last: map[string]*linuxinterfaces.Interface{}}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var first time.Time // of the first event not acted on yet
	// touched are the descriptors whose values the events since the last
	// report may have changed.
	touched := map[string]bool{}
	touch := func(ds ...kv.Descriptor) {
		for _, d := range ds {
			touched[d.Name()] = true
		}
	}
	// What changed between the caller's last look and the subscriptions
	// is checked once they are open: the link subscription lists the
	// existing links, which touches the descriptors of links, addresses,
	// routes and neighbours; rules and nftables, which nothing lists,
	// are touched here.
	touch(p.rule, p.nftTable, p.nftChain, p.nftRule)
	arm := func() {
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		// Wait for a quiet period, but never more than ten of them.
		d := p.opts.debounce
		if rest := first.Add(10 * p.opts.debounce).Sub(now); rest < d {
			d = max(rest, 0)
		}
		timer.Reset(d)
	}
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case err := <-subErr:
			return err
		case _, ok := <-links:
			if !ok {
				return ended("ip monitor link")
			}
			touch(p.iface, p.master, p.addr, p.route, p.neighbour)
			arm()
		case _, ok := <-addrs:
			if !ok {
				return ended("ip monitor address")
			}
			touch(p.addr, p.iface)
			arm()
		case _, ok := <-routes:
			if !ok {
				return ended("ip monitor route")
			}
			touch(p.route)
			arm()
		case _, ok := <-neighs:
			if !ok {
				return ended("ip monitor neigh")
			}
			touch(p.neighbour)
			arm()
		case _, ok := <-ipRules:
			if !ok {
				return ended("ip monitor rule")
			}
			touch(p.rule)
			arm()
		case _, ok := <-nft:
			if !ok {
				return ended("nft monitor")
			}
			touch(p.nftTable, p.nftChain, p.nftRule)
			arm()
		case <-timer.C:
			first = time.Time{}
			changes, err := w.scan()
			if err != nil {
				p.opts.logger.Warn("linux plugin: watcher: reading the interfaces", "err", err)
				arm()
				continue
			}
			if len(touched) > 0 {
				names := slices.Sorted(maps.Keys(touched))
				clear(touched)
				changes = append(changes, Change{Recheck: names})
			}
			if len(changes) == 0 {
				continue
			}
			if err := notify(ctx, changes); err != nil && ctx.Err() == nil {
				p.opts.logger.Warn("linux plugin: watcher: notify", "err", err)
			}
		}
	}
}

func drain[T any](ch <-chan T) {
	for range ch {
	}
}

// subscribeGroups opens a netlink socket of protocol in the namespace,
// joined to the multicast groups, and signals on the returned channel
// whenever the kernel sends on it; signals not taken yet coalesce (the
// channel holds one), so the socket is read at once however busy the
// watcher is. A message lost to an overrun of the socket's buffer
// (ENOBUFS) is signalled too: what changed is read back anyway. Any other
// error of the socket goes to onErr and ends the subscription. When done
// is closed, the socket is closed, and the channel once the socket is no
// longer read.
//
// keep, when not nil, says which messages matter: a read whose messages
// all do not signals nothing.
func subscribeGroups(ns netns.NsHandle, protocol int, groups []uint, keep func(syscall.NetlinkMessage) bool, done <-chan struct{}, onErr func(error)) (<-chan struct{}, error) {
	s, err := nl.SubscribeAt(ns, netns.None(), protocol, groups...)
	if err != nil {
		return nil, err
	}
	ch := make(chan struct{}, 1)
	signal := func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	go func() {
		<-done
		s.Close()
	}()
	go func() {
		defer close(ch)
		for {
			msgs, from, err := s.Receive()
			select {
			case <-done:
				return // closed (or closing): what it says no longer matters
			default:
			}
			switch {
			case errors.Is(err, unix.ENOBUFS):
				signal()
			case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			case err != nil:
				onErr(fmt.Errorf("receive: %w", err))
				return
			case from.Pid == nl.PidKernel && slices.ContainsFunc(msgs, func(m syscall.NetlinkMessage) bool { return keep == nil || keep(m) }):
				signal()
			}
		}
	}()
	return ch, nil
}

// subscribeNftables subscribes to the nftables events of the namespace
// (NFNLGRP_NFTABLES: every table, chain, rule, set and element added or
// deleted, and the end of each batch), as `nft monitor` does, and signals
// those that keep says matter.
func subscribeNftables(ns netns.NsHandle, keep func(syscall.NetlinkMessage) bool, done <-chan struct{}, onErr func(error)) (<-chan struct{}, error) {
	return subscribeGroups(ns, unix.NETLINK_NETFILTER, []uint{unix.NFNLGRP_NFTABLES}, keep, done, onErr)
}

// nfgenmsgLen is the length of struct nfgenmsg, the header of every
// nftables message (family, version, resource id).
const nfgenmsgLen = 4

// nftEventMatters says whether an nftables event may concern the plugin's
// values: one that names a table (every message of the group but the end
// of a batch, NFT_MSG_NEWGEN, carries the table's name as its attribute
// 1) matters when the table is one of the plugin's; one that cannot be
// read matters, to be safe; the end of a batch does not (the batch's
// messages said what changed).
func (p *Plugin) nftEventMatters(m syscall.NetlinkMessage) bool {
	if m.Header.Type>>8 != unix.NFNL_SUBSYS_NFTABLES {
		return true
	}
	if m.Header.Type&0xff == unix.NFT_MSG_NEWGEN {
		return false
	}
	if len(m.Data) < nfgenmsgLen {
		return true
	}
	attrs, err := nl.ParseRouteAttr(m.Data[nfgenmsgLen:])
	if err != nil {
		return true
	}
	for _, a := range attrs {
		if a.Attr.Type&nl.NLA_TYPE_MASK == 1 { // NFTA_TABLE_NAME, NFTA_CHAIN_TABLE, NFTA_RULE_TABLE, ...
			id := nftTableID{family: nftables.TableFamily(m.Data[0]), name: strings.TrimRight(string(a.Value), "\x00")}
			ours := p.nftIsOurs(id)
			if p.opts.nftEvent != nil {
				p.opts.nftEvent(id.family, id.name, ours)
			}
			return ours
		}
	}
	return true
}

// watch is the state of one Watch: what it reported last.
type watch struct {
	p    *Plugin
	n    *namespace
	last map[string]*linuxinterfaces.Interface
	mark uint64 // ownMark at the start of the last scan
}

// scan reads the links of the namespace and returns what changed since
// the last scan among those that are not the plugin's.
func (w *watch) scan() ([]Change, error) {
	// A link the plugin owned at any time since the list began is its
	// own: the link of a create that failed (deleted since) too.
	w.mark = w.p.ownMark(w.mark)
	view, err := viewOf(w.n)
	if err != nil {
		return nil, err
	}
	if w.p.opts.scanListed != nil {
		w.p.opts.scanListed()
	}
	var changes []Change
	seen := map[string]bool{}
	names := make([]string, 0, len(view.byName))
	for name := range view.byName {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		link := view.byName[name]
		if w.p.ownedSince(name, w.mark) || strings.HasPrefix(name, tempPrefix) {
			// Not another program's (any more): an interface reported
			// before that the plugin has since made its own (created,
			// or found by Retrieve as one of ours, the startup resync's
			// take-over of what a previous run left) is forgotten
			// without a word. It is still there: reporting it gone
			// would have the scheduler believe it lost, and delete and
			// create again everything over it.
			delete(w.last, name)
			continue
		}
		v, err := w.observe(view, link)
		if err != nil {
			if isGone(err) {
				continue // gone since the list: the next event says so
			}
			return nil, err
		}
		seen[name] = true
		if proto.Equal(v, w.last[name]) {
			continue
		}
		w.last[name] = v
		changes = append(changes, Change{
			Key: linuxinterfaces.InterfaceKeyFor(v), Value: v,
			Metadata: InterfaceMeta{Index: link.Attrs().Index, HostName: name},
		})
	}
	for name, v := range w.last {
		if !seen[name] {
			delete(w.last, name)
			changes = append(changes, Change{Key: linuxinterfaces.InterfaceKeyFor(v)})
		}
	}
	return changes, nil
}

// observe is the value of a link the plugin did not create: its kernel
// name is its label.
func (w *watch) observe(view *nsView, link netlink.Link) (*linuxinterfaces.Interface, error) {
	a := link.Attrs()
	v := &linuxinterfaces.Interface{
		Name: a.Name, Type: typeOf(link), Enabled: a.Flags&net.FlagUp != 0, Mtu: uint32(a.MTU),
	}
	if len(a.HardwareAddr) == 6 {
		v.PhysAddress = a.HardwareAddr.String()
	}
	addrs, err := view.addrs(link)
	if err != nil {
		return nil, err
	}
	for p := range addrs {
		if p.Addr().IsLinkLocalUnicast() {
			continue
		}
		v.IpAddresses = append(v.IpAddresses, p.String())
	}
	slices.Sort(v.IpAddresses)
	return v, nil
}

// nftIsOurs says whether the table is one the plugin created or was asked
// about.
func (p *Plugin) nftIsOurs(id nftTableID) bool {
	p.nftFound.mu.Lock()
	defer p.nftFound.mu.Unlock()
	return p.nftFound.ours[id]
}
