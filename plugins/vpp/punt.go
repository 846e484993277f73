package vpp

import (
	"context"
	"fmt"

	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/punt"

	vpppunt "github.com/kvdescriptor/kvdescriptor/generated/vpp/punt/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// puntHeaderVersion is the version of the descriptor VPP puts before
// each packet it sends to a punt socket; VPP knows only 1.
const puntHeaderVersion = 1

// puntToHosts is the handler of vpp.punt.v1.ToHost. It has no Update:
// another family or socket re-creates the value.
type puntToHosts struct{ p *Plugin }

var (
	_ vpppunt.ToHostRetriever[struct{}] = (*puntToHosts)(nil)
	_ vpppunt.ToHostValidator           = (*puntToHosts)(nil)
)

// Validate refuses a socket path that the plugin does not allow.
func (h *puntToHosts) Validate(_ vpppunt.ToHostKey, v *vpppunt.ToHost) error {
	return h.p.checkSocketPath(v.GetSocketPath())
}

// Create registers the socket for the port, per family.
// (no vppctl equivalent: the binary API's punt_socket_register)
func (h *puntToHosts) Create(ctx context.Context, k vpppunt.ToHostKey, v *vpppunt.ToHost) (struct{}, error) {
	for _, af := range families(v.GetL3Protocol()) {
		if err := h.p.puntRegister(ctx, udpPunt(af, k.Port), v.GetSocketPath()); err != nil {
			return struct{}{}, err
		}
	}
	return struct{}{}, nil
}

// Delete deregisters the socket, per family.
func (h *puntToHosts) Delete(ctx context.Context, k vpppunt.ToHostKey, v *vpppunt.ToHost, _ struct{}) error {
	for _, af := range families(v.GetL3Protocol()) {
		if err := h.p.puntDeregister(ctx, udpPunt(af, k.Port)); err != nil {
			return err
		}
	}
	return nil
}

// Retrieve dumps the UDP punt sockets, by port: IPv4 and IPv6 to one
// socket are ALL; of two sockets, the IPv4 one is reported. Correlated
// ports are ours, the others obtained.
func (h *puntToHosts) Retrieve(ctx context.Context, correlate []vpppunt.ToHostItem[struct{}]) ([]vpppunt.ToHostItem[struct{}], error) {
	list, err := h.p.puntSockets(ctx, punt.PUNT_API_TYPE_L4)
	if err != nil {
		return nil, err
	}
	ours := map[vpppunt.ToHostKey]bool{}
	for _, it := range correlate {
		ours[it.Key] = true
	}
	byPort := map[uint16]*vpppunt.ToHost{}
	var out []vpppunt.ToHostItem[struct{}]
	for _, d := range list {
		l4 := d.Punt.Punt.GetL4()
		if l4.Protocol != ip_types.IP_API_PROTO_UDP {
			continue
		}
		l3, path := vpppunt.L3Protocol_IPV4, d.Pathname
		if l4.Af == ip_types.ADDRESS_IP6 {
			l3 = vpppunt.L3Protocol_IPV6
		}
		switch v := byPort[l4.Port]; {
		case v == nil:
			k := vpppunt.ToHostKey{Port: uint32(l4.Port)}
			byPort[l4.Port] = &vpppunt.ToHost{Port: k.Port, L3Protocol: l3, SocketPath: path}
			out = append(out, vpppunt.ToHostItem[struct{}]{Key: k, Value: byPort[l4.Port], Origin: origin(ours[k])})
		case v.GetSocketPath() == path:
			v.L3Protocol = vpppunt.L3Protocol_ALL
		case l3 == vpppunt.L3Protocol_IPV4:
			v.L3Protocol, v.SocketPath = l3, path
		}
	}
	return out, nil
}

// families are the address families of a punt's L3 protocol.
func families(l3 vpppunt.L3Protocol) []ip_types.AddressFamily {
	all := []ip_types.AddressFamily{ip_types.ADDRESS_IP4, ip_types.ADDRESS_IP6}
	switch l3 {
	case vpppunt.L3Protocol_IPV4:
		return all[:1]
	case vpppunt.L3Protocol_IPV6:
		return all[1:]
	}
	return all
}

// udpPunt is the punt of the UDP packets of a family to a port.
func udpPunt(af ip_types.AddressFamily, port uint32) punt.Punt {
	return punt.Punt{Type: punt.PUNT_API_TYPE_L4, Punt: punt.PuntUnionL4(punt.PuntL4{Af: af, Protocol: ip_types.IP_API_PROTO_UDP, Port: uint16(port)})}
}

// puntRegister registers the socket at path for the punt.
func (p *Plugin) puntRegister(ctx context.Context, what punt.Punt, path string) error {
	_, err := punt.NewServiceClient(p.conn).PuntSocketRegister(ctx, &punt.PuntSocketRegister{HeaderVersion: puntHeaderVersion, Punt: what, Pathname: path})
	return vppErr("punt_socket_register", err)
}

// puntDeregister deregisters the socket of the punt.
func (p *Plugin) puntDeregister(ctx context.Context, what punt.Punt) error {
	_, err := punt.NewServiceClient(p.conn).PuntSocketDeregister(ctx, &punt.PuntSocketDeregister{Punt: what})
	return vppErr("punt_socket_deregister", err)
}

// puntSockets dumps the punt sockets of a type.
func (p *Plugin) puntSockets(ctx context.Context, typ punt.PuntType) ([]*punt.PuntSocketDetails, error) {
	return dump[*punt.PuntSocketDetails]("punt_socket_dump")(punt.NewServiceClient(p.conn).PuntSocketDump(ctx, &punt.PuntSocketDump{Type: typ}))
}

// puntExceptions is the handler of vpp.punt.v1.Exception. It has no
// Update: another socket re-creates the value.
type puntExceptions struct{ p *Plugin }

var (
	_ vpppunt.ExceptionRetriever[struct{}] = (*puntExceptions)(nil)
	_ vpppunt.ExceptionValidator           = (*puntExceptions)(nil)
)

// Validate refuses a socket path that the plugin does not allow.
func (h *puntExceptions) Validate(_ vpppunt.ExceptionKey, v *vpppunt.Exception) error {
	return h.p.checkSocketPath(v.GetSocketPath())
}

// Create registers the socket for the reason's packets.
func (h *puntExceptions) Create(ctx context.Context, k vpppunt.ExceptionKey, v *vpppunt.Exception) (struct{}, error) {
	id, err := h.reason(ctx, k.Reason)
	if err != nil {
		return struct{}{}, err
	}
	return struct{}{}, h.p.puntRegister(ctx, exceptionPunt(id), v.GetSocketPath())
}

// Delete deregisters the socket.
func (h *puntExceptions) Delete(ctx context.Context, k vpppunt.ExceptionKey, _ *vpppunt.Exception, _ struct{}) error {
	id, err := h.reason(ctx, k.Reason)
	if err != nil {
		return err
	}
	return h.p.puntDeregister(ctx, exceptionPunt(id))
}

// reason returns the id of the punt reason named name.
// vppctl show punt reasons
func (h *puntExceptions) reason(ctx context.Context, name string) (uint32, error) {
	list, err := dump[*punt.PuntReasonDetails]("punt_reason_dump")(punt.NewServiceClient(h.p.conn).PuntReasonDump(ctx, &punt.PuntReasonDump{Reason: punt.PuntReason{Name: name}}))
	for _, d := range list {
		if d.Reason.Name == name {
			return d.Reason.ID, nil
		}
	}
	if err == nil {
		err = kv.NonRetriable(fmt.Errorf("punt reason %q: VPP has no such reason", name))
	}
	return 0, err
}

// Retrieve dumps the exception punt sockets of reasons VPP names:
// correlated ones are ours, the others obtained.
func (h *puntExceptions) Retrieve(ctx context.Context, correlate []vpppunt.ExceptionItem[struct{}]) ([]vpppunt.ExceptionItem[struct{}], error) {
	list, err := h.p.puntSockets(ctx, punt.PUNT_API_TYPE_EXCEPTION)
	if err != nil {
		return nil, err
	}
	reasons, err := dump[*punt.PuntReasonDetails]("punt_reason_dump")(punt.NewServiceClient(h.p.conn).PuntReasonDump(ctx, &punt.PuntReasonDump{}))
	if err != nil {
		return nil, err
	}
	names := map[uint32]string{}
	for _, r := range reasons {
		names[r.Reason.ID] = r.Reason.Name
	}
	ours := map[vpppunt.ExceptionKey]bool{}
	for _, it := range correlate {
		ours[it.Key] = true
	}
	var out []vpppunt.ExceptionItem[struct{}]
	for _, d := range list {
		if name := names[d.Punt.Punt.GetException().ID]; name != "" {
			k := vpppunt.ExceptionKey{Reason: name}
			out = append(out, vpppunt.ExceptionItem[struct{}]{Key: k, Value: &vpppunt.Exception{Reason: name, SocketPath: d.Pathname}, Origin: origin(ours[k])})
		}
	}
	return out, nil
}

// exceptionPunt is the punt of the packets of a reason.
func exceptionPunt(id uint32) punt.Punt {
	return punt.Punt{Type: punt.PUNT_API_TYPE_EXCEPTION, Punt: punt.PuntUnionException(punt.PuntException{ID: id})}
}
