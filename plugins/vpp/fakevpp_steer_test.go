package vpp

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/punt"
	"go.fd.io/govpp/binapi/span"
	"go.fd.io/govpp/binapi/stn"
)

// fakeSteer is the fake VPP's part of what sends packets somewhere besides
// forwarding: STN rules, SPAN (port mirroring) and punt sockets.
type fakeSteer struct {
	stn  map[netip.Addr]uint32 // address -> interface, one rule per address
	span map[spanID]span.SpanState
	punt map[punt.Punt]string // what is punted -> the client's socket
	// puntSocket is VPP's own punt socket (startup.conf punt { socket });
	// empty: punt sockets are not enabled.
	puntSocket string
}

// fakeReasons are the punt reasons of the fake, by id (vppctl show punt
// reasons).
var fakeReasons = []string{"ipsec4-spi-0", "ipsec6-spi-0", "ipsec4-spi-o-udp-0", "ipsec4-no-such-tunnel", "ipsec6-no-such-tunnel"}

// spanID is a mirror in VPP: per source, feature (device or L2) and
// destination, a receive and a transmit bit (the state).
type spanID struct {
	from, to uint32
	l2       bool
}

func init() { registerFakeExt(func() fakeExt { return &fakeSteer{} }) }

func (x *fakeSteer) reset() {
	x.stn, x.span = map[netip.Addr]uint32{}, map[spanID]span.SpanState{}
	x.punt, x.puntSocket = map[punt.Punt]string{}, "/run/vpp/punt.sock"
}

// forget removes the mirrors from and to interface i. VPP's STN keeps a
// rule whose interface is gone (it has no hook for deleted interfaces).
func (x *fakeSteer) forget(i uint32) {
	for id := range x.span {
		if id.from == i || id.to == i {
			delete(x.span, id)
		}
	}
}

// apply simulates the requests, refusing what VPP refuses: an unknown
// sw_if_index; an STN rule deleted that does not exist (adding one for an
// address that has one moves it to the new interface, as VPP does); a
// mirror of an interface to itself or a state beyond both directions
// (disabling a mirror that is not there is not an error in VPP).
func (x *fakeSteer) apply(f *fakeVPP, msg api.Message, retval *int32) ([]api.Message, bool) {
	iface := func(i interface_types.InterfaceIndex) bool { return f.iface(i, retval) != nil }
	fail := func(e api.VPPApiError) ([]api.Message, bool) {
		*retval = int32(e)
		return nil, true
	}
	switch m := msg.(type) {
	case *stn.StnAddDelRule:
		a := addrOf(m.IPAddress)
		_, ok := x.stn[a]
		switch {
		case !a.IsValid():
			return fail(api.INVALID_VALUE)
		case m.IsAdd && iface(m.SwIfIndex):
			x.stn[a] = uint32(m.SwIfIndex)
		case !m.IsAdd && !ok:
			return fail(api.NO_SUCH_ENTRY)
		case !m.IsAdd:
			delete(x.stn, a)
		}
	case *stn.StnRulesDump:
		var out []api.Message
		for _, a := range slices.SortedFunc(maps.Keys(x.stn), netip.Addr.Compare) {
			out = append(out, &stn.StnRulesDetails{IPAddress: address(a), SwIfIndex: interface_types.InterfaceIndex(x.stn[a])})
		}
		return out, true
	case *span.SwInterfaceSpanEnableDisable:
		id := spanID{uint32(m.SwIfIndexFrom), uint32(m.SwIfIndexTo), m.IsL2}
		switch {
		case !iface(m.SwIfIndexFrom) || !iface(m.SwIfIndexTo):
		case m.State > span.SPAN_STATE_API_RX_TX:
			return fail(api.UNIMPLEMENTED)
		case id.from == id.to:
			return fail(api.INVALID_INTERFACE)
		case m.State == span.SPAN_STATE_API_DISABLED:
			delete(x.span, id)
		default:
			x.span[id] = m.State
		}
	case *span.SwInterfaceSpanDump:
		var out []api.Message
		for _, id := range slices.SortedFunc(maps.Keys(x.span), func(a, b spanID) int { return int(a.from)*1e6 + int(a.to) - int(b.from)*1e6 - int(b.to) }) {
			if id.l2 == m.IsL2 {
				out = append(out, &span.SwInterfaceSpanDetails{SwIfIndexFrom: interface_types.InterfaceIndex(id.from), SwIfIndexTo: interface_types.InterfaceIndex(id.to), State: x.span[id], IsL2: id.l2})
			}
		}
		return out, true
	case *punt.PuntSocketRegister:
		return x.puntRegister(m, retval), true
	case *punt.PuntSocketDeregister:
		delete(x.punt, m.Punt) // VPP: no error for what is not registered
	case *punt.PuntSocketDump:
		var out []api.Message
		for p, path := range x.punt {
			if p.Type == m.Type {
				out = append(out, &punt.PuntSocketDetails{Punt: p, Pathname: path})
			}
		}
		slices.SortFunc(out, func(a, b api.Message) int {
			return strings.Compare(fmt.Sprint(a.(*punt.PuntSocketDetails).Punt), fmt.Sprint(b.(*punt.PuntSocketDetails).Punt))
		})
		return out, true
	case *punt.PuntReasonDump:
		var out []api.Message
		for id, name := range fakeReasons {
			if m.Reason.Name == "" || m.Reason.Name == name {
				out = append(out, &punt.PuntReasonDetails{Reason: punt.PuntReason{ID: uint32(id), Name: name}})
			}
		}
		return out, true
	default:
		return nil, false
	}
	return nil, true
}

// puntRegister registers a punt socket, refusing (with VPP's -1 of a
// clib error) what VPP refuses: punt sockets not enabled, a descriptor
// version other than 1, an L4 punt of another protocol than UDP or of
// another family than IPv4 and IPv6, an unknown reason, other punt
// types, and a path that does not fit sun_path. Registering what is
// registered moves it to the new socket, as VPP does. The reply holds
// VPP's own socket.
func (x *fakeSteer) puntRegister(m *punt.PuntSocketRegister, retval *int32) []api.Message {
	l4, exc := m.Punt.Punt.GetL4(), m.Punt.Punt.GetException()
	switch {
	case x.puntSocket == "" || m.HeaderVersion != 1:
	case m.Punt.Type == punt.PUNT_API_TYPE_L4 && (l4.Protocol != ip_types.IP_API_PROTO_UDP || l4.Af > ip_types.ADDRESS_IP6):
	case m.Punt.Type == punt.PUNT_API_TYPE_EXCEPTION && int(exc.ID) >= len(fakeReasons):
	case m.Punt.Type == punt.PUNT_API_TYPE_IP_PROTO || m.Punt.Type > punt.PUNT_API_TYPE_EXCEPTION:
	case m.Pathname == "" || len(m.Pathname) > 107:
		*retval = int32(api.INVALID_VALUE)
		return nil
	default:
		x.punt[m.Punt] = m.Pathname
		return []api.Message{&punt.PuntSocketRegisterReply{Pathname: x.puntSocket}}
	}
	if *retval == 0 {
		*retval = int32(api.UNSPECIFIED)
	}
	return nil
}
