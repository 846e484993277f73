package vpp

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/adapter/mock"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/af_packet"
	"go.fd.io/govpp/binapi/fib"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/gre"
	vppif "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/ipip"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/memif"
	"go.fd.io/govpp/binapi/tapv2"
	"go.fd.io/govpp/binapi/vxlan"
	"go.fd.io/govpp/codec"
)

// fakeVPP is a VPP simulated over govpp's mock adapter: a reply handler
// decodes each request (real binary-API encoding), records it, applies it
// to a small model of VPP's state and answers with encoded replies. Like
// VPP's socket, it answers from its own goroutine, in order, so that a
// dump of any length is read while it is sent.
type fakeVPP struct {
	*mock.VppAdapter
	types map[string]reflect.Type // message types by name

	mu       sync.Mutex
	cb       adapter.MsgCallback
	requests []api.Message
	record   bool
	fail     map[string][]int32 // retvals of the next requests of a name
	down     bool               // VPP is gone: nothing is answered
	mute     bool               // requests are recorded, and only control pings answered
	refuse   error              // what Connect returns
	lag      time.Duration      // how late each reply is sent (SetLag)
	pings    int                // control pings answered
	connects int                // successful Connect calls (Connects)

	nextIf  uint32
	ifaces  map[uint32]*vppif.SwInterfaceDetails
	ifVrf   map[uint32]uint32 // IPv4 table
	ifVrf6  map[uint32]uint32 // IPv6 table
	addrs   map[uint32][]ip_types.AddressWithPrefix
	nextBD  uint32
	bds     map[uint32]*l2.BridgeDomainDetails
	fib     map[uint32][]*l2.L2FibTableDetails
	tables  map[ip.IPTable]bool
	routes  map[routeID]*fakeRoute // one per table, prefix and source
	nextSeq uint64
	neigh   []ip_neighbor.IPNeighbor
	vxlans  map[uint32]*vxlan.VxlanTunnelV2Details
	unnum   map[uint32]uint32 // unnumbered interface -> the one whose addresses it uses
	rxMode  map[uint32]interface_types.RxMode
	gres    map[uint32]gre.GreTunnel
	ipips   map[uint32]ipip.IpipTunnel
	exts    []fakeExt // the parts simulated in files of their own
	// deliver is held while a reply is handed to govpp; gen counts the
	// connections: a reply queued on an earlier one is dropped, as a
	// socket that closed drops it (see Connect).
	deliver  sync.Mutex
	gen      uint64
	unknown  sync.Map // names of messages this VPP does not know (GetMsgID)
	replies  chan func()
	stop     chan struct{}
	stopOnce sync.Once
}

func newFakeVPP(t testing.TB) *fakeVPP {
	f := &fakeVPP{VppAdapter: mock.NewVppAdapter(), types: map[string]reflect.Type{}, record: true,
		fail: map[string][]int32{}, replies: make(chan func(), 1<<16), stop: make(chan struct{})}
	for _, msgs := range api.GetRegisteredMessages() {
		for _, m := range msgs {
			f.types[m.GetMessageName()] = reflect.TypeOf(m).Elem()
		}
	}
	for _, mk := range fakeExtMakers {
		f.exts = append(f.exts, mk())
	}
	f.reset()
	f.MockReplyHandler(f.handle)
	go func() {
		for {
			select {
			case r := <-f.replies:
				f.mu.Lock()
				lag := f.lag
				f.mu.Unlock()
				time.Sleep(lag) // a loaded machine's VPP (SetLag)
				f.deliver.Lock()
				r()
				f.deliver.Unlock()
			case <-f.stop:
				return
			}
		}
	}()
	t.Cleanup(f.close)
	return f
}

func (f *fakeVPP) close() { f.stopOnce.Do(func() { close(f.stop) }) }

// reset empties VPP's state: local0 and the default tables.
func (f *fakeVPP) reset() {
	f.nextIf, f.nextBD = 1, 1
	f.ifaces = map[uint32]*vppif.SwInterfaceDetails{0: {SwIfIndex: 0, InterfaceName: "local0", InterfaceDevType: "local", LinkMtu: 0}}
	f.ifVrf, f.addrs = map[uint32]uint32{}, map[uint32][]ip_types.AddressWithPrefix{}
	f.ifVrf6 = map[uint32]uint32{}
	f.bds, f.fib = map[uint32]*l2.BridgeDomainDetails{}, map[uint32][]*l2.L2FibTableDetails{}
	f.tables = map[ip.IPTable]bool{}
	f.routes, f.neigh = map[routeID]*fakeRoute{}, nil
	f.vxlans = map[uint32]*vxlan.VxlanTunnelV2Details{}
	f.unnum = map[uint32]uint32{}
	f.rxMode = map[uint32]interface_types.RxMode{}
	f.gres = map[uint32]gre.GreTunnel{}
	f.ipips = map[uint32]ipip.IpipTunnel{}
	f.addTable(ip.IPTable{TableID: 0})
	f.addTable(ip.IPTable{TableID: 0, IsIP6: true})
	for _, e := range f.exts {
		e.reset()
	}
}

// The FIB sources of the fake, with the ids and priorities of VPP 25.10's
// (fib_source.h): fib_source_dump lists them, and a route's best source
// is the one with the lowest priority.
const (
	srcSpecial      = 1
	srcInterface    = 4
	srcAPI          = 8
	srcCLI          = 9
	srcAdjacency    = 15
	srcDefaultRoute = 20
)

