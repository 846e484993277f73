//go:build linux

package linux_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"

	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
)

// TestNetnsRouteGatewayOfOtherFamily: a route whose gateway is not of its
// destination's family (an IPv4 network via an IPv6 gateway, or the
// reverse) is INVALID, naming gw_addr: the plugin writes the gateway as
// the route's RTA_GATEWAY, which the kernel takes only in the route's own
// family. It had stayed PENDING with no error, waiting for an address
// whose network contains the gateway, or failed with the kernel's
// EINVAL once one existed.
func TestNetnsRouteGatewayOfOtherFamily(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := vethPair("veth0", "veth1")
	a.IpAddresses = []string{"10.0.0.1/24", "2001:db8::1/64"}
	e.set(a, b)
	for _, r := range []*linuxl3.Route{
		{OutgoingInterface: "veth0", DstNetwork: "10.20.0.0/16", GwAddr: "2001:db8::fe"},
		{OutgoingInterface: "veth0", DstNetwork: "2001:db8:20::/48", GwAddr: "10.0.0.254"},
		// veth1 has no address: the route had stayed PENDING, no error.
		{OutgoingInterface: "veth1", DstNetwork: "10.30.0.0/16", GwAddr: "2001:db8::fe"},
	} {
		_, err := e.s.Txn().Set(keyOf(r), r).Commit(e.ctx)
		var inv *kv.InvalidValueError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), "gw_addr") {
			t.Errorf("%s via %s: commit error %v, want an invalid value naming gw_addr", r.DstNetwork, r.GwAddr, err)
		}
		e.expect(scheduler.INVALID, keyOf(r))
	}
	ok := &linuxl3.Route{OutgoingInterface: "veth0", DstNetwork: "10.20.0.0/16", GwAddr: "10.0.0.254"}
	e.set(ok)
	e.expect(scheduler.CONFIGURED, keyOf(ok))
}
