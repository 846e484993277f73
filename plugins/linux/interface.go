//go:build linux

package linux

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

type iface = linuxinterfaces.Interface

// interfaces is the handler of linux.interfaces.v1.Interface.
type interfaces struct{ p *Plugin }

var (
	_ linuxinterfaces.InterfaceHandler[InterfaceMeta]   = (*interfaces)(nil)
	_ linuxinterfaces.InterfaceUpdater[InterfaceMeta]   = (*interfaces)(nil)
	_ linuxinterfaces.InterfaceValidator                = (*interfaces)(nil)
	_ linuxinterfaces.InterfaceRetriever[InterfaceMeta] = (*interfaces)(nil)
)

// hostName is the interface's name in the kernel.
func hostName(v *iface) string {
	if v.GetType() == linuxinterfaces.Interface_TYPE_LOOPBACK {
		return "lo"
	}
	if v.GetHostIfName() != "" {
		return v.GetHostIfName()
	}
	return v.GetName()
}

// tempPrefix starts the temporary names of veth ends.
const tempPrefix = "kvdpeer"

// tempName is the temporary kernel name of the end of a veth pair whose
// value (label) is not created yet.
func tempName(label string) string {
	h := fnv.New32a()
	h.Write([]byte(label))
	return fmt.Sprintf("%s%08x", tempPrefix, h.Sum32())
}

// Validate checks what the schema cannot: that the label is a kernel
// interface name when it is the kernel's name (host_if_name empty; the
// schema checks host_if_name, and the namespace's form), and that the
// namespace is one the plugin may configure (WithAllowedNamespaces).
func (h *interfaces) Validate(_ linuxinterfaces.InterfaceKey, v *iface) error {
	var errs *kv.InvalidValueError
	if r := kv.CheckIfName(v.GetName()); r != "" && v.GetHostIfName() == "" {
		errs = errs.Add("name", "%s (the kernel's name while host_if_name is empty)", r)
	}
	return h.p.ns.validate(v, errs).OrNil()
}

// typeName is the kernel's name (`ip link add ... type NAME`) of a type.
func typeName(t linuxinterfaces.Interface_Type) string {
	switch t {
	case linuxinterfaces.Interface_TYPE_VETH:
		return "veth"
	case linuxinterfaces.Interface_TYPE_TAP:
		return "tap"
	case linuxinterfaces.Interface_TYPE_BRIDGE:
		return "bridge"
	case linuxinterfaces.Interface_TYPE_VXLAN:
		return "vxlan"
	case linuxinterfaces.Interface_TYPE_MACVLAN:
		return "macvlan"
	case linuxinterfaces.Interface_TYPE_DUMMY:
		return "dummy"
	case linuxinterfaces.Interface_TYPE_VLAN:
		return "vlan"
	case linuxinterfaces.Interface_TYPE_VRF:
		return "vrf"
	}
	return t.String()
}

// typeOf is the model's type of a kernel link (TYPE_UNSPECIFIED for kinds
// the model does not have).
func typeOf(l netlink.Link) linuxinterfaces.Interface_Type {
	switch l := l.(type) {
	case *netlink.Veth:
		return linuxinterfaces.Interface_TYPE_VETH
	case *netlink.Tuntap:
		if l.Mode == netlink.TUNTAP_MODE_TAP {
			return linuxinterfaces.Interface_TYPE_TAP
		}
	case *netlink.Bridge:
		return linuxinterfaces.Interface_TYPE_BRIDGE
	case *netlink.Vxlan:
		return linuxinterfaces.Interface_TYPE_VXLAN
	case *netlink.Macvlan:
		return linuxinterfaces.Interface_TYPE_MACVLAN
	case *netlink.Dummy:
		return linuxinterfaces.Interface_TYPE_DUMMY
	case *netlink.Vlan:
		return linuxinterfaces.Interface_TYPE_VLAN
	case *netlink.Vrf:
		return linuxinterfaces.Interface_TYPE_VRF
	}
	return linuxinterfaces.Interface_TYPE_UNSPECIFIED
}

// adopted reports whether the plugin configures interfaces of type t
// without creating or deleting them.
func adopted(t linuxinterfaces.Interface_Type) bool {
	return t == linuxinterfaces.Interface_TYPE_LOOPBACK || t == linuxinterfaces.Interface_TYPE_EXISTING || t == linuxinterfaces.Interface_TYPE_TAP_TO_VPP
}