var fakeSources = []fib.FibSource{
	{ID: srcSpecial, Priority: 0x00, Name: "special"},
	{ID: srcInterface, Priority: 0x03, Name: "interface"},
	{ID: srcAPI, Priority: 0x80, Name: "API"},
	{ID: srcCLI, Priority: 0x81, Name: "CLI"},
	{ID: srcAdjacency, Priority: 0xd0, Name: "adjacency"},
	{ID: srcDefaultRoute, Priority: 0xfd, Name: "default-route"},
}

// addTable creates a table with the routes VPP puts in each: the default
// route and the special prefixes, all dropping.
func (f *fakeVPP) addTable(t ip.IPTable) {
	t.Name = ""
	if f.tables[t] {
		return
	}
	f.tables[t] = true
	specials := map[string]uint8{"0.0.0.0/0": srcDefaultRoute, "0.0.0.0/32": srcDefaultRoute, "224.0.0.0/4": srcSpecial, "240.0.0.0/4": srcSpecial, "255.255.255.255/32": srcSpecial}
	if t.IsIP6 {
		specials = map[string]uint8{"::/0": srcDefaultRoute, "fe80::/10": srcSpecial}
	}
	for dst, src := range specials {
		typ := fib_types.FIB_API_PATH_TYPE_DROP
		if dst == "fe80::/10" {
			typ = fib_types.FIB_API_PATH_TYPE_LOCAL
		}
		f.addRoute(t.TableID, dst, src, fib_types.FibPath{SwIfIndex: ^uint32(0), Type: typ})
	}
}

// routeID identifies the route of a prefix in a table from one source
// (VPP keeps one FIB entry per prefix, with the paths of each source).
type routeID struct {
	table  uint32
	prefix ip_types.Prefix
	src    uint8
}

// fakeRoute is a route of the fake, with the order of its creation.
type fakeRoute struct {
	seq   uint64
	route ip.IPRouteV2
}

// route returns the route of id, created (empty) if it is not there.
func (f *fakeVPP) route(id routeID) *fakeRoute {
	r := f.routes[id]
	if r == nil {
		f.nextSeq++
		r = &fakeRoute{seq: f.nextSeq, route: ip.IPRouteV2{TableID: id.table, Prefix: id.prefix, Src: id.src}}
		f.routes[id] = r
	}
	return r
}

// tableRoutes returns the routes of a table (both families, every
// source) in the order of their creation.
func (f *fakeVPP) tableRoutes(table uint32) []ip.IPRouteV2 {
	var list []*fakeRoute
	for id, r := range f.routes {
		if id.table == table {
			list = append(list, r)
		}
	}
	slices.SortFunc(list, func(a, b *fakeRoute) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]ip.IPRouteV2, len(list))
	for i, r := range list {
		out[i] = r.route
	}
	return out
}

// addRoute adds a path to the route of a prefix from a source, as a
// source other than ours (the API) would: VPP's own, or by hand.
func (f *fakeVPP) addRoute(table uint32, dst string, src uint8, path fib_types.FibPath) {
	r := &f.route(routeID{table, prefix(netip.MustParsePrefix(dst)), src}).route
	r.Paths = append(r.Paths, path)
	r.NPaths = uint8(len(r.Paths))
}

// Restart simulates a VPP restart: it stops answering (the client's
// health check notices) and comes back empty when the client reconnects.
func (f *fakeVPP) Restart() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = true
	f.reset()
}

// Connect connects, unless Refuse said no; a VPP that was down is back.
func (f *fakeVPP) Connect() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse != nil {
		return f.refuse
	}
	f.down = false
	f.connects++
	// Replies of the connection that ended are dropped, and none is
	// handed to govpp while it reads the messages' ids after Connect
	// returns (it writes its message map then without the lock that its
	// reply callback takes: a stale reply at that moment is a data race in
	// govpp). A VPP's socket never answers on a new connection what was
	// asked on an old one.
	f.deliver.Lock()
	f.gen++
	f.deliver.Unlock()
	return nil
}

// SendMsg fails while VPP is down, as a write to the socket of a VPP
// that is gone does: the client's next health check probe notices at
// once, without waiting for replies that never come (a reply timeout
// short enough to notice a silent VPP quickly was also short enough for
// replies that a loaded machine sent late, and govpp then reconnected
// while the test ran; see TestSlowVPPStaysConnected).
func (f *fakeVPP) SendMsg(clientID uint32, data []byte) error {
	f.mu.Lock()
	down := f.down
	f.mu.Unlock()
	if down {
		return errors.New("fake VPP: the socket is closed (VPP restarted)")
	}
	return f.VppAdapter.SendMsg(clientID, data)
}

// SetLag makes the fake send each reply d late (0: at once).
func (f *fakeVPP) SetLag(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lag = d
}

// Pings says how many control pings (the health check's probes among
// them) the fake answered.
func (f *fakeVPP) Pings() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pings
}

// Connects says how many times the client connected.
func (f *fakeVPP) Connects() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.connects
}

// Refuse makes connecting fail with err (nil: succeed again).
func (f *fakeVPP) Refuse(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuse = err
}

// SetMsgCallback keeps the callback: the fake answers through it.
func (f *fakeVPP) SetMsgCallback(cb adapter.MsgCallback) {
	f.mu.Lock()
	f.cb = cb
	f.mu.Unlock()
	f.VppAdapter.SetMsgCallback(cb)
}

// Fail makes the next requests of the given name fail with the retvals.
func (f *fakeVPP) Fail(name string, retvals ...int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[name] = append(f.fail[name], retvals...)
}

