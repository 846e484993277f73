package vpp

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/span"
	"go.fd.io/govpp/binapi/stn"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppstn "github.com/kvdescriptor/kvdescriptor/generated/vpp/stn/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// steer is the fake's state of STN and SPAN, under its lock.
func (e *env) steer(fn func(x *fakeSteer)) {
	e.f.Do(func(f *fakeVPP) { fn(fakeExtOf[*fakeSteer](f)) })
}

// stnRule is the stn_add_del_rule request.
func stnRule(addr string, sw interface_types.InterfaceIndex, add bool) *stn.StnAddDelRule {
	return &stn.StnAddDelRule{IPAddress: address(netip.MustParseAddr(addr)), SwIfIndex: sw, IsAdd: add}
}

// TestSTNRule: a rule waits for its interface, is re-created for another
// interface, read back unchanged by a resync (an IPv6 address written in
// upper case included; one made by hand obtained), removed before its
// interface goes, and what the schema or VPP refuses never reaches VPP
// or fails with the reason.
func TestSTNRule(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r4 := &vppstn.Rule{IpAddress: "10.0.0.1", Interface: "lo1"}
	r6 := &vppstn.Rule{IpAddress: "2001:DB8::1", Interface: "lo1"}
	const k4, k6 = "vpp/stn/rule/10.0.0.1", "vpp/stn/rule/2001:db8::1"
	e.put(nil, r4, r6)
	e.expect(scheduler.PENDING, k4, k6)
	e.put(nil, loop("lo1"), loop("lo2"))
	e.expect(scheduler.CONFIGURED, k4, k6)
	if got := only[*stn.StnAddDelRule](e.f); len(got) != 2 || !cmp.Equal(got[0], stnRule("10.0.0.1", 1, true)) && !cmp.Equal(got[1], stnRule("10.0.0.1", 1, true)) {
		t.Errorf("requests %v, want the IPv4 rule added on sw_if_index 1", got)
	}

	// Another interface: re-created (VPP finds a rule by its address).
	e.put(nil, &vppstn.Rule{IpAddress: "10.0.0.1", Interface: "lo2"})
	e.expect(scheduler.CONFIGURED, k4)
	expectOnly(t, e.f, stnRule("10.0.0.1", 0, false), stnRule("10.0.0.1", 2, true))
	e.steer(func(x *fakeSteer) { x.stn[netip.MustParseAddr("10.9.9.9")] = 1 }) // vppctl stn rule address 10.9.9.9 interface loop0
	e.noWrites("STN rules in order")
	e.expect(scheduler.OBTAINED, "vpp/stn/rule/10.9.9.9")
	e.expect(scheduler.CONFIGURED, k4, k6)

	// lo2 goes: its rule first, and it waits.
	e.del("vpp/interface/lo2")
	firstOf(t, e.f, "stn_add_del_rule", "delete_loopback")
	e.expect(scheduler.PENDING, k4)
	e.steer(func(x *fakeSteer) {
		if _, ok := x.stn[netip.MustParseAddr("10.0.0.1")]; ok {
			t.Errorf("VPP's STN rules %v still hold 10.0.0.1", x.stn)
		}
	})
	e.del(k4)
	if w := writes(e.f); len(w) != 0 {
		t.Errorf("deleting a pending rule sent %v", w)
	}

	// What the schema refuses.
	for _, v := range []*vppstn.Rule{{IpAddress: "10.0.0.2"}, {IpAddress: "nope", Interface: "lo1"}} {
		e.put(nil, v)
		e.expect(scheduler.INVALID, "vpp/stn/rule/"+v.GetIpAddress())
	}
	if w := writes(e.f); len(w) != 0 {
		t.Errorf("invalid rules sent %v", w)
	}
	// What VPP refuses: an unknown interface; deleting a missing rule.
	h := &stnRules{p: e.p}
	if err := h.addDel(e.ctx, vppstn.RuleKey{IpAddress: netip.MustParseAddr("10.0.0.3")}, 99, true); !errors.Is(err, api.INVALID_SW_IF_INDEX) {
		t.Errorf("an unknown interface: %v, want VPP's invalid sw_if_index", err)
	}
	if err := h.Delete(e.ctx, vppstn.RuleKey{IpAddress: netip.MustParseAddr("10.0.0.3")}, nil, struct{}{}); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("deleting a missing rule: %v, want not found", err)
	}
}