// matches reports whether link is of the kind v names: for an existing
// interface any kind, the loopback of the namespace for a loopback, a TAP
// device for the Linux end of a VPP TAP.
func matches(link netlink.Link, v *iface) bool {
	switch v.GetType() {
	case linuxinterfaces.Interface_TYPE_EXISTING:
		return true
	case linuxinterfaces.Interface_TYPE_LOOPBACK:
		return link.Attrs().Flags&net.FlagLoopback != 0
	case linuxinterfaces.Interface_TYPE_TAP_TO_VPP:
		_, ok := link.(*netlink.Tuntap)
		return ok
	}
	return typeOf(link) == v.GetType()
}

var macvlanModes = map[linuxinterfaces.Interface_MacvlanMode]netlink.MacvlanMode{
	linuxinterfaces.Interface_MACVLAN_MODE_PRIVATE:  netlink.MACVLAN_MODE_PRIVATE,
	linuxinterfaces.Interface_MACVLAN_MODE_VEPA:     netlink.MACVLAN_MODE_VEPA,
	linuxinterfaces.Interface_MACVLAN_MODE_BRIDGE:   netlink.MACVLAN_MODE_BRIDGE,
	linuxinterfaces.Interface_MACVLAN_MODE_PASSTHRU: netlink.MACVLAN_MODE_PASSTHRU,
}

// Create creates the link, then sets its MTU, MAC address and state.
func (h *interfaces) Create(_ context.Context, k linuxinterfaces.InterfaceKey, v *iface) (InterfaceMeta, error) {
	meta := InterfaceMeta{Namespace: nsKey(v), HostName: hostName(v)}
	n, err := h.p.ns.get(nsKey(v))
	if errors.Is(err, errNamespace) {
		return meta, kv.NonRetriable(err) // Validate refuses it first
	}
	if err != nil {
		return meta, err
	}
	h.p.own(meta.Namespace, meta.HostName, true)
	link, err := h.add(n, k.Name, v)
	if err == nil && h.p.opts.linkAdded != nil {
		h.p.opts.linkAdded(meta.HostName)
	}
	if err == nil {
		err = configure(n, link, nil, v)
	}
	if err != nil {
		if link != nil && !adopted(v.GetType()) {
			// ip link del NAME: leave nothing half made behind (before
			// the link stops being ours: the watcher would report it
			// another program's until then)
			_ = n.h.LinkDel(link)
		}
		h.p.own(meta.Namespace, meta.HostName, false)
		return meta, err
	}
	meta.Index = link.Attrs().Index
	return meta, nil
}

// add creates the kernel link of v (the other end of a veth pair, when the
// pair exists already, is taken over instead) and returns it, read back.
func (h *interfaces) add(n *namespace, label string, v *iface) (netlink.Link, error) {
	host := hostName(v)
	attrs := netlink.LinkAttrs{Name: host}
	var link netlink.Link
	switch v.GetType() {
	case linuxinterfaces.Interface_TYPE_LOOPBACK, linuxinterfaces.Interface_TYPE_EXISTING:
		return readLink(n, host) // not found: retried until it appears
	case linuxinterfaces.Interface_TYPE_TAP_TO_VPP:
		return h.adoptTap(n, host)
	case linuxinterfaces.Interface_TYPE_VETH:
		return h.addVeth(n, label, v)
	case linuxinterfaces.Interface_TYPE_TAP:
		// ip tuntap add dev NAME mode tap
		err := inNamespace(n.ns, func() error {
			return netlink.LinkAdd(&netlink.Tuntap{LinkAttrs: attrs, Mode: netlink.TUNTAP_MODE_TAP})
		})
		if err != nil {
			return nil, kernelErr(err, "ip tuntap add dev %s mode tap", host)
		}
		return readLink(n, host)
	case linuxinterfaces.Interface_TYPE_BRIDGE:
		link = &netlink.Bridge{LinkAttrs: attrs}
	case linuxinterfaces.Interface_TYPE_DUMMY:
		link = &netlink.Dummy{LinkAttrs: attrs}
	case linuxinterfaces.Interface_TYPE_VRF:
		link = &netlink.Vrf{LinkAttrs: attrs, Table: v.GetVrfTable()}
	case linuxinterfaces.Interface_TYPE_VXLAN:
		x := v.GetVxlan()
		vx := &netlink.Vxlan{LinkAttrs: attrs, VxlanId: int(x.GetVni()), Port: int(x.EffectiveDstPort()), Learning: true}
		if x.GetLocalIp() != "" {
			vx.SrcAddr = net.ParseIP(x.GetLocalIp())
		}
		if x.GetRemoteIp() != "" {
			vx.Group = net.ParseIP(x.GetRemoteIp())
		}
		if v.GetParent() != "" {
			idx, err := h.parentIndex(v)
			if err != nil {
				return nil, err
			}
			vx.VtepDevIndex = idx
		}
		link = vx
	case linuxinterfaces.Interface_TYPE_MACVLAN, linuxinterfaces.Interface_TYPE_VLAN:
		idx, err := h.parentIndex(v)
		if err != nil {
			return nil, err
		}
		attrs.ParentIndex = idx
		if v.GetType() == linuxinterfaces.Interface_TYPE_VLAN {
			link = &netlink.Vlan{LinkAttrs: attrs, VlanId: int(v.GetVlanId())}
		} else {
			link = &netlink.Macvlan{LinkAttrs: attrs, Mode: macvlanModes[v.EffectiveMacvlanMode()]}
		}
	default:
		return nil, kv.NonRetriable(fmt.Errorf("interface type %s is not supported", v.GetType()))
	}
	// ip link add NAME type TYPE ...
	if err := n.h.LinkAdd(link); err != nil {
		return nil, kernelErr(err, "ip link add %s type %s", host, typeName(v.GetType()))
	}
	return readLink(n, host)
}

