package vpp

import (
	"errors"

	vppnat "github.com/kvdescriptor/kvdescriptor/generated/vpp/nat/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// buildNAT builds the descriptors of the NAT44 models.
func (p *Plugin) buildNAT() ([]kv.Descriptor, error) {
	g, err1 := vppnat.NewNat44GlobalDescriptor[struct{}](&nat44Global{p: p})
	i, err2 := vppnat.NewNat44InterfaceDescriptor[struct{}](&nat44Interfaces{p: p})
	a, err3 := vppnat.NewNat44AddressPoolDescriptor[struct{}](&nat44Pools{p: p})
	d, err4 := vppnat.NewDNat44Descriptor[struct{}](&dnats{p: p})
	s, err5 := vppnat.NewDNat44StaticMappingsDescriptor[struct{}](&staticMappings{p: p})
	m, err6 := vppnat.NewDNat44IdentityMappingsDescriptor[struct{}](&identityMappings{p: p})
	return []kv.Descriptor{g, i, a, d, s, m}, errors.Join(err1, err2, err3, err4, err5, err6)
}
