package modelstest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// The tests below reproduce bugs found in the generated code, all fixed.

// TestDerivedElementFieldNamedOnce (a fixed bug): an element of linux
// Interface.ip_addresses out of format is reported twice, once by the
// field's format check and once by the check of the derived values' key
// fields.
func TestDerivedElementFieldNamedOnce(t *testing.T) {
	t.Parallel()
	err := linuxinterfaces.InterfaceSpec[struct{}]().Validate("linux/interface/eth0",
		&linuxinterfaces.Interface{Name: "eth0", Type: linuxinterfaces.Interface_TYPE_DUMMY, IpAddresses: []string{"10.0.0.1/24", "10.0.0.1"}})
	var got []string
	if err != nil {
		got = err.(interface{ FieldNames() []string }).FieldNames()
	}
	if diff := cmp.Diff([]string{"ip_addresses[1]"}, got); diff != "" {
		t.Errorf("invalid fields (-want +got):\n%s\nerror: %v", diff, err)
	}
}

// TestKeyFieldOutOfFormatIsInvalid (a fixed bug): a value whose key field is
// out of format (an ARP entry for IP 10.0.0.256) has a key, built by the
// generated ARPEntryKeyFor, that the generated IsKey rejects. The
// scheduler finds no descriptor for it: UNIMPLEMENTED, instead of INVALID
// naming ip_address as kv.KeyValue's documentation promises. The
// descriptor's own Validate names only "(key)": NewKeyedDescriptor stops
// at the key parse before the schema check that would name the field.
func TestKeyFieldOutOfFormatIsInvalid(t *testing.T) {
	t.Parallel()
	arp := &vppl3.ARPEntry{Interface: "if1", IpAddress: "10.0.0.256", PhysAddress: "02:00:00:00:00:01"}
	key := vppl3.ARPEntryKeyFor(arp) // "vpp/arp/if1/10.0.0.256"

	err := models()[vppl3.ARPEntryModelName].desc.Validate(key, arp)
	if diff := cmp.Diff([]string{"ip_address"}, fieldNames(t, err)); diff != "" {
		t.Errorf("Descriptor.Validate(%q): invalid fields (-want +got):\n%s\nerror: %v", key, diff, err)
	}

	s := vppScheduler(t, &calls{})
	if _, err := s.Txn().Set(key, arp).CommitAndWait(context.Background()); err == nil {
		t.Errorf("CommitAndWait(%q): no error", key)
	}
	st := s.Status(key)
	if st.State != scheduler.INVALID {
		t.Errorf("%s: %s (%v), want INVALID", key, st.State, st.LastErr)
	}
	if st.LastErr != nil {
		if diff := cmp.Diff([]string{"ip_address"}, fieldNames(t, st.LastErr)); diff != "" {
			t.Errorf("invalid fields (-want +got):\n%s", diff)
		}
	}
}

// TestUniqueInKeyForm (a fixed bug): validate.unique on linux
// Interface.ip_addresses compares the raw strings, so "2001:db8::1/64"
// and "2001:DB8::1/64" pass as unique although both derive the key
// linux/interface/eth0/address/2001:db8::1/64; the scheduler then
// silently keeps one of the two derived values.
func TestUniqueInKeyForm(t *testing.T) {
	t.Parallel()
	v := &linuxinterfaces.Interface{Name: "eth0", Type: linuxinterfaces.Interface_TYPE_DUMMY, IpAddresses: []string{"2001:db8::1/64", "2001:DB8::1/64"}}
	derived := linuxinterfaces.InterfaceSpec[struct{}]().Derived("linux/interface/eth0", v)
	if len(derived) == 2 && derived[0].Key == derived[1].Key {
		t.Logf("both elements derive %q", derived[0].Key)
	}
	err := linuxinterfaces.InterfaceSpec[struct{}]().Validate("linux/interface/eth0", v)
	if diff := cmp.Diff([]string{"ip_addresses"}, fieldNames(t, err)); diff != "" {
		t.Errorf("invalid fields (-want +got):\n%s", diff)
	}
}

// TestFormatFieldsComparedInKeyForm (a fixed bug): the generated comparators compare
// fields with a format (IP, prefix, MAC) as raw strings, so two spellings
// of one address are "different" values: an ARP entry whose ip_address
// changes from "2001:DB8::1" to "2001:db8::1" (the same key) is deleted
// and created again in the southbound, and a MAC written in upper case
// triggers an Update that changes nothing.
func TestFormatFieldsComparedInKeyForm(t *testing.T) {
	t.Parallel()
	ms := models()
	tests := []struct {
		name  string
		model string
		a, b  proto.Message
	}{
		{"arp IP and MAC spelling", vppl3.ARPEntryModelName,
			&vppl3.ARPEntry{Interface: "if1", IpAddress: "2001:DB8::1", PhysAddress: "02:AA:00:00:00:01"},
			&vppl3.ARPEntry{Interface: "if1", IpAddress: "2001:db8::1", PhysAddress: "02:aa:00:00:00:01"}},
		{"route prefix spelling", vppl3.RouteModelName,
			&vppl3.Route{DstNetwork: "10.1.1.7/24", NextHopAddr: "10.0.0.1"},
			&vppl3.Route{DstNetwork: "10.1.1.0/24", NextHopAddr: "10.0.0.1"}},
		{"vpp interface address spelling", vppinterfaces.InterfaceModelName,
			&vppinterfaces.Interface{Name: "if1", IpAddresses: []string{"2001:DB8::1/64"}},
			&vppinterfaces.Interface{Name: "if1", IpAddresses: []string{"2001:db8::1/64"}}},
	}
	for _, tc := range tests {
		if !ms[tc.model].desc.Equivalent("", tc.a, tc.b) {
			t.Errorf("%s: Equivalent(%v, %v) = false, want true", tc.name, tc.a, tc.b)
		}
	}
}
