//go:build linux

package linux

import (
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// routeMsg is what the route descriptor reads of an RTM_NEWROUTE message
// of a dump: the rtmsg header and the attributes the model needs. Its
// byte slices alias the message.
type routeMsg struct {
	family   uint8
	dstLen   uint8
	protocol uint8
	scope    uint8
	flags    uint32
	table    uint32 // the header's, or RTA_TABLE when there is one
	priority uint32 // RTA_PRIORITY, the metric
	oif      uint32 // RTA_OIF; 0: none
	// dst is RTA_DST (hasDst: there is one), gw RTA_GATEWAY.
	dst, gw   []byte
	hasDst    bool
	multipath bool // an RTA_MULTIPATH with next hops
}

// routeDumpRequest is the request of a dump of all the routes of all
// families and tables that carry protocol proto: `ip route show table
// all proto PROTO`. A kernel that checks dump requests strictly (4.20
// on, when the socket asks for it) sends only those routes and no cached
// ones (exceptions); others send every route.
func routeDumpRequest(proto uint8) []byte {
	b := make([]byte, unix.SizeofNlMsghdr+unix.SizeofRtMsg)
	ne := nl.NativeEndian()
	ne.PutUint32(b[0:4], uint32(len(b)))
	ne.PutUint16(b[4:6], unix.RTM_GETROUTE)
	// The flags and sequence number are the socket's to set; the
	// rtmsg: family AF_UNSPEC, table RT_TABLE_UNSPEC (all), no flags.
	b[unix.SizeofNlMsghdr+5] = proto // rtm_protocol
	return b
}

// parse reads an RTM_NEWROUTE message body (rtmsg and attributes) into m.
// It fails only on a malformed message.
func (m *routeMsg) parse(b []byte) error {
	if len(b) < unix.SizeofRtMsg {
		return errMalformed
	}
	ne := nl.NativeEndian()
	*m = routeMsg{
		family:   b[0],
		dstLen:   b[1],
		table:    uint32(b[4]),
		protocol: b[5],
		scope:    b[6],
		flags:    ne.Uint32(b[8:12]),
	}
	for a := b[unix.SizeofRtMsg:]; len(a) >= unix.SizeofRtAttr; {
		size := int(ne.Uint16(a[0:2]))
		if size < unix.SizeofRtAttr || size > len(a) {
			return errMalformed
		}
		v := a[unix.SizeofRtAttr:size]
		switch ne.Uint16(a[2:4]) {
		case unix.RTA_DST:
			m.dst, m.hasDst = v, true
		case unix.RTA_GATEWAY:
			m.gw = v
		case unix.RTA_OIF, unix.RTA_PRIORITY, unix.RTA_TABLE:
			if len(v) < 4 {
				return errMalformed
			}
			switch ne.Uint16(a[2:4]) {
			case unix.RTA_OIF:
				m.oif = ne.Uint32(v)
			case unix.RTA_PRIORITY:
				m.priority = ne.Uint32(v)
			case unix.RTA_TABLE:
				m.table = ne.Uint32(v)
			}
		case unix.RTA_MULTIPATH:
			m.multipath = len(v) > 0
		}
		a = a[min(rtaAlign(size), len(a)):]
	}
	return nil
}

// isIP reports whether the route is of IPv4 or IPv6 (not MPLS, not a
// multicast forwarding entry).
func (m *routeMsg) isIP() bool { return m.family == unix.AF_INET || m.family == unix.AF_INET6 }

// cloned reports whether the route is a cached one (an exception: a
// learnt MTU or redirect), not one that was added.
func (m *routeMsg) cloned() bool { return m.flags&unix.RTM_F_CLONED != 0 }

// dumpRoutes calls each with every IP route in the namespace, in all
// tables, that carries protocol proto and is not a cached one (`ip route
// show table all proto PROTO`), read straight from the kernel's messages.
// The route, and its byte slices, are valid only during the call.
func (n *namespace) dumpRoutes(proto uint8, each func(*routeMsg)) error {
	s, err := n.batchSocket()
	if err != nil {
		return err
	}
	var m routeMsg
	return s.dump(routeDumpRequest(proto), func(typ uint16, body []byte) error {
		if typ != unix.RTM_NEWROUTE {
			return nil
		}
		if err := m.parse(body); err != nil {
			return err
		}
		// The kernel may not have filtered (before 4.20).
		if m.protocol != proto || !m.isIP() || m.cloned() {
			return nil
		}
		each(&m)
		return nil
	})
}
