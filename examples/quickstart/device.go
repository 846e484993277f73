package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// device is the simulated southbound: a few maps standing in for the Linux
// network stack, printing each call the way it would be typed with `ip`.
// Links are addressed by name (names are unique across namespaces here),
// addresses and routes by the link's ifindex, as netlink does. Unlike Linux,
// it refuses to delete a link or an address that something still uses, so
// that a wrong order of operations shows up as an error.
type device struct {
	mu     sync.Mutex
	out    io.Writer
	last   int           // the last ifindex given out
	links  map[int]*Link // by ifindex
	addrs  map[netip.Prefix]int
	routes map[netip.Prefix]deviceRoute
	fail   map[string]error // command -> error to fail it with, once
	calls  int              // commands run, failed ones included
}

// Link is a link as the device sees it.
type Link struct {
	Index     int
	Name      string
	Type      string // "veth", "bridge", ...: the iproute2 type
	Namespace string // "" for the default namespace
	Peer      string // the other end of a veth
	MAC       string // "" for one the kernel chose
	MTU       int
	Up        bool
}

type deviceRoute struct {
	gw     netip.Addr // invalid for a route without a gateway
	link   int
	metric uint32
}

func newDevice(out io.Writer) *device {
	return &device{
		out:    out,
		links:  map[int]*Link{},
		addrs:  map[netip.Prefix]int{},
		routes: map[netip.Prefix]deviceRoute{},
		fail:   map[string]error{},
	}
}

// FailOnce makes the next run of command fail with err.
func (d *device) FailOnce(command string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fail[command] = err
}

// Calls returns the number of commands run so far, failed ones included.
func (d *device) Calls() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls
}

// do prints command and runs f, unless command was told to fail. The
// caller holds d.mu.
func (d *device) do(command string, f func() error) error {
	d.calls++
	err, injected := d.fail[command]
	if injected {
		delete(d.fail, command)
	} else {
		err = f()
	}
	if err != nil {
		fmt.Fprintf(d.out, "device: %s  => error: %v\n", command, err)
		return err
	}
	fmt.Fprintf(d.out, "device: %s\n", command)
	return nil
}

// ip returns the start of a command in namespace ns.
func ip(ns string) string {
	if ns == "" {
		return "ip"
	}
	return "ip -n " + ns
}

// byName returns the link called name; the caller holds d.mu.
func (d *device) byName(name string) *Link {
	for _, l := range d.links {
		if l.Name == name {
			return l
		}
	}
	return nil
}

// devName names the link of index for a command: its name, or "if<index>"
// as the kernel shows links it cannot name.
func (d *device) devName(index int) (ns, name string) {
	if l := d.links[index]; l != nil {
		return l.Namespace, l.Name
	}
	return "", fmt.Sprintf("if%d", index)
}

// LinkIndex returns the ifindex of the link called name. It is a read
// (`ip link show <name>`), not printed.
func (d *device) LinkIndex(name string) (int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if l := d.byName(name); l != nil {
		return l.Index, true
	}
	return 0, false
}

// LinkAdd adds a link and returns its ifindex. A veth is added with its
// peer, which gets the next ifindex, the kernel's defaults and no address.
func (d *device) LinkAdd(l Link) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%s link add %s", ip(l.Namespace), l.Name)
	if l.MAC != "" {
		fmt.Fprintf(&b, " address %s", l.MAC)
	}
	if l.MTU != 1500 {
		fmt.Fprintf(&b, " mtu %d", l.MTU)
	}
	if l.Up {
		b.WriteString(" up")
	}
	fmt.Fprintf(&b, " type %s", l.Type)
	if l.Type == "veth" {
		fmt.Fprintf(&b, " peer name %s", l.Peer)
	}
	var index int
	err := d.do(b.String(), func() error {
		if d.byName(l.Name) != nil {
			return fmt.Errorf("link %s exists", l.Name)
		}
		if l.Type == "veth" && (l.Peer == "" || l.Peer == l.Name || d.byName(l.Peer) != nil) {
			return fmt.Errorf("veth %s: peer %q is missing or exists", l.Name, l.Peer)
		}
		d.last++
		index = d.last
		l.Index = index
		d.links[index] = &l
		if l.Type == "veth" {
			d.last++
			d.links[d.last] = &Link{Index: d.last, Name: l.Peer, Type: "veth", Namespace: l.Namespace, Peer: l.Name, MTU: 1500}
		}
		return nil
	})
	return index, err
}

// LinkSet changes the attributes of the link called l.Name to those of l:
// its namespace, MAC, MTU and whether it is up. It runs one command with
// what differs, and none when nothing does.
func (d *device) LinkSet(l Link) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur := d.byName(l.Name)
	if cur == nil {
		return d.do(fmt.Sprintf("ip link set %s", l.Name), func() error {
			return fmt.Errorf("link %s: %w", l.Name, kv.ErrNotFound)
		})
	}
	var args []string
	if l.Namespace != cur.Namespace {
		args = append(args, "netns", cmp.Or(l.Namespace, "1")) // 1: the default namespace (of PID 1)
	}
	if l.MAC != "" && l.MAC != cur.MAC {
		args = append(args, "address", l.MAC)
	}
	if l.MTU != cur.MTU {
		args = append(args, "mtu", fmt.Sprint(l.MTU))
	}
	if l.Up != cur.Up {
		args = append(args, map[bool]string{true: "up", false: "down"}[l.Up])
	}
	if len(args) == 0 {
		return nil
	}
	return d.do(fmt.Sprintf("%s link set %s %s", ip(cur.Namespace), l.Name, strings.Join(args, " ")), func() error {
		cur.Namespace, cur.MTU, cur.Up = l.Namespace, l.MTU, l.Up
		if l.MAC != "" {
			cur.MAC = l.MAC
		}
		return nil
	})
}