// parentIndex returns the ifindex of v's parent, which must live in v's
// namespace.
func (h *interfaces) parentIndex(v *iface) (int, error) {
	m, ok := h.p.Interfaces().Get(v.GetParent())
	if !ok {
		return 0, fmt.Errorf("parent %s: not created", v.GetParent())
	}
	if m.Namespace != nsKey(v) {
		return 0, kv.NonRetriable(fmt.Errorf("parent %s is in network namespace %q, not %q", v.GetParent(), m.Namespace, nsKey(v)))
	}
	return m.Index, nil
}

// addVeth creates a veth pair whose other end gets a temporary name until
// its own value is created; or, when the peer value created the pair
// already, takes over the end it left under our temporary name.
func (h *interfaces) addVeth(n *namespace, label string, v *iface) (netlink.Link, error) {
	host, temp := hostName(v), tempName(label)
	if pm, ok := h.p.Interfaces().Get(v.GetVethPeer()); ok {
		pn, err := h.p.ns.get(pm.Namespace)
		if err != nil {
			return nil, err
		}
		if end, err := pn.h.LinkByName(temp); err == nil {
			if pn != n {
				// ip link set dev TEMP netns NS
				if err := pn.h.LinkSetNsFd(end, int(n.ns)); err != nil {
					return nil, kernelErr(err, "ip link set dev %s netns %s", temp, nsName(n))
				}
			}
			return readLink(n, temp) // configure renames it
		}
	}
	// A temporary end left by a pair whose first end is gone.
	if stale, err := n.h.LinkByName(tempName(v.GetVethPeer())); err == nil {
		_ = n.h.LinkDel(stale)
	}
	// ip link add NAME type veth peer name TEMP
	err := n.h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: host}, PeerName: tempName(v.GetVethPeer())})
	if err != nil {
		return nil, kernelErr(err, "ip link add %s type veth peer name %s", host, tempName(v.GetVethPeer()))
	}
	return readLink(n, host)
}

// adoptTap finds the Linux end of a VPP TAP: in n (moved there by an
// earlier attempt), else in the plugin's namespace, where VPP creates it,
// and moves it to n.
func (h *interfaces) adoptTap(n *namespace, host string) (netlink.Link, error) {
	if l, err := n.h.LinkByName(host); err == nil {
		return l, nil
	}
	def, err := h.p.ns.get("")
	if err != nil || def == n {
		return readLink(n, host)
	}
	h.p.own("", host, true) // the watcher lets it go silently
	end, err := readLink(def, host)
	if err != nil {
		return nil, err
	}
	// ip link set dev NAME netns NS
	if err := def.h.LinkSetNsFd(end, int(n.ns)); err != nil {
		return nil, kernelErr(err, "ip link set dev %s netns %s", host, nsName(n))
	}
	return readLink(n, host)
}

