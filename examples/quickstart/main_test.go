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
			name: "route waits for its interface and gateway",
			want: []string{
				"NONE demo/route/10.20.0.0/16 [IS-PENDING]",
				"WhyPending:",
				"interface -> demo/interface/eth0: NONEXISTENT, not intended",
				"gateway -> any of demo/address/eth0/ (network contains 10.0.0.254)",
			},
		},
		{
			name: "interface, derived address and pending route in one transaction",
			want: []string{
				"CREATE demo/route/10.20.0.0/16 [WAS-PENDING]",
				"device: ip link add eth0 mtu 1500",
				"device: ip addr add 10.0.0.1/24 dev eth0",
				"device: ip route add 10.20.0.0/16 via 10.0.0.254 dev eth0",
				"executed, 3 operations in",
				"as planned",
			},
		},
		{
			name: "plan preview deletes route, address, interface",
			want: []string{
				"plan preview (nothing executed):",
				"1. DELETE demo/route/10.20.0.0/16",
				"2. DELETE demo/address/eth0/10.0.0.1/24",
				"3. DELETE demo/interface/eth0",
			},
		},
		{
			name: "failed transaction is reverted",
			want: []string{
				"device: ip link set eth0 mtu 9000",
				"device: ip addr add 10.0.1.1/24 dev eth0  => error: injected failure",
				"device: ip link set eth0 mtu 1500",
				"executed and REVERTED",
				"device unchanged by the reverted transaction",
			},
		},
		{
			name: "retry settles before CommitAndWait returns",
			want: []string{
				"device: ip link add eth1 mtu 1500  => error: device busy",
				"CREATE demo/interface/eth1 [RETRY]",
				"CREATE demo/route/10.30.0.0/16 [WAS-PENDING RETRY]",
				"device: ip link add eth1 mtu 1500\n",
				"outcomes after the wait:",
			},
		},
		{
			name: "final status and device",
			want: []string{
				"demo/route/10.30.0.0/16        CONFIGURED  route",
				"route 10.20.0.0/16 via 10.0.0.254 dev eth0",
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
	if strings.Contains(got, "device: ip link del") {
		t.Errorf("the dry run reached the device; output:\n%s", got)
	}
}

func TestExampleDeviceRefusesWrongOrder(t *testing.T) {
	var out bytes.Buffer
	d := newDevice(&out)
	if err := d.AddrAdd("eth0", eth0); err == nil {
		t.Error("address added to a missing link")
	}
	if err := d.LinkAdd("eth0", 1500); err != nil {
		t.Fatal(err)
	}
	if err := d.AddrAdd("eth0", eth0); err != nil {
		t.Fatal(err)
	}
	if err := d.LinkDel("eth0"); err == nil {
		t.Error("link deleted while it still has an address")
	}
	if d.State() != "  addr 10.0.0.1/24 dev eth0\n  link eth0 mtu 1500\n" {
		t.Errorf("device state:\n%s", d.State())
	}
}
