package modelstest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/proto"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// fakeVPP is a VPP that keeps its tables in maps and answers like VPP.
type fakeVPP struct {
	mu        sync.Mutex
	neighbors map[string]ipNeighbor
	bds       map[uint32]bridgeDomain
	l2        map[uint32]l2Bridge // by sw_if_index
	routes    map[string]ipRoute
	failNext  error
}

func newFakeVPP() *fakeVPP {
	return &fakeVPP{neighbors: map[string]ipNeighbor{}, bds: map[uint32]bridgeDomain{}, l2: map[uint32]l2Bridge{}, routes: map[string]ipRoute{}}
}

// The handlers implement the generated handler interfaces, and Update
// where the southbound can change a value in place.
var (
	_ vppAPI                                                                               = (*fakeVPP)(nil)
	_ vppl3.ARPEntryHandler[struct{}]                                                      = (*arpHandler)(nil)
	_ vppl2.BridgeDomainHandler[bdMeta]                                                    = (*bdHandler)(nil)
	_ kv.Updater[vppl2.BridgeDomainKey, *vppl2.BridgeDomain, bdMeta]                       = (*bdHandler)(nil)
	_ vppl2.BridgeDomainInterfacesHandler[struct{}]                                        = (*bdBindingHandler)(nil)
	_ kv.Updater[vppl2.BridgeDomainInterfacesKey, *vppl2.BridgeDomain_Interface, struct{}] = (*bdBindingHandler)(nil)
	_ vppl3.RouteHandler[struct{}]                                                         = (*routeHandler)(nil)
)

func (f *fakeVPP) fail() error {
	err := f.failNext
	f.failNext = nil
	return err
}

func (f *fakeVPP) IPNeighborAddDel(_ context.Context, add bool, n ipNeighbor) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail(); err != nil {
		return err
	}
	k := fmt.Sprintf("%d/%s", n.SwIfIndex, n.IP)
	if _, ok := f.neighbors[k]; !ok && !add {
		return errNoSuchEntry
	}
	if add {
		f.neighbors[k] = n
	} else {
		delete(f.neighbors, k)
	}
	return nil
}

func (f *fakeVPP) BridgeDomainAddDel(_ context.Context, add bool, bd bridgeDomain) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail(); err != nil {
		return err
	}
	_, ok := f.bds[bd.ID]
	switch {
	case add && ok:
		return errInvalidValue
	case !add && !ok:
		return errNoSuchEntry
	case add:
		f.bds[bd.ID] = bd
	default:
		for _, b := range f.l2 {
			if b.BdID == bd.ID {
				return fmt.Errorf("bridge domain %d still has interface %d", bd.ID, b.SwIfIndex)
			}
		}
		delete(f.bds, bd.ID)
	}
	return nil
}

func (f *fakeVPP) BridgeDomainSetFlags(_ context.Context, bd bridgeDomain) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.bds[bd.ID]; !ok {
		return errNoSuchEntry
	}
	f.bds[bd.ID] = bd
	return nil
}

func (f *fakeVPP) SwInterfaceSetL2Bridge(_ context.Context, b l2Bridge) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.bds[b.BdID]; !ok {
		return errNoSuchEntry
	}
	if b.Enable {
		f.l2[b.SwIfIndex] = b
	} else {
		delete(f.l2, b.SwIfIndex)
	}
	return nil
}

func (f *fakeVPP) IPRouteAddDel(_ context.Context, add bool, r ipRoute) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := fmt.Sprintf("%d/%s/%s", r.VrfID, r.Dst, r.NextHop)
	if _, ok := f.routes[k]; !ok && !add {
		return errNoSuchEntry
	}
	if add {
		f.routes[k] = r
	} else {
		delete(f.routes, k)
	}
	return nil
}

