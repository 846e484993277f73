package vpp

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/interface_types"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestLinkUp: a link VPP reports up is an obtained value, by the
// interface's label (ours) or VPP's name (hardware not adopted), found by
// a resync with no call; the admin state (enabled) does not make a link
// up; WatchLinks notifies links that come up and go down (a resync alone
// keeps an obtained value it no longer finds); a LinkUp value set is
// refused when applied.
func TestLinkUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var hw1, hw2 uint32
	e.f.Do(func(f *fakeVPP) {
		hw1, hw2 = f.addHardware("GigabitEthernet0/8/0"), f.addHardware("GigabitEthernet0/9/0")
		f.ifaces[hw2].Flags |= interface_types.IF_STATUS_API_FLAG_LINK_UP
	})
	e.resync()
	e.set(nil, &vppinterfaces.Interface{Name: "GigabitEthernet0/8/0", Type: vppinterfaces.Interface_TYPE_DPDK, Enabled: true})
	const up1, up2 = "vpp/link-up/GigabitEthernet0%2F8%2F0", "vpp/link-up/GigabitEthernet0%2F9%2F0"
	e.f.Requests()
	e.resync()
	onlyReads(t, e.f, "a resync that finds links")
	e.expect(scheduler.OBTAINED, up2)
	e.expect(scheduler.NONEXISTENT, up1) // admin up, no carrier

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- e.p.WatchLinks(ctx, 10*time.Millisecond, func(ctx context.Context, cs []LinkChange) error {
			ns := make([]scheduler.Notification, len(cs))
			for i, c := range cs {
				ns[i] = scheduler.Notification{Key: c.Key}
				if c.Value != nil {
					ns[i].Value = c.Value
				}
			}
			_, err := e.s.Notify(ctx, ns...)
			return err
		})
	}()
	e.f.Do(func(f *fakeVPP) {
		f.ifaces[hw1].Flags |= interface_types.IF_STATUS_API_FLAG_LINK_UP
		f.ifaces[hw2].Flags &^= interface_types.IF_STATUS_API_FLAG_LINK_UP
	})
	e.eventually(scheduler.OBTAINED, up1)
	e.eventually(scheduler.NONEXISTENT, up2)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("WatchLinks: %v", err)
	}

	txn := e.s.Txn()
	txn.Set(up2, &vppinterfaces.LinkUp{Interface: "GigabitEthernet0/9/0"})
	if _, err := txn.Commit(e.ctx); err == nil {
		t.Error("a LinkUp value set: committed, want an error")
	}
	st := e.s.Status(up2)
	if st.State != scheduler.FAILED || st.LastErr == nil || !strings.Contains(st.LastErr.Error(), "cannot be configured") {
		t.Errorf("a LinkUp value set: %s (%v), want FAILED, refused", st.State, st.LastErr)
	}
	if err := e.p.WatchLinks(ctx, 0, nil); err == nil {
		t.Error("WatchLinks with interval 0: no error")
	}
}