func nsName(n *namespace) string {
	if n.name == "" {
		return "(the plugin's)"
	}
	return n.name
}

func readLink(n *namespace, name string) (netlink.Link, error) {
	l, err := n.h.LinkByName(name)
	if err != nil {
		return nil, kernelErr(err, "ip link show %s", name)
	}
	return l, nil
}

// configure brings link to v: name, MTU, MAC address, up or down. old is
// the value it had (nil after a create): only what changed is applied, so
// that a zero MTU leaves a new link at its kernel default.
func configure(n *namespace, link netlink.Link, old, v *iface) error {
	a := link.Attrs()
	host := hostName(v)
	up := a.Flags&net.FlagUp != 0
	if a.Name != host {
		if up {
			// ip link set dev OLD down (a link is renamed down)
			if err := n.h.LinkSetDown(link); err != nil {
				return kernelErr(err, "ip link set dev %s down", a.Name)
			}
			up = false
		}
		// ip link set dev OLD name NEW
		if err := n.h.LinkSetName(link, host); err != nil {
			return kernelErr(err, "ip link set dev %s name %s", a.Name, host)
		}
		a.Name = host
	}
	// A zero MTU leaves a new link at its kernel default; set back to zero,
	// it means the default the model promises.
	if mtu := int(v.EffectiveMtu()); (v.GetMtu() != 0 || old.GetMtu() != 0) && mtu != a.MTU {
		// ip link set dev NAME mtu MTU
		if err := n.h.LinkSetMTU(link, mtu); err != nil {
			return kernelErr(err, "ip link set dev %s mtu %d", host, mtu)
		}
	}
	if mac := v.GetPhysAddress(); mac != "" {
		hw, err := net.ParseMAC(mac)
		if err != nil {
			return kv.NonRetriable(fmt.Errorf("phys_address %q: %w", mac, err))
		}
		if a.HardwareAddr.String() != hw.String() {
			// ip link set dev NAME address MAC
			if err := n.h.LinkSetHardwareAddr(link, hw); err != nil {
				return kernelErr(err, "ip link set dev %s address %s", host, hw)
			}
		}
	}
	switch {
	case v.GetEnabled() && !up:
		// ip link set dev NAME up
		if err := n.h.LinkSetUp(link); err != nil {
			return kernelErr(err, "ip link set dev %s up", host)
		}
	case !v.GetEnabled() && up:
		// ip link set dev NAME down
		if err := n.h.LinkSetDown(link); err != nil {
			return kernelErr(err, "ip link set dev %s down", host)
		}
	}
	return nil
}

// Update changes what the kernel changes in place: the name, MTU, MAC
// address and state. Everything else re-creates (the model says so).
func (h *interfaces) Update(_ context.Context, _ linuxinterfaces.InterfaceKey, old, v *iface, m InterfaceMeta) (InterfaceMeta, error) {
	if adopted(v.GetType()) && hostName(v) != m.HostName {
		return m, kv.NonRetriable(fmt.Errorf("host_if_name: the %s interface is link %s; to configure another link, delete the value and add it again", v.GetType(), m.HostName))
	}
	n, err := h.p.ns.get(m.Namespace)
	if err != nil {
		return m, err
	}
	link, err := n.h.LinkByIndex(m.Index)
	if err != nil {
		return m, kernelErr(err, "ip link show %s", m.HostName)
	}
	if err := configure(n, link, old, v); err != nil {
		return m, err
	}
	if host := hostName(v); host != m.HostName {
		h.p.own(m.Namespace, host, true)
		h.p.own(m.Namespace, m.HostName, false)
		m.HostName = host
	}
	return m, nil
}