// TestSpan: a mirror waits for both interfaces, is re-created for another
// direction or kind (device or L2), read back unchanged by a resync (one
// made by hand obtained, and where a pair has both kinds, ours is the one
// reported), removed before either interface goes, and what the schema or
// VPP refuses never reaches VPP or fails with the reason.
func TestSpan(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sp := &vppinterfaces.Span{InterfaceFrom: "lo1", InterfaceTo: "lo2", Direction: vppinterfaces.Span_RX}
	const key = "vpp/span/lo1/to/lo2"
	req := func(from, to interface_types.InterfaceIndex, st span.SpanState, l2 bool) *span.SwInterfaceSpanEnableDisable {
		return &span.SwInterfaceSpanEnableDisable{SwIfIndexFrom: from, SwIfIndexTo: to, State: st, IsL2: l2}
	}
	e.put(nil, sp, loop("lo1"))
	e.expect(scheduler.PENDING, key)
	e.put(nil, loop("lo2"), loop("lo3"))
	e.expect(scheduler.CONFIGURED, key)
	expectOnly(t, e.f, req(1, 2, span.SPAN_STATE_API_RX, false))

	// Another direction, then L2: re-created each time.
	e.put(nil, &vppinterfaces.Span{InterfaceFrom: "lo1", InterfaceTo: "lo2", Direction: vppinterfaces.Span_BOTH})
	expectOnly(t, e.f, req(1, 2, span.SPAN_STATE_API_DISABLED, false), req(1, 2, span.SPAN_STATE_API_RX_TX, false))
	l2 := &vppinterfaces.Span{InterfaceFrom: "lo1", InterfaceTo: "lo2", Direction: vppinterfaces.Span_TX, IsL2: true}
	e.put(nil, l2)
	e.expect(scheduler.CONFIGURED, key)
	expectOnly(t, e.f, req(1, 2, span.SPAN_STATE_API_DISABLED, false), req(1, 2, span.SPAN_STATE_API_TX, true))

	// By hand: a device mirror of the same pair, and one of lo3 to lo1.
	e.steer(func(x *fakeSteer) {
		x.span[spanID{1, 2, false}] = span.SPAN_STATE_API_RX // vppctl set interface span loop0 destination loop1 rx
		x.span[spanID{3, 1, false}] = span.SPAN_STATE_API_TX // vppctl set interface span loop2 destination loop0 tx
	})
	e.noWrites("mirrors in order")
	e.expect(scheduler.CONFIGURED, key)
	e.expect(scheduler.OBTAINED, "vpp/span/lo3/to/lo1")

	// lo2 goes: the mirror first, and it waits.
	e.del("vpp/interface/lo2")
	firstOf(t, e.f, "sw_interface_span_enable_disable", "delete_loopback")
	e.expect(scheduler.PENDING, key)
	e.steer(func(x *fakeSteer) {
		if _, ok := x.span[spanID{1, 2, true}]; ok {
			t.Errorf("VPP's mirrors %v still hold ours", x.span)
		}
	})

	// What the schema refuses.
	for _, v := range []*vppinterfaces.Span{
		{InterfaceFrom: "lo1", InterfaceTo: "lo3"},
		{InterfaceFrom: "lo1", InterfaceTo: "lo1", Direction: vppinterfaces.Span_RX},
		{InterfaceFrom: "lo3", InterfaceTo: "lo4", Direction: 7},
	} {
		e.put(nil, v)
		e.expect(scheduler.INVALID, l2l3Key(v))
	}
	if w := writes(e.f); len(w) != 0 {
		t.Errorf("invalid mirrors sent %v", w)
	}
	// What VPP refuses: an interface to itself; a state beyond both.
	h := &spans{p: e.p}
	if err := h.set(e.ctx, vppinterfaces.SpanKey{InterfaceFrom: "lo1", InterfaceTo: "lo1"}, span.SPAN_STATE_API_RX, false); !errors.Is(err, api.INVALID_INTERFACE) {
		t.Errorf("a mirror to itself: %v, want VPP's invalid interface", err)
	}
	if err := h.set(e.ctx, vppinterfaces.SpanKey{InterfaceFrom: "lo1", InterfaceTo: "lo3"}, 4, false); !errors.Is(err, api.UNIMPLEMENTED) {
		t.Errorf("state 4: %v, want VPP's unimplemented", err)
	}
}