// snapshot returns copies of the fake's tables.
func (f *fakeVPP) snapshot() (map[string]ipNeighbor, map[uint32]bridgeDomain, map[uint32]l2Bridge, map[string]ipRoute) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cp := func(m map[string]ipNeighbor) map[string]ipNeighbor {
		out := map[string]ipNeighbor{}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	bds, l2, routes := map[uint32]bridgeDomain{}, map[uint32]l2Bridge{}, map[string]ipRoute{}
	for k, v := range f.bds {
		bds[k] = v
	}
	for k, v := range f.l2 {
		l2[k] = v
	}
	for k, v := range f.routes {
		routes[k] = v
	}
	return cp(f.neighbors), bds, l2, routes
}

// vppInterfaces stands in for the VPP interface plugin: it hands out
// sw_if_index values as metadata.
type vppInterfaces struct{ last uint32 }

func (h *vppInterfaces) Create(context.Context, vppinterfaces.InterfaceKey, *vppinterfaces.Interface) (ifaceMeta, error) {
	h.last++
	return ifaceMeta{SwIfIndex: h.last}, nil
}

func (h *vppInterfaces) Delete(context.Context, vppinterfaces.InterfaceKey, *vppinterfaces.Interface, ifaceMeta) error {
	return nil
}

// TestExampleHandlers runs the handlers of handlers_example_test.go under
// the scheduler against the fake VPP.
func TestExampleHandlers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vpp := newFakeVPP()
	ifaces, err := vppinterfaces.NewInterfaceDescriptor[ifaceMeta](&vppInterfaces{})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := newL2L3Descriptors(vpp, ifaces.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	var canUpdate []bool
	for _, d := range ds {
		canUpdate = append(canUpdate, d.CanUpdate())
	}
	if diff := cmp.Diff([]bool{false, true, true, false}, canUpdate); diff != "" {
		t.Errorf("CanUpdate of ARP, bridge domain, binding, route (-want +got):\n%s", diff)
	}
	s := newScheduler(t, append(ds, ifaces, noErr(vppl3.NewVrfTableDescriptor[struct{}](nop[vppl3.VrfTableKey, *vppl3.VrfTable]{})))...)

	bd := &vppl2.BridgeDomain{Name: "bd1", Learn: true, Interfaces: []*vppl2.BridgeDomain_Interface{
		{Name: "memif1/1", Bvi: true}, {Name: "memif1/2"},
	}}
	arp := &vppl3.ARPEntry{Interface: "memif1/1", IpAddress: "10.0.0.2", PhysAddress: "02:00:00:00:00:02", Static: true}
	route := &vppl3.Route{DstNetwork: "10.1.1.7/24", NextHopAddr: "10.0.0.2", OutgoingInterface: "memif1/1"}
	bdKey, arpKey, routeKey := vppl2.BridgeDomainKeyFor(bd), vppl3.ARPEntryKeyFor(arp), vppl3.RouteKeyFor(route)
	if1 := &vppinterfaces.Interface{Name: "memif1/1", Type: vppinterfaces.Interface_TYPE_MEMIF}
	if2 := &vppinterfaces.Interface{Name: "memif1/2", Type: vppinterfaces.Interface_TYPE_MEMIF}

	commit(t, s, bdKey, bd, arpKey, arp, routeKey, route)
	neighbors, bds, l2, routes := vpp.snapshot()
	if diff := cmp.Diff(map[uint32]bridgeDomain{1: {ID: 1, Learn: true}}, bds); diff != "" {
		t.Errorf("bridge domains (-want +got):\n%s", diff)
	}
	if len(neighbors)+len(l2)+len(routes) != 0 {
		t.Errorf("created before their interfaces: neighbours %v, bindings %v, routes %v", neighbors, l2, routes)
	}

	res, err := s.Txn().Set(vppinterfaces.InterfaceKeyFor(if1), if1).Set(vppinterfaces.InterfaceKeyFor(if2), if2).CommitAndWait(ctx)
	if err != nil {
		t.Fatalf("interfaces: %v\n%+v", err, res.Outcomes)
	}
	neighbors, _, l2, routes = vpp.snapshot()
	sw1, _ := ifaces.Metadata().Get("memif1/1")
	sw2, _ := ifaces.Metadata().Get("memif1/2")
	want := map[uint32]l2Bridge{
		sw1.SwIfIndex: {SwIfIndex: sw1.SwIfIndex, BdID: 1, BVI: true, Enable: true},
		sw2.SwIfIndex: {SwIfIndex: sw2.SwIfIndex, BdID: 1, Enable: true},
	}
	if diff := cmp.Diff(want, l2); diff != "" {
		t.Errorf("bindings (-want +got):\n%s", diff)
	}
	wantN := map[string]ipNeighbor{fmt.Sprintf("%d/10.0.0.2", sw1.SwIfIndex): {SwIfIndex: sw1.SwIfIndex, IP: netip.MustParseAddr("10.0.0.2"), MAC: mac("02:00:00:00:00:02"), Static: true}}
	if diff := cmp.Diff(wantN, neighbors, keyCmp); diff != "" {
		t.Errorf("neighbours (-want +got):\n%s", diff)
	}
	if r, ok := routes["0/10.1.1.0/24/10.0.0.2"]; !ok || r.SwIfIndex != sw1.SwIfIndex || r.Weight != 1 {
		t.Errorf("routes: %+v, want 10.1.1.0/24 via 10.0.0.2 on %d with weight 1", routes, sw1.SwIfIndex)
	}

	// Bridge domain flags: Update; member flags: Update of the binding.
	bd2 := proto.Clone(bd).(*vppl2.BridgeDomain)
	bd2.Flood, bd2.MacAge = true, 30
	bd2.Interfaces[1].SplitHorizonGroup = 2
	commit(t, s, bdKey, bd2)
	_, bds, l2, _ = vpp.snapshot()
	if diff := cmp.Diff(map[uint32]bridgeDomain{1: {ID: 1, Flood: true, Learn: true, MacAge: 30}}, bds); diff != "" {
		t.Errorf("bridge domains after update (-want +got):\n%s", diff)
	}
	if got := l2[sw2.SwIfIndex].Shg; got != 2 {
		t.Errorf("split-horizon group of memif1/2 = %d, want 2", got)
	}

	// A neighbour removed behind our back: Delete maps VPP's
	// NO_SUCH_ENTRY to kv.ErrNotFound, which counts as deleted.
	vpp.mu.Lock()
	clear(vpp.neighbors)
	vpp.mu.Unlock()
	if _, err := s.Txn().Delete(arpKey).CommitAndWait(ctx); err != nil {
		t.Errorf("deleting an ARP entry VPP lost: %v", err)
	}
	if st := s.Status(arpKey); st.State != scheduler.NONEXISTENT {
		t.Errorf("%s: %s (%v), want NONEXISTENT", arpKey, st.State, st.LastErr)
	}

	// Removing the bridge domain unbinds its members first.
	if _, err := s.Txn().Delete(bdKey).CommitAndWait(ctx); err != nil {
		t.Errorf("deleting the bridge domain: %v", err)
	}
	_, bds, l2, _ = vpp.snapshot()
	if len(bds)+len(l2) != 0 {
		t.Errorf("after deleting the bridge domain: bridge domains %v, bindings %v", bds, l2)
	}

	// VPP's INVALID_VALUE is not retried, even when retries are asked for.
	vpp.mu.Lock()
	vpp.failNext = errInvalidValue
	vpp.mu.Unlock()
	res, err = s.Txn(scheduler.Retry(scheduler.RetryPolicy{Period: time.Millisecond, MaxAttempts: 3})).Set(bdKey, bd).CommitAndWait(ctx)
	if err == nil {
		t.Fatal("a bridge domain VPP refused: no error")
	}
	st := s.Status(bdKey)
	if st.State != scheduler.FAILED || !errors.Is(st.LastErr, errInvalidValue) || kv.IsRetriable(st.LastErr) {
		t.Errorf("%s: %s (%v), want FAILED with a non-retriable VNET_API_ERROR_INVALID_VALUE", bdKey, st.State, st.LastErr)
	}
	if diff := cmp.Diff([]scheduler.Outcome{{Key: bdKey, State: scheduler.FAILED, LastOp: scheduler.OpCreate}}, res.Outcomes[:1], cmpopts.IgnoreFields(scheduler.Outcome{}, "Err")); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
}
