package main

import (
	"strings"
	"testing"

	vppnat "github.com/kvdescriptor/kvdescriptor/generated/vpp/nat/v1"
)

// TestLocalModelsNAT44: kvctl knows the NAT44 models, so it checks their
// values before writing them to etcd as the agent would.
func TestLocalModelsNAT44(t *testing.T) {
	m, err := newLocalModels()
	if err != nil {
		t.Fatal(err)
	}
	for key, typ := range map[string]string{
		"vpp/nat44/global":              "vpp.nat.v1.Nat44Global",
		"vpp/nat44/interface/lo1":       "vpp.nat.v1.Nat44Interface",
		"vpp/nat44/address-pool/public": "vpp.nat.v1.Nat44AddressPool",
		"vpp/nat44/dnat/web":            "vpp.nat.v1.DNat44",
	} {
		if mt, ok := m.MessageType(key); !ok || string(mt.Descriptor().FullName()) != typ {
			t.Errorf("%s: %v %v, want %s", key, mt, ok, typ)
		}
	}
	err = m.validate("vpp/nat44/address-pool/public", &vppnat.Nat44AddressPool{Name: "public", FirstIp: "2001:db8::1"})
	if err == nil || !strings.Contains(err.Error(), "first_ip") {
		t.Errorf("an IPv6 pool: %v, want an error naming first_ip", err)
	}
}