// Requests returns the recorded requests (not the control pings) and
// forgets them.
func (f *fakeVPP) Requests() []api.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.requests
	f.requests = nil
	return r
}

// RequestNames returns the names of the recorded requests and forgets
// them.
func (f *fakeVPP) RequestNames() []string {
	var out []string
	for _, m := range f.Requests() {
		out = append(out, m.GetMessageName())
	}
	return out
}

// Do runs f on the state, under the lock.
func (f *fakeVPP) Do(fn func(f *fakeVPP)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeVPP) handle(req mock.MessageDTO) ([]byte, uint16, bool) {
	if req.MsgName == "" { // the mock's fixed ids (control_ping, sw_interface_dump)
		req.MsgName, _ = f.GetMsgNameByID(req.MsgID)
	}
	t, ok := f.types[req.MsgName]
	if !ok {
		panic(fmt.Sprintf("fake VPP: unknown message %q", req.MsgName))
	}
	msg := reflect.New(t).Interface().(api.Message)
	if err := codec.DefaultCodec.DecodeMsg(req.Data, msg); err != nil {
		panic(fmt.Sprintf("fake VPP: decoding %s: %v", req.MsgName, err))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, 0, false
	}
	_, ping := msg.(*memclnt.ControlPing)
	if ping {
		f.pings++
	}
	if !ping && f.record {
		f.requests = append(f.requests, msg)
	}
	if !ping && f.mute {
		return nil, 0, false
	}
	var retval int32
	if rs := f.fail[req.MsgName]; len(rs) > 0 {
		retval, f.fail[req.MsgName] = rs[0], rs[1:]
	}
	var out []api.Message
	if retval == 0 {
		out = f.apply(msg, &retval)
	}
	if !strings.HasSuffix(req.MsgName, "_dump") {
		rt, ok := f.types[req.MsgName+"_reply"]
		if !ok {
			panic(fmt.Sprintf("fake VPP: no reply to %s", req.MsgName))
		}
		r := reflect.New(rt)
		if len(out) == 1 && reflect.TypeOf(out[0]) == r.Type() {
			r = reflect.ValueOf(out[0])
		}
		if fv := r.Elem().FieldByName("Retval"); fv.IsValid() {
			fv.SetInt(int64(retval))
		}
		out = []api.Message{r.Interface().(api.Message)}
	}
	var data [][]byte
	var ids []uint16
	for _, m := range out {
		id, _ := f.GetMsgID(m.GetMessageName(), m.GetCrcString())
		b, err := codec.DefaultCodec.EncodeMsg(m, id)
		if err != nil {
			panic(fmt.Sprintf("fake VPP: encoding %s: %v", m.GetMessageName(), err))
		}
		at := 2 // the context, after the message id
		if m.GetMessageType() == api.RequestMessage {
			at = 6 // a reply VPP declares like a request (sw_interface_rx_placement_details) has a client_index first
		}
		binary.BigEndian.PutUint32(b[at:at+4], req.ClientID)
		data, ids = append(data, b), append(ids, id)
	}
	cb, gen := f.cb, f.gen
	f.replies <- func() {
		if gen != f.gen { // a reply of an earlier connection (f.deliver held)
			return
		}
		for i := range data {
			cb(ids[i], data[i])
		}
	}
	return nil, 0, false // answered from the fake's goroutine
}

const (
	retvalNoSuchEntry = int32(api.NO_SUCH_ENTRY)
	retvalBadIndex    = int32(api.INVALID_SW_IF_INDEX)
)

