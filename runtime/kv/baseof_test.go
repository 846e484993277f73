package kv_test

import (
	"strings"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvimpl"
)

func TestBaseKeyOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		derived, base string
		keys          map[string]string // derived key -> base key ("" not a key)
	}{
		{
			name:    "interface address",
			derived: "linux/interface/{name}/address/{ip_addresses:ipiface}",
			base:    "linux/interface/{name}",
			keys: map[string]string{
				"linux/interface/eth0/address/10.0.0.1/24":     "linux/interface/eth0",
				"linux/interface/a%2Fb/address/2001:db8::1/64": "linux/interface/a%2Fb",
				"linux/interface/eth0/address/10.0.0.1":        "", // no prefix length
				"linux/interface/eth0":                         "", // the base's own key
				"vpp/interface/eth0/address/10.0.0.1/24":       "",
			},
		},
		{
			name:    "base fields in another order, element in the middle",
			derived: "vpp/bd/{bd:name}/vrf/{vrf:uint}/member/{interfaces.name}",
			base:    "vpp/vrf/{vrf:uint}/bd/{bd}",
			keys: map[string]string{
				"vpp/bd/x/vrf/7/member/memif1": "vpp/vrf/7/bd/x",
				"vpp/bd/x/vrf/07/member/m":     "", // not in key form
			},
		},
		{
			name:    "a base without placeholders",
			derived: "global/nat/pool/{pools.id:uint}",
			base:    "global/nat",
			keys:    map[string]string{"global/nat/pool/3": "global/nat"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			baseOf, err := kv.BaseKeyOf(kv.MustParseKeyTemplate(tt.derived), kv.MustParseKeyTemplate(tt.base))
			if err != nil {
				t.Fatal(err)
			}
			for key, want := range tt.keys {
				if got := baseOf(key); got != want {
					t.Errorf("BaseOf(%q) = %q, want %q", key, got, want)
				}
			}
		})
	}
}

func TestBaseKeyOfRefusesKeysThatDoNotTellTheirBase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		derived, base string
		wantErr       string
	}{
		{"base field not carried", "vpp/bd/{name}/interface/{interfaces.name}", "vpp/bd/{name}/vrf/{vrf:uint}", "does not carry {vrf}"},
		{"carried in another format", "vpp/table/{id:name}/route/{routes.dst:ipprefix}", "vpp/table/{id:uint}", "carries {id} as name, the base key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := kv.BaseKeyOf(kv.MustParseKeyTemplate(tt.derived), kv.MustParseKeyTemplate(tt.base))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("BaseKeyOf error = %v, want one containing %q", err, tt.wantErr)
			}
			defer func() {
				if recover() == nil {
					t.Error("MustBaseKeyOf did not panic")
				}
			}()
			kvimpl.MustBaseKeyOf(kv.MustParseKeyTemplate(tt.derived), kv.MustParseKeyTemplate(tt.base))
		})
	}
	if _, err := kv.BaseKeyOf(nil, kv.MustParseKeyTemplate("a/{b}")); err == nil {
		t.Error("BaseKeyOf(nil, ...) succeeded")
	}
}

func TestDescriptorBaseOf(t *testing.T) {
	t.Parallel()
	h := &baseHandler{}
	plain := newDescriptor(t, spec{Name: "linux-interface", KeyTemplate: ifaceTemplate}, h)
	var erased kv.Descriptor = plain
	if got := erased.BaseOf("linux/interface/eth0"); got != "" {
		t.Errorf("BaseOf without Spec.BaseOf = %q, want \"\"", got)
	}
	derived := newDescriptor(t, spec{
		Name:        "linux-address",
		KeyTemplate: "linux/address/{name}/{ip:ipiface}",
		BaseOf:      kvimpl.MustBaseKeyOf(kv.MustParseKeyTemplate("linux/address/{name}/{ip:ipiface}"), kv.MustParseKeyTemplate(ifaceTemplate)),
	}, h)
	erased = derived
	if got, want := erased.BaseOf("linux/address/eth0/10.0.0.1/24"), "linux/interface/eth0"; got != want {
		t.Errorf("BaseOf = %q, want %q", got, want)
	}
	hand := newDescriptor(t, spec{Name: "by-hand", KeyPrefix: "by-hand/", BaseOf: func(key string) string {
		return "base/" + strings.TrimPrefix(key, "by-hand/")
	}}, h)
	if got := hand.BaseOf("by-hand/x"); got != "base/x" {
		t.Errorf("hand-written BaseOf = %q, want %q", got, "base/x")
	}
}
