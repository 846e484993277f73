//go:build linux

package linux

import (
	"context"
	"errors"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
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
	// masters; addresses; routes; neighbours), for a drift check
	// (scheduler.CheckDrift) of those descriptors: each is read back and
	// compared with what the scheduler applied. Events that the plugin's
	// own calls cause are reported too; a check of them finds nothing.
	Recheck []string
}

// Watch subscribes to the link, address, route and neighbour events of
// the plugin's namespace and reports, through notify, the interfaces there that the
// plugin did not create: each becomes an OBTAINED value (with its
// addresses derived) when notify hands it to the scheduler, so intended
// values may depend on it. Events only trigger a read: after a quiet
// period (WithDebounce) the watcher lists the links and their addresses
// and reports what differs from its last report, so bursts coalesce and
// stale events change nothing. The first report lists the interfaces
// present when Watch starts. An interface reported before that becomes
// the plugin's (created or retrieved by it) is dropped from the watch
// silently, never reported gone: it is still there. After each quiet
// period that followed events, Watch also reports, in a Change with
// Recheck, which of the plugin's descriptors the events touched, so that
// a change of the plugin's own values (an ip link del, an ip route del, a
// new MTU) is checked for drift within a second. Watch blocks until ctx
// ends (returning nil) or the kernel subscription fails.
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
	subErr := make(chan error, 4)
	onErr := func(err error) {
		select {
		case subErr <- err:
		default:
		}
	}
	ns := n.ns
	// ip monitor link address
	if err := netlink.LinkSubscribeWithOptions(links, done, netlink.LinkSubscribeOptions{Namespace: &ns, ErrorCallback: onErr, ListExisting: true}); err != nil {
		close(done)
		return kernelErr(err, "ip monitor link")
	}
	if err := netlink.AddrSubscribeWithOptions(addrs, done, netlink.AddrSubscribeOptions{Namespace: &ns, ErrorCallback: onErr}); err != nil {
		close(done)
		drain(links)
		return kernelErr(err, "ip monitor address")
	}
	if err := netlink.RouteSubscribeWithOptions(routes, done, netlink.RouteSubscribeOptions{Namespace: &ns, ErrorCallback: onErr}); err != nil {
		close(done)
		drain(links)
		drain(addrs)
		return kernelErr(err, "ip monitor route")
	}
	if err := netlink.NeighSubscribeWithOptions(neighs, done, netlink.NeighSubscribeOptions{Namespace: &ns, ErrorCallback: onErr}); err != nil {
		close(done)
		drain(links)
		drain(addrs)
		drain(routes)
		return kernelErr(err, "ip monitor neigh")
	}
	defer func() {
		close(done)
		// The subscriptions close their channels once their sockets are
		// closed; until then they may still be sending.
		drain(links)
		drain(addrs)
		drain(routes)
		drain(neighs)
	}()

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
			return kernelErr(err, "ip monitor")
		case _, ok := <-links:
			if !ok {
				return errors.New("ip monitor link: the subscription ended")
			}
			touch(p.iface, p.master, p.addr, p.route, p.neighbour)
			arm()
		case _, ok := <-addrs:
			if !ok {
				return errors.New("ip monitor address: the subscription ended")
			}
			touch(p.addr, p.iface)
			arm()
		case _, ok := <-routes:
			if !ok {
				return errors.New("ip monitor route: the subscription ended")
			}
			touch(p.route)
			arm()
		case _, ok := <-neighs:
			if !ok {
				return errors.New("ip monitor neigh: the subscription ended")
			}
			touch(p.neighbour)
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

// watch is the state of one Watch: what it reported last.
type watch struct {
	p    *Plugin
	n    *namespace
	last map[string]*linuxinterfaces.Interface
}

// scan reads the links of the namespace and returns what changed since
// the last scan among those that are not the plugin's.
func (w *watch) scan() ([]Change, error) {
	view, err := viewOf(w.n)
	if err != nil {
		return nil, err
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
		if w.p.isOwned(name) || strings.HasPrefix(name, tempPrefix) {
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