// apply applies a request to the state and returns the reply (with
// fields beyond Retval) or the details of a dump.
func (f *fakeVPP) apply(msg api.Message, retval *int32) []api.Message {
	iface := func(i interface_types.InterfaceIndex) *vppif.SwInterfaceDetails { return f.iface(i, retval) }
	newIf := f.newIf
	// delIf deletes an interface of the device type dev (VPP refuses to
	// delete another's with the call of one type) and, as VPP does, the
	// sub-interfaces on it.
	delIf := func(i interface_types.InterfaceIndex, dev string) {
		d := iface(i)
		if d == nil {
			return
		}
		if d.InterfaceDevType != dev || d.Type == interface_types.IF_API_TYPE_SUB {
			*retval = retvalBadIndex
			return
		}
		for j, x := range f.ifaces {
			if x.SwIfIndex == i || (x.Type == interface_types.IF_API_TYPE_SUB && x.SupSwIfIndex == uint32(i)) {
				f.forget(j)
			}
		}
	}
	switch m := msg.(type) {
	case *memclnt.ControlPing:
		return []api.Message{&memclnt.ControlPingReply{}}
	case *vppif.CreateLoopback:
		return []api.Message{&vppif.CreateLoopbackReply{SwIfIndex: newIf(fmt.Sprintf("loop%d", f.nextIf), "Loopback", m.MacAddress)}}
	case *memif.MemifCreateV2:
		return []api.Message{&memif.MemifCreateV2Reply{SwIfIndex: newIf(fmt.Sprintf("memif%d/%d", m.SocketID, m.ID), "memif", m.HwAddr)}}
	case *tapv2.TapCreateV3:
		return []api.Message{&tapv2.TapCreateV3Reply{SwIfIndex: newIf(fmt.Sprintf("tap%d", f.nextIf), "virtio", m.MacAddress)}}
	case *af_packet.AfPacketCreateV3:
		return []api.Message{&af_packet.AfPacketCreateV3Reply{SwIfIndex: newIf("host-"+m.HostIfName, "af_packet", m.HwAddr)}}
	case *vppif.DeleteLoopback:
		delIf(m.SwIfIndex, "Loopback")
	case *memif.MemifDelete:
		delIf(m.SwIfIndex, "memif")
	case *tapv2.TapDeleteV2:
		delIf(m.SwIfIndex, "virtio")
	case *vppif.CreateSubif:
		return f.createSubif(m, iface(m.SwIfIndex), retval)
	case *vppif.DeleteSubif:
		if d := iface(m.SwIfIndex); d != nil && d.Type != interface_types.IF_API_TYPE_SUB {
			*retval = int32(api.INVALID_SUB_SW_IF_INDEX)
		} else if d != nil {
			f.forget(uint32(m.SwIfIndex))
		}
	case *vxlan.VxlanAddDelTunnelV3:
		return f.vxlanAddDel(m, newIf, retval)
	case *vppif.SwInterfaceSetUnnumbered:
		switch {
		case iface(m.SwIfIndex) == nil || iface(m.UnnumberedSwIfIndex) == nil:
		case m.SwIfIndex == m.UnnumberedSwIfIndex:
			*retval = int32(api.INVALID_VALUE)
		case m.IsAdd:
			f.unnum[uint32(m.UnnumberedSwIfIndex)] = uint32(m.SwIfIndex)
		default:
			delete(f.unnum, uint32(m.UnnumberedSwIfIndex))
		}
	case *vppif.SwInterfaceSetRxMode:
		d := iface(m.SwIfIndex)
		switch {
		case d == nil:
		case !hasQueues(d):
			*retval = int32(api.UNSUPPORTED)
		case m.Mode < interface_types.RX_MODE_API_POLLING || m.Mode > interface_types.RX_MODE_API_DEFAULT:
			*retval = int32(api.INVALID_VALUE)
		case m.Mode == interface_types.RX_MODE_API_DEFAULT:
			delete(f.rxMode, uint32(m.SwIfIndex))
		default:
			f.rxMode[uint32(m.SwIfIndex)] = m.Mode
		}
	case *vppif.SwInterfaceRxPlacementDump:
		if d := f.ifaces[uint32(m.SwIfIndex)]; d != nil && hasQueues(d) {
			return []api.Message{&vppif.SwInterfaceRxPlacementDetails{SwIfIndex: m.SwIfIndex, Mode: cmp.Or(f.rxMode[uint32(m.SwIfIndex)], interface_types.RX_MODE_API_POLLING)}}
		}
		return nil
	case *ip.IPUnnumberedDump:
		var out []api.Message
		for _, i := range sortedKeys(f.unnum) {
			out = append(out, &ip.IPUnnumberedDetails{SwIfIndex: interface_types.InterfaceIndex(i), IPSwIfIndex: interface_types.InterfaceIndex(f.unnum[i])})
		}
		return out
	case *ipip.IpipAddTunnel:
		t := m.Tunnel
		src, dst := addrOf(t.Src), addrOf(t.Dst)
		switch {
		case src.Is4() != dst.Is4():
			*retval = int32(api.INVALID_VALUE)
			return nil
		case src == dst:
			*retval = int32(api.SAME_SRC_DST)
			return nil
		}
		for _, x := range f.ipips {
			if x.Src == t.Src && x.Dst == t.Dst {
				*retval = int32(api.IF_ALREADY_EXISTS)
				return nil
			}
		}
		idx := newIf(fmt.Sprintf("ipip%d", len(f.ipips)), "IPIP", [6]byte{})
		t.SwIfIndex, t.Instance = idx, uint32(len(f.ipips))
		f.ipips[uint32(idx)] = t
		return []api.Message{&ipip.IpipAddTunnelReply{SwIfIndex: idx}}
	case *ipip.IpipDelTunnel:
		if _, ok := f.ipips[uint32(m.SwIfIndex)]; !ok {
			*retval = retvalNoSuchEntry // VPP finds the tunnel by its interface
			return nil
		}
		f.forget(uint32(m.SwIfIndex))
	case *ipip.IpipTunnelDump:
		var out []api.Message
		for _, i := range sortedKeys(f.ipips) {
			out = append(out, &ipip.IpipTunnelDetails{Tunnel: f.ipips[i]})
		}
		return out
	case *gre.GreTunnelAddDel:
		return f.greAddDel(m, newIf, retval)
	case *gre.GreTunnelDump:
		// VPP ends this dump with its reply, not a control ping's.
		var out []api.Message
		for _, i := range sortedKeys(f.gres) {
			out = append(out, &gre.GreTunnelDetails{Tunnel: f.gres[i]})
		}
		return append(out, &gre.GreTunnelDumpReply{})
	case *vxlan.VxlanTunnelV2Dump:
		var out []api.Message
		for _, i := range sortedKeys(f.vxlans) {
			d := *f.vxlans[i]
			out = append(out, &d)
		}
		return out
	case *af_packet.AfPacketDelete:
		*retval = retvalNoSuchEntry
		for i, d := range f.ifaces {
			if d.InterfaceName == "host-"+m.HostIfName {
				f.forget(i)
				*retval = 0
			}
		}
	case *vppif.SwInterfaceTagAddDel:
		if d := iface(m.SwIfIndex); d != nil {
			d.Tag = m.Tag
		}
	case *vppif.SwInterfaceSetFlags:
		if d := iface(m.SwIfIndex); d != nil { // the admin state; the link's is the device's
			d.Flags = d.Flags&^interface_types.IF_STATUS_API_FLAG_ADMIN_UP | m.Flags&interface_types.IF_STATUS_API_FLAG_ADMIN_UP
		}
	case *vppif.HwInterfaceSetMtu:
		if d := iface(m.SwIfIndex); d != nil {
			d.LinkMtu = m.Mtu
		}
	case *vppif.SwInterfaceSetMacAddress:
		if d := iface(m.SwIfIndex); d != nil {
			d.L2Address = m.MacAddress
		}
	case *vppif.SwInterfaceSetTable:
		// One table per family; VPP refuses a move with addresses of the
		// family.
		tables := f.ifVrf
		if m.IsIPv6 {
			tables = f.ifVrf6
		}
		if iface(m.SwIfIndex) == nil {
			return nil
		}
		for _, a := range f.addrs[uint32(m.SwIfIndex)] {
			if (a.Address.Af == ip_types.ADDRESS_IP6) == m.IsIPv6 && tables[uint32(m.SwIfIndex)] != m.VrfID {
				*retval = int32(api.ADDRESS_FOUND_FOR_INTERFACE)
				return nil
			}
		}
		tables[uint32(m.SwIfIndex)] = m.VrfID
	case *vppif.SwInterfaceGetTable:
		tables := f.ifVrf
		if m.IsIPv6 {
			tables = f.ifVrf6
		}
		if iface(m.SwIfIndex) != nil {
			return []api.Message{&vppif.SwInterfaceGetTableReply{VrfID: tables[uint32(m.SwIfIndex)]}}
		}
	case *vppif.SwInterfaceDump:
		var out []api.Message
		for _, i := range sortedKeys(f.ifaces) {
			if m.NameFilterValid && !strings.Contains(f.ifaces[i].InterfaceName, m.NameFilter) {
				continue
			}
			d := *f.ifaces[i]
			out = append(out, &d)
		}
		return out
	case *vppif.SwInterfaceAddDelAddress:
		if iface(m.SwIfIndex) != nil {
			i := uint32(m.SwIfIndex)
			at := slices.Index(f.addrs[i], m.Prefix)
			switch {
			case m.IsAdd && at < 0:
				f.addrs[i] = append(f.addrs[i], m.Prefix)
			case !m.IsAdd && at >= 0:
				f.addrs[i] = slices.Delete(f.addrs[i], at, at+1)
			case !m.IsAdd:
				*retval = int32(api.ADDRESS_NOT_FOUND_FOR_INTERFACE)
			}
		}
	case *ip.IPAddressDump:
		var out []api.Message
		for _, a := range f.addrs[uint32(m.SwIfIndex)] {
			if (a.Address.Af == ip_types.ADDRESS_IP6) == m.IsIPv6 {
				out = append(out, &ip.IPAddressDetails{SwIfIndex: m.SwIfIndex, Prefix: a})
			}
		}
		return out
	case *l2.BridgeDomainAddDelV2:
		if !m.IsAdd {
			if f.bds[m.BdID] == nil {
				*retval = retvalNoSuchEntry
			}
			delete(f.bds, m.BdID)
			return nil
		}
		id := m.BdID
		if id == ^uint32(0) {
			id = f.nextBD
			f.nextBD++
		}
		f.bds[id] = &l2.BridgeDomainDetails{BdID: id, Flood: m.Flood, UuFlood: m.UuFlood, Forward: m.Forward, Learn: m.Learn,
			ArpTerm: m.ArpTerm, MacAge: m.MacAge, BdTag: m.BdTag, BviSwIfIndex: ^interface_types.InterfaceIndex(0)}
		return []api.Message{&l2.BridgeDomainAddDelV2Reply{BdID: id}}
	case *l2.BridgeFlags:
		bd := f.bds[m.BdID]
		if bd == nil {
			*retval = retvalNoSuchEntry
			return nil
		}
		for flag, field := range map[l2.BdFlags]*bool{l2.BRIDGE_API_FLAG_LEARN: &bd.Learn, l2.BRIDGE_API_FLAG_FWD: &bd.Forward,
			l2.BRIDGE_API_FLAG_FLOOD: &bd.Flood, l2.BRIDGE_API_FLAG_UU_FLOOD: &bd.UuFlood, l2.BRIDGE_API_FLAG_ARP_TERM: &bd.ArpTerm} {
			if m.Flags&flag != 0 {
				*field = m.IsSet
			}
		}
	case *l2.BridgeDomainSetMacAge:
		if bd := f.bds[m.BdID]; bd != nil {
			bd.MacAge = m.MacAge
		} else {
			*retval = retvalNoSuchEntry
		}
	case *l2.SwInterfaceSetL2Bridge:
		bd := f.bds[m.BdID]
		if iface(m.RxSwIfIndex) == nil || bd == nil {
			if *retval == 0 {
				*retval = retvalNoSuchEntry
			}
			return nil
		}
		bd.SwIfDetails = slices.DeleteFunc(bd.SwIfDetails, func(s l2.BridgeDomainSwIf) bool { return s.SwIfIndex == m.RxSwIfIndex })
		if bd.BviSwIfIndex == m.RxSwIfIndex {
			bd.BviSwIfIndex = ^interface_types.InterfaceIndex(0)
		}
		if m.Enable {
			bd.SwIfDetails = append(bd.SwIfDetails, l2.BridgeDomainSwIf{SwIfIndex: m.RxSwIfIndex, Shg: m.Shg})
			if m.PortType == l2.L2_API_PORT_TYPE_BVI {
				bd.BviSwIfIndex = m.RxSwIfIndex
			}
		}
		bd.NSwIfs = uint32(len(bd.SwIfDetails))
	case *l2.BridgeDomainDump:
		var out []api.Message
		for _, id := range sortedKeys(f.bds) {
			d := *f.bds[id]
			d.SwIfDetails = slices.Clone(d.SwIfDetails)
			out = append(out, &d)
		}
		return out
	case *l2.L2fibAddDel:
		if f.bds[m.BdID] == nil {
			*retval = retvalNoSuchEntry
			return nil
		}
		t := slices.DeleteFunc(f.fib[m.BdID], func(e *l2.L2FibTableDetails) bool { return e.Mac == m.Mac })
		if m.IsAdd {
			t = append(t, &l2.L2FibTableDetails{BdID: m.BdID, Mac: m.Mac, SwIfIndex: m.SwIfIndex, StaticMac: m.StaticMac})
		}
		f.fib[m.BdID] = t
	case *l2.L2FibTableDump:
		var out []api.Message
		for _, e := range f.fib[m.BdID] {
			d := *e
			out = append(out, &d)
		}
		return out
	case *ip.IPTableAddDel:
		k := m.Table
		k.Name = ""
		if m.IsAdd {
			f.addTable(k)
			return nil
		}
		delete(f.tables, k)
		for id := range f.routes {
			if id.table == k.TableID && (id.prefix.Address.Af == ip_types.ADDRESS_IP6) == k.IsIP6 {
				delete(f.routes, id)
			}
		}
	case *ip.IPTableDump:
		var out []api.Message
		for k := range f.tables {
			out = append(out, &ip.IPTableDetails{Table: k})
		}
		slices.SortFunc(out, func(a, b api.Message) int {
			x, y := a.(*ip.IPTableDetails).Table, b.(*ip.IPTableDetails).Table
			return int(x.TableID)*2 + boolInt(x.IsIP6) - int(y.TableID)*2 - boolInt(y.IsIP6)
		})
		return out
	case *ip.IPRouteAddDel:
		r, path := m.Route, m.Route.Paths[0]
		if !f.tables[ip.IPTable{TableID: r.TableID, IsIP6: r.Prefix.Address.Af == ip_types.ADDRESS_IP6}] {
			*retval = int32(api.NO_SUCH_FIB)
			return nil
		}
		id := routeID{r.TableID, r.Prefix, srcAPI}
		if f.routes[id] == nil && !m.IsAdd {
			*retval = retvalNoSuchEntry
			return nil
		}
		x := &f.route(id).route
		x.Paths = slices.DeleteFunc(x.Paths, func(p fib_types.FibPath) bool { return p.Nh == path.Nh && p.SwIfIndex == path.SwIfIndex })
		if m.IsAdd {
			x.Paths = append(x.Paths, path)
		}
		x.NPaths = uint8(len(x.Paths))
		if len(x.Paths) == 0 {
			delete(f.routes, id)
		}
	case *ip.IPRouteV2Dump:
		// One route per prefix: its best source's, as VPP reports it.
		best := map[ip_types.Prefix]ip.IPRouteV2{}
		var order []ip_types.Prefix
		for _, r := range f.tableRoutes(m.Table.TableID) {
			if (r.Prefix.Address.Af == ip_types.ADDRESS_IP6) != m.Table.IsIP6 {
				continue
			}
			b, seen := best[r.Prefix]
			if !seen {
				order = append(order, r.Prefix)
			}
			if !seen || priority(r.Src) < priority(b.Src) {
				best[r.Prefix] = r
			}
		}
		var out []api.Message
		for _, p := range order {
			r := best[p]
			r.Paths = slices.Clone(r.Paths)
			out = append(out, &ip.IPRouteV2Details{Route: r})
		}
		return out
	case *fib.FibSourceDump:
		var out []api.Message
		for _, s := range fakeSources {
			out = append(out, &fib.FibSourceDetails{Src: s})
		}
		return out
	case *ip_neighbor.IPNeighborAddDel:
		n := m.Neighbor
		if iface(n.SwIfIndex) == nil {
			return nil
		}
		f.neigh = slices.DeleteFunc(f.neigh, func(x ip_neighbor.IPNeighbor) bool { return x.SwIfIndex == n.SwIfIndex && x.IPAddress == n.IPAddress })
		if m.IsAdd {
			f.neigh = append(f.neigh, n)
		}
	case *ip_neighbor.IPNeighborDump:
		var out []api.Message
		for _, n := range f.neigh {
			if n.IPAddress.Af == m.Af {
				out = append(out, &ip_neighbor.IPNeighborDetails{Neighbor: n})
			}
		}
		return out
	default:
		for _, e := range f.exts {
			if out, ok := e.apply(f, msg, retval); ok {
				return out
			}
		}
		panic(fmt.Sprintf("fake VPP: %s is not simulated", msg.GetMessageName()))
	}
	return nil
}