// Delete removes the link (a veth pair goes with either end). An adopted
// interface stays as it is; the Linux end of a VPP TAP moves back to the
// plugin's namespace, where VPP deletes it.
func (h *interfaces) Delete(_ context.Context, _ linuxinterfaces.InterfaceKey, v *iface, m InterfaceMeta) error {
	n, err := h.p.ns.get(m.Namespace)
	if err != nil {
		return err
	}
	if adopted(v.GetType()) {
		h.p.own(m.Namespace, m.HostName, false)
		if v.GetType() != linuxinterfaces.Interface_TYPE_TAP_TO_VPP || m.Namespace == "" {
			return nil
		}
		link, err := n.h.LinkByIndex(m.Index)
		if err != nil {
			return notFound(kernelErr(err, "ip link show %s", m.HostName))
		}
		// ip link set dev NAME netns (the plugin's)
		return kernelErr(n.h.LinkSetNsFd(link, int(h.p.ns.def)), "ip link set dev %s netns (the plugin's)", m.HostName)
	}
	link, err := n.h.LinkByIndex(m.Index)
	if err != nil {
		return notFound(kernelErr(err, "ip link show %s", m.HostName))
	}
	if link.Attrs().Name != m.HostName {
		// Not ours any more: the index was reused by another link.
		return fmt.Errorf("ip link del %s: %w (its index %d now names %s)", m.HostName, kv.ErrNotFound, m.Index, link.Attrs().Name)
	}
	// ip link del NAME
	if err := n.h.LinkDel(link); err != nil {
		return notFound(kernelErr(err, "ip link del %s", m.HostName))
	}
	h.p.own(m.Namespace, m.HostName, false)
	return nil
}

// Retrieve reports the interfaces of correlate that exist in the kernel
// with their host name and type, read back: the fields the kernel has
// (state, MTU and MAC address when managed, addresses of the value,
// bridge master, link parameters) as the kernel has them. An interface
// that is missing or of another type is not reported (it is not ours).
func (h *interfaces) Retrieve(_ context.Context, correlate []linuxinterfaces.InterfaceItem[InterfaceMeta]) ([]linuxinterfaces.InterfaceItem[InterfaceMeta], error) {
	byLabel := make(map[string]*iface, len(correlate))
	for _, c := range correlate {
		byLabel[c.Value.GetName()] = c.Value
	}
	views := map[string]*nsView{}
	var out []linuxinterfaces.InterfaceItem[InterfaceMeta]
	found := map[string]InterfaceMeta{}
	defer func() {
		h.p.retrievedMu.Lock()
		h.p.retrieved = found
		h.p.retrievedMu.Unlock()
	}()
	for _, c := range correlate {
		v := c.Value
		view, ok := views[nsKey(v)]
		if !ok {
			var err error
			if view, err = h.p.view(nsKey(v)); err != nil {
				if isGone(err) || errors.Is(err, errNamespace) {
					// No such namespace, or one the plugin may not touch:
					// nothing of ours there.
					views[nsKey(v)] = nil
					continue
				}
				return nil, err
			}
			views[nsKey(v)] = view
		}
		if view == nil {
			continue
		}
		link := view.byName[hostName(v)]
		if link == nil || !matches(link, v) {
			continue
		}
		got, err := h.observe(view, link, v, byLabel)
		if err != nil {
			return nil, err
		}
		h.p.own(nsKey(v), link.Attrs().Name, true)
		meta := InterfaceMeta{Index: link.Attrs().Index, Namespace: nsKey(v), HostName: link.Attrs().Name}
		found[v.GetName()] = meta
		out = append(out, linuxinterfaces.InterfaceItem[InterfaceMeta]{Key: c.Key, Value: got, Metadata: meta, Origin: kv.OriginNB})
	}
	return out, nil
}

