package vpp

import (
	"context"
	"net/netip"

	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/l3xc"

	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// l3xcs is the handler of vpp.l3.v1.L3XConnect.
type l3xcs struct{ p *Plugin }

var (
	_ vppl3.L3XConnectUpdater[struct{}]   = (*l3xcs)(nil)
	_ vppl3.L3XConnectRetriever[struct{}] = (*l3xcs)(nil)
)

// Create cross-connects the interface's packets of the protocol to the
// paths.
// vppctl l3xc add NAME [ip6] via NH PATH-IF ...
func (h *l3xcs) Create(ctx context.Context, k vppl3.L3XConnectKey, v *vppl3.L3XConnect) (struct{}, error) {
	return h.Update(ctx, k, nil, v, struct{}{})
}

// Update replaces the paths, in place.
func (h *l3xcs) Update(ctx context.Context, k vppl3.L3XConnectKey, _, v *vppl3.L3XConnect, _ struct{}) (struct{}, error) {
	idx, err := h.p.swIfIndex(k.Interface)
	if err != nil {
		return struct{}{}, err
	}
	xc := l3xc.L3xc{SwIfIndex: interface_types.InterfaceIndex(idx), IsIP6: v.GetProtocol() == vppl3.L3XConnect_IPV6}
	for _, p := range v.GetPaths() {
		out, err := h.p.swIfIndex(p.GetOutgoingInterface())
		if err != nil {
			return struct{}{}, err
		}
		path := fib_types.FibPath{SwIfIndex: out, Weight: uint8(p.GetWeight()), Preference: uint8(p.GetPreference())}
		if nh, err := netip.ParseAddr(p.GetNextHopAddr()); err == nil && nh.Is6() {
			path.Proto, path.Nh.Address = fib_types.FIB_API_PATH_NH_PROTO_IP6, ip_types.AddressUnionIP6(nh.As16())
		} else if err == nil {
			path.Nh.Address = ip_types.AddressUnionIP4(nh.As4())
		} else if p.GetNextHopAddr() != "" {
			return struct{}{}, kv.Invalid("paths.next_hop_addr", "%q is not an IP address", p.GetNextHopAddr())
		}
		xc.Paths = append(xc.Paths, path)
	}
	xc.NPaths = uint8(len(xc.Paths))
	_, err = l3xc.NewServiceClient(h.p.conn).L3xcUpdate(ctx, &l3xc.L3xcUpdate{L3xc: xc})
	return struct{}{}, vppErr("l3xc_update", err)
}

// Delete removes the cross-connect.
// vppctl l3xc del NAME [ip6]
func (h *l3xcs) Delete(ctx context.Context, k vppl3.L3XConnectKey, v *vppl3.L3XConnect, _ struct{}) error {
	idx, err := h.p.swIfIndex(k.Interface)
	if err != nil {
		return err
	}
	_, err = l3xc.NewServiceClient(h.p.conn).L3xcDel(ctx, &l3xc.L3xcDel{SwIfIndex: interface_types.InterfaceIndex(idx), IsIP6: v.GetProtocol() == vppl3.L3XConnect_IPV6})
	return vppErr("l3xc_del", err)
}

// Retrieve dumps the cross-connects of interfaces it can name: correlated
// ones are ours, the others obtained.
func (h *l3xcs) Retrieve(ctx context.Context, correlate []vppl3.L3XConnectItem[struct{}]) ([]vppl3.L3XConnectItem[struct{}], error) {
	list, err := dump[*l3xc.L3xcDetails]("l3xc_dump")(l3xc.NewServiceClient(h.p.conn).L3xcDump(ctx, &l3xc.L3xcDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}))
	if err != nil {
		return nil, err
	}
	ours := map[vppl3.L3XConnectKey]bool{}
	for _, it := range correlate {
		ours[it.Key] = true
	}
	names := h.p.interfaceNames()
	var out []vppl3.L3XConnectItem[struct{}]
	for _, d := range list {
		k := vppl3.L3XConnectKey{Interface: names[uint32(d.L3xc.SwIfIndex)]}
		if k.Interface == "" {
			continue
		}
		got := &vppl3.L3XConnect{Interface: k.Interface}
		if d.L3xc.IsIP6 {
			got.Protocol = vppl3.L3XConnect_IPV6
		}
		for _, p := range d.L3xc.Paths {
			nh := ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: p.Nh.Address}
			if p.Proto == fib_types.FIB_API_PATH_NH_PROTO_IP6 {
				nh.Af = ip_types.ADDRESS_IP6
			}
			path := &vppl3.L3XConnect_Path{OutgoingInterface: names[p.SwIfIndex], Weight: uint32(p.Weight), Preference: uint32(p.Preference)}
			if a := addrOf(nh); !a.IsUnspecified() {
				path.NextHopAddr = a.String()
			}
			got.Paths = append(got.Paths, path)
		}
		out = append(out, vppl3.L3XConnectItem[struct{}]{Key: k, Value: got, Origin: origin(ours[k])})
	}
	return out, nil
}