// iface is interface i, or nil with retval set as VPP sets it for an
// unknown index.
func (f *fakeVPP) iface(i interface_types.InterfaceIndex, retval *int32) *vppif.SwInterfaceDetails {
	d := f.ifaces[uint32(i)]
	if d == nil {
		*retval = retvalBadIndex
	}
	return d
}

// newIf creates an interface of the device type dev; a zero mac is
// replaced by one made of its index.
func (f *fakeVPP) newIf(name, dev string, mac [6]byte) interface_types.InterfaceIndex {
	i := f.nextIf
	f.nextIf++
	if mac == [6]byte{} {
		mac = [6]byte{0x02, 0xfe, 0, 0, 0, byte(i)}
	}
	f.ifaces[i] = &vppif.SwInterfaceDetails{SwIfIndex: interface_types.InterfaceIndex(i), InterfaceName: name, InterfaceDevType: dev, L2Address: mac, LinkMtu: 9000}
	return interface_types.InterfaceIndex(i)
}

// GetMsgID is the mock's, except for the messages set unknown, which a
// VPP of another release would not have (or have with another CRC).
func (f *fakeVPP) GetMsgID(name, crc string) (uint16, error) {
	if _, ok := f.unknown.Load(name); ok {
		return 0, &adapter.UnknownMsgError{MsgName: name, MsgCrc: crc}
	}
	return f.VppAdapter.GetMsgID(name, crc)
}