// observe builds the value the kernel has for the intended value v.
func (h *interfaces) observe(view *nsView, link netlink.Link, v *iface, byLabel map[string]*iface) (*iface, error) {
	a := link.Attrs()
	got := &iface{
		Name: v.GetName(), Type: v.GetType(), HostIfName: v.GetHostIfName(), Namespace: v.GetNamespace(),
		NamespaceKind: v.GetNamespaceKind(), NamespacePid: v.GetNamespacePid(), NamespacePath: v.GetNamespacePath(),
		VethPeer: v.GetVethPeer(), VppTap: v.GetVppTap(), Enabled: a.Flags&net.FlagUp != 0,
	}
	if v.GetMtu() != 0 {
		got.Mtu = uint32(a.MTU)
	}
	if v.GetPhysAddress() != "" {
		got.PhysAddress = a.HardwareAddr.String()
	}
	addrs, err := view.addrs(link)
	if err != nil {
		return nil, err
	}
	for _, s := range v.GetIpAddresses() {
		if p, err := netip.ParsePrefix(s); err == nil && addrs[p] {
			got.IpAddresses = append(got.IpAddresses, s)
		}
	}
	// hostOf is the host name of the interface with the given label.
	hostOf := func(label string) string {
		if pv := byLabel[label]; pv != nil && nsKey(pv) == nsKey(v) {
			return hostName(pv)
		}
		if m, ok := h.p.Interfaces().Get(label); ok && m.Namespace == nsKey(v) {
			return m.HostName
		}
		return label
	}
	if v.GetMaster() != "" && a.MasterIndex != 0 && view.nameOf(a.MasterIndex) == hostOf(v.GetMaster()) {
		got.Master = v.GetMaster()
	}
	parentIndex := a.ParentIndex
	switch l := link.(type) {
	case *netlink.Vxlan:
		parentIndex = l.VtepDevIndex
		x := &linuxinterfaces.Interface_Vxlan{Vni: uint32(l.VxlanId), DstPort: uint32(l.Port)}
		if len(l.SrcAddr) > 0 && !l.SrcAddr.IsUnspecified() {
			x.LocalIp = l.SrcAddr.String()
		}
		if len(l.Group) > 0 && !l.Group.IsUnspecified() {
			x.RemoteIp = l.Group.String()
		}
		got.Vxlan = x
	case *netlink.Macvlan:
		for mode, nm := range macvlanModes {
			if nm == l.Mode {
				got.MacvlanMode = mode
			}
		}
	case *netlink.Vlan:
		got.VlanId = uint32(l.VlanId)
	case *netlink.Vrf:
		got.VrfTable = l.Table
	}
	if v.GetParent() != "" && parentIndex != 0 && view.nameOf(parentIndex) == hostOf(v.GetParent()) {
		got.Parent = v.GetParent()
	}
	return got, nil
}

// nsView is one read of the links of a namespace, with their addresses
// read on demand.
type nsView struct {
	n       *namespace
	byName  map[string]netlink.Link
	byIndex map[int]netlink.Link
	addrsOf map[int]map[netip.Prefix]bool // nil: not read yet
}

// view reads the links of a namespace.
func (p *Plugin) view(namespace string) (*nsView, error) {
	n, err := p.ns.get(namespace)
	if err != nil {
		return nil, err
	}
	return viewOf(n)
}

func viewOf(n *namespace) (*nsView, error) {
	links, err := retryDump(func() ([]netlink.Link, error) { return n.h.LinkList() })
	if err != nil {
		return nil, kernelErr(err, "ip link show (namespace %s)", nsName(n))
	}
	view := &nsView{n: n, byName: map[string]netlink.Link{}, byIndex: map[int]netlink.Link{}}
	for _, l := range links {
		view.byName[l.Attrs().Name] = l
		view.byIndex[l.Attrs().Index] = l
	}
	return view, nil
}

func (v *nsView) nameOf(index int) string {
	if l := v.byIndex[index]; l != nil {
		return l.Attrs().Name
	}
	return ""
}

// addrs returns the addresses of a link (ip addr show dev NAME); the
// first call reads those of every link of the namespace.
func (v *nsView) addrs(link netlink.Link) (map[netip.Prefix]bool, error) {
	if v.addrsOf == nil {
		all, err := addrsByIndex(v.n)
		if err != nil {
			return nil, kernelErr(err, "ip addr show dev %s", link.Attrs().Name)
		}
		v.addrsOf = all
	}
	return v.addrsOf[link.Attrs().Index], nil
}

// addrsByIndex returns the addresses of every interface of the namespace,
// by index: one dump, as iproute2 reads the addresses of even one
// interface (the kernel's dump is of them all, whichever a request
// names). An interface without addresses has none in the map.
func addrsByIndex(n *namespace) (map[int]map[netip.Prefix]bool, error) {
	// ip addr show
	list, err := retryDump(func() ([]netlink.Addr, error) { return n.h.AddrList(nil, netlink.FAMILY_ALL) })
	if err != nil {
		return nil, err
	}
	out := map[int]map[netip.Prefix]bool{}
	for _, a := range list {
		p, ok := prefixOf(a.IPNet)
		if !ok {
			continue
		}
		if out[a.LinkIndex] == nil {
			out[a.LinkIndex] = map[netip.Prefix]bool{}
		}
		out[a.LinkIndex][p] = true
	}
	return out, nil
}

// prefixOf converts an interface address (host bits kept).
func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones), true
}

// retryDump repeats a dump the kernel interrupted (its results may be
// inconsistent) a few times.
func retryDump[T any](f func() (T, error)) (T, error) {
	var out T
	var err error
	for range 5 {
		if out, err = f(); err == nil || !isDumpInterrupted(err) {
			return out, err
		}
	}
	return out, err
}