// LinkDel deletes the link called name, and its peer when it is a veth.
// It refuses while either has an address or a route.
func (d *device) LinkDel(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.byName(name)
	ns := ""
	if l != nil {
		ns = l.Namespace
	}
	return d.do(fmt.Sprintf("%s link del %s", ip(ns), name), func() error {
		if l == nil {
			return fmt.Errorf("link %s: %w", name, kv.ErrNotFound)
		}
		gone := []*Link{l}
		if peer := d.byName(l.Peer); l.Type == "veth" && peer != nil {
			gone = append(gone, peer)
		}
		for _, g := range gone {
			if err := d.inUse(g); err != nil {
				return err
			}
		}
		for _, g := range gone {
			delete(d.links, g.Index)
		}
		return nil
	})
}

// inUse says what still uses link l; the caller holds d.mu.
func (d *device) inUse(l *Link) error {
	for _, a := range sortedKeys(d.addrs) {
		if d.addrs[a] == l.Index {
			return fmt.Errorf("link %s still has address %s", l.Name, a)
		}
	}
	for _, dst := range sortedKeys(d.routes) {
		if d.routes[dst].link == l.Index {
			return fmt.Errorf("link %s still has route %s", l.Name, dst)
		}
	}
	return nil
}

// AddrAdd adds address p to the link of ifindex link.
func (d *device) AddrAdd(link int, p netip.Prefix) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	ns, name := d.devName(link)
	return d.do(fmt.Sprintf("%s addr add %s dev %s", ip(ns), p, name), func() error {
		if d.links[link] == nil {
			return fmt.Errorf("no link with ifindex %d", link)
		}
		if _, ok := d.addrs[p]; ok {
			return fmt.Errorf("address %s exists", p)
		}
		d.addrs[p] = link
		return nil
	})
}

// AddrDel deletes address p of the link of ifindex link. It refuses while
// a route of the link has its gateway in p's network.
func (d *device) AddrDel(link int, p netip.Prefix) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	ns, name := d.devName(link)
	return d.do(fmt.Sprintf("%s addr del %s dev %s", ip(ns), p, name), func() error {
		if l, ok := d.addrs[p]; !ok || l != link {
			return fmt.Errorf("address %s on %s: %w", p, name, kv.ErrNotFound)
		}
		for _, dst := range sortedKeys(d.routes) {
			if r := d.routes[dst]; r.link == link && p.Contains(r.gw) {
				return fmt.Errorf("route %s still uses gateway %s", dst, r.gw)
			}
		}
		delete(d.addrs, p)
		return nil
	})
}

// RouteAdd adds a route to dst via gw (none when invalid) on the link of
// ifindex link. It refuses a gateway that no address of the link reaches.
func (d *device) RouteAdd(dst netip.Prefix, gw netip.Addr, link int, metric uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	ns, name := d.devName(link)
	command := fmt.Sprintf("%s route add %s", ip(ns), dst)
	if gw.IsValid() {
		command += " via " + gw.String()
	}
	command += " dev " + name
	if metric != 0 {
		command += fmt.Sprintf(" metric %d", metric)
	}
	return d.do(command, func() error {
		if d.links[link] == nil {
			return fmt.Errorf("no link with ifindex %d", link)
		}
		if _, ok := d.routes[dst]; ok {
			return fmt.Errorf("route %s exists", dst)
		}
		reachable := !gw.IsValid()
		for a, l := range d.addrs {
			reachable = reachable || (l == link && a.Contains(gw))
		}
		if !reachable {
			return fmt.Errorf("gateway %s is not reachable on %s", gw, name)
		}
		d.routes[dst] = deviceRoute{gw: gw, link: link, metric: metric}
		return nil
	})
}

// RouteDel deletes the route to dst on the link of ifindex link.
func (d *device) RouteDel(dst netip.Prefix, link int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	ns, name := d.devName(link)
	return d.do(fmt.Sprintf("%s route del %s dev %s", ip(ns), dst, name), func() error {
		if r, ok := d.routes[dst]; !ok || r.link != link {
			return fmt.Errorf("route %s dev %s: %w", dst, name, kv.ErrNotFound)
		}
		delete(d.routes, dst)
		return nil
	})
}

// State lists what the device holds, one sorted line per object.
func (d *device) State() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var lines []string
	for _, l := range d.links {
		line := fmt.Sprintf("  link %s ifindex %d %s", l.Name, l.Index, l.Type)
		if l.Peer != "" {
			line += " peer " + l.Peer
		}
		if l.Namespace != "" {
			line += " netns " + l.Namespace
		}
		if l.MAC != "" {
			line += " address " + l.MAC
		}
		line += fmt.Sprintf(" mtu %d %s", l.MTU, map[bool]string{true: "UP", false: "DOWN"}[l.Up])
		lines = append(lines, line)
	}
	for a, link := range d.addrs {
		_, name := d.devName(link)
		lines = append(lines, fmt.Sprintf("  addr %s dev %s", a, name))
	}
	for dst, r := range d.routes {
		_, name := d.devName(r.link)
		line := "  route " + dst.String()
		if r.gw.IsValid() {
			line += " via " + r.gw.String()
		}
		line += " dev " + name
		if r.metric != 0 {
			line += fmt.Sprintf(" metric %d", r.metric)
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	if len(lines) == 0 {
		return "  (empty)\n"
	}
	return strings.Join(lines, "\n") + "\n"
}

// errBusy is the retriable failure the demo injects.
var errBusy = errors.New("device or resource busy")

func sortedKeys[V any](m map[netip.Prefix]V) []netip.Prefix {
	keys := make([]netip.Prefix, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b netip.Prefix) int { return strings.Compare(a.String(), b.String()) })
	return keys
}