// A fakeExt is a part of the fake VPP kept in a file of its own (ACL,
// NAT, ...): its state, emptied with the fake's; the requests it
// simulates; and what VPP removes with an interface that goes away. A
// file registers its part with registerFakeExt in an init function, and a
// test reaches a part's state with fakeExtOf.
type fakeExt interface {
	reset()
	// apply simulates msg under the fake's lock, as fakeVPP.apply does,
	// or returns false if msg is not its own.
	apply(f *fakeVPP, msg api.Message, retval *int32) ([]api.Message, bool)
	// forget removes what VPP removes with interface i.
	forget(i uint32)
}

var fakeExtMakers []func() fakeExt

// registerFakeExt adds a part to every fake VPP made after it.
func registerFakeExt(mk func() fakeExt) { fakeExtMakers = append(fakeExtMakers, mk) }

// fakeExtOf is the fake's part of type T, for a test to inspect (under
// Do, which holds the fake's lock).
func fakeExtOf[T fakeExt](f *fakeVPP) T {
	for _, e := range f.exts {
		if t, ok := e.(T); ok {
			return t
		}
	}
	panic(fmt.Sprintf("fake VPP: no part %T", *new(T)))
}

// priority is the priority of a source of the fake.
func priority(src uint8) uint8 {
	at := slices.IndexFunc(fakeSources, func(s fib.FibSource) bool { return s.ID == src })
	return fakeSources[at].Priority
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func sortedKeys[V any](m map[uint32]V) []uint32 {
	var out []uint32
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ifIndex returns the sw_if_index of the interface tagged or named name.
func (f *fakeVPP) ifIndex(name string) (uint32, bool) {
	for i, d := range f.ifaces {
		if d.Tag == name || d.InterfaceName == name {
			return i, true
		}
	}
	return 0, false
}

// addrWithPrefix builds an interface address of the binary API.
func addrWithPrefix(s string) ip_types.AddressWithPrefix {
	return ip_types.AddressWithPrefix(prefix(netip.MustParsePrefix(s)))
}

// createSubif creates a sub-interface of parent, refusing what VPP's
// create_subif refuses: a parent that is not there or is a sub-interface
// itself, a sub_id taken on the parent, tags that the flags do not match.
func (f *fakeVPP) createSubif(m *vppif.CreateSubif, parent *vppif.SwInterfaceDetails, retval *int32) []api.Message {
	if parent == nil {
		return nil
	}
	if parent.Type == interface_types.IF_API_TYPE_SUB {
		*retval = int32(api.INVALID_INTERFACE)
		return nil
	}
	tags := map[interface_types.SubIfFlags]uint8{interface_types.SUB_IF_API_FLAG_NO_TAGS: 0, interface_types.SUB_IF_API_FLAG_ONE_TAG: 1, interface_types.SUB_IF_API_FLAG_TWO_TAGS: 2}
	n, ok := tags[m.SubIfFlags&(interface_types.SUB_IF_API_FLAG_NO_TAGS|interface_types.SUB_IF_API_FLAG_ONE_TAG|interface_types.SUB_IF_API_FLAG_TWO_TAGS)]
	if !ok || (n == 0) != (m.OuterVlanID == 0) || (n == 2) != (m.InnerVlanID != 0) || m.OuterVlanID > 4095 || m.InnerVlanID > 4095 {
		*retval = int32(api.INVALID_VLAN_TAG_COUNT)
		return nil
	}
	for _, d := range f.ifaces {
		if d.Type == interface_types.IF_API_TYPE_SUB && d.SupSwIfIndex == uint32(parent.SwIfIndex) && d.SubID == m.SubID {
			*retval = int32(api.SUBIF_ALREADY_EXISTS)
			return nil
		}
	}
	i := f.nextIf
	f.nextIf++
	f.ifaces[i] = &vppif.SwInterfaceDetails{SwIfIndex: interface_types.InterfaceIndex(i), SupSwIfIndex: uint32(parent.SwIfIndex), Type: interface_types.IF_API_TYPE_SUB,
		InterfaceName: fmt.Sprintf("%s.%d", parent.InterfaceName, m.SubID), InterfaceDevType: parent.InterfaceDevType, L2Address: parent.L2Address, LinkMtu: parent.LinkMtu,
		SubID: m.SubID, SubNumberOfTags: n, SubOuterVlanID: m.OuterVlanID, SubInnerVlanID: m.InnerVlanID, SubIfFlags: m.SubIfFlags}
	return []api.Message{&vppif.CreateSubifReply{SwIfIndex: interface_types.InterfaceIndex(i)}}
}

// vxlanAddDel adds or deletes a VXLAN tunnel, refusing what VPP refuses:
// ends of two families or equal, a VNI over 24 bits, a multicast
// destination without a valid multicast interface, a tunnel that exists
// (add) or does not (delete: found by its ends and VNI).
func (f *fakeVPP) vxlanAddDel(m *vxlan.VxlanAddDelTunnelV3, newIf func(string, string, [6]byte) interface_types.InterfaceIndex, retval *int32) []api.Message {
	src, dst := addrOf(m.SrcAddress), addrOf(m.DstAddress)
	switch {
	case src.Is4() != dst.Is4() || m.Vni>>24 != 0:
		*retval = int32(api.INVALID_VALUE)
		return nil
	case src == dst:
		*retval = int32(api.SAME_SRC_DST)
		return nil
	case dst.IsMulticast() && f.ifaces[uint32(m.McastSwIfIndex)] == nil:
		*retval = retvalBadIndex
		return nil
	}
	for i, d := range f.vxlans {
		if d.SrcAddress == m.SrcAddress && d.DstAddress == m.DstAddress && d.Vni == m.Vni {
			if m.IsAdd {
				*retval = int32(api.TUNNEL_EXIST)
				return nil
			}
			delete(f.vxlans, i)
			f.forget(i)
			return nil
		}
	}
	if !m.IsAdd {
		*retval = retvalNoSuchEntry
		return nil
	}
	mcast := m.McastSwIfIndex
	if !dst.IsMulticast() {
		mcast = ^interface_types.InterfaceIndex(0) // VPP ignores it
	}
	idx := newIf(fmt.Sprintf("vxlan_tunnel%d", len(f.vxlans)), "VXLAN", [6]byte{})
	f.vxlans[uint32(idx)] = &vxlan.VxlanTunnelV2Details{SwIfIndex: idx, Instance: uint32(len(f.vxlans)), SrcAddress: m.SrcAddress, DstAddress: m.DstAddress,
		SrcPort: 4789, DstPort: 4789, McastSwIfIndex: mcast, Vni: m.Vni, DecapNextIndex: m.DecapNextIndex}
	return []api.Message{&vxlan.VxlanAddDelTunnelV3Reply{SwIfIndex: idx}}
}

// addHardware adds a hardware interface as VPP finds one at start (DPDK).
func (f *fakeVPP) addHardware(name string) uint32 {
	i := f.nextIf
	f.nextIf++
	f.ifaces[i] = &vppif.SwInterfaceDetails{SwIfIndex: interface_types.InterfaceIndex(i), SupSwIfIndex: i, InterfaceName: name, InterfaceDevType: "dpdk",
		L2Address: [6]byte{0x52, 0x54, 0, 0, 0, byte(i)}, LinkMtu: 1500}
	return i
}

// forget removes interface i and what VPP removes with it: its
// addresses, VRF and unnumbered settings (its own, and those using it).
func (f *fakeVPP) forget(i uint32) {
	delete(f.ifaces, i)
	delete(f.addrs, i)
	delete(f.ifVrf, i)
	delete(f.ifVrf6, i)
	delete(f.rxMode, i)
	delete(f.gres, i)
	delete(f.ipips, i)
	for _, e := range f.exts {
		e.forget(i)
	}
	for u, n := range f.unnum {
		if u == i || n == i {
			delete(f.unnum, u)
		}
	}
}

// hasQueues says whether an interface has receive queues of its own, and
// so a receive mode: not a loopback, a tunnel or a sub-interface.
func hasQueues(d *vppif.SwInterfaceDetails) bool {
	return d.Type == interface_types.IF_API_TYPE_HARDWARE && slices.Contains([]string{"memif", "virtio", "af_packet", "dpdk", "vmxnet3", "rdma"}, d.InterfaceDevType)
}

// greAddDel adds or deletes a GRE tunnel, refusing what VPP refuses: ends
// of two families or equal, a session id beyond 10 bits or on a tunnel
// that is not ERSPAN, a tunnel that exists (add: same ends, kind and
// session) or does not (delete).
func (f *fakeVPP) greAddDel(m *gre.GreTunnelAddDel, newIf func(string, string, [6]byte) interface_types.InterfaceIndex, retval *int32) []api.Message {
	t := m.Tunnel
	src, dst := addrOf(t.Src), addrOf(t.Dst)
	switch {
	case src.Is4() != dst.Is4() || t.SessionID > 1023 || (t.SessionID != 0 && t.Type != gre.GRE_API_TUNNEL_TYPE_ERSPAN) || t.Type > gre.GRE_API_TUNNEL_TYPE_ERSPAN:
		*retval = int32(api.INVALID_VALUE)
		return nil
	case src == dst:
		*retval = int32(api.SAME_SRC_DST)
		return nil
	}
	for i, x := range f.gres {
		if x.Src == t.Src && x.Dst == t.Dst && x.Type == t.Type && x.SessionID == t.SessionID {
			if m.IsAdd {
				*retval = int32(api.IF_ALREADY_EXISTS)
				return nil
			}
			f.forget(i)
			return nil
		}
	}
	if !m.IsAdd {
		*retval = retvalNoSuchEntry
		return nil
	}
	idx := newIf(fmt.Sprintf("gre%d", len(f.gres)), "GRE", [6]byte{})
	t.SwIfIndex, t.Instance = idx, uint32(len(f.gres))
	f.gres[uint32(idx)] = t
	return []api.Message{&gre.GreTunnelAddDelReply{SwIfIndex: idx}}
}
