package vpp

import (
	"fmt"
	"testing"

	"go.fd.io/govpp/binapi/flowprobe"

	vppipfix "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipfix/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestFlowProbe: a feature waits for its interface and the settings,
// which VPP gets first, with its default timers for zero; both read back
// unchanged by a resync (one enabled by hand obtained); VPP refuses new
// settings while a feature is on; another direction re-creates the
// feature; and the feature goes before the settings do.
func TestFlowProbe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const pk, fk = "vpp/flowprobe/params", "vpp/flowprobe/interface/lo1"
	params := &vppipfix.FlowProbeParams{RecordL3: true, RecordL4: true}
	feat := &vppipfix.FlowProbeFeature{Interface: "lo1", Which: vppipfix.FlowProbeFeature_IP6}
	e.putPunt(feat, loop("lo1"), loop("lo2"))
	e.expect(scheduler.PENDING, fk)
	e.putPunt(params)
	e.expect(scheduler.CONFIGURED, pk, fk)
	expectOnly(t, e.f, &flowprobe.FlowprobeSetParams{RecordFlags: flowprobe.FLOWPROBE_RECORD_FLAG_L3 | flowprobe.FLOWPROBE_RECORD_FLAG_L4, ActiveTimer: 15, PassiveTimer: 120})
	e.f.Do(func(f *fakeVPP) {
		if d := fakeExtOf[*fakeServices](f).fpIf[1]; d == nil || d.Which != flowprobe.FLOWPROBE_WHICH_IP6 {
			t.Errorf("VPP's flowprobe on lo1: %v", d)
		}
	})
	e.f.Do(func(f *fakeVPP) { // vppctl flowprobe feature add-del loop1 l2
		fakeExtOf[*fakeServices](f).fpIf[2] = &flowprobe.FlowprobeInterfaceDetails{SwIfIndex: 2, Which: flowprobe.FLOWPROBE_WHICH_L2}
	})
	e.noWrites("flowprobe in order")
	e.expect(scheduler.OBTAINED, "vpp/flowprobe/interface/lo2")

	// New settings while flowprobe is on: VPP refuses them.
	e.putPunt(&vppipfix.FlowProbeParams{RecordL3: true, ActiveTimer: 30})
	if st := e.s.Status(pk); st.State == scheduler.CONFIGURED {
		t.Errorf("%s: CONFIGURED, though VPP refuses new settings while flowprobe is on", pk)
	}
	e.putPunt(params)
	e.expect(scheduler.CONFIGURED, pk)
	_ = writes(e.f)

	// Another direction: re-created.
	e.putPunt(&vppipfix.FlowProbeFeature{Interface: "lo1", Which: vppipfix.FlowProbeFeature_IP6, Direction: vppipfix.FlowProbeFeature_BOTH})
	e.expect(scheduler.CONFIGURED, fk)
	expectOnly(t, e.f,
		&flowprobe.FlowprobeInterfaceAddDel{SwIfIndex: 1, Which: flowprobe.FLOWPROBE_WHICH_IP6},
		&flowprobe.FlowprobeInterfaceAddDel{IsAdd: true, SwIfIndex: 1, Which: flowprobe.FLOWPROBE_WHICH_IP6, Direction: flowprobe.FLOWPROBE_DIRECTION_BOTH})

	// The settings go: the feature first, and it waits (the one made by
	// hand gone too: VPP refuses settings while any is on).
	e.f.Do(func(f *fakeVPP) { delete(fakeExtOf[*fakeServices](f).fpIf, 2) })
	e.del(pk)
	if w := fmt.Sprint(writes(e.f)); w != "[flowprobe_interface_add_del flowprobe_set_params]" {
		t.Errorf("deleting the settings sent %s, want the feature disabled first", w)
	}
	e.expect(scheduler.PENDING, fk)
}
