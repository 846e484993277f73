package modelstest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	vppipsec "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipsec/v1"
)

// TestSameFamilyAs: same_family_as rejects the fields of another IP
// family than their sibling's, comparing a field's zero_equals default
// when it is empty (an SPD policy's empty stop is 255.255.255.255), and
// lets a range of one family through, of either family.
func TestSameFamilyAs(t *testing.T) {
	t.Parallel()
	validate := vppipsec.SecurityPolicySpec[struct{}]().Validate
	tests := []struct {
		name   string
		v      *vppipsec.SecurityPolicy
		fields []string // nil: valid
	}{
		{"all empty: IPv4 defaults", &vppipsec.SecurityPolicy{}, nil},
		{"IPv6, all four", &vppipsec.SecurityPolicy{RemoteAddrStart: "::", RemoteAddrStop: "::1", LocalAddrStart: "2001:db8::", LocalAddrStop: "2001:db8::ff"}, nil},
		{"IPv6 start, default stops", &vppipsec.SecurityPolicy{RemoteAddrStart: "2001:db8::"}, []string{"remote_addr_stop", "local_addr_start", "local_addr_stop"}},
		{"one IPv6 stop", &vppipsec.SecurityPolicy{LocalAddrStop: "2001:db8::ff"}, []string{"local_addr_stop"}},
		{"not an address: the format says it, once", &vppipsec.SecurityPolicy{LocalAddrStop: "nope"}, []string{"local_addr_stop"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.v.SpdIndex, tc.v.Name = 1, "p"
			err := validate("vpp/ipsec/spd/1/policy/p", tc.v)
			var got []string
			if err != nil {
				got = fieldNames(t, err)
			}
			if diff := cmp.Diff(tc.fields, got); diff != "" {
				t.Errorf("invalid fields (-want +got):\n%s\n%v", diff, err)
			}
		})
	}
}
