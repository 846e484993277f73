package vpp

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/dhcp"
	"google.golang.org/protobuf/proto"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// dhcpClientsOf is the fake's DHCP clients: hostname by interface tag.
func dhcpClientsOf(f *fakeVPP) map[string]string {
	out := map[string]string{}
	f.Do(func(f *fakeVPP) {
		for i, c := range fakeExtOf[*fakeIfattr](f).dhcp {
			out[f.ifaces[i].Tag] = c.Hostname
		}
	})
	return out
}

// TestDhcpClient: a DHCP client is started after its interface, read back
// by a resync with no calls, re-created alone when it changes (the
// interface untouched), stopped when unset and before its interface goes;
// one started by hand is obtained and left alone.
func TestDhcpClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const key = "vpp/interface/l1/dhcp-client"
	l1 := loop("l1")
	l1.DhcpClient = &vppinterfaces.Interface_DhcpClient{Hostname: "h1"}
	e.set(nil, l1)
	e.expect(scheduler.CONFIGURED, "vpp/interface/l1", key)
	if diff := cmp.Diff(map[string]string{"l1": "h1"}, dhcpClientsOf(e.f)); diff != "" {
		t.Errorf("DHCP clients (-want +got):\n%s", diff)
	}
	e.f.Requests()
	e.resync()
	onlyReads(t, e.f, "a resync of an unchanged DHCP client")

	l1 = proto.Clone(l1).(*vppinterfaces.Interface)
	l1.DhcpClient.Broadcast = true
	e.set(nil, l1)
	got := e.f.Requests()
	want := []api.Message{&dhcp.DHCPClientConfig{Client: dhcp.DHCPClient{SwIfIndex: 1, Hostname: "h1", ID: make([]byte, 64)}},
		&dhcp.DHCPClientConfig{IsAdd: true, Client: dhcp.DHCPClient{SwIfIndex: 1, Hostname: "h1", ID: make([]byte, 64), SetBroadcastFlag: true}}} // the decoded fixed-size id
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changing the client (-want +got):\n%s", diff)
	}
	e.resync()
	onlyReads(t, e.f, "a resync of an unchanged DHCP client")

	// Unset: stopped, the interface stays.
	e.set(nil, loop("l1"))
	if diff := cmp.Diff([]string{"dhcp_client_config"}, e.f.RequestNames()); diff != "" {
		t.Errorf("unsetting the client (-want +got):\n%s", diff)
	}
	if got := dhcpClientsOf(e.f); len(got) != 0 {
		t.Errorf("DHCP clients %v, want none", got)
	}

	// Deleting the interface stops its client first.
	e.set(nil, l1)
	e.expect(scheduler.CONFIGURED, key)
	e.f.Requests()
	e.del("vpp/interface/l1")
	if diff := cmp.Diff([]string{"dhcp_client_config", "delete_loopback"}, e.f.RequestNames()); diff != "" {
		t.Errorf("deleting the interface (-want +got):\n%s", diff)
	}

	// Started by hand on an interface made by hand: obtained.
	e.f.Do(func(f *fakeVPP) {
		i := f.newIf("loop50", "Loopback", [6]byte{})
		fakeExtOf[*fakeIfattr](f).dhcp[uint32(i)] = dhcp.DHCPClient{SwIfIndex: i, Hostname: "byhand"}
	})
	e.resync()
	if st := e.s.Status("vpp/interface/loop50/dhcp-client"); st.State != scheduler.OBTAINED {
		t.Errorf("a client started by hand: %s (%v), want OBTAINED", st.State, st.LastErr)
	}
	onlyReads(t, e.f, "a resync with a client started by hand")

	// VPP refuses a second client on an interface, and stopping none.
	e.set(nil, loop("l2"))
	h := &dhcpClients{e.p}
	k := vppinterfaces.InterfaceDhcpClientKey{Name: "l2"}
	if _, err := h.Create(context.Background(), k, &vppinterfaces.Interface_DhcpClient{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Create(context.Background(), k, &vppinterfaces.Interface_DhcpClient{}); !errors.Is(err, api.INVALID_VALUE) || kv.IsRetriable(err) {
		t.Errorf("a second client: %v, want VPP's invalid value, not retried", err)
	}
	if err := h.Delete(context.Background(), k, nil, struct{}{}); err != nil {
		t.Fatal(err)
	}
	if err := h.Delete(context.Background(), k, nil, struct{}{}); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("stopping no client: %v, want not found", err)
	}
}
