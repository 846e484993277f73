package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestQuickstartExample(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	got := out.String()

	tests := []struct {
		name string
		// want are lines (or parts of lines) that must appear in this order.
		want []string
	}{
		{
			name: "route waits for its interface and a gateway address",
			want: []string{
				"NONE linux/route/veth1/10.20.0.0/16 [IS-PENDING]",
				"WhyPending:",
				"interface -> linux/interface/veth1: NONEXISTENT, not intended",
				"gateway reachable -> any of linux/interface/veth1/address/ (network contains 10.0.0.254)",
			},
		},
		{
			name: "veth pair as a unit, derived address and pending route in one transaction",
			want: []string{
				"plan #2 (NB transaction: veth pair):",
				"[CYCLE]",
				"[CYCLE]",
				"CREATE linux/interface/veth1/address/10.0.0.1/24 [DERIVED]",
				"CREATE linux/route/veth1/10.20.0.0/16 [WAS-PENDING]",
				// Which end the scheduler creates first is its choice; the
				// first Create makes both.
				" up type veth peer name veth",
				"device: ip addr add 10.0.0.1/24 dev veth1",
				"device: ip route add 10.20.0.0/16 via 10.0.0.254 dev veth1",
				"executed-as-planned seq=2 operations=4 took=",
				"interface metadata (ifindex): veth1=",
			},
		},
		{
			name: "bridge updated in place, then re-created in a namespace",
			want: []string{
				"device: ip link add br0 up type bridge",
				"device: ip addr add 192.168.1.1/24 dev br0",
				"1. UPDATE linux/interface/br0\n",
				"device: ip link set br0 mtu 9000",
				"updated in place: br0 keeps ifindex",
				"DELETE linux/interface/br0 [RECREATE]",
				"CREATE linux/interface/br0 [RECREATE]",
				"device: ip addr del 192.168.1.1/24 dev br0",
				"device: ip link del br0",
				"device: ip -n blue link add br0 mtu 9000 up type bridge",
				"device: ip -n blue addr add 192.168.1.1/24 dev br0",
				"re-created: br0 has ifindex",
			},
		},
		{
			name: "invalid value names its fields",
			want: []string{
				"NONE linux/interface/tap9 [INVALID]",
				`phys_address: "02:00:00:zz:00:09" is not a MAC address`,
				`ip_addresses[1]: "10.0.0.300/24" is not an interface address`,
				"ok: linux/interface/tap9 is INVALID",
				"no device call was made",
			},
		},
		{
			name: "plan preview deletes the dependents first",
			want: []string{
				"plan preview (nothing executed):",
				"1. DELETE linux/route/veth1/10.20.0.0/16",
				"2. DELETE linux/interface/veth1/address/10.0.0.1/24",
				"3. DELETE linux/interface/veth2 [IS-PENDING]",
				"4. DELETE linux/interface/veth1",
			},
		},
		{
			name: "failed transaction is reverted",
			want: []string{
				"device: ip link set veth1 mtu 9000",
				"device: ip link add tap0 up type tap",
				"device: ip route add 10.30.0.0/16 via 10.1.0.254 dev tap0  => error: injected failure",
				") and REVERTED:",
				"device unchanged by the reverted transaction",
			},
		},
		{
			name: "retry settles before CommitAndWait returns",
			want: []string{
				"device: ip link add tap0 up type tap  => error: device or resource busy",
				"CREATE linux/interface/tap0 [RETRY]",
				"CREATE linux/route/tap0/10.30.0.0/16 [WAS-PENDING RETRY]",
				"device: ip link add tap0 up type tap\n",
				"device: ip route add 10.30.0.0/16 via 10.1.0.254 dev tap0\n",
				"outcomes after the wait:",
			},
		},
		{
			name: "final status and device",
			want: []string{
				"KEY", "STATE", "DESCRIPTOR", "LAST ERROR",
				"linux/interface/tap9   ", "INVALID", "phys_address",
				"linux/route/veth1/10.20.0.0/16  ", "CONFIGURED", "linux.l3.v1.Route",
				"device:",
				"netns blue mtu 9000 UP",
				"route 10.20.0.0/16 via 10.0.0.254 dev veth1",
				"route 10.30.0.0/16 via 10.1.0.254 dev tap0",
			},
		},
		{
			name: "the same descriptors as an agent, on a file",
			want: []string{
				"=== 9. The same descriptors as an agent",
				"device: ip route add 10.20.0.0/16 via 10.0.0.254 dev veth1",
				"config.yaml edited: veth1 mtu 9000",
				"device: ip link set veth1 mtu 9000",
				"agent transaction #1 (full resync): 4 operations",
				"agent transaction #2 (NB transaction): 1 operations",
				"all expected states reached",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rest := got
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q after the lines before it; output:\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
		})
	}
	// The dry run deleted nothing: veth1 and veth2 are never deleted.
	for _, never := range []string{"link del veth", "addr del 10.0.0.1/24", "route del 10.20.0.0/16"} {
		if strings.Contains(got, never) {
			t.Errorf("output contains %q: the dry run reached the device; output:\n%s", never, got)
		}
	}
}
